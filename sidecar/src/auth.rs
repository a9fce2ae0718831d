//! Who is calling: the API key from the request, checked against the state store (whose key
//! cache, `state/versioned_cache.rs`, answers from memory until a key changes anywhere: a key
//! created, revoked or changed elsewhere is honoured within about 10 ms).

use std::net::IpAddr;
use std::sync::Arc;

use percent_encoding::percent_decode_str;

use crate::keys::ApiKey;
use crate::state::{KeyRecord, StateError, StateStore};

/// Why a request has no usable key. The messages tell a caller which case it is without telling
/// anyone which keys exist: an unknown and a revoked key read alike.
#[derive(Debug, thiserror::Error)]
pub enum AuthError {
    #[error("an API key is required: pass ?key= or an Authorization: Bearer header")]
    Missing,
    #[error("the Authorization header uses the {0} scheme; send the API key as `Authorization: Bearer <key>` or ?key=")]
    WrongScheme(String),
    #[error("the API key is malformed: a key is ev_ followed by 40 lowercase hex digits")]
    Malformed,
    #[error(
        "the API key is not known to this server's state store, or it was revoked (keys belong to one store: create them with the --state the server uses)"
    )]
    Unknown,
    #[error("the API key may not be used from this address (the key's IP allowlist)")]
    NotFromHere,
    #[error(transparent)]
    Store(#[from] StateError),
}

impl AuthError {
    /// No key was presented at all (`missing_api_key`), rather than a bad one (`api_key_invalid`).
    pub fn is_missing(&self) -> bool {
        matches!(self, Self::Missing | Self::WrongScheme(_))
    }
}

/// The scheme of an `Authorization` header that is not `Bearer` (for the error message: at most
/// 20 letters, digits or `-`), `None` for Bearer, no header, or nothing printable.
pub fn other_scheme(authorization: Option<&[u8]>) -> Option<String> {
    let header = std::str::from_utf8(authorization?).ok()?.trim();
    let scheme = header.split(' ').next().unwrap_or_default();
    let printable =
        !scheme.is_empty() && scheme.len() <= 20 && scheme.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-');
    (printable && !scheme.eq_ignore_ascii_case("bearer")).then(|| scheme.to_owned())
}

/// The key a request presents: the `Authorization: Bearer` header when there is one (it wins),
/// else the first `key` query parameter. Other authorization schemes are ignored.
pub fn presented_key(authorization: Option<&[u8]>, query: Option<&str>) -> Option<String> {
    let bearer = authorization.and_then(|h| std::str::from_utf8(h).ok()).and_then(|h| {
        let (scheme, token) = h.trim().split_once(' ').unwrap_or((h.trim(), ""));
        scheme.eq_ignore_ascii_case("bearer").then(|| token.trim().to_owned())
    });
    bearer.or_else(|| query_param(query?, "key"))
}

/// The first value of `name` in a query string, percent-decoded.
pub fn query_param(query: &str, name: &str) -> Option<String> {
    query.split('&').find_map(|pair| {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        (k == name).then(|| percent_decode_str(v).decode_utf8_lossy().into_owned())
    })
}

/// The query string with every `key` parameter removed, so it can be logged.
pub fn redact_query(query: &str) -> String {
    query.split('&').filter(|p| p.split('=').next() != Some("key")).collect::<Vec<_>>().join("&")
}

pub struct Authenticator {
    store: Arc<dyn StateStore>,
}

impl Authenticator {
    pub fn new(store: Arc<dyn StateStore>) -> Self {
        Self { store }
    }

    /// The active key record for `presented`, if it may be used from `peer`.
    pub async fn authenticate(
        &self,
        presented: Option<&str>,
        peer: Option<IpAddr>,
    ) -> Result<Arc<KeyRecord>, AuthError> {
        let key = ApiKey::parse(presented.ok_or(AuthError::Missing)?).ok_or(AuthError::Malformed)?;
        let record = self.store.key_by_hash(&key.hash()).await?.filter(|r| !r.revoked).ok_or(AuthError::Unknown)?;
        if !allowed_from(&record, peer) {
            return Err(AuthError::NotFromHere);
        }
        Ok(record)
    }
}

fn allowed_from(record: &KeyRecord, peer: Option<IpAddr>) -> bool {
    record.allow_ips.is_empty() || peer.is_some_and(|ip| record.allow_ips.iter().any(|net| net.contains(&ip)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_wins_over_query() {
        let check = |h: Option<&str>, q: Option<&str>, want: Option<&str>| {
            assert_eq!(presented_key(h.map(str::as_bytes), q).as_deref(), want, "{h:?} {q:?}");
        };
        check(None, None, None);
        check(None, Some("key=abc"), Some("abc"));
        check(None, Some("x=1&key=a%2Bb&key=second"), Some("a+b"));
        check(Some("Bearer hdr"), Some("key=q"), Some("hdr"));
        check(Some("bearer   hdr "), None, Some("hdr"));
        check(Some("Bearer"), Some("key=q"), Some(""));
        check(Some("Basic dXNlcjpwYXNz"), Some("key=q"), Some("q"));
        check(None, Some("keys=1"), None);
    }

    #[test]
    fn other_schemes_are_named() {
        assert_eq!(other_scheme(Some(b"Token ev_abc")).as_deref(), Some("Token"));
        assert_eq!(other_scheme(Some(b"Basic dXNlcjpwYXNz")).as_deref(), Some("Basic"));
        assert_eq!(other_scheme(Some(b"bearer x")), None);
        assert_eq!(other_scheme(None), None);
        assert_eq!(other_scheme(Some(b"<script>alert(1)</script> x")), None, "never echoed unless plain");
    }

    #[test]
    fn redaction_removes_every_key_param() {
        assert_eq!(redact_query("key=secret"), "");
        assert_eq!(redact_query("a=1&key=secret&b=2&key"), "a=1&b=2");
        assert_eq!(redact_query("keyx=1"), "keyx=1");
    }
}
