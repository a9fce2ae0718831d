//! A request's line written without `tracing`'s formatter: the same bytes (a test compares them
//! with the formatter's, text and JSON), at a fraction of the cost. The formatter records every
//! field through `dyn Debug` and `fmt::write`; it was two thirds of the line's cost and 6 % of
//! the API threads' time (BENCHMARKS.md section 2). Used only where nothing else would change
//! the line: `serve`'s subscriber, no terminal colours, no trace spans; elsewhere the caller
//! logs through `tracing` as before.

use std::cell::RefCell;
use std::fmt::Write as _;
use std::sync::OnceLock;

use super::{LogFormat, SafeStderr};

/// A field's value, recorded as `tracing` records it.
pub enum Value<'a> {
    /// `%value`: text as is; JSON a string.
    Display(&'a dyn std::fmt::Display),
    /// A `&str`: text quoted (`{:?}`); JSON a string.
    Str(&'a str),
    U64(u64),
    Bool(bool),
}

/// The format the fast line is written in, once `serve`'s subscriber allows it.
static FORMAT: OnceLock<LogFormat> = OnceLock::new();

/// Lets [`write_line`] write lines (`logging::init`, when stderr is no terminal).
pub(super) fn enable(format: LogFormat) {
    let _ = FORMAT.set(format);
}

thread_local! {
    static LINE: RefCell<String> = RefCell::new(String::with_capacity(512));
    /// The second the last line was written in, and its timestamp up to the fraction.
    static SECOND: RefCell<(i64, String)> = const { RefCell::new((i64::MIN, String::new())) };
}

/// The time now as `tracing`'s `SystemTime` writes it (`2026-11-30T07:54:05.123456Z`, UTC);
/// the date and time of day formatted once a second per thread, not on every line.
fn timestamp(line: &mut String) {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    let secs = i64::try_from(now.as_secs()).unwrap_or(i64::MAX);
    SECOND.with_borrow_mut(|(at, prefix)| {
        if *at != secs {
            *at = secs;
            prefix.clear();
            second_prefix(prefix, secs);
        }
        line.push_str(prefix);
    });
    let _ = write!(line, "{:06}Z", now.subsec_micros());
}

fn second_prefix(prefix: &mut String, secs: i64) {
    let day = secs.rem_euclid(86_400);
    let (hour, minute, second) = (day / 3_600, day % 3_600 / 60, day % 60);
    let _ = write!(prefix, "{}T{hour:02}:{minute:02}:{second:02}.", crate::clock::utc_day(secs));
}

/// Writes the `INFO` line `message` with `fields` (those with a value, in order) as `serve`'s
/// subscriber would; false when the fast line is off (not `serve`, a terminal, spans that would
/// prefix it): the caller then logs through `tracing`.
pub fn write_line(message: &str, fields: &[(&str, Option<Value<'_>>)]) -> bool {
    let Some(format) = fast_format() else {
        return false;
    };
    LINE.with_borrow_mut(|line| {
        line.clear();
        format_line(line, format, message, fields);
        SafeStderr { json: format == LogFormat::Json, at_once: false }.write_text(line);
    });
    true
}

/// Whether [`write_line`] writes lines: a caller asks before it gathers the fields.
pub fn fast_line_on() -> bool {
    fast_format().is_some()
}

fn fast_format() -> Option<LogFormat> {
    FORMAT.get().copied().filter(|_| !crate::telemetry::enabled())
}

fn format_line(line: &mut String, format: LogFormat, message: &str, fields: &[(&str, Option<Value<'_>>)]) {
    let present = fields.iter().filter_map(|(name, value)| Some((*name, value.as_ref()?)));
    match format {
        LogFormat::Text => {
            timestamp(line);
            let _ = write!(line, "  INFO {message}");
            for (name, value) in present {
                line.push(' ');
                line.push_str(name);
                line.push('=');
                let _ = match value {
                    Value::Display(v) => write!(line, "{v}"),
                    Value::Str(v) => {
                        debug_str(line, v);
                        Ok(())
                    }
                    Value::U64(v) => write!(line, "{v}"),
                    Value::Bool(v) => write!(line, "{v}"),
                };
            }
        }
        LogFormat::Json => {
            line.push_str("{\"timestamp\":\"");
            timestamp(line);
            line.push_str("\",\"level\":\"INFO\",\"message\":");
            json_string(line, message);
            for (name, value) in present {
                line.push(',');
                json_string(line, name);
                line.push(':');
                match value {
                    Value::Display(v) => json_string(line, &v.to_string()),
                    Value::Str(v) => json_string(line, v),
                    Value::U64(v) => {
                        let _ = write!(line, "{v}");
                    }
                    Value::Bool(v) => {
                        let _ = write!(line, "{v}");
                    }
                }
            }
            line.push('}');
        }
    }
    line.push('\n');
}

/// `{s:?}`: quoted, and escaped as `Debug` escapes; a name or an id, printable ASCII with no
/// quote or backslash, is copied as it is (what `Debug` would write).
fn debug_str(line: &mut String, s: &str) {
    if s.bytes().all(|b| matches!(b, b' '..=b'~') && b != b'"' && b != b'\\') {
        line.push('"');
        line.push_str(s);
        line.push('"');
    } else {
        let _ = write!(line, "{s:?}");
    }
}

fn json_string(line: &mut String, s: &str) {
    // serde_json's own escaping, as the JSON formatter uses.
    line.push_str(&serde_json::to_string(s).unwrap_or_else(|_| "\"\"".to_owned()));
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};
    use tracing_subscriber::fmt::MakeWriter;

    #[derive(Clone, Default)]
    struct Capture(Arc<Mutex<Vec<u8>>>);

    impl std::io::Write for Capture {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap_or_else(|p| p.into_inner()).extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    impl<'a> MakeWriter<'a> for Capture {
        type Writer = Self;
        fn make_writer(&'a self) -> Self {
            self.clone()
        }
    }

    /// The line `tracing`'s formatter writes for the same event, configured as `logging::init`.
    fn formatter_line(format: LogFormat, emit: impl FnOnce()) -> String {
        let capture = Capture::default();
        let builder = tracing_subscriber::fmt().with_ansi(false).with_target(false).with_writer(capture.clone());
        match format {
            LogFormat::Json => tracing::subscriber::with_default(builder.json().flatten_event(true).finish(), emit),
            LogFormat::Text => tracing::subscriber::with_default(builder.finish(), emit),
        }
        let bytes = capture.0.lock().unwrap_or_else(|p| p.into_inner()).clone();
        String::from_utf8(bytes).expect("UTF-8")
    }

    /// Our timestamp is the formatter's: the same text up to the second (taken again when the
    /// second turned between the two), then six digits and `Z`.
    #[test]
    fn the_timestamp_is_the_formatter_s() {
        use tracing_subscriber::fmt::format::Writer;
        use tracing_subscriber::fmt::time::{FormatTime, SystemTime};
        let mut prefix = String::new();
        second_prefix(&mut prefix, 1_700_000_000);
        assert_eq!(prefix, "2023-11-14T22:13:20.");
        prefix.clear();
        second_prefix(&mut prefix, 951_868_799);
        assert_eq!(prefix, "2000-02-29T23:59:59.");
        for _ in 0..100 {
            let (mut theirs, mut ours) = (String::new(), String::new());
            SystemTime.format_time(&mut Writer::new(&mut theirs)).unwrap();
            timestamp(&mut ours);
            let (t, o) = (theirs.split_once('.').unwrap(), ours.split_once('.').unwrap());
            if t.0 != o.0 {
                continue; // the second turned between the two
            }
            assert_eq!((o.1.len(), o.1.ends_with('Z')), (t.1.len(), true), "{ours} against {theirs}");
            assert!(o.1[..6].bytes().all(|b| b.is_ascii_digit()), "{ours}");
            return;
        }
        panic!("the second never stayed for two calls");
    }

    /// Everything after the timestamp (the one part that differs between two calls).
    fn after_time(line: &str, format: LogFormat) -> &str {
        match format {
            LogFormat::Text => line.split_once('Z').map_or("", |(_, rest)| rest),
            LogFormat::Json => line.split_once("Z\",").map_or("", |(_, rest)| rest),
        }
    }

    #[test]
    fn the_fast_line_is_the_formatter_s_line() {
        let id = "7b2f6c1e-0d7a-4f1e-9a55-1b7c9d2e3f40";
        let method = http::Method::GET;
        // upstream id, domain, cached, items
        type Case<'a> = (Option<&'a str>, Option<&'a str>, Option<bool>, Option<u64>);
        let cases: [Case<'_>; 4] = [
            (Some("abc-1"), Some("gmail.com"), Some(true), None),
            (None, None, None, Some(3)),
            (Some("quote\"back\\slash\u{7f}é"), Some("xn--bcher-kva.example"), Some(false), Some(0)),
            (Some("it's ~ {plain} `ascii`!"), Some("tab\there\nnew line\u{0}"), None, None),
        ];
        for format in [LogFormat::Text, LogFormat::Json] {
            for (upstream, domain, cached, items) in cases {
                let theirs = formatter_line(format, || {
                    tracing::info!(
                        request_id = %id,
                        upstream_request_id = upstream,
                        method = %method,
                        route = "lookup",
                        status = 200u16,
                        code = Option::<&str>::None,
                        key_id = Some("key_0123456789ab"),
                        domain = domain,
                        cached = cached,
                        items = items,
                        micros = 41u64,
                        "request"
                    );
                });
                let mut ours = String::new();
                let fields = [
                    ("request_id", Some(Value::Display(&id))),
                    ("upstream_request_id", upstream.map(Value::Str)),
                    ("method", Some(Value::Display(&method))),
                    ("route", Some(Value::Str("lookup"))),
                    ("status", Some(Value::U64(200))),
                    ("code", None),
                    ("key_id", Some(Value::Str("key_0123456789ab"))),
                    ("domain", domain.map(Value::Str)),
                    ("cached", cached.map(Value::Bool)),
                    ("items", items.map(Value::U64)),
                    ("micros", Some(Value::U64(41))),
                ];
                format_line(&mut ours, format, "request", &fields);
                assert_eq!(after_time(&ours, format), after_time(&theirs, format), "{format:?}:\n{ours}{theirs}");
                assert!(!after_time(&ours, format).is_empty(), "{ours}");
            }
        }
    }
}
