//! Finding the email in a request: headers, query parameters, JSON pointers, urlencoded and
//! multipart form fields (`CONFIG.md`), and beside it every other address the request carries
//! ([`carried`]: judged too, whatever its field's name).
//!
//! Rules shared by every source, chosen so that the filter never sees a *different* email than
//! the app would, nor *no* email where the app sees one. The app may be any popular framework
//! (`CONFIG.md`, "Parser differentials", has the table): where one of them reads a body more
//! leniently than another, the filter reads it as the most lenient one does, or refuses it.
//! - an empty (or all-whitespace) value, or JSON `null`, counts as absent;
//! - every configured source is read; a name given several times, or two sources, with
//!   different values (`email=a@x&email=b@y`, two `x-email` headers, a duplicate JSON key, a
//!   header and a body) is [`Extracted::Invalid`]: apps disagree on which one wins;
//! - names are compared as the most lenient binders compare them (ASP.NET Core's form and
//!   query collections, Go's and ASP.NET Core's JSON binding): case-insensitively, with Unicode
//!   simple case folding (`Email` and `EMAIL` are `email`, `ſ` is `s`, the Kelvin sign `K` is `k`);
//! - a value that is not text (not UTF-8, a JSON number or object) is [`Extracted::Invalid`];
//! - a body that cannot be read in full (malformed, over a limit, in a coding the reader does not
//!   decode, of a type it does not read, readable more than one way) is
//!   [`Extracted::Unreadable`], never "no email": an app may read it, even when an address was
//!   found in a header or the query (Express, Starlette and Flask read JSON that is UTF-16 or
//!   sent as `text/plain`; a Django view may `json.loads` any body).
//!
//! The types read: JSON, urlencoded and multipart forms, gRPC and gRPC-Web (binary and text) and
//! Connect (unary and streaming) messages ([`frames`], [`protobuf`], JSON), `application/graphql`
//! documents ([`graphql`]); each with `Content-Encoding` gzip, deflate or br undone first
//! ([`decode`]), within the body limit. Texts apps decode again (JSON inside a string, base64,
//! escapes) are read again ([`again`]).
//!
//! Parsing never panics, whatever the input. No proxy-wasm types here: the filter and the sidecar's ext_authz endpoint both use it.

mod again;
mod carried;
pub mod decode;
mod fold;
pub mod frames;
pub mod graphql;
mod json;
mod multipart;
pub mod protobuf;
pub mod scan;

pub use again::MAX_DEPTH;
pub use carried::{Carried, DEFAULT_MAX_DOMAINS, Domains, MAX_DOMAINS_LIMIT, NAMES_PER_DOMAIN, Name, Problem, ToJudge};
pub use decode::Coding;
pub use frames::{Framing, MAX_MESSAGES};
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
    /// Over one of the readers' limits (multipart parts and header lines, a decoded size, texts
    /// decoded inside texts, protobuf nesting).
    TooComplex,
    /// In an encoding the filter does not read: a content or message coding other than gzip,
    /// deflate and br, a `charset` other than UTF-8 or US-ASCII (of the body, of a part, or named
    /// by a `_charset_` field), a part's transfer encoding, a field value that is not UTF-8.
    Encoded,
    /// Readable more than one way: two different content types, a parameter given twice, a
    /// part with two names, a name some apps decode (RFC 2047, a comment), line ends or
    /// delimiters that popular parsers split differently.
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

/// How the body will be read, decided from the request headers: its format, and the content
/// codings to undo first (in the order applied).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BodyKind {
    pub format: Format,
    pub codings: Vec<Coding>,
}

/// The format of a body, once its content codings are undone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Format {
    Json,
    UrlEncoded,
    Multipart {
        boundary: String,
    },
    /// `application/graphql`: a GraphQL document.
    GraphQl,
    /// One protobuf message (Connect unary `application/proto`).
    Proto,
    /// Length-prefixed messages (gRPC, gRPC-Web, Connect streaming), protobuf or JSON (`json`),
    /// in base64 (`text`, gRPC-Web's text form), compressed with `coding` where a frame says so.
    Framed {
        framing: Framing,
        json: bool,
        text: bool,
        coding: Option<Coding>,
    },
    /// Not read: a non-empty body is [`Extracted::Unreadable`] with this reason.
    Unread(Unreadable),
}

impl BodyKind {
    /// A body of `format` without content codings.
    pub fn of(format: Format) -> Self {
        Self { format, codings: Vec::new() }
    }

    /// From the request's headers (every value of each): `content-type` (two different ones are
    /// ambiguous), `content-encoding`, and the message coding of framed types (`grpc-encoding`,
    /// `connect-content-encoding`; more than one value is ambiguous). Every body a signup route
    /// gets is read in full (every address in it is judged), whichever sources are configured.
    pub fn for_request(values_of: &dyn Fn(&str) -> Vec<Vec<u8>>) -> Self {
        let content_types = values_of("content-type");
        let mut format = match content_types.as_slice() {
            [] => Format::from_content_type(None),
            [first, rest @ ..] if rest.iter().all(|v| v == first) => Format::from_content_type(Some(first)),
            _ => Format::Unread(Unreadable::Ambiguous),
        };
        let codings = match decode::Coding::list(&values_of("content-encoding")) {
            Ok(codings) => codings,
            Err(why) => return Self::of(Format::Unread(why)),
        };
        if let Format::Framed { framing, coding, .. } = &mut format {
            let header = match framing {
                Framing::Grpc => "grpc-encoding",
                Framing::Connect => "connect-content-encoding",
            };
            *coding = match values_of(header).as_slice() {
                [] => None,
                [one] => match Coding::parse(one) {
                    Ok(c) => c,
                    Err(why) => return Self::of(Format::Unread(why)),
                },
                _ => return Self::of(Format::Unread(Unreadable::Ambiguous)),
            };
        }
        Self { format, codings }
    }
}

impl Format {
    /// From one `content-type` value: the formats the filter reads, else `Unread(UnreadType)`.
    /// A value apps may parse differently (a comment, a parameter given twice, an RFC 2231
    /// `boundary*=`...) is `Unread(Ambiguous)`; a `charset` other than UTF-8 or US-ASCII on a
    /// type the filter reads is `Unread(Encoded)` (Express decodes `charset=utf-7` JSON).
    /// Parameters are `charset`, and `boundary` on a multipart type, nothing else: formidable
    /// finds `multipart` and `boundary=` anywhere in the value with regular expressions
    /// (`application/x-www-form-urlencoded; x=multipart; boundary=B` is multipart to it), and
    /// real clients send no other parameter.
    pub fn from_content_type(content_type: Option<&[u8]>) -> Self {
        let unread = Self::Unread(Unreadable::UnreadType);
        let Some(ct) = content_type.and_then(|c| std::str::from_utf8(c).ok()) else {
            return unread;
        };
        if ct.trim_matches(OWS).is_empty() {
            return unread;
        }
        let (essence, params) = match header_value(ct) {
            Ok(parsed) => parsed,
            Err(why) => return Self::Unread(why),
        };
        let framed = |framing, json, text| Self::Framed { framing, json, text, coding: None };
        let format = match essence.split_once('/') {
            Some(("application", "json")) => Self::Json,
            Some(("application", "x-www-form-urlencoded")) => Self::UrlEncoded,
            Some(("multipart", "form-data")) => Self::Multipart { boundary: String::new() },
            Some(("application", "graphql")) => Self::GraphQl,
            Some(("application", "proto" | "protobuf" | "x-protobuf")) => Self::Proto,
            Some(("application", "grpc" | "grpc+proto" | "grpc-web" | "grpc-web+proto")) => {
                framed(Framing::Grpc, false, false)
            }
            Some(("application", "grpc+json" | "grpc-web+json")) => framed(Framing::Grpc, true, false),
            Some(("application", "grpc-web-text" | "grpc-web-text+proto")) => framed(Framing::Grpc, false, true),
            Some(("application", "grpc-web-text+json")) => framed(Framing::Grpc, true, true),
            Some(("application", "connect+proto")) => framed(Framing::Connect, false, false),
            Some(("application", "connect+json")) => framed(Framing::Connect, true, false),
            Some(("application", sub)) if sub.ends_with("+json") => Self::Json,
            _ => return unread,
        };
        let multipart = matches!(format, Self::Multipart { .. });
        let known = |name: &str| name == "charset" || (multipart && name == "boundary");
        if params.iter().any(|(name, _)| !known(name)) {
            return Self::Unread(Unreadable::Ambiguous); // `boundary*=`, `x-boundary=`, `x=multipart`
        }
        if params.iter().any(|(name, value)| name == "charset" && !is_utf8_charset(value)) {
            return Self::Unread(Unreadable::Encoded);
        }
        if multipart {
            return params
                .into_iter()
                .find(|(name, _)| name == "boundary")
                .map(|(_, b)| b)
                .filter(|b| multipart::valid_boundary(b))
                .map_or(Self::Unread(Unreadable::Malformed), |boundary| Self::Multipart { boundary });
        }
        format
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

/// The query of `path` (percent-decoded, `+` is a space): the configured parameters, and every
/// name behind an `@` in any parameter but a secret one.
pub fn read_query(path: &str, sources: &EmailSources) -> Carried {
    let Some((_, query)) = path.split_once('?') else {
        return Carried::nothing();
    };
    let query = query.split_once('#').map_or(query, |(q, _)| q);
    let configured = from_pairs(|| form_urlencoded::parse(query.as_bytes()), &sources.query_params);
    Carried::new(configured, pair_domains(query.as_bytes(), &sources.secret_fields))
}

/// Whether a field's name says it holds a secret (`email.secret_fields`, lowercase, matched
/// anywhere in the lowercased name: `user[password]`, `newPassword`): never scanned, so its
/// text never leaves the proxy, and no app stores an address from it.
pub fn is_secret(name: &str, secret_fields: &[String]) -> bool {
    if secret_fields.is_empty() {
        return false;
    }
    let name = name.to_lowercase();
    secret_fields.iter().any(|s| name.contains(s.as_str()))
}

/// A complete body of the given kind: the configured sources, and every address anywhere in
/// it. An empty body holds nothing. `max` bounds every decoded size (the body limit): a body
/// or message that inflates past it is [`Unreadable::TooComplex`], refused before it grows more.
pub fn read_body(kind: &BodyKind, body: &[u8], sources: &EmailSources, max: usize) -> Carried {
    if body.is_empty() {
        return Carried::nothing();
    }
    let decoded;
    let body = if kind.codings.is_empty() {
        body
    } else {
        match decode::decode_all(&kind.codings, body, max) {
            Ok(d) => {
                decoded = d;
                &decoded[..]
            }
            Err(why) => return unreadable(why),
        }
    };
    match &kind.format {
        Format::Json => json::read_json(body, sources),
        Format::UrlEncoded => read_urlencoded(body, sources),
        Format::Multipart { boundary } => read_multipart(body, boundary, sources),
        Format::GraphQl => match std::str::from_utf8(body) {
            Ok(document) => {
                let mut domains = Domains::default();
                domains.consider_with(document, &sources.secret_fields);
                Carried::new(Extracted::NotFound, domains)
            }
            Err(_) => unreadable(Unreadable::Encoded),
        },
        Format::Proto => protobuf::read_message(body, sources),
        Format::Framed { framing, json, text, coding } => {
            read_framed(body, *framing, *json, *text, *coding, sources, max)
        }
        Format::Unread(why) => unreadable(*why),
    }
}

/// Every message of a framed body, each read as a whole body of its codec.
fn read_framed(
    body: &[u8],
    framing: Framing,
    json: bool,
    text: bool,
    coding: Option<Coding>,
    sources: &EmailSources,
    max: usize,
) -> Carried {
    let from_text;
    let body = if text {
        match frames::from_text(body) {
            Ok(b) => {
                from_text = b;
                &from_text[..]
            }
            Err(why) => return unreadable(why),
        }
    } else {
        body
    };
    let messages = match frames::messages(body, framing, coding, max) {
        Ok(m) => m,
        Err(why) => return unreadable(why),
    };
    let read = |m: &Vec<u8>| if json { json::read_json(m, sources) } else { protobuf::read_message(m, sources) };
    messages.iter().map(read).fold(Carried::nothing(), Carried::and)
}

fn unreadable(why: Unreadable) -> Carried {
    Carried::new(Extracted::Unreadable(why), Domains::default())
}

/// The names behind every `@` among the values of `pairs` (but secret ones), split at `&` and,
/// as Rack splits a query, at `;` too, with the spaces after a separator dropped as Rack drops
/// them.
fn pair_domains(pairs: &[u8], secret_fields: &[String]) -> Domains {
    let mut domains = Domains::default();
    // Nothing to find without an `@`, an escape, JSON or a value long enough to be base64: the
    // common case, without decoding a pair.
    let plain =
        |b: &u8| b.is_ascii_alphanumeric() || matches!(b, b'&' | b';' | b'=' | b'.' | b'-' | b'_' | b'*' | b' ');
    if pairs.iter().all(plain) && !pairs.split(|b| matches!(b, b'&' | b';' | b'=')).any(|v| v.len() >= 8) {
        return domains;
    }
    let pieces = pairs.split(|&b| b == b'&').chain(pairs.split(|&b| b == b'&' || b == b';'));
    for piece in pieces {
        for (name, value) in form_urlencoded::parse(piece.trim_ascii_start()) {
            if !is_secret(&name, secret_fields) {
                domains.consider_with(&value, secret_fields);
            }
        }
    }
    domains
}

/// A JSON document sent as a form (apps that parse any body as JSON read it) is not a form, nor
/// is a body that is not UTF-8 text.
/// A UTF-8 BOM is skipped (Express decodes bodies with iconv-lite, which drops it), and a pair
/// after `&` and spaces counts under its name without them too (Rack splits at `/& */`).
fn read_urlencoded(body: &[u8], sources: &EmailSources) -> Carried {
    let body = body.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(body);
    if body.trim_ascii_start().first().is_some_and(|b| matches!(b, b'{' | b'[' | b'"')) {
        return unreadable(Unreadable::Malformed);
    }
    // UTF-16 or UTF-32 (a BOM, NULs): a Django view's `json.loads(request.body)` and
    // Starlette's `request.json()` decode it whatever the declared type.
    if std::str::from_utf8(body).is_err() || body.contains(&0) {
        return unreadable(Unreadable::Encoded);
    }
    let pairs = || {
        body.split(|&b| b == b'&').flat_map(|piece| {
            let trimmed = piece.trim_ascii_start();
            let lenient = (trimmed.len() < piece.len()).then_some(trimmed);
            form_urlencoded::parse(piece).chain(lenient.into_iter().flat_map(form_urlencoded::parse))
        })
    };
    if let Some(why) = declared_charset(pairs().filter(|(k, _)| fold::same_name(k, CHARSET_FIELD)).map(|(_, v)| v)) {
        return unreadable(why);
    }
    Carried::new(from_pairs(pairs, &sources.form_fields), pair_domains(body, &sources.secret_fields))
}

/// The HTML5 `_charset_` field: the browser fills it with the form's encoding, and some servers
/// (Jetty, Apache Sling) decode the other fields with it. Anything but UTF-8 or US-ASCII is an
/// encoding the filter does not read.
const CHARSET_FIELD: &str = "_charset_";

fn declared_charset<S: AsRef<str>>(mut values: impl Iterator<Item = S>) -> Option<Unreadable> {
    values
        .any(|v| {
            let v = v.as_ref().trim();
            !v.is_empty() && !is_utf8_charset(v)
        })
        .then_some(Unreadable::Encoded)
}

fn from_pairs<'a, I>(pairs: impl Fn() -> I, names: &[String]) -> Extracted
where
    I: Iterator<Item = (std::borrow::Cow<'a, str>, std::borrow::Cow<'a, str>)>,
{
    names.iter().fold(Extracted::NotFound, |found, name| {
        found.and(single(pairs().filter(|(k, _)| fold::same_name(k, name)).map(|(_, v)| Ok(v.into_owned()))))
    })
}

/// Every part is read: a part in a transfer encoding or charset the filter does not read makes
/// the body unreadable whatever its name (Django decodes base64 parts). Files (a part with a
/// non-empty `filename`, which every framework of the matrix hands the app as an upload) and
/// parts that are not UTF-8 are not scanned, nor secret fields; a configured name is read
/// whatever its part.
fn read_multipart(body: &[u8], boundary: &str, sources: &EmailSources) -> Carried {
    let names = &sources.form_fields;
    let parts = match multipart::parts(body, boundary) {
        Ok(parts) => parts,
        Err(why) => return unreadable(why),
    };
    if parts.iter().any(|p| p.encoded) {
        return unreadable(Unreadable::Encoded);
    }
    let named =
        |name: &'static str| parts.iter().filter(move |p| p.name.as_deref().is_some_and(|n| fold::same_name(n, name)));
    let charsets = named(CHARSET_FIELD).map(|p| String::from_utf8_lossy(p.value));
    if let Some(why) = declared_charset(charsets) {
        return unreadable(why);
    }
    let mut domains = Domains::default();
    let secret = |p: &multipart::Part| p.name.as_deref().is_some_and(|n| is_secret(n, &sources.secret_fields));
    for part in parts.iter().filter(|p| !p.file && !secret(p)) {
        if let Ok(text) = std::str::from_utf8(part.value) {
            domains.consider_with(text, &sources.secret_fields);
        }
    }
    let mut found = Extracted::NotFound;
    for name in names {
        let mut values = Vec::new();
        for part in parts.iter().filter(|p| p.name.as_deref().is_some_and(|n| fold::same_name(n, name))) {
            match std::str::from_utf8(part.value) {
                Ok(v) => values.push(Ok(v.to_owned())),
                Err(_) => return unreadable(Unreadable::Encoded),
            }
        }
        found = found.and(single(values.into_iter()));
    }
    Carried::new(found, domains)
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

/// Optional whitespace around the pieces of a header value.
const OWS: [char; 2] = [' ', '\t'];

/// A `charset` value the filter reads as UTF-8 (quoted or not, any case).
pub(crate) fn is_utf8_charset(charset: &str) -> bool {
    matches!(charset.trim().to_ascii_lowercase().as_str(), "utf-8" | "utf8" | "us-ascii")
}

/// RFC 9110 `tchar`.
fn is_tchar(c: char) -> bool {
    c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c)
}

fn is_token(s: &str) -> bool {
    !s.is_empty() && s.chars().all(is_tchar)
}

/// A media type or disposition with its parameters, read strictly (RFC 9110 section 5.6.6):
/// `token[/token] *( OWS ";" OWS [ token "=" ( token / quoted-string ) ] ) OWS`.
/// Returns the lowercased type and the parameters (names lowercased, values unquoted), in order.
///
/// Popular parsers read anything else differently (Werkzeug ends an unquoted value at the first
/// non-token character, `name=email(x)` is `email`; Python's `email` drops comments; Go refuses
/// the header; Rails keeps everything up to `;`; busboy keeps the first of two equal names,
/// Werkzeug the last), so anything else is [`Unreadable::Ambiguous`]: a comment or any other
/// character outside a quoted string, whitespace around `=`, an unterminated quoted string, a
/// control character in one, a parameter name given twice.
pub(crate) fn header_value(value: &str) -> Result<(String, Vec<(String, String)>), Unreadable> {
    const AMBIGUOUS: Unreadable = Unreadable::Ambiguous;
    let value = value.trim_matches(OWS);
    let (essence, mut rest) = match value.split_once(';') {
        Some((essence, rest)) => (essence.trim_end_matches(OWS), Some(rest)),
        None => (value, None),
    };
    let valid = match essence.split_once('/') {
        Some((kind, sub)) => is_token(kind) && is_token(sub),
        None => is_token(essence),
    };
    if !valid {
        return Err(AMBIGUOUS);
    }
    let mut params: Vec<(String, String)> = Vec::new();
    while let Some(piece) = rest {
        let piece = piece.trim_start_matches(OWS);
        if piece.is_empty() {
            break;
        }
        if let Some(next) = piece.strip_prefix(';') {
            rest = Some(next); // an empty parameter (`;;`, a trailing `;`)
            continue;
        }
        let name_end = piece.find(|c| !is_tchar(c)).unwrap_or(piece.len());
        let (name, after) = piece.split_at(name_end);
        let after = after.strip_prefix('=').filter(|_| !name.is_empty()).ok_or(AMBIGUOUS)?;
        let (param, after) = match after.strip_prefix('"') {
            Some(quoted) => unquote(quoted).ok_or(AMBIGUOUS)?,
            None => {
                let end = after.find(|c| !is_tchar(c)).unwrap_or(after.len());
                if end == 0 {
                    return Err(AMBIGUOUS);
                }
                (after[..end].to_owned(), &after[end..])
            }
        };
        let name = name.to_ascii_lowercase();
        if params.iter().any(|(n, _)| *n == name) {
            return Err(AMBIGUOUS);
        }
        params.push((name, param));
        let after = after.trim_start_matches(OWS);
        rest = match after.strip_prefix(';') {
            Some(next) => Some(next),
            None if after.is_empty() => None,
            None => return Err(AMBIGUOUS),
        };
    }
    Ok((essence.to_ascii_lowercase(), params))
}

/// The inside of a quoted string (after the opening quote) and what follows its closing quote;
/// `None` when it never closes or holds a control character other than tab.
fn unquote(s: &str) -> Option<(String, &str)> {
    let mut value = String::new();
    let mut chars = s.char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '"' => return Some((value, &s[i + 1..])),
            '\\' => value.push(chars.next().map(|(_, escaped)| escaped).filter(|e| !is_ctl(*e))?),
            c if is_ctl(c) => return None,
            c => value.push(c),
        }
    }
    None
}

fn is_ctl(c: char) -> bool {
    (c.is_ascii_control() && c != '\t') || c == '\u{7f}'
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod protocol_tests;
