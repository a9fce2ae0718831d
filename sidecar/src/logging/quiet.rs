//! A bound on what a library can write to the log: at most [`PER_SECOND`] lines a second from
//! each of its log statements (target and line). A library in a retry loop that logs every turn
//! (the Redis cluster client after a whole cluster restart wrote 1.4 GB in 30 s) would otherwise
//! fill the disk and drown every other line. Our own lines (the access log among them) are
//! never dropped here: each is bounded by the requests that cause it.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Instant;

use tracing::{Event, Subscriber};
use tracing_log::NormalizeEvent;
use tracing_subscriber::Layer;
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::time::{FormatTime, SystemTime};
use tracing_subscriber::layer::Context;

/// Lines a second one library log statement may write.
pub const PER_SECOND: u32 = 10;

pub struct Quiet {
    start: Instant,
    json: bool,
    /// Per statement: the second counted and the lines written in it.
    seen: Mutex<HashMap<(String, u32), (u64, u32)>>,
}

impl Quiet {
    pub fn new(json: bool) -> Self {
        Self { start: Instant::now(), json, seen: Mutex::default() }
    }

    /// Whether a line of `target` at `line` may be written at `second` (since start). The first
    /// one dropped in a second writes a notice instead.
    fn allow(&self, target: &str, line: u32, second: u64) -> bool {
        let written = {
            let mut seen = self.seen.lock().unwrap_or_else(|p| p.into_inner());
            // Statements are places in the code: the map stays small.
            let entry = seen.entry((target.to_owned(), line)).or_insert((second, 0));
            if entry.0 != second {
                *entry = (second, 0);
            }
            entry.1 = entry.1.saturating_add(1);
            entry.1
        };
        if written == PER_SECOND + 1 {
            self.notice(target, line);
        }
        written <= PER_SECOND
    }

    fn notice(&self, target: &str, line: u32) {
        let message =
            format!("log lines from {target}:{line} beyond {PER_SECOND} a second are dropped for this second");
        let mut time = String::new();
        let _ = SystemTime.format_time(&mut Writer::new(&mut time));
        let text = if self.json {
            format!("{}\n", serde_json::json!({ "timestamp": time, "level": "WARN", "message": message }))
        } else {
            format!("{time}  WARN {message}\n")
        };
        super::writer::write_now(text.as_bytes());
    }
}

impl<S: Subscriber> Layer<S> for Quiet {
    fn event_enabled(&self, event: &Event<'_>, _: Context<'_, S>) -> bool {
        // Our own lines (every request's among them) pass before any other work.
        if event.metadata().target().starts_with("email_verdict") {
            return true;
        }
        // A `log` record's own target and line (its event carries the bridge's).
        let normalized = event.normalized_metadata();
        let meta = normalized.as_ref().unwrap_or_else(|| event.metadata());
        if meta.target().starts_with("email_verdict") {
            return true;
        }
        self.allow(meta.target(), meta.line().unwrap_or(0), self.start.elapsed().as_secs())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_library_statement_writes_ten_lines_a_second() {
        let quiet = Quiet::new(false);
        let written = (0..1_000).filter(|_| quiet.allow("redis::cluster", 1471, 7)).count();
        assert_eq!(written, PER_SECOND as usize);
        assert!(quiet.allow("redis::cluster", 1470, 7), "another statement counts on its own");
        assert!(quiet.allow("redis::cluster", 1471, 8), "the next second starts again");
    }

    /// Counts the events that reach it.
    struct Count(std::sync::Arc<std::sync::atomic::AtomicUsize>);

    impl<S: Subscriber> Layer<S> for Count {
        fn on_event(&self, _: &Event<'_>, _: Context<'_, S>) {
            self.0.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
    }

    #[test]
    fn a_library_in_a_loop_is_cut_and_our_lines_are_not() {
        use tracing_subscriber::layer::SubscriberExt;
        let count = std::sync::Arc::default();
        let subscriber =
            tracing_subscriber::registry().with(Count(std::sync::Arc::clone(&count))).with(Quiet::new(false));
        tracing::subscriber::with_default(subscriber, || {
            for _ in 0..1_000 {
                tracing::error!(target: "redis::cluster_handling", "slot refresh failed");
            }
            for _ in 0..1_000 {
                tracing::info!(target: "email_verdict::api", "request");
            }
        });
        // Ten of the library's (unless the test straddles a second: twenty at most).
        let written = count.load(std::sync::atomic::Ordering::Relaxed);
        assert!((1_010..=1_020).contains(&written), "{written} lines written");
    }
}
