//! A small, bounded, strict `multipart/form-data` reader (RFC 7578 / RFC 2046): just enough to
//! find the value of a named field, and to say so when the body cannot be read in full, or when
//! popular parsers would read it differently (`CONFIG.md`, "Parser differentials").
//!
//! Lenient where clients legitimately differ: bare LF line ends as well as CRLF (one style per
//! body), a preamble, transport padding (spaces, tabs) after an open delimiter, folded
//! header lines (unfolded), RFC 8187 `name*=utf-8''...` (percent-decoded), any bytes in a part's
//! content, bare CRs included. Everything else that could make the filter see a different set of
//! fields than an app is an error, never "fewer fields":
//! - [`Unreadable::Malformed`]: no opening or closing delimiter, headers that never end, a header
//!   line without a colon;
//! - [`Unreadable::TooComplex`]: more than [`MAX_PARTS`] parts or [`MAX_HEADERS`] header lines;
//! - [`Unreadable::Ambiguous`]: Python's `email` and Werkzeug also end lines at a bare CR, so a
//!   delimiter after a bare CR, a delimiter followed by one, or a bare CR in a part's header
//!   block; a body whose line ends change style (Werkzeug's blank line is `\r\n\r\n`, `\r\r` or
//!   `\n\n`, so `\n\r\n` does not end its header block); a part without headers (Werkzeug and
//!   Rails read the next lines as its headers, Python and Go as its content); a line that starts
//!   with the delimiter but is not one (`--boundaryX`, `--boundary--junk`: busboy ends the part
//!   there, Werkzeug ends the form, Python reads on), padding other than spaces and tabs; in
//!   the preamble, the delimiter followed by `--` or a line break even in mid-line (Werkzeug
//!   starts there; a preamble line such as `--boundaryX` is skipped by all, and so here); the
//!   delimiter at a line start in the epilogue (Rails reads on after a leading close
//!   delimiter); a header line that
//!   starts with the delimiter; a `Content-Disposition` given twice, parsed leniently by some
//!   (a comment, a parameter twice: see [`header_value`]), with RFC 2231 continuations
//!   (`name*0=`), two different names (`name` and `name*`), or a name holding an RFC 2047 encoded
//!   word (`=?utf-8?q?email?=`: Python's `email` and ASP.NET Core decode it); anything but a
//!   line break after the close delimiter, or the delimiter anywhere but on its own lines (in
//!   mid-line, in a preamble line: Django finds it there); a disposition other than `form-data`
//!   or with parameters other than `name` and `filename`; a part's `Content-Type` that is
//!   multipart or has a parameter formidable could take for a name or boundary.
//!
//! Work is linear in the body: delimiters are looked for only at line starts (after LF, CRLF or
//! a bare CR), the preamble is searched once (Knuth-Morris-Pratt). Never panics.

use super::{Unreadable, header_value, is_utf8_charset};

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
    /// A `Content-Transfer-Encoding` other than 7bit/8bit/binary, a `charset` other than
    /// UTF-8/US-ASCII, or a `Content-Type` / `Content-Transfer-Encoding` apps may read
    /// differently: an app may decode the value into something the filter cannot see.
    pub encoded: bool,
    /// A non-empty `filename` (or `filename*`): an upload to every framework of the matrix (Go
    /// takes a part with an empty one for a field), never scanned for addresses.
    pub file: bool,
}

pub fn valid_boundary(boundary: &str) -> bool {
    !boundary.is_empty() && boundary.len() <= MAX_BOUNDARY && boundary.bytes().all(|b| (0x20..0x7f).contains(&b))
}

/// A line break: the style of a body is the one after its first delimiter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Break {
    CrLf,
    Lf,
}

impl Break {
    fn len(self) -> usize {
        match self {
            Break::CrLf => 2,
            Break::Lf => 1,
        }
    }
}

/// Every part of `body`, in order, or why the body cannot be read in full (or one way).
pub fn parts<'a>(body: &'a [u8], boundary: &str) -> Result<Vec<Part<'a>>, Unreadable> {
    if !valid_boundary(boundary) {
        return Err(Unreadable::Malformed);
    }
    let delimiter = [b"--", boundary.as_bytes()].concat();
    let first = find_delimiter(body, &delimiter, 0, true)?.ok_or(Unreadable::Malformed)?;
    // Werkzeug takes the first `--boundary` followed by `--` or a line break anywhere, even in
    // mid-line; every parser skips one followed by anything else.
    let preamble = body.get(..first.start + delimiter.len() - 1).unwrap_or_default();
    if occurrences(preamble, &delimiter).any(|at| !skipped_by_all(&body[at + delimiter.len()..])) {
        return Err(Unreadable::Ambiguous);
    }
    let style = match first.kind {
        Delimiter::Open { line_break, .. } => line_break,
        Delimiter::Close { epilogue } => return finish(body, &delimiter, epilogue, Vec::new()),
    };
    let mut next = first;
    let mut out = Vec::new();
    loop {
        let after = match next.kind {
            Delimiter::Close { epilogue } => return finish(body, &delimiter, epilogue, out),
            Delimiter::Open { after, line_break } if line_break == style => after,
            Delimiter::Open { .. } => return Err(Unreadable::Ambiguous),
        };
        if out.len() == MAX_PARTS {
            return Err(Unreadable::TooComplex);
        }
        let headers = read_headers(body, after, &delimiter, style)?;
        let following = find_delimiter(body, &delimiter, headers.content_start, false)?.ok_or(Unreadable::Malformed)?;
        let end = if following.start == headers.content_start {
            following.start // no content: the line break before the delimiter ended the headers
        } else if following.before == Some(style) {
            following.start - style.len()
        } else {
            return Err(Unreadable::Ambiguous); // a delimiter after a line break of another style
        };
        let value = body.get(headers.content_start..end).unwrap_or_default();
        out.push(Part { name: headers.name, value, encoded: headers.encoded, file: headers.file });
        next = following;
    }
}

/// The parts, once the close delimiter is found: nothing may follow it but its line break
/// (Django reads on past it, Rails when it comes first; real clients send nothing more), and
/// the delimiter may appear nowhere else, not even in mid-line (Django finds `--boundary`
/// anywhere in a line; formidable and busboy only at a line start).
fn finish<'a>(
    body: &[u8],
    delimiter: &[u8],
    epilogue: usize,
    parts: Vec<Part<'a>>,
) -> Result<Vec<Part<'a>>, Unreadable> {
    let delimiters = parts.len() + 1;
    if epilogue != body.len() || occurrences(body, delimiter).nth(delimiters).is_some() {
        return Err(Unreadable::Ambiguous);
    }
    Ok(parts)
}

/// A delimiter line: where it starts, the line break before it (`None` at the start of the
/// body or of a part's empty content), and what it is.
#[derive(Debug, Clone, Copy)]
struct Found {
    start: usize,
    before: Option<Break>,
    kind: Delimiter,
}

#[derive(Debug, Clone, Copy)]
enum Delimiter {
    /// The headers of the next part start at `after`.
    Open { after: usize, line_break: Break },
    /// The epilogue starts at `epilogue` (a line start, or the end of the body).
    Close { epilogue: usize },
}

/// The next delimiter line at or after `from` (a line start). Line starts are after LF, CRLF
/// or a bare CR: a line there that starts with the delimiter is a delimiter, or an error
/// (except, in the preamble, a line every parser skips).
fn find_delimiter(body: &[u8], delimiter: &[u8], from: usize, preamble: bool) -> Result<Option<Found>, Unreadable> {
    let mut line = from;
    while line <= body.len() {
        if let Some(found) = delimiter_at(body, delimiter, line, preamble)? {
            return Ok(Some(found));
        }
        let Some(offset) = body[line..].iter().position(|&b| b == b'\n' || b == b'\r') else {
            return Ok(None);
        };
        let at = line + offset;
        line = if body[at] == b'\r' && body.get(at + 1) == Some(&b'\n') { at + 2 } else { at + 1 };
    }
    Ok(None)
}

/// Whether the line starting at `at` is a delimiter line: `None` when it does not start with
/// the delimiter (or, in the preamble, when every parser skips it), an error when it does but
/// is not a clean delimiter line.
fn delimiter_at(body: &[u8], delimiter: &[u8], at: usize, preamble: bool) -> Result<Option<Found>, Unreadable> {
    let Some(rest) = body.get(at..).and_then(|r| r.strip_prefix(delimiter)) else {
        return Ok(None);
    };
    if preamble && skipped_by_all(rest) {
        return Ok(None); // `--boundaryX preamble`: a preamble line for Werkzeug, Python, Go, busboy, Rails
    }
    let before = match at.checked_sub(1).map(|i| body[i]) {
        Some(b'\n') if at >= 2 && body[at - 2] == b'\r' => Some(Break::CrLf),
        Some(b'\n') => Some(Break::Lf),
        // A bare CR: Werkzeug and Python's email split lines there, busboy, Go and Rails do not.
        Some(b'\r') => return Err(Unreadable::Ambiguous),
        _ => None,
    };
    let (close, rest) = match rest.strip_prefix(b"--") {
        Some(r) => (true, r),
        None => (false, rest),
    };
    // Transport padding: spaces and tabs (Werkzeug also takes vertical tabs and form feeds).
    let padding = rest.iter().take_while(|&&b| matches!(b, b' ' | b'\t' | b'\x0b' | b'\x0c')).count();
    if rest[..padding].iter().any(|&b| !matches!(b, b' ' | b'\t')) {
        return Err(Unreadable::Ambiguous);
    }
    if close && padding > 0 {
        return Err(Unreadable::Ambiguous); // only a line break may follow the close delimiter
    }
    let rest = &rest[padding..];
    let line_break = if rest.starts_with(b"\r\n") {
        Some(Break::CrLf)
    } else if rest.starts_with(b"\n") {
        Some(Break::Lf)
    } else if rest.is_empty() {
        None
    } else {
        // `--boundaryX`, `--boundary--junk`, `--boundary\r` (bare CR): busboy ends the part
        // here, Werkzeug ends the form (`--`), Python's email reads on.
        return Err(Unreadable::Ambiguous);
    };
    let after = body.len() - rest.len() + line_break.map_or(0, Break::len);
    let kind = match (close, line_break) {
        (true, _) => Delimiter::Close { epilogue: after },
        (false, Some(line_break)) => Delimiter::Open { after, line_break },
        // An open delimiter at the very end of the body: no headers follow.
        (false, None) => return Err(Unreadable::Malformed),
    };
    Ok(Some(Found { start: at, before, kind }))
}

/// Whether what follows a `--boundary` in the preamble makes every parser skip it: not `--`,
/// and something other than a line break after spaces, tabs, vertical tabs or form feeds.
/// (Past 256 of those, it is taken as a delimiter.)
fn skipped_by_all(rest: &[u8]) -> bool {
    if rest.starts_with(b"--") {
        return false;
    }
    let padding = rest.iter().take(256).take_while(|&&b| matches!(b, b' ' | b'\t' | b'\x0b' | b'\x0c')).count();
    matches!(rest.get(padding), Some(&b) if b != b'\r' && b != b'\n' && padding < 256)
}

/// Where `needle` (non-empty) starts in `haystack`, every occurrence: Knuth-Morris-Pratt, linear.
fn occurrences<'h>(haystack: &'h [u8], needle: &'h [u8]) -> impl Iterator<Item = usize> + 'h {
    let mut fallback = vec![0usize; needle.len()];
    let mut k = 0;
    for i in 1..needle.len() {
        while k > 0 && needle[i] != needle[k] {
            k = fallback[k - 1];
        }
        if needle[i] == needle[k] {
            k += 1;
        }
        fallback[i] = k;
    }
    let mut matched = 0;
    haystack.iter().enumerate().filter_map(move |(i, &b)| {
        if needle.is_empty() {
            return None;
        }
        while matched > 0 && b != needle[matched] {
            matched = fallback[matched - 1];
        }
        if b == needle[matched] {
            matched += 1;
        }
        if matched == needle.len() {
            matched = fallback[matched - 1];
            return Some(i + 1 - needle.len());
        }
        None
    })
}

/// What a part's headers say.
struct Headers {
    name: Option<String>,
    encoded: bool,
    file: bool,
    content_start: usize,
}

/// Reads part headers from `start` to the blank line, unfolding continuation lines. Every line
/// must end with the body's line break, and the block must not be empty.
fn read_headers(body: &[u8], start: usize, delimiter: &[u8], style: Break) -> Result<Headers, Unreadable> {
    let mut fields: Vec<String> = Vec::new();
    let mut pos = start;
    for _ in 0..=MAX_HEADERS {
        let offset = body.get(pos..).and_then(|r| r.iter().position(|&b| b == b'\n' || b == b'\r'));
        let end = pos + offset.ok_or(Unreadable::Malformed)?;
        let line_break = match (body[end], body.get(end + 1)) {
            (b'\r', Some(b'\n')) => Break::CrLf,
            (b'\r', _) => return Err(Unreadable::Ambiguous), // a bare CR
            _ => Break::Lf,
        };
        if line_break != style {
            return Err(Unreadable::Ambiguous);
        }
        let line = &body[pos..end];
        pos = end + line_break.len();
        if line.is_empty() {
            if fields.is_empty() {
                return Err(Unreadable::Ambiguous); // no headers: see the module's comment
            }
            return interpret(&fields, pos);
        }
        if line.starts_with(delimiter) {
            return Err(Unreadable::Ambiguous); // Python's email: a delimiter, Werkzeug: a header
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
    // Content-Disposition, Content-Type, Content-Transfer-Encoding.
    let mut found: [Option<&str>; 3] = [None; 3];
    let mut encoded = false;
    for field in fields {
        let Some((header, value)) = field.split_once(':') else {
            return Err(Unreadable::Malformed);
        };
        let slot = match header.trim().to_ascii_lowercase().as_str() {
            "content-disposition" => 0,
            "content-type" => 1,
            "content-transfer-encoding" => 2,
            _ => continue,
        };
        if found[slot].replace(value).is_some() {
            // Given twice: Werkzeug, Go, busboy and Rails take the first, others may not.
            if slot == 0 {
                return Err(Unreadable::Ambiguous);
            }
            encoded = true;
        }
    }
    let [disposition, content_type, transfer_encoding] = found;
    if let Some(value) = transfer_encoding {
        encoded |= !matches!(value.trim().to_ascii_lowercase().as_str(), "7bit" | "8bit" | "binary");
    }
    if let Some(value) = content_type {
        encoded |= match header_value(value) {
            // A nested multipart body (RFC 2388's `multipart/mixed`) some parsers open; a
            // parameter formidable's regular expressions take for a name or a boundary.
            Ok((essence, params))
                if essence.starts_with("multipart/") || params.iter().any(|(k, _)| names_a_field(k)) =>
            {
                return Err(Unreadable::Ambiguous);
            }
            Ok((_, params)) => params.iter().any(|(k, v)| k.contains('*') || (k == "charset" && !is_utf8_charset(v))),
            Err(_) => true, // apps may find a charset in it the filter does not
        };
    }
    let (name, file) = disposition.map(disposition_name).transpose()?.unwrap_or((None, false));
    Ok(Headers { name, encoded, file, content_start })
}

/// The name a `Content-Disposition` value gives: `name`, or RFC 8187 `name*`, which must agree.
///
/// The type is `form-data` and the parameters `name` and `filename` (`name*`, `filename*`), as
/// every client sends: formidable finds `name=` after any word boundary (`x-name=`), RFC 2231
/// continuations (`name*0=`) are joined by Werkzeug, Go and Python and not by busboy and Rails.
fn disposition_name(value: &str) -> Result<(Option<String>, bool), Unreadable> {
    let (essence, params) = header_value(value)?;
    if essence != "form-data" {
        return Err(Unreadable::Ambiguous);
    }
    let mut names: Vec<String> = Vec::new();
    let mut file = false;
    for (key, v) in params {
        match key.as_str() {
            "name" => names.push(v),
            "name*" => names.push(ext_value(&v)?),
            "filename" => file |= !v.is_empty(),
            "filename*" => file |= ext_value(&v).is_ok_and(|f| !f.is_empty()),
            _ => return Err(Unreadable::Ambiguous),
        }
    }
    names.dedup();
    if names.len() > 1 {
        return Err(Unreadable::Ambiguous); // apps differ on which name wins
    }
    // An RFC 2047 encoded word: Python's email (default policy) and ASP.NET Core decode it.
    if names.iter().any(|n| n.contains("=?")) {
        return Err(Unreadable::Ambiguous);
    }
    Ok((names.pop(), file))
}

/// Whether a parameter other than a disposition's own could be taken for `name`, `filename` or
/// `boundary`: one of them at the start or after a non-letter (`x-name`, `x_boundary`, `1name`).
fn names_a_field(param: &str) -> bool {
    ["name", "filename", "boundary"]
        .iter()
        .any(|word| param.match_indices(word).any(|(at, _)| at == 0 || !param.as_bytes()[at - 1].is_ascii_alphabetic()))
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

#[cfg(test)]
mod tests;
