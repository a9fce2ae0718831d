//! Logs to stderr through `tracing`; Pingora's `log` records are bridged in.
//!
//! Every line, whoever wrote it (our code, Pingora, hickory, a panic message), passes
//! [`redact`] and a length bound on its way out ([`SafeStderr`]): our own lines never carry a
//! key, token or email by construction, but a library may log raw request bytes, and a log is
//! read by more people than the admin token is. A library's log statement writes at most ten
//! lines a second ([`quiet`]). Request lines reach stderr through a queue and a writer thread,
//! warnings and errors at once ([`writer`]); [`flush`] before the process ends.

mod access;
mod quiet;
mod writer;

pub use access::{Value, fast_line_on, write_line};
pub use writer::flush;

use std::borrow::Cow;
use std::io::Write;
use std::sync::{LazyLock, OnceLock};

use regex::{Captures, Regex};
use tracing_subscriber::EnvFilter;
use tracing_subscriber::fmt::MakeWriter;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

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
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let builder = tracing_subscriber::fmt().with_env_filter(filter).with_ansi(ansi).with_target(false);
    let json = format == LogFormat::Json;
    writer::start();
    if !ansi {
        access::enable(format);
    }
    let quiet = quiet::Quiet::new(json);
    let _ = match format {
        LogFormat::Json => {
            builder.json().flatten_event(true).with_writer(SafeStderr::new(json)).finish().with(quiet).try_init()
        }
        LogFormat::Text => builder.with_writer(SafeStderr::new(json)).finish().with(quiet).try_init(),
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

/// Words one of [`PATTERN`]'s alternatives needs, in any ASCII case: `ev_` (a key), the
/// schemes, the credential headers (`proxy-authorization` and `set-cookie` contain two of
/// them). The other alternatives need a byte that [`may_match`] stops at by itself.
const WORDS: [&[u8]; 7] =
    [b"ev_", b"bearer", b"basic", b"authorization", b"cookie", b"x-email-verdict-key", b"x-api-key"];

/// What [`may_match`] makes of each byte.
const STOP: u8 = 1;
const WORD_START: u8 = 2;
static CLASSES: [u8; 256] = {
    let mut classes = [0; 256];
    let mut b = 0;
    while b < 256 {
        let c = b as u8;
        if !c.is_ascii() || matches!(c, b'@' | b'%' | b'?' | b'&' | b';') {
            classes[b] = STOP;
        }
        b += 1;
    }
    let mut w = 0;
    while w < WORDS.len() {
        classes[WORDS[w][0] as usize] = WORD_START;
        classes[WORDS[w][0].to_ascii_uppercase() as usize] = WORD_START;
        w += 1;
    }
    classes
};

/// False only when [`PATTERN`] cannot match `line`: most lines (a request's line among them)
/// then skip the regex, whose alternatives have no literal the regex could search for first.
/// Derived from the pattern: a query parameter needs `?`, `&`, `;` or `%` (`%3f`, `%26`), URL
/// user-info and an email `@`, `%` (`%40`, `%2540`) or the full-width `＠`; what remains needs
/// one of [`WORDS`] after a word boundary (`\b`: in ASCII, not after a letter, digit or `_`).
/// A non-ASCII byte always runs the regex, since `(?i)` folds some non-ASCII letters onto ASCII
/// ones (the Kelvin sign onto `k`, `ſ` onto `s`) and `\b` counts non-ASCII letters. One pass
/// and a table: an automaton over the words cost as much as the regex it spared, and trying the
/// words inside words too was 2 % of the API threads (the request line is full of `a`, `c`, `e`).
fn may_match(line: &str) -> bool {
    let bytes = line.as_bytes();
    bytes.iter().enumerate().any(|(i, &b)| match CLASSES[usize::from(b)] {
        STOP => true,
        WORD_START => {
            let boundary = i == 0 || !(bytes[i - 1].is_ascii_alphanumeric() || bytes[i - 1] == b'_');
            boundary && WORDS.iter().any(|w| bytes[i..].get(..w.len()).is_some_and(|s| s.eq_ignore_ascii_case(w)))
        }
        _ => false,
    })
}

/// `line` with every secret and email replaced by a marker (borrowed when there was none).
pub fn redact(line: &str) -> Cow<'_, str> {
    let mut out = if may_match(line) { redact_patterns(line) } else { Cow::Borrowed(line) };
    for secret in SECRETS.get().into_iter().flatten() {
        if out.contains(secret.as_str()) {
            out = Cow::Owned(out.replace(secret.as_str(), "[redacted]"));
        }
    }
    out
}

/// Every match of [`PATTERN`] in `line` replaced by its marker.
fn redact_patterns(line: &str) -> Cow<'_, str> {
    PATTERN.replace_all(line, |c: &Captures<'_>| {
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
    })
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

/// Standard error, through [`redact`] and [`bounded`]: a warning or an error at once, other
/// lines through the writer thread ([`writer`]). The formatter hands over each record in one
/// `write_all`, so a record is redacted whole.
#[derive(Clone, Copy)]
struct SafeStderr {
    json: bool,
    at_once: bool,
}

impl SafeStderr {
    fn new(json: bool) -> Self {
        Self { json, at_once: true }
    }

    /// Writes `text`, redacted and bounded: [`Write::write`] for a line known to be text.
    pub(crate) fn write_text(&self, text: &str) {
        let clean = redact(text);
        let line = bounded(&clean, self.json);
        if self.at_once {
            writer::write_now(line.as_bytes());
        } else {
            writer::queue_line(line.as_bytes());
        }
    }
}

impl<'a> MakeWriter<'a> for SafeStderr {
    type Writer = Self;
    fn make_writer(&'a self) -> Self::Writer {
        *self
    }

    fn make_writer_for(&'a self, meta: &tracing::Metadata<'_>) -> Self::Writer {
        Self { json: self.json, at_once: *meta.level() <= tracing::Level::WARN }
    }
}

impl Write for SafeStderr {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.write_text(&String::from_utf8_lossy(buf));
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(input: &str, want: &str) {
        assert_eq!(redact(input), want, "input: {input}");
        assert!(may_match(input), "the prefilter skips a line the pattern redacts: {input}");
    }

    /// Pieces of lines: every word and byte the pattern needs, near misses, the non-ASCII
    /// letters `(?i)` folds onto ASCII ones, and what ordinary log lines are made of.
    const PIECES: &[&str] = &[
        "ev_",
        "EV_a1",
        "Ev_x-y",
        "e",
        "v",
        "_",
        "ev",
        "ev-",
        "e v_",
        "bearer ",
        "Bearer",
        "BASIC ",
        "basic\t",
        "beare",
        "basi",
        "b",
        "a",
        "s",
        "i",
        "c",
        "k",
        "y",
        "authorization",
        "Authorization: ",
        "authorizatio",
        "proxy-authorization=",
        "cookie",
        "Set-Cookie: a=b",
        "cooki",
        "x-email-verdict-key",
        "x-email-verdict-ke",
        "X-API-KEY:",
        "x-api-ke",
        "x-",
        "-",
        "?key=",
        "&token=",
        ";session=",
        "%3Fpassword=",
        "%26email=",
        "api_key=",
        "key=",
        "email=",
        "://",
        "user:pw@",
        "@",
        "%40",
        "%2540",
        "%",
        "?",
        "&",
        ";",
        "\u{ff20}",
        "\u{212a}ey=",
        "\u{17f}ession=",
        "bearer\u{a0}",
        "\u{e9}",
        "\u{65e5}",
        "bob",
        "example.com",
        "a.b",
        " ",
        "\t",
        "\"",
        "\\",
        "=",
        ":",
        ",",
        "/",
        "<",
        ">",
        "'",
        "(",
        ")",
        "[",
        "]",
        "#",
        "\r\n",
        "\\r\\n",
        "request_id=7b2f",
        "key_id=key_0123",
        "domain=gmail.com",
        "cached=true",
        "INFO",
        "micros=41",
        "{\"level\":\"INFO\"",
    ];

    /// A small deterministic generator (xorshift64), so a failure names a line that fails again.
    struct Lines(u64);

    impl Lines {
        fn below(&mut self, n: usize) -> usize {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            (self.0 % n as u64) as usize
        }

        /// Up to 12 pieces, or (one line in four) up to 60 characters drawn one by one.
        fn next_line(&mut self) -> String {
            if self.below(4) == 0 {
                let chars: Vec<char> =
                    "ev_bearsickotuhznx-pylm@%?&;:=/ \t\"\\.,\u{212a}\u{17f}\u{ff20}".chars().collect();
                return (0..self.below(60)).map(|_| chars[self.below(chars.len())]).collect();
            }
            (0..=self.below(12)).map(|_| PIECES[self.below(PIECES.len())]).collect()
        }
    }

    /// The prefilter never skips a line the pattern would change: the same output with it and
    /// without it, over many generated lines, and it does skip ordinary lines.
    #[test]
    fn the_prefilter_skips_only_lines_the_pattern_leaves_alone() {
        let mut lines = Lines(0x9e37_79b9_7f4a_7c15);
        let (mut skipped, mut redacted) = (0, 0);
        for _ in 0..200_000 {
            let line = lines.next_line();
            let alone = redact_patterns(&line);
            let with_prefilter = if may_match(&line) { redact_patterns(&line) } else { Cow::Borrowed(line.as_str()) };
            assert_eq!(with_prefilter, alone, "line: {line:?}");
            skipped += usize::from(!may_match(&line));
            redacted += usize::from(matches!(alone, Cow::Owned(_)));
        }
        // Both sides of the prefilter were exercised.
        assert!(skipped > 20_000 && redacted > 20_000, "skipped {skipped}, redacted {redacted}");
        let request = "2026-11-29T15:00:00.000000Z  INFO request request_id=7b2f6c1e-0d7a-4f1e-9a55-1b7c9d2e3f40 method=GET route=\"lookup\" status=200 key_id=\"key_0123456789ab\" domain=\"gmail.com\" cached=true micros=41";
        assert!(!may_match(request));
        let json = r#"{"timestamp":"2026-11-29T15:00:00.000000Z","level":"INFO","message":"request","request_id":"7b2f","method":"GET","route":"lookup","status":200,"key_id":"key_0123456789ab","domain":"gmail.com","cached":true,"micros":41}"#;
        assert!(!may_match(json));
        // A word counts only after a word boundary, as `\b` has it.
        for (line, boundary) in [
            ("xev_abc", false),
            ("_bearer abc", false),
            ("9basic abc", false),
            ("-ev_abc", true),
            ("Ev_abc", true),
            ("proxy-authorization: x", true),
            ("set-cookie=x", true),
            ("\"bearer abc", true),
            ("x-api-key: y", true),
        ] {
            assert_eq!((may_match(line), PATTERN.is_match(line)), (boundary, boundary), "{line:?}");
        }
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
