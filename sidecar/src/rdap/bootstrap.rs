//! The RDAP bootstrap registry for DNS (RFC 9224): which RDAP server answers for which
//! top-level domain. The shipped copy is IANA's file (`data/rdap/dns.json`, with its provenance
//! in `data/rdap/README.md`); `--rdap-bootstrap FILE` gives another of the same format.

use std::collections::HashMap;
use std::sync::Arc;

use serde::Deserialize;

/// `data/rdap/dns.json`, embedded.
const SHIPPED: &str = include_str!("../../../data/rdap/dns.json");

/// A bootstrap file with more entries than this is refused (IANA's has about 1,200 labels).
const MAX_LABELS: usize = 100_000;

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum BootstrapError {
    #[error("not an RDAP bootstrap file (RFC 9224): {0}")]
    Format(String),
    #[error("no service has an http(s) URL")]
    Empty,
    #[error("more than {MAX_LABELS} labels")]
    TooLarge,
}

/// The registry as read: labels (a top-level domain, or any longer suffix) to the base URL
/// of their RDAP service, which ends with `/`.
#[derive(Debug, Clone)]
pub struct Bootstrap {
    services: HashMap<Box<str>, Arc<str>>,
    /// The file's `publication` field (empty when it has none).
    pub publication: String,
}

#[derive(Deserialize)]
struct File {
    #[serde(default)]
    publication: String,
    services: Vec<Vec<Vec<String>>>,
}

impl Bootstrap {
    /// The shipped copy of IANA's registry.
    pub fn shipped() -> Result<Self, BootstrapError> {
        Self::parse(SHIPPED)
    }

    /// Reads a bootstrap file: `{"services": [[[labels...], [urls...]], ...]}`. A service's
    /// URL is its first `https` one, else its first `http` one (RFC 9224 section 3: prefer
    /// https); a service without either is left out. Labels are matched case-insensitively,
    /// without a trailing dot.
    pub fn parse(text: &str) -> Result<Self, BootstrapError> {
        let file: File = serde_json::from_str(text).map_err(|e| BootstrapError::Format(e.to_string()))?;
        let mut services = HashMap::new();
        for (i, service) in file.services.into_iter().enumerate() {
            let [labels, urls] = <[Vec<String>; 2]>::try_from(service)
                .map_err(|_| BootstrapError::Format(format!("service {i} is not [[labels...], [urls...]]")))?;
            let scheme = |s: &str| {
                urls.iter().find(|u| u.len() > s.len() && u.get(..s.len()).is_some_and(|p| p.eq_ignore_ascii_case(s)))
            };
            let Some(url) = scheme("https://").or_else(|| scheme("http://")) else { continue };
            let base: Arc<str> = if url.ends_with('/') { url.as_str().into() } else { format!("{url}/").into() };
            for label in labels {
                let label = label.trim_end_matches('.').to_ascii_lowercase();
                if !label.is_empty() {
                    services.insert(label.into_boxed_str(), base.clone());
                }
            }
            if services.len() > MAX_LABELS {
                return Err(BootstrapError::TooLarge);
            }
        }
        if services.is_empty() {
            return Err(BootstrapError::Empty);
        }
        Ok(Self { services, publication: file.publication })
    }

    /// The base URL of the RDAP service for `domain` (normalized ASCII): the entry matching the
    /// most labels at its end (RFC 9224 section 4), or `None` when no service covers it.
    pub fn server_for(&self, domain: &str) -> Option<&Arc<str>> {
        let mut rest = domain;
        loop {
            if let Some(url) = self.services.get(rest) {
                return Some(url);
            }
            rest = rest.split_once('.')?.1;
        }
    }

    /// Labels with a service.
    pub fn len(&self) -> usize {
        self.services.len()
    }

    pub fn is_empty(&self) -> bool {
        self.services.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shipped_registry_reads_and_names_the_big_registries() {
        let b = Bootstrap::shipped().unwrap();
        assert!(b.len() > 1000, "{}", b.len());
        assert!(!b.publication.is_empty());
        assert_eq!(b.server_for("example.com").map(|s| &**s), Some("https://rdap.verisign.com/com/v1/"));
        assert_eq!(
            b.server_for("shop.example.org").map(|s| &**s),
            Some("https://rdap.publicinterestregistry.org/rdap/")
        );
        assert_eq!(b.server_for("mail.example.no-such-tld"), None);
        assert!(b.services.values().all(|u| u.ends_with('/') && u.starts_with("http")));
    }

    #[test]
    fn the_longest_match_wins_and_https_is_preferred() {
        let b = Bootstrap::parse(
            r#"{"publication": "2026-01-01T00:00:00Z", "version": "1.0", "services": [
                [["example", "test"], ["http://plain.example/rdap/", "https://tld.example/rdap/"]],
                [["co.example"], ["https://second.example/rdap"]],
                [["Upper.", "ftp"], ["ftp://files.example/"]],
                [["old"], ["http://old.example/"]]]}"#,
        )
        .unwrap();
        let server = |d: &str| b.server_for(d).map(|s| s.to_string());
        assert_eq!(server("shop.example").as_deref(), Some("https://tld.example/rdap/"));
        assert_eq!(server("shop.test").as_deref(), Some("https://tld.example/rdap/"));
        assert_eq!(server("shop.co.example").as_deref(), Some("https://second.example/rdap/"), "longest, `/` added");
        assert_eq!(server("co.example").as_deref(), Some("https://second.example/rdap/"));
        assert_eq!(server("shop.old").as_deref(), Some("http://old.example/"), "http when that is all");
        assert_eq!(server("shop.ftp"), None, "no http(s) URL: no service");
        assert_eq!(server("shop.upper"), None, "same for its other labels");
        assert_eq!(server("example.net"), None);
        assert_eq!(server("notexample"), None, "whole labels only");
        assert_eq!(b.publication, "2026-01-01T00:00:00Z");
    }

    #[test]
    fn other_files_are_refused() {
        assert!(matches!(Bootstrap::parse("not json"), Err(BootstrapError::Format(_))));
        assert!(matches!(Bootstrap::parse(r#"{"services": [[["com"]]]}"#), Err(BootstrapError::Format(_))));
        assert!(matches!(
            Bootstrap::parse(r#"{"services": [["com", ["https://x/"]]]}"#),
            Err(BootstrapError::Format(_))
        ));
        assert_eq!(Bootstrap::parse(r#"{"services": []}"#).unwrap_err(), BootstrapError::Empty);
        assert_eq!(Bootstrap::parse(r#"{"services": [[["com"], ["ldap://x/"]]]}"#).unwrap_err(), BootstrapError::Empty);
    }
}
