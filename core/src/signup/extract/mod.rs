//! Finding the email in a request: headers, query parameters, JSON pointers, urlencoded and
//! multipart form fields (`CONFIG.md`).
//!
//! Rules shared by every source, chosen so that the filter never sees a *different* email than
//! the app would, nor *no* email where the app sees one:
//! - an empty (or all-whitespace) value, or JSON `null`, counts as absent;
//! - every configured source is read; a name given several times, or two sources, with
//!   different values (`email=a@x&email=b@y`, two `x-email` headers, a duplicate JSON key, a
//!   header and a body) is [`Extracted::Invalid`]: apps disagree on which one wins;
//! - a value that is not text (not UTF-8, a JSON number or object) is [`Extracted::Invalid`];
//! - a body that cannot be read in full (malformed, over a limit, encoded, of a type no
//!   configured source reads) is [`Extracted::Unreadable`], never "no email": an app may read it.
//!
//! Parsing never panics, whatever the input. No proxy-wasm types here: the filter and the sidecar's ext_authz endpoint both use it.

mod json;
mod multipart;

pub use multipart::{MAX_HEADERS, MAX_PARTS};

use super::settings::EmailSources;

/// What a source gave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Extracted {
    NotFound,
    /// The raw value, not yet parsed as an address.
    Email(String),
    Invalid(Unusable),
    /// The body could not be read in full: it may hold an email the filter cannot see.
    Unreadable(Unreadable),
}

impl Extracted {
    /// Combines what two sources gave: an error wins (the first), then two emails must agree.
    pub fn and(self, other: Extracted) -> Extracted {
        match (self, other) {
            (Extracted::NotFound, other) => other,
            (found @ (Extracted::Invalid(_) | Extracted::Unreadable(_)), _) => found,
            (found, Extracted::NotFound) => found,
            (Extracted::Email(_), bad @ (Extracted::Invalid(_) | Extracted::Unreadable(_))) => bad,
            (Extracted::Email(a), Extracted::Email(b)) if a.trim() == b.trim() => Extracted::Email(a),
            (Extracted::Email(_), Extracted::Email(_)) => Extracted::Invalid(Unusable::Conflicting),
        }
    }
}

/// Why a value that is present cannot be an email.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unusable {
    /// Not UTF-8, or a JSON value other than a string.
    NotText,
    /// Given more than once, with different values.
    Conflicting,
}

/// Why a body cannot be read in full.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unreadable {
    /// Not well-formed for its type: JSON syntax (`NaN`, `1e400`, a lone surrogate, nesting
    /// deeper than 128, trailing data), a multipart body without its closing delimiter, ...
    Malformed,
    /// Over one of the multipart reader's limits (parts, header lines per part).
    TooComplex,
    /// In an encoding the filter does not read: `Content-Encoding`, a part's transfer encoding
    /// or charset, a field value that is not UTF-8.
    Encoded,
    /// Readable more than one way: two different content types, a part with two names.
    Ambiguous,
    /// A type no configured source reads (or no content type at all).
    UnreadType,
}

impl Unreadable {
    /// For the log line.
    pub fn as_str(self) -> &'static str {
        match self {
            Unreadable::Malformed => "malformed",
            Unreadable::TooComplex => "over a parser limit",
            Unreadable::Encoded => "in an encoding the filter does not read",
            Unreadable::Ambiguous => "readable in more than one way",
            Unreadable::UnreadType => "of a type no configured source reads",
        }
    }
}

/// How the body will be read, decided from the request headers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BodyKind {
    Json,
    UrlEncoded,
    Multipart {
        boundary: String,
    },
    /// Not read: a non-empty body is [`Extracted::Unreadable`] with this reason.
    Unread(Unreadable),
}

impl BodyKind {
    /// From one `content-type` value: the formats the filter reads, else `Unread(UnreadType)`.
    pub fn from_content_type(content_type: Option<&[u8]>) -> Self {
        let unread = Self::Unread(Unreadable::UnreadType);
        let Some(ct) = content_type.and_then(|c| std::str::from_utf8(c).ok()) else {
            return unread;
        };
        let (essence, params) = ct.split_once(';').unwrap_or((ct, ""));
        let essence = essence.trim().to_ascii_lowercase();
        match essence.split_once('/') {
            Some(("application", "json")) => Self::Json,
            Some(("application", sub)) if sub.ends_with("+json") => Self::Json,
            Some(("application", "x-www-form-urlencoded")) => Self::UrlEncoded,
            Some(("multipart", "form-data")) => parse_params(params)
                .into_iter()
                .find(|(name, _)| name == "boundary")
                .map(|(_, b)| b)
                .filter(|b| multipart::valid_boundary(b))
                .map_or(Self::Unread(Unreadable::Malformed), |boundary| Self::Multipart { boundary }),
            _ => unread,
        }
    }

    /// From every `content-type` and `content-encoding` value of the request: encoded or
    /// ambiguous bodies, and kinds no configured source reads, are not read.
    pub fn for_request(content_types: &[Vec<u8>], content_encodings: &[Vec<u8>], sources: &EmailSources) -> Self {
        let encoded =
            content_encodings.iter().any(|v| !String::from_utf8_lossy(v).trim().eq_ignore_ascii_case("identity"));
        if encoded {
            return Self::Unread(Unreadable::Encoded);
        }
        let kind = match content_types {
            [] => Self::from_content_type(None),
            [first, rest @ ..] if rest.iter().all(|v| v == first) => Self::from_content_type(Some(first)),
            _ => return Self::Unread(Unreadable::Ambiguous),
        };
        let read = match &kind {
            Self::Json => !sources.json_pointers.is_empty(),
            Self::UrlEncoded | Self::Multipart { .. } => !sources.form_fields.is_empty(),
            Self::Unread(_) => true,
        };
        if read { kind } else { Self::Unread(Unreadable::UnreadType) }
    }
}

impl BodyKind {
    /// Whether the body must still be read after the headers and the query gave `early`: not
    /// when they already decided (an invalid or unreadable value, whatever the body holds), nor
    /// when an email was found where it was configured to be and no source reads this body.
    pub fn needed_after(&self, early: &Extracted) -> bool {
        !matches!(
            (early, self),
            (Extracted::Invalid(_) | Extracted::Unreadable(_), _) | (Extracted::Email(_), BodyKind::Unread(_))
        )
    }
}

/// Every value of each configured request header (all of their lines), combined.
pub fn from_headers(values_of: impl Fn(&str) -> Vec<Vec<u8>>, names: &[String]) -> Extracted {
    names.iter().fold(Extracted::NotFound, |found, name| found.and(from_header_values(values_of(name))))
}

/// The values of one request header (all of its lines).
pub fn from_header_values(values: Vec<Vec<u8>>) -> Extracted {
    single(values.into_iter().map(|v| String::from_utf8(v).map_err(|_| Unusable::NotText)))
}

/// The configured query parameters present in `path` (percent-decoded, `+` is a space).
pub fn from_query(path: &str, names: &[String]) -> Extracted {
    let Some((_, query)) = path.split_once('?') else {
        return Extracted::NotFound;
    };
    let query = query.split_once('#').map_or(query, |(q, _)| q);
    from_pairs(form_urlencoded::parse(query.as_bytes()), names)
}

/// The email from a complete body of the given kind. An empty body holds no email.
pub fn from_body(kind: &BodyKind, body: &[u8], sources: &EmailSources) -> Extracted {
    if body.is_empty() {
        return Extracted::NotFound;
    }
    match kind {
        BodyKind::Json => json::from_json(body, &sources.json_pointers),
        BodyKind::UrlEncoded => from_urlencoded(body, &sources.form_fields),
        BodyKind::Multipart { boundary } => from_multipart(body, boundary, &sources.form_fields),
        BodyKind::Unread(why) => Extracted::Unreadable(*why),
    }
}

/// A JSON document sent as a form (apps that parse any body as JSON read it) is not a form.
fn from_urlencoded(body: &[u8], names: &[String]) -> Extracted {
    if body.trim_ascii_start().first().is_some_and(|b| matches!(b, b'{' | b'[' | b'"')) {
        return Extracted::Unreadable(Unreadable::Malformed);
    }
    from_pairs(form_urlencoded::parse(body), names)
}

fn from_pairs<'a>(
    pairs: impl Iterator<Item = (std::borrow::Cow<'a, str>, std::borrow::Cow<'a, str>)> + Clone,
    names: &[String],
) -> Extracted {
    names.iter().fold(Extracted::NotFound, |found, name| {
        found.and(single(pairs.clone().filter(|(k, _)| k == name).map(|(_, v)| Ok(v.into_owned()))))
    })
}

fn from_multipart(body: &[u8], boundary: &str, names: &[String]) -> Extracted {
    let parts = match multipart::parts(body, boundary) {
        Ok(parts) => parts,
        Err(why) => return Extracted::Unreadable(why),
    };
    let mut found = Extracted::NotFound;
    for name in names {
        let mut values = Vec::new();
        for part in parts.iter().filter(|p| p.name.as_deref() == Some(name.as_str())) {
            if part.encoded {
                return Extracted::Unreadable(Unreadable::Encoded);
            }
            match std::str::from_utf8(part.value) {
                Ok(v) => values.push(Ok(v.to_owned())),
                Err(_) => return Extracted::Unreadable(Unreadable::Encoded),
            }
        }
        found = found.and(single(values.into_iter()));
    }
    found
}

/// Folds the occurrences of one name: empties dropped; one distinct value or none, else invalid.
fn single(values: impl Iterator<Item = Result<String, Unusable>>) -> Extracted {
    let mut found: Option<String> = None;
    for value in values {
        let value = match value {
            Ok(v) => v,
            Err(why) => return Extracted::Invalid(why),
        };
        if value.trim().is_empty() {
            continue;
        }
        match &found {
            Some(first) if first.trim() != value.trim() => return Extracted::Invalid(Unusable::Conflicting),
            Some(_) => {}
            None => found = Some(value),
        }
    }
    found.map_or(Extracted::NotFound, Extracted::Email)
}

/// `; name=value; name="quoted \" value"` → `[(name lowercased, value)]`. Quotes may hold `;`.
/// Malformed pieces are skipped; an unterminated quoted string runs to the end.
pub(crate) fn parse_params(s: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut rest = s;
    loop {
        rest = rest.trim_start_matches(|c: char| c == ';' || c.is_ascii_whitespace());
        if rest.is_empty() {
            return out;
        }
        let name_end = rest.find(['=', ';']).unwrap_or(rest.len());
        let name = rest[..name_end].trim().to_ascii_lowercase();
        rest = &rest[name_end..];
        let Some(after_eq) = rest.strip_prefix('=') else {
            continue; // a bare token such as `form-data`
        };
        let after_eq = after_eq.trim_start();
        let (value, remaining) = match after_eq.strip_prefix('"') {
            Some(quoted) => unquote(quoted),
            None => {
                let end = after_eq.find(';').unwrap_or(after_eq.len());
                (after_eq[..end].trim_end().to_owned(), &after_eq[end..])
            }
        };
        if !name.is_empty() {
            out.push((name, value));
        }
        rest = remaining;
    }
}

/// The inside of a quoted string (after the opening quote) and what follows its closing quote.
fn unquote(s: &str) -> (String, &str) {
    let mut value = String::new();
    let mut chars = s.char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '"' => return (value, &s[i + 1..]),
            '\\' => match chars.next() {
                Some((_, escaped)) => value.push(escaped),
                None => break,
            },
            c => value.push(c),
        }
    }
    (value, "")
}

#[cfg(test)]
mod tests;
