//! Logs to stderr through `tracing`; Pingora's `log` records are bridged in.
//!
//! Every line, whoever wrote it (our code, Pingora, hickory, a panic message), passes
//! [`redact`] and a length bound on its way out ([`SafeStderr`]): our own lines never carry a
//! key, token or email by construction, but a library may log raw request bytes, and a log is
//! read by more people than the admin token is.

use std::borrow::Cow;
use std::io::Write;
use std::sync::{LazyLock, OnceLock};

use regex::{Captures, Regex};
use tracing_subscriber::EnvFilter;
use tracing_subscriber::fmt::MakeWriter;

/// Longest line written; a longer one is cut (text) or replaced by a notice (JSON, which a cut
/// would make unparseable).
pub const MAX_LINE: usize = 4096;

/// How log lines are written (`--log-format`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    Text,
    Json,
}

/// `RUST_LOG` adds to the default `info`. Pingora's HTTP app is pinned at `info`: at `trace` it
/// prints whole request headers (the API key among them) before our code runs, and at `debug`
/// it logs several lines per request.
pub fn init(format: LogFormat) {
    let base = std::env::var("RUST_LOG").unwrap_or_else(|_| "info".into());
    let filter = EnvFilter::try_new(format!("{base},pingora_core::apps=info"))
        .unwrap_or_else(|_| EnvFilter::new("info,pingora_core::apps=info"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_target(false);
    let _ = match format {
        LogFormat::Json => builder.json().flatten_event(true).with_writer(SafeStderr { json: true }).try_init(),
        LogFormat::Text => builder.with_writer(SafeStderr { json: false }).try_init(),
    };
}

/// Secrets known by value (the admin token): redacted wherever they appear, even where no
/// pattern of [`redact`] would recognise them. Set once, before serving.
pub fn register_secrets(secrets: Vec<String>) {
    let _ = SECRETS.set(secrets.into_iter().filter(|s| s.len() >= 8).collect());
}

static SECRETS: OnceLock<Vec<String>> = OnceLock::new();

/// Keys (`ev_…`), credentials after `Bearer`/`Basic` or in a credential-carrying header or query
/// parameter, URL user-info, and anything shaped like an email address (also `%40` and the
/// full-width `＠`), each replaced by a marker.
static PATTERN: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(concat!(
        r"(?i)(?P<key>\bev_[0-9a-z_-]+)",
        r"|(?P<scheme>\b(?:bearer|basic)\s+)[^\s\x22\\,;]+",
        r"|(?P<header>\b(?:authorization|proxy-authorization|cookie|set-cookie|x-email-verdict-key|x-api-key)\x22?\s*[:=]\s*)[^\r\n\x22\\]*",
        r"|(?P<param>(?:[?&;]|%3f|%26)(?:key|token|api_key|session|password|email)=)[^&\s\x22\\#]*",
        r"|(?P<userinfo>://)[^/@\s\x22]+@",
        r"|[^\s\x22'<>\\/@,;:()\[\]=]+(?:@|%40|%2540|＠)[^\s\x22'<>\\/@,;()\[\]]+",
    ))
    .expect("the redaction pattern is valid")
});

/// `line` with every secret and email replaced by a marker (borrowed when there was none).
pub fn redact(line: &str) -> Cow<'_, str> {
    let mut out = PATTERN.replace_all(line, |c: &Captures<'_>| {
        for (group, marker) in [("key", "ev_[redacted]"), ("scheme", "[redacted]"), ("header", "[redacted]")] {
            if c.name(group).is_some() {
                return match group {
                    "key" => marker.to_owned(),
                    _ => format!("{}{marker}", &c[group]),
                };
            }
        }
        if let Some(param) = c.name("param") {
            return format!("{}[redacted]", param.as_str());
        }
        if c.name("userinfo").is_some() {
            return "://[redacted]@".to_owned();
        }
        "[email]".to_owned()
    });
    for secret in SECRETS.get().into_iter().flatten() {
        if out.contains(secret.as_str()) {
            out = Cow::Owned(out.replace(secret.as_str(), "[redacted]"));
        }
    }
    out
}

/// `line` (one formatted record, ending in a newline) bounded to [`MAX_LINE`] bytes.
fn bounded(line: &str, json: bool) -> Cow<'_, str> {
    if line.len() <= MAX_LINE {
        return Cow::Borrowed(line);
    }
    if json {
        let notice = serde_json::json!({
            "level": "WARN",
            "message": "log line too long: dropped",
            "bytes": line.len(),
        });
        return Cow::Owned(format!("{notice}\n"));
    }
    let mut cut = MAX_LINE - 64;
    while !line.is_char_boundary(cut) {
        cut -= 1;
    }
    Cow::Owned(format!("{} [cut: {} bytes]\n", &line[..cut], line.len()))
}

/// Standard error, through [`redact`] and [`bounded`]. The formatter hands over each record in
/// one `write_all`, so a record is redacted whole.
#[derive(Clone, Copy)]
struct SafeStderr {
    json: bool,
}

impl<'a> MakeWriter<'a> for SafeStderr {
    type Writer = Self;
    fn make_writer(&'a self) -> Self::Writer {
        *self
    }
}

impl Write for SafeStderr {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let text = String::from_utf8_lossy(buf);
        let clean = redact(&text);
        std::io::stderr().lock().write_all(bounded(&clean, self.json).as_bytes())?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        std::io::stderr().flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(input: &str, want: &str) {
        assert_eq!(redact(input), want, "input: {input}");
    }

    #[test]
    fn secrets_and_emails_are_redacted() {
        let key = format!("ev_{}", "a1".repeat(20));
        check(&format!("GET /api/v1/domain/x?key={key} HTTP/1.1"), "GET /api/v1/domain/x?key=[redacted] HTTP/1.1");
        check(
            &format!("buf: \"Authorization: Bearer {key}\\r\\nHost: x\""),
            "buf: \"Authorization: [redacted]\\r\\nHost: x\"",
        );
        check("authorization=Bearer sekrit-admin-token", "authorization=[redacted]");
        check("x Bearer sekrit-admin-token y", "x Bearer [redacted] y");
        check("Cookie: ev_session=abc; other=1\\r\\n", "Cookie: [redacted]\\r\\n");
        check("x-email-verdict-key: whatever\\r\\n", "x-email-verdict-key: [redacted]\\r\\n");
        check("/api/v1/domain/ann%40example.com", "/api/v1/domain/[email]");
        check("/en/domain/ann@example.com", "/en/domain/[email]");
        check("John.Doe＠example.com", "[email]");
        check("redis://user:pw@10.0.0.1:6379", "redis://[redacted]@10.0.0.1:6379");
        check("GET /x?email=bob%2Bx@example.com&y=1", "GET /x?email=[redacted]&y=1");
        check(&format!("leaked {key} here"), "leaked ev_[redacted] here");
    }

    #[test]
    fn ordinary_lines_are_kept_borrowed() {
        let line = "INFO request request_id=7b2f method=GET route=lookup status=200 key_id=key_0123456789ab domain=gmail.com cached=true micros=41";
        assert!(matches!(redact(line), Cow::Borrowed(_)));
    }

    #[test]
    fn long_lines_are_bounded() {
        let long = format!("{}\n", "é".repeat(MAX_LINE));
        let text = bounded(&long, false);
        assert!(text.len() <= MAX_LINE && text.ends_with("bytes]\n"));
        let json = bounded(&long, true);
        assert!(serde_json::from_str::<serde_json::Value>(json.trim_end()).is_ok());
        assert!(matches!(bounded("short\n", false), Cow::Borrowed(_)));
    }
}
