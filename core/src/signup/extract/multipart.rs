//! A small, bounded, strict `multipart/form-data` reader (RFC 7578 / RFC 2046): just enough to
//! find the value of a named field, and to say so when the body cannot be read in full.
//!
//! Lenient where clients legitimately differ: bare LF line ends as well as CRLF, a preamble and
//! an epilogue, transport padding after a delimiter, folded header lines (unfolded), RFC 8187
//! `name*=utf-8''...` (percent-decoded). Everything else that would make the filter see a
//! different set of fields than an app is an error, never "fewer fields": a body without a
//! closing delimiter, more than [`MAX_PARTS`] parts, a part with more than [`MAX_HEADERS`] header
//! lines or headers that never end, a part whose name is given two different ways, RFC 2231
//! continuations (`name*0=`). A line that merely starts with the boundary is content (or
//! preamble), not a delimiter: a delimiter line is `--boundary`, optionally `--`, then only
//! spaces or tabs. Work is linear in the body: delimiters are searched only at line starts.
//! Never panics.

use super::{Unreadable, parse_params};

/// More parts than any signup form has; a body with more is unreadable.
pub const MAX_PARTS: usize = 256;
/// Header lines per part (folded lines count); a part with more makes the body unreadable.
pub const MAX_HEADERS: usize = 32;
/// RFC 2046 allows 70; some clients send longer.
const MAX_BOUNDARY: usize = 200;

/// One part: its `Content-Disposition` name and its content.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Part<'a> {
    pub name: Option<String>,
    pub value: &'a [u8],
    /// A `Content-Transfer-Encoding` other than 7bit/8bit/binary, or a `charset` other than
    /// UTF-8/US-ASCII: an app may decode the value into something the filter cannot see.
    pub encoded: bool,
}

pub fn valid_boundary(boundary: &str) -> bool {
    !boundary.is_empty() && boundary.len() <= MAX_BOUNDARY && boundary.bytes().all(|b| (0x20..0x7f).contains(&b))
}

/// Every part of `body`, in order, or why the body cannot be read in full.
pub fn parts<'a>(body: &'a [u8], boundary: &str) -> Result<Vec<Part<'a>>, Unreadable> {
    if !valid_boundary(boundary) {
        return Err(Unreadable::Malformed);
    }
    let delimiter = [b"--", boundary.as_bytes()].concat();
    let mut next = find_delimiter(body, &delimiter, 0).ok_or(Unreadable::Malformed)?;
    let mut out = Vec::new();
    loop {
        let Delimiter::Open { after } = next.kind else {
            return Ok(out); // the close delimiter; the epilogue is ignored
        };
        if out.len() == MAX_PARTS {
            return Err(Unreadable::TooComplex);
        }
        let headers = read_headers(body, after)?;
        let following = find_delimiter(body, &delimiter, headers.content_start).ok_or(Unreadable::Malformed)?;
        let end = strip_line_break(body, following.start).max(headers.content_start);
        let value = body.get(headers.content_start..end).unwrap_or_default();
        out.push(Part { name: headers.name, value, encoded: headers.encoded });
        next = following;
    }
}

/// A delimiter line: where it starts and, for an open one, where the next line starts.
#[derive(Debug, Clone, Copy)]
struct Found {
    start: usize,
    kind: Delimiter,
}

#[derive(Debug, Clone, Copy)]
enum Delimiter {
    Open { after: usize },
    Close,
}

/// The next delimiter line at or after `from` (a line start).
fn find_delimiter(body: &[u8], delimiter: &[u8], from: usize) -> Option<Found> {
    let mut line = from;
    loop {
        if let Some(kind) = delimiter_at(body, delimiter, line) {
            return Some(Found { start: line, kind });
        }
        line = line + body.get(line..)?.iter().position(|&b| b == b'\n')? + 1;
    }
}

/// Whether the line starting at `at` is a delimiter line, and which.
fn delimiter_at(body: &[u8], delimiter: &[u8], at: usize) -> Option<Delimiter> {
    let rest = body.get(at..)?.strip_prefix(delimiter)?;
    let (close, rest) = match rest.strip_prefix(b"--") {
        Some(r) => (true, r),
        None => (false, rest),
    };
    let padding = rest.iter().take_while(|&&b| b == b' ' || b == b'\t').count();
    let rest = &rest[padding..];
    let line_break = if rest.starts_with(b"\r\n") {
        2
    } else if rest.starts_with(b"\n") {
        1
    } else if rest.is_empty() {
        0
    } else {
        return None; // the boundary followed by anything else: content, not a delimiter
    };
    if close {
        return Some(Delimiter::Close);
    }
    // An open delimiter at the very end of the body: no headers follow, handled as unreadable.
    let after = body.len() - rest.len() + line_break;
    (line_break > 0).then_some(Delimiter::Open { after })
}

/// What a part's headers say.
struct Headers {
    name: Option<String>,
    encoded: bool,
    content_start: usize,
}

/// Reads part headers from `start` to the blank line, unfolding continuation lines.
fn read_headers(body: &[u8], start: usize) -> Result<Headers, Unreadable> {
    let mut fields: Vec<String> = Vec::new();
    let mut pos = start;
    for _ in 0..=MAX_HEADERS {
        let end = line_end(body, pos).ok_or(Unreadable::Malformed)?;
        let line = &body[pos..end];
        pos = next_line(body, end);
        if line.is_empty() {
            return interpret(&fields, pos);
        }
        let text = String::from_utf8_lossy(line);
        if line[0] == b' ' || line[0] == b'\t' {
            let last = fields.last_mut().ok_or(Unreadable::Malformed)?;
            last.push(' ');
            last.push_str(text.trim());
        } else {
            fields.push(text.into_owned());
        }
    }
    Err(Unreadable::TooComplex)
}

fn interpret(fields: &[String], content_start: usize) -> Result<Headers, Unreadable> {
    let mut names: Vec<String> = Vec::new();
    let mut encoded = false;
    for field in fields {
        let Some((header, value)) = field.split_once(':') else {
            return Err(Unreadable::Malformed);
        };
        let header = header.trim().to_ascii_lowercase();
        match header.as_str() {
            "content-disposition" => names.extend(disposition_names(value)?),
            "content-transfer-encoding" => {
                encoded |= !matches!(value.trim().to_ascii_lowercase().as_str(), "7bit" | "8bit" | "binary")
            }
            "content-type" => encoded |= parse_params(value).iter().any(|(k, v)| k == "charset" && !is_utf8(v)),
            _ => {}
        }
    }
    names.dedup();
    if names.len() > 1 {
        return Err(Unreadable::Ambiguous); // apps differ on which name wins
    }
    Ok(Headers { name: names.pop(), encoded, content_start })
}

fn is_utf8(charset: &str) -> bool {
    matches!(charset.trim().to_ascii_lowercase().as_str(), "utf-8" | "utf8" | "us-ascii")
}

/// Every name a `Content-Disposition` value gives: `name` and RFC 8187 `name*`.
fn disposition_names(value: &str) -> Result<Vec<String>, Unreadable> {
    let mut names = Vec::new();
    for (key, v) in parse_params(value) {
        match key.as_str() {
            "name" => names.push(v),
            "name*" => names.push(ext_value(&v)?),
            k if k.starts_with("name*") => return Err(Unreadable::Ambiguous), // RFC 2231 continuations
            _ => {}
        }
    }
    Ok(names)
}

/// RFC 8187 `charset'language'percent-encoded`, in UTF-8 or ISO-8859-1.
fn ext_value(v: &str) -> Result<String, Unreadable> {
    let mut pieces = v.splitn(3, '\'');
    let (Some(charset), Some(_language), Some(encoded)) = (pieces.next(), pieces.next(), pieces.next()) else {
        return Err(Unreadable::Malformed);
    };
    let bytes = percent_decode(encoded.as_bytes()).ok_or(Unreadable::Malformed)?;
    match charset.to_ascii_lowercase().as_str() {
        "utf-8" => String::from_utf8(bytes).map_err(|_| Unreadable::Encoded),
        "iso-8859-1" => Ok(bytes.iter().map(|&b| char::from(b)).collect()),
        _ => Err(Unreadable::Encoded),
    }
}

/// Strict: a `%` must be followed by two hex digits.
fn percent_decode(bytes: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = std::str::from_utf8(bytes.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    Some(out)
}

/// Index of the `\n` (or of a `\r` just before it) ending the line that starts at `from`.
fn line_end(body: &[u8], from: usize) -> Option<usize> {
    let nl = from + body.get(from..)?.iter().position(|&b| b == b'\n')?;
    Some(if nl > from && body[nl - 1] == b'\r' { nl - 1 } else { nl })
}

/// Start of the next line, given the end found by `line_end`.
fn next_line(body: &[u8], end: usize) -> usize {
    if body.get(end) == Some(&b'\r') { end + 2 } else { end + 1 }
}

/// Where content ends before a delimiter at `at`: its CRLF (or LF) is the delimiter's.
fn strip_line_break(body: &[u8], at: usize) -> usize {
    let mut end = at;
    if end > 0 && body.get(end - 1) == Some(&b'\n') {
        end -= 1;
        if end > 0 && body.get(end - 1) == Some(&b'\r') {
            end -= 1;
        }
    }
    end
}

#[cfg(test)]
mod tests {
    use super::*;

    type Expected<'a> = Result<&'a [(Option<&'a str>, &'a str)], Unreadable>;

    fn check(body: &str, expected: Expected<'_>) {
        let got = parts(body.as_bytes(), "XyZ").map(|parts| {
            parts.iter().map(|p| (p.name.clone(), String::from_utf8(p.value.to_vec()).unwrap())).collect::<Vec<_>>()
        });
        let expected = expected
            .map(|parts| parts.iter().map(|(n, v)| (n.map(str::to_owned), (*v).to_owned())).collect::<Vec<_>>());
        assert_eq!(got, expected, "body {body:?}");
    }

    #[test]
    fn well_formed_bodies() {
        let cases: &[(&str, Expected<'_>)] = &[
            (
                "--XyZ\r\nContent-Disposition: form-data; name=\"email\"\r\n\r\na@b.example\r\n--XyZ--\r\n",
                Ok(&[(Some("email"), "a@b.example")]),
            ),
            (
                "--XyZ\r\nContent-Disposition: form-data; name=\"user\"\r\n\r\nann\r\n\
                 --XyZ\r\ncontent-disposition: FORM-DATA; NAME=email\r\nContent-Type: text/plain\r\n\r\na@b.example\r\n--XyZ--",
                Ok(&[(Some("user"), "ann"), (Some("email"), "a@b.example")]),
            ),
            // Preamble, transport padding, epilogue.
            (
                "preamble\r\n--XyZ  \r\nContent-Disposition: form-data; name=\"email\"\r\n\r\nx@y.example\r\n--XyZ-- \r\nepilogue",
                Ok(&[(Some("email"), "x@y.example")]),
            ),
            // Bare LF line ends.
            (
                "--XyZ\nContent-Disposition: form-data; name=\"email\"\n\nx@y.example\n--XyZ--\n",
                Ok(&[(Some("email"), "x@y.example")]),
            ),
            // Quoted names with ';' and escapes; a file part; an empty value.
            (
                "--XyZ\r\nContent-Disposition: form-data; name=\"a;b\\\"c\"; filename=\"f;.txt\"\r\n\r\nfile\r\n\
                 --XyZ\r\nContent-Disposition: form-data; name=\"empty\"\r\n\r\n\r\n--XyZ--",
                Ok(&[(Some("a;b\"c"), "file"), (Some("empty"), "")]),
            ),
            // Content holding the boundary text not at a line start, and CRLFs.
            (
                "--XyZ\r\nContent-Disposition: form-data; name=\"t\"\r\n\r\nx--XyZ\r\nline2\r\n--XyZ--",
                Ok(&[(Some("t"), "x--XyZ\r\nline2")]),
            ),
            // A line that merely starts with the boundary is content, in a part or the preamble.
            (
                "--XyZ\r\nContent-Disposition: form-data; name=\"t\"\r\n\r\n--XyZx\r\n--XyZ--",
                Ok(&[(Some("t"), "--XyZx")]),
            ),
            (
                "--XyZ junk\r\n--XyZ\r\nContent-Disposition: form-data; name=\"email\"\r\n\r\nv\r\n--XyZ--",
                Ok(&[(Some("email"), "v")]),
            ),
            // Only a preamble (its first line merely starts with the boundary), then the close.
            ("--XyZ junk\r\nContent-Disposition: form-data; name=\"email\"\r\n\r\nv\r\n--XyZ--", Ok(&[])),
            // No Content-Disposition.
            ("--XyZ\r\nContent-Type: text/plain\r\n\r\nv\r\n--XyZ--", Ok(&[(None, "v")])),
            // Empty part whose blank line runs straight into the delimiter; no parts at all.
            ("--XyZ\r\nContent-Disposition: form-data; name=\"e\"\r\n\r\n--XyZ--", Ok(&[(Some("e"), "")])),
            ("--XyZ--", Ok(&[])),
            // A delimiter with a different boundary is content.
            (
                "--XyZ\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\n--Other\r\n--XyZ--",
                Ok(&[(Some("a"), "--Other")]),
            ),
            // Folded header, RFC 8187 ext-value (also beside an equal plain name).
            (
                "--XyZ\r\nContent-Disposition: form-data;\r\n name=\"email\"\r\n\r\nv\r\n--XyZ--",
                Ok(&[(Some("email"), "v")]),
            ),
            (
                "--XyZ\r\nContent-Disposition: form-data; name*=UTF-8''%65mail\r\n\r\nv\r\n--XyZ--",
                Ok(&[(Some("email"), "v")]),
            ),
            (
                "--XyZ\r\nContent-Disposition: form-data; name=\"email\"; name*=utf-8'en'email\r\n\r\nv\r\n--XyZ--",
                Ok(&[(Some("email"), "v")]),
            ),
            (
                "--XyZ\r\nContent-Disposition: form-data; name*=iso-8859-1''caf%E9\r\n\r\nv\r\n--XyZ--",
                Ok(&[(Some("café"), "v")]),
            ),
        ];
        for (body, expected) in cases {
            check(body, *expected);
        }
    }

    #[test]
    fn bodies_that_cannot_be_read_in_full_are_errors() {
        use Unreadable::*;
        let cases: &[(&str, Unreadable)] = &[
            ("", Malformed),
            ("no delimiter at all", Malformed),
            ("--XyZ", Malformed),
            ("--XyZ\r\n", Malformed),
            // Headers never end.
            ("--XyZ\r\nContent-Disposition: form-data; name=\"email\"\r\n", Malformed),
            // No close delimiter.
            ("--XyZ\r\nContent-Disposition: form-data; name=\"email\"\r\n\r\nx@y.example\r\n", Malformed),
            ("--XyZ\r\nContent-Disposition: form-data; name=\"email\"\r\n\r\nx@y.example\r\n--XyZ", Malformed),
            // A header line without a colon; a continuation line first.
            ("--XyZ\r\nnot a header\r\n\r\nv\r\n--XyZ--", Malformed),
            ("--XyZ\r\n name=\"email\"\r\n\r\nv\r\n--XyZ--", Malformed),
            // Two different names for one part.
            (
                "--XyZ\r\nContent-Disposition: form-data; name=\"other\"; name*=utf-8''email\r\n\r\nv\r\n--XyZ--",
                Ambiguous,
            ),
            (
                "--XyZ\r\nContent-Disposition: form-data; name=\"other\"\r\nContent-Disposition: form-data; name=\"email\"\r\n\r\nv\r\n--XyZ--",
                Ambiguous,
            ),
            ("--XyZ\r\nContent-Disposition: form-data; name*0=em; name*1=ail\r\n\r\nv\r\n--XyZ--", Ambiguous),
            // ext-values the filter does not read.
            ("--XyZ\r\nContent-Disposition: form-data; name*=utf-16''%FF%FE\r\n\r\nv\r\n--XyZ--", Encoded),
            ("--XyZ\r\nContent-Disposition: form-data; name*=utf-8''%FF\r\n\r\nv\r\n--XyZ--", Encoded),
            ("--XyZ\r\nContent-Disposition: form-data; name*=email\r\n\r\nv\r\n--XyZ--", Malformed),
            ("--XyZ\r\nContent-Disposition: form-data; name*=utf-8''%6\r\n\r\nv\r\n--XyZ--", Malformed),
        ];
        for (body, expected) in cases {
            check(body, Err(*expected));
        }
    }

    #[test]
    fn encoded_parts_are_marked() {
        let body = "--XyZ\r\nContent-Disposition: form-data; name=a\r\nContent-Transfer-Encoding: base64\r\n\r\nYQ==\r\n\
                    --XyZ\r\nContent-Disposition: form-data; name=b\r\nContent-Type: text/plain; charset=UTF-16\r\n\r\nx\r\n\
                    --XyZ\r\nContent-Disposition: form-data; name=c\r\nContent-Transfer-Encoding: 8bit\r\nContent-Type: text/plain; charset=utf-8\r\n\r\nx\r\n--XyZ--";
        let got: Vec<bool> = parts(body.as_bytes(), "XyZ").unwrap().iter().map(|p| p.encoded).collect();
        assert_eq!(got, [true, true, false]);
    }

    #[test]
    fn limits_make_the_body_unreadable() {
        let part = "--XyZ\r\nContent-Disposition: form-data; name=\"f\"\r\n\r\nv\r\n";
        let at_limit = format!("{}--XyZ--", part.repeat(MAX_PARTS));
        assert_eq!(parts(at_limit.as_bytes(), "XyZ").map(|p| p.len()), Ok(MAX_PARTS));
        let over = format!("{}--XyZ--", part.repeat(MAX_PARTS + 1));
        assert_eq!(parts(over.as_bytes(), "XyZ"), Err(Unreadable::TooComplex));
        let headers = "X-A: b\r\n".repeat(MAX_HEADERS);
        let body = format!("--XyZ\r\n{headers}\r\nv\r\n--XyZ--");
        assert!(parts(body.as_bytes(), "XyZ").is_ok());
        let headers = "X-A: b\r\n".repeat(MAX_HEADERS + 1);
        let body = format!("--XyZ\r\n{headers}\r\nv\r\n--XyZ--");
        assert_eq!(parts(body.as_bytes(), "XyZ"), Err(Unreadable::TooComplex));
    }

    #[test]
    fn invalid_boundaries_are_errors() {
        let body = b"--\r\n\r\n";
        assert!(parts(body, "").is_err());
        assert!(parts(body, &"a".repeat(MAX_BOUNDARY + 1)).is_err());
        assert!(parts(b"--a\nb\r\n", "a\nb").is_err());
    }

    #[test]
    fn never_panics_on_any_prefix_or_byte_soup() {
        let body =
            "--XyZ\r\nContent-Disposition: form-data; name=\"email\"; filename=\"x\"\r\n\r\na@b.example\r\n--XyZ--\r\n";
        for n in 0..=body.len() {
            let _ = parts(&body.as_bytes()[..n], "XyZ");
        }
        let soup: Vec<u8> = (0..4096u32).map(|i| b"-\r\nXyZ\"=;: *'%"[(i * 7 % 13) as usize % 13]).collect();
        let _ = parts(&soup, "XyZ");
        let _ = parts(&[0xff, 0xfe, b'\n', b'-', b'-'], "XyZ");
    }
}
