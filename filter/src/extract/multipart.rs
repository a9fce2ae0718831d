//! A small, bounded `multipart/form-data` reader (RFC 7578 / RFC 2046): just enough to find the
//! value of a named field.
//!
//! Lenient where apps differ, so that the filter finds every field an app could find: bare LF
//! line ends are accepted as well as CRLF, a preamble is skipped, a missing close delimiter ends
//! the last part at the end of the body. Bounded: at most [`MAX_PARTS`] parts and
//! [`MAX_HEADERS`] header lines per part; the body itself is bounded by `max_body_bytes`. Work is
//! linear in the body: delimiters are searched only at line starts. Never panics.

use super::parse_params;

/// More parts than any signup form has; parts beyond are ignored.
const MAX_PARTS: usize = 256;
/// Header lines per part; a part with more is where parsing stops.
const MAX_HEADERS: usize = 32;
/// RFC 2046 allows 70; some clients send longer.
const MAX_BOUNDARY: usize = 200;

/// One part: its `Content-Disposition` name and its content.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Part<'a> {
    pub name: Option<String>,
    pub value: &'a [u8],
}

pub fn valid_boundary(boundary: &str) -> bool {
    !boundary.is_empty() && boundary.len() <= MAX_BOUNDARY && boundary.bytes().all(|b| (0x20..0x7f).contains(&b))
}

/// The parts of `body`, in order. Malformed input yields the parts read before the damage.
pub fn parts<'a>(body: &'a [u8], boundary: &str) -> Vec<Part<'a>> {
    let mut out = Vec::new();
    if !valid_boundary(boundary) {
        return out;
    }
    let delimiter = [b"--", boundary.as_bytes()].concat();
    let Some(mut at) = find_delimiter(body, &delimiter, 0) else {
        return out;
    };
    while out.len() < MAX_PARTS {
        let after = at + delimiter.len();
        let rest = body.get(after..).unwrap_or_default();
        if rest.starts_with(b"--") {
            break; // close delimiter
        }
        // Transport padding, then the end of the delimiter line.
        let Some(headers_start) =
            line_end(body, after).filter(|&end| is_padding(&body[after..end])).map(|end| next_line(body, end))
        else {
            break;
        };
        let Some((name, content_start)) = read_headers(body, headers_start) else {
            break;
        };
        // The line break before the next delimiter belongs to it. The search starts one byte
        // early so that an empty part whose blank line ends right at the delimiter is found.
        match find_delimiter(body, &delimiter, content_start.saturating_sub(1).max(headers_start)) {
            Some(next) => {
                let end = strip_line_break(body, next).max(content_start);
                out.push(Part { name, value: body.get(content_start..end).unwrap_or_default() });
                at = next;
            }
            None => {
                let end = strip_line_break(body, body.len()).max(content_start);
                out.push(Part { name, value: body.get(content_start..end).unwrap_or_default() });
                break;
            }
        }
    }
    out
}

/// Reads part headers from `start` to the blank line; returns the field name and where the
/// content starts. `None` when the headers never end.
fn read_headers(body: &[u8], start: usize) -> Option<(Option<String>, usize)> {
    let mut name = None;
    let mut pos = start;
    for _ in 0..=MAX_HEADERS {
        let end = line_end(body, pos)?;
        let line = &body[pos..end];
        let next = next_line(body, end);
        if line.is_empty() {
            return Some((name, next));
        }
        if name.is_none() {
            name = disposition_name(line);
        }
        pos = next;
    }
    None
}

/// The `name` parameter of a `Content-Disposition: form-data; name="..."` line.
fn disposition_name(line: &[u8]) -> Option<String> {
    let line = String::from_utf8_lossy(line);
    let (header, value) = line.split_once(':')?;
    if !header.trim().eq_ignore_ascii_case("content-disposition") {
        return None;
    }
    parse_params(value).into_iter().find(|(k, _)| k == "name").map(|(_, v)| v)
}

/// Position of the next `delimiter` at or after `from` that starts a line (or the body).
fn find_delimiter(body: &[u8], delimiter: &[u8], from: usize) -> Option<usize> {
    if from == 0 && body.starts_with(delimiter) {
        return Some(0);
    }
    let mut pos = from;
    loop {
        let nl = pos + body.get(pos..)?.iter().position(|&b| b == b'\n')?;
        let candidate = nl + 1;
        if body.get(candidate..)?.starts_with(delimiter) {
            return Some(candidate);
        }
        pos = candidate;
    }
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

fn is_padding(bytes: &[u8]) -> bool {
    bytes.iter().all(|&b| b == b' ' || b == b'\t')
}

#[cfg(test)]
mod tests {
    use super::*;

    type Expected<'a> = &'a [(Option<&'a str>, &'a str)];

    fn check(body: &str, expected: Expected<'_>) {
        let got = parts(body.as_bytes(), "XyZ");
        let got: Vec<(Option<&str>, &str)> =
            got.iter().map(|p| (p.name.as_deref(), std::str::from_utf8(p.value).unwrap())).collect();
        assert_eq!(got, expected, "body {body:?}");
    }

    #[test]
    fn well_formed_bodies() {
        let cases: &[(&str, Expected<'_>)] = &[
            (
                "--XyZ\r\nContent-Disposition: form-data; name=\"email\"\r\n\r\na@b.example\r\n--XyZ--\r\n",
                &[(Some("email"), "a@b.example")],
            ),
            (
                "--XyZ\r\nContent-Disposition: form-data; name=\"user\"\r\n\r\nann\r\n\
                 --XyZ\r\ncontent-disposition: FORM-DATA; NAME=email\r\nContent-Type: text/plain\r\n\r\na@b.example\r\n--XyZ--",
                &[(Some("user"), "ann"), (Some("email"), "a@b.example")],
            ),
            // Preamble, transport padding, epilogue.
            (
                "preamble\r\n--XyZ  \r\nContent-Disposition: form-data; name=\"email\"\r\n\r\nx@y.example\r\n--XyZ--\r\nepilogue",
                &[(Some("email"), "x@y.example")],
            ),
            // Bare LF line ends.
            (
                "--XyZ\nContent-Disposition: form-data; name=\"email\"\n\nx@y.example\n--XyZ--\n",
                &[(Some("email"), "x@y.example")],
            ),
            // Quoted names with ';' and escapes; a file part; an empty value.
            (
                "--XyZ\r\nContent-Disposition: form-data; name=\"a;b\\\"c\"; filename=\"f;.txt\"\r\n\r\nfile\r\n\
                 --XyZ\r\nContent-Disposition: form-data; name=\"empty\"\r\n\r\n\r\n--XyZ--",
                &[(Some("a;b\"c"), "file"), (Some("empty"), "")],
            ),
            // Content holding the boundary text not at a line start, and CRLFs.
            (
                "--XyZ\r\nContent-Disposition: form-data; name=\"t\"\r\n\r\nx--XyZ\r\nline2\r\n--XyZ--",
                &[(Some("t"), "x--XyZ\r\nline2")],
            ),
            // No Content-Disposition.
            ("--XyZ\r\nContent-Type: text/plain\r\n\r\nv\r\n--XyZ--", &[(None, "v")]),
        ];
        for (body, expected) in cases {
            check(body, expected);
        }
    }

    #[test]
    fn malformed_bodies_give_what_precedes_the_damage() {
        let cases: &[(&str, Expected<'_>)] = &[
            ("", &[]),
            ("no delimiter at all", &[]),
            ("--XyZ--", &[]),
            ("--XyZ", &[]),
            ("--XyZ\r\n", &[]),
            ("--XyZ junk\r\nContent-Disposition: form-data; name=\"email\"\r\n\r\nv\r\n--XyZ--", &[]),
            // Headers never end.
            ("--XyZ\r\nContent-Disposition: form-data; name=\"email\"\r\n", &[]),
            // No close delimiter: the last part runs to the end.
            (
                "--XyZ\r\nContent-Disposition: form-data; name=\"email\"\r\n\r\nx@y.example\r\n",
                &[(Some("email"), "x@y.example")],
            ),
            // Empty part whose blank line runs straight into the delimiter.
            ("--XyZ\r\nContent-Disposition: form-data; name=\"e\"\r\n\r\n--XyZ--", &[(Some("e"), "")]),
            // Unterminated quoted name.
            ("--XyZ\r\nContent-Disposition: form-data; name=\"ema\r\n\r\nv\r\n--XyZ--", &[(Some("ema"), "v")]),
            // A delimiter with a different boundary is content.
            (
                "--XyZ\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\n--Other\r\n--XyZ--",
                &[(Some("a"), "--Other")],
            ),
        ];
        for (body, expected) in cases {
            check(body, expected);
        }
    }

    #[test]
    fn bounded_parts_and_headers() {
        let part = "--XyZ\r\nContent-Disposition: form-data; name=\"f\"\r\n\r\nv\r\n";
        let many = format!("{}--XyZ--", part.repeat(MAX_PARTS + 10));
        assert_eq!(parts(many.as_bytes(), "XyZ").len(), MAX_PARTS);
        let headers = "X-A: b\r\n".repeat(MAX_HEADERS + 1);
        let body = format!("--XyZ\r\n{headers}\r\nv\r\n--XyZ--");
        assert!(parts(body.as_bytes(), "XyZ").is_empty());
    }

    #[test]
    fn invalid_boundaries_give_nothing() {
        let body = b"--\r\n\r\n";
        assert!(parts(body, "").is_empty());
        assert!(parts(body, &"a".repeat(MAX_BOUNDARY + 1)).is_empty());
        assert!(parts(b"--a\nb\r\n", "a\nb").is_empty());
    }

    #[test]
    fn never_panics_on_any_prefix_or_byte_soup() {
        let body =
            "--XyZ\r\nContent-Disposition: form-data; name=\"email\"; filename=\"x\"\r\n\r\na@b.example\r\n--XyZ--\r\n";
        for n in 0..=body.len() {
            let _ = parts(&body.as_bytes()[..n], "XyZ");
        }
        let soup: Vec<u8> = (0..4096u32).map(|i| b"-\r\nXyZ\"=;:"[(i * 7 % 11) as usize % 10]).collect();
        let _ = parts(&soup, "XyZ");
        let _ = parts(&[0xff, 0xfe, b'\n', b'-', b'-'], "XyZ");
    }
}
