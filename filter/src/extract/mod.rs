//! Finding the email in a request: headers, query parameters, JSON pointers, urlencoded and
//! multipart form fields (`CONFIG.md`: the first source found wins, in that order).
//!
//! Rules shared by every source, chosen so that the filter never sees a *different* email than
//! the app would:
//! - an empty (or all-whitespace) value counts as absent;
//! - a name given several times with different values (`email=a@x&email=b@y`, two `x-email`
//!   headers) is [`Extracted::Invalid`]: apps disagree on which one wins;
//! - a value that is not text (not UTF-8, a JSON number or object) is [`Extracted::Invalid`].
//!
//! Parsing never panics, whatever the input.

mod multipart;

use serde_json::Value;

use crate::config::EmailSources;

/// What a source gave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Extracted {
    NotFound,
    /// The raw value, not yet parsed as an address.
    Email(String),
    Invalid(Unusable),
}

/// Why a value that is present cannot be an email.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unusable {
    /// Not UTF-8, or a JSON value other than a string.
    NotText,
    /// Given more than once, with different values.
    Conflicting,
}

/// The request body's format, from its `content-type` (captured in the headers phase).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BodyKind {
    Json,
    UrlEncoded,
    Multipart {
        boundary: String,
    },
    /// Anything else, or no body format the filter reads.
    Other,
}

impl BodyKind {
    pub fn from_content_type(content_type: Option<&[u8]>) -> Self {
        let Some(ct) = content_type.and_then(|c| std::str::from_utf8(c).ok()) else {
            return Self::Other;
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
                .map_or(Self::Other, |boundary| Self::Multipart { boundary }),
            _ => Self::Other,
        }
    }

    /// True when some configured source can read a body of this kind.
    pub fn readable_by(&self, sources: &EmailSources) -> bool {
        match self {
            Self::Json => !sources.json_pointers.is_empty(),
            Self::UrlEncoded | Self::Multipart { .. } => !sources.form_fields.is_empty(),
            Self::Other => false,
        }
    }
}

/// The values of one request header (all of its lines).
pub fn from_header_values(values: Vec<Vec<u8>>) -> Extracted {
    single(values.into_iter().map(|v| String::from_utf8(v).map_err(|_| Unusable::NotText)))
}

/// The first configured query parameter present in `path` (percent-decoded, `+` is a space).
pub fn from_query(path: &str, names: &[String]) -> Extracted {
    let Some((_, query)) = path.split_once('?') else {
        return Extracted::NotFound;
    };
    let query = query.split_once('#').map_or(query, |(q, _)| q);
    from_pairs(form_urlencoded::parse(query.as_bytes()), names)
}

/// The email from a complete body of the given kind.
pub fn from_body(kind: &BodyKind, body: &[u8], sources: &EmailSources) -> Extracted {
    match kind {
        BodyKind::Json => from_json(body, &sources.json_pointers),
        BodyKind::UrlEncoded => from_pairs(form_urlencoded::parse(body), &sources.form_fields),
        BodyKind::Multipart { boundary } => from_multipart(body, boundary, &sources.form_fields),
        BodyKind::Other => Extracted::NotFound,
    }
}

/// RFC 6901 pointers, in order. Malformed JSON holds no email; `null` counts as absent.
fn from_json(body: &[u8], pointers: &[String]) -> Extracted {
    let Ok(doc) = serde_json::from_slice::<Value>(body) else {
        return Extracted::NotFound;
    };
    for pointer in pointers {
        match doc.pointer(pointer) {
            None | Some(Value::Null) => {}
            Some(Value::String(s)) if s.trim().is_empty() => {}
            Some(Value::String(s)) => return Extracted::Email(s.clone()),
            Some(_) => return Extracted::Invalid(Unusable::NotText),
        }
    }
    Extracted::NotFound
}

fn from_pairs<'a>(
    pairs: impl Iterator<Item = (std::borrow::Cow<'a, str>, std::borrow::Cow<'a, str>)> + Clone,
    names: &[String],
) -> Extracted {
    for name in names {
        let values = pairs.clone().filter(|(k, _)| k == name).map(|(_, v)| Ok(v.into_owned()));
        match single(values) {
            Extracted::NotFound => {}
            found => return found,
        }
    }
    Extracted::NotFound
}

fn from_multipart(body: &[u8], boundary: &str, names: &[String]) -> Extracted {
    let parts = multipart::parts(body, boundary);
    for name in names {
        let values = parts
            .iter()
            .filter(|p| p.name.as_deref() == Some(name.as_str()))
            .map(|p| String::from_utf8(p.value.to_vec()).map_err(|_| Unusable::NotText));
        match single(values) {
            Extracted::NotFound => {}
            found => return found,
        }
    }
    Extracted::NotFound
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
