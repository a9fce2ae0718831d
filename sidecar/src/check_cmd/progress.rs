//! What `check` tells the person watching, on standard error: a progress bar with the input
//! read, lines and lines a second, and ETA when standard error is a terminal; one summary line
//! at the end whatever it is (standard output carries the records alone).

use std::io::IsTerminal;
use std::time::{Duration, Instant};

use email_verdict_core::BatchItem;
use indicatif::{ProgressBar, ProgressStyle};

/// How often (in lines) the bar's line count and rate are redrawn.
const REDRAW_EVERY: u64 = 256;

pub struct Progress {
    bar: ProgressBar,
    started: Instant,
    tally: Tally,
}

/// The lines written so far, by outcome.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Tally {
    pub lines: u64,
    pub disposable: u64,
    pub safe: u64,
    pub errors: u64,
}

impl Tally {
    pub fn add(&mut self, item: &BatchItem) {
        self.lines += 1;
        match item {
            BatchItem::Record(r) if r.result.disposable => self.disposable += 1,
            BatchItem::Record(_) => self.safe += 1,
            BatchItem::Error { .. } => self.errors += 1,
        }
    }

    /// `8 lines in 0.2 s (40 a second): 2 disposable, 3 safe, 3 errors`.
    pub fn summary(&self, elapsed: Duration) -> String {
        let secs = elapsed.as_secs_f64();
        let rate = if secs > 0.0 { self.lines as f64 / secs } else { 0.0 };
        let lines = if self.lines == 1 { "line" } else { "lines" };
        format!(
            "{} {lines} in {secs:.1} s ({rate:.0} a second): {} disposable, {} safe, {} errors",
            self.lines, self.disposable, self.safe, self.errors
        )
    }
}

impl Progress {
    /// A bar over `size` input bytes (a spinner when the size is unknown, as for standard
    /// input); hidden when standard error is no terminal.
    pub fn new(size: Option<u64>) -> Self {
        let bar = if std::io::stderr().is_terminal() { visible(size) } else { ProgressBar::hidden() };
        Self { bar, started: Instant::now(), tally: Tally::default() }
    }

    /// One line written, which took `consumed` bytes of the input.
    pub fn written(&mut self, consumed: u64, item: &BatchItem) {
        self.tally.add(item);
        self.bar.inc(consumed);
        if self.tally.lines.is_multiple_of(REDRAW_EVERY) {
            let secs = self.started.elapsed().as_secs_f64().max(1e-3);
            self.bar.set_message(format!("{} lines, {:.0}/s", self.tally.lines, self.tally.lines as f64 / secs));
        }
    }

    pub fn lines(&self) -> u64 {
        self.tally.lines
    }

    /// Clears the bar and prints the summary line (`stopped`: why the run ended early).
    pub fn finish(self, stopped: Option<&str>) {
        self.bar.finish_and_clear();
        let summary = self.tally.summary(self.started.elapsed());
        match stopped {
            Some(why) => eprintln!("check: {why} after {summary}"),
            None => eprintln!("check: {summary}"),
        }
    }
}

fn visible(size: Option<u64>) -> ProgressBar {
    let bar = match size {
        Some(size) => ProgressBar::new(size).with_style(
            ProgressStyle::with_template("{bar:40} {percent:>3}% {msg} ETA {eta}")
                .unwrap_or_else(|_| ProgressStyle::default_bar()),
        ),
        None => ProgressBar::new_spinner().with_style(
            ProgressStyle::with_template("{spinner} {binary_bytes} read, {msg}")
                .unwrap_or_else(|_| ProgressStyle::default_spinner()),
        ),
    };
    bar.enable_steady_tick(Duration::from_millis(200));
    bar
}

#[cfg(test)]
mod tests {
    use email_verdict_core::ErrorCode;

    use super::*;

    #[test]
    fn the_summary_counts_each_outcome() {
        let mut t = Tally::default();
        t.add(&BatchItem::error("x", ErrorCode::InvalidInput, "bad"));
        assert_eq!(t, Tally { lines: 1, errors: 1, ..Tally::default() });
        assert_eq!(
            t.summary(Duration::from_millis(500)),
            "1 line in 0.5 s (2 a second): 0 disposable, 0 safe, 1 errors"
        );
    }
}
