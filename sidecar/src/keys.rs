//! API keys: their format, generation and the hash that is all the store ever keeps.
//!
//! A key is `ev_` followed by 40 lowercase hex digits: 160 random bits, recognisable in logs and
//! secret scanners by its prefix. The store keeps only SHA-256 of the key; a key's public handle
//! is its id (`key_` + 12 hex digits), which is safe to print.

use sha2::{Digest, Sha256};

const PREFIX: &str = "ev_";
const SECRET_HEX: usize = 40;

/// A syntactically valid API key (not necessarily a known one).
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey(String);

impl ApiKey {
    /// A fresh key from the operating system's CSPRNG.
    pub fn generate() -> std::io::Result<Self> {
        Ok(Self(format!("{PREFIX}{}", random_hex(SECRET_HEX / 2)?)))
    }

    /// Checks the format only; `None` for anything malformed.
    pub fn parse(raw: &str) -> Option<Self> {
        let secret = raw.strip_prefix(PREFIX)?;
        let well_formed = secret.len() == SECRET_HEX && secret.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
        well_formed.then(|| Self(raw.to_owned()))
    }

    pub fn hash(&self) -> KeyHash {
        KeyHash(Sha256::digest(self.0.as_bytes()).into())
    }

    pub fn expose(&self) -> &str {
        &self.0
    }
}

/// Never print a key by accident.
impl std::fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ApiKey(..)")
    }
}

/// SHA-256 of a key: what the state store indexes keys by (as [`hex`](Self::hex)). Kept as bytes:
/// every request hashes its key, and only a store read needs the text.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct KeyHash([u8; 32]);

impl KeyHash {
    pub fn hex(&self) -> String {
        hex::encode(self.0)
    }
}

/// A new key id: `key_` + 12 hex digits.
pub fn new_key_id() -> std::io::Result<String> {
    Ok(format!("key_{}", random_hex(6)?))
}

fn random_hex(bytes: usize) -> std::io::Result<String> {
    let mut buf = vec![0u8; bytes];
    getrandom::fill(&mut buf).map_err(|e| std::io::Error::other(e.to_string()))?;
    Ok(hex::encode(buf))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_keys_parse_and_differ() {
        let a = ApiKey::generate().unwrap();
        let b = ApiKey::generate().unwrap();
        assert_ne!(a, b);
        assert!(ApiKey::parse(a.expose()).is_some());
        assert_eq!(a.expose().len(), 43);
        assert_eq!(format!("{a:?}"), "ApiKey(..)");
        assert_ne!(a.hash(), b.hash());
        assert_eq!(a.hash().hex().len(), 64);
    }

    #[test]
    fn malformed_keys() {
        for raw in [
            "",
            "ev_",
            "garbage",
            "ev_ABCDEF0123456789abcdef0123456789abcdef01",
            "xx_0123456789abcdef0123456789abcdef01234567",
            "ev_0123456789abcdef0123456789abcdef0123456",
            "ev_0123456789abcdef0123456789abcdef012345678",
        ] {
            assert!(ApiKey::parse(raw).is_none(), "{raw:?}");
        }
        assert!(ApiKey::parse("ev_0123456789abcdef0123456789abcdef01234567").is_some());
    }
}
