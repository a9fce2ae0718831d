//! Texts that apps decode again, read again: every `@` an app could end up with is judged.
//!
//! - a string that is itself a JSON text (a stringified `variables`, Apollo's multipart
//!   `operations`, an event payload) is read as JSON, every string in it;
//! - a string with `\u` escapes (a GraphQL string literal, JSON text inside JSON: `\u0040`,
//!   the braced `\u{40}`, surrogate pairs) is read once more with them decoded, so an address
//!   that only appears after the app's decoding is seen;
//! - a string that is valid base64 (proto3's JSON mapping writes every `bytes` field so) is
//!   decoded and read as text, as a protobuf message and, through the text, as JSON.
//!
//! Each decoding is one level deeper; past [`MAX_DEPTH`] a text that would still decode to one
//! with an `@` makes the body unreadable (too complex), never skipped. Every level is no larger
//! than the one above it, so the work is bounded by the depth times the body.

use base64::Engine;
use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};

use super::carried::Domains;
use super::{json, protobuf};

/// Decodings of one text inside another (JSON in base64 in a protobuf `bytes` field in...).
pub const MAX_DEPTH: usize = 16;

/// Shortest base64 text read: `a@b.cc` takes 8 characters.
const MIN_BASE64: usize = 8;

/// Reads `text` at `depth`: its own `@`s, then every text decoded from it. A JSON text is read
/// as JSON alone (every string and key in it but below a secret key: a stringified object's
/// password stays unread).
pub(super) fn text(domains: &mut Domains, text: &str, secret: &[String], depth: usize) {
    let trimmed = text.trim_ascii();
    if depth < MAX_DEPTH && trimmed.starts_with(['{', '[']) {
        let read = json::each_string_of(trimmed.as_bytes(), secret, &mut |s| {
            if domains.spend(1) {
                self::text(domains, s, secret, depth + 1);
            }
        });
        if read {
            return;
        }
    }
    domains.scan(text);
    if depth >= MAX_DEPTH {
        if decodes_to_an_at(text) {
            domains.refuse_too_complex();
        }
        return;
    }
    if text.contains("\\u")
        && let Some(unescaped) = unescape(text)
        && domains.spend(unescaped.len() / 64 + 1)
    {
        self::text(domains, &unescaped, secret, depth + 1);
    }
    if let Some(decoded) = base64_of(trimmed) {
        bytes(domains, &decoded, secret, depth + 1);
    }
}

/// Reads bytes that may be text or a protobuf message: both.
pub(super) fn bytes(domains: &mut Domains, value: &[u8], secret: &[String], depth: usize) {
    bytes_as_text(domains, value, secret, depth);
    if let Some(fields) = protobuf::fields_inside(value)
        && domains.deeper(depth, value)
    {
        protobuf::read_nested(&fields, domains, secret, depth + 1);
    }
}

/// Reads bytes as text: UTF-8 as it is, anything else with its invalid sequences replaced
/// (an app may store a `bytes` field's text whatever its encoding).
pub(super) fn bytes_as_text(domains: &mut Domains, value: &[u8], secret: &[String], depth: usize) {
    if !domains.spend(value.len() / 256 + 1) {
        return;
    }
    match std::str::from_utf8(value) {
        Ok(s) => text(domains, s, secret, depth),
        Err(_) => domains.scan(&String::from_utf8_lossy(value)),
    }
}

/// At the depth bound: whether one more decoding would give an `@`.
fn decodes_to_an_at(text: &str) -> bool {
    let unescaped = text.contains("\\u") && unescape(text).is_some_and(|u| u.contains('@'));
    unescaped || base64_of(text.trim_ascii()).is_some_and(|d| d.contains(&b'@'))
}

/// `text` with its JSON and GraphQL escapes decoded (`\uXXXX` with surrogate pairs, `\u{X…}`,
/// `\"`, `\\`, `\/`, `\b`, `\f`, `\n`, `\r`, `\t`); an escape that is not one stays as it is.
/// `None` when nothing was decoded.
pub fn unescape(text: &str) -> Option<String> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    let mut changed = false;
    while let Some(at) = rest.find('\\') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        let (decoded, used) = match after.as_bytes().first() {
            Some(b'u') => unicode_escape(&after[1..]).map_or((None, 0), |(c, n)| (Some(c), n + 1)),
            Some(&b) => (simple_escape(b), 1),
            None => (None, 0),
        };
        match decoded {
            Some(c) => {
                out.push(c);
                changed = true;
                rest = &after[used..];
            }
            None => {
                out.push('\\');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    changed.then_some(out)
}

fn simple_escape(b: u8) -> Option<char> {
    Some(match b {
        b'"' => '"',
        b'\\' => '\\',
        b'/' => '/',
        b'b' => '\u{8}',
        b'f' => '\u{c}',
        b'n' => '\n',
        b'r' => '\r',
        b't' => '\t',
        _ => return None,
    })
}

/// After `\u`: the character and the length of what encoded it.
fn unicode_escape(s: &str) -> Option<(char, usize)> {
    if let Some(braced) = s.strip_prefix('{') {
        let end = braced.find('}')?;
        let hex = &braced[..end];
        if hex.is_empty() || hex.len() > 8 {
            return None;
        }
        return char::from_u32(u32::from_str_radix(hex, 16).ok()?).map(|c| (c, end + 2));
    }
    let unit = |s: &str| {
        s.get(..4).filter(|h| h.bytes().all(|b| b.is_ascii_hexdigit())).and_then(|h| u32::from_str_radix(h, 16).ok())
    };
    let first = unit(s)?;
    if (0xD800..0xDC00).contains(&first) {
        let low = s.get(4..6).filter(|p| *p == "\\u").and_then(|_| unit(&s[6..]))?;
        if !(0xDC00..0xE000).contains(&low) {
            return None;
        }
        let c = char::from_u32(0x10000 + ((first - 0xD800) << 10) + (low - 0xDC00))?;
        return Some((c, 10));
    }
    char::from_u32(first).map(|c| (c, 4))
}

/// The bytes a base64 text stands for (standard or URL-safe alphabet, padded or not), when it
/// is one of at least [`MIN_BASE64`] characters.
fn base64_of(text: &str) -> Option<Vec<u8>> {
    const INDIFFERENT: GeneralPurposeConfig = GeneralPurposeConfig::new()
        .with_decode_padding_mode(DecodePaddingMode::Indifferent)
        .with_decode_allow_trailing_bits(true);
    const STANDARD: GeneralPurpose = GeneralPurpose::new(&base64::alphabet::STANDARD, INDIFFERENT);
    const URL_SAFE: GeneralPurpose = GeneralPurpose::new(&base64::alphabet::URL_SAFE, INDIFFERENT);
    if text.len() < MIN_BASE64 {
        return None;
    }
    let body = text.trim_end_matches('=');
    if text.len() - body.len() > 2
        || !body.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'-' | b'_'))
    {
        return None;
    }
    let engine = if body.contains(['-', '_']) { URL_SAFE } else { STANDARD };
    engine.decode(text).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(t: &str) -> Vec<String> {
        let mut d = Domains::default();
        text(&mut d, t, &["password".to_owned()], 0);
        d.as_slice().iter().map(|n| n.domain.to_string()).collect()
    }

    fn b64(s: &[u8]) -> String {
        base64::engine::general_purpose::STANDARD.encode(s)
    }

    #[test]
    fn escapes_are_decoded() {
        assert_eq!(names(r"bob\u0040mailinator.com"), ["mailinator.com"]);
        assert_eq!(names(r"bob\u{40}mailinator.com"), ["mailinator.com"]);
        assert_eq!(
            names(r"mutation { signUp(email: \u0022bob\u{0040}mailinator\u002ecom\u0022) }"),
            ["mailinator.com"]
        );
        assert_eq!(names(r"bob@\u006dailinator.com"), ["mailinator.com"]);
        assert_eq!(unescape(r"\ud83d\ude00 \q \u12"), Some("😀 \\q \\u12".to_owned()));
        assert_eq!(unescape("plain"), None);
    }

    #[test]
    fn json_inside_text() {
        assert_eq!(names(r#"{"input":{"email":"bob@mailinator.com"}}"#), ["mailinator.com"]);
        assert_eq!(names(r#"[{"query":"mutation { signUp(email: \"bob\\u0040yopmail.com\") }"}]"#), ["yopmail.com"]);
        assert!(names(r#"{"password":"x@mailinator.com"}"#).is_empty(), "secret keys stay secret");
    }

    #[test]
    fn base64_is_decoded_as_text_json_and_message() {
        assert_eq!(names(&b64(b"bob@mailinator.com")), ["mailinator.com"]);
        assert_eq!(names(&b64(br#"{"owner":"bob@yopmail.com"}"#)), ["yopmail.com"]);
        let message = protobuf::tests::string_field(1, b"bob@mailinator.com");
        assert_eq!(names(&b64(&message)), ["mailinator.com"]);
        let url_safe = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(b"\xfb\xffbob@mailinator.com");
        assert_eq!(names(&url_safe), ["mailinator.com"]);
        assert!(names("Password1").is_empty());
    }

    #[test]
    fn past_the_depth_an_at_is_refused() {
        let mut t = "bob@mailinator.com".to_owned();
        for _ in 0..MAX_DEPTH + 1 {
            t = b64(t.as_bytes());
        }
        let mut d = Domains::default();
        text(&mut d, &t, &[], 0);
        assert!(d.refused().is_some());
        let mut fine = "bob@mailinator.com".to_owned();
        for _ in 0..MAX_DEPTH - 1 {
            fine = b64(fine.as_bytes());
        }
        let mut d = Domains::default();
        text(&mut d, &fine, &[], 0);
        assert_eq!((d.refused(), d.as_slice().len()), (None, 1));
    }
}
