//! Where an operator list comes from, as given to `--disposable-list`, `--free-list`,
//! `--allowlist` or `--blocklist`: a file path or an `http://` / `https://` URL, a disposable
//! list optionally prefixed with its tier (`weak:https://…`, `strong:/etc/lists/x.txt`).
//!
//! A URL may carry secrets (user-info, a token in the query): only [`ListUrl::redacted`] is
//! ever shown or logged, and `Debug` prints that form too.

use std::fmt;
use std::path::PathBuf;

use email_verdict_core::catalog::Tier;

use crate::usage_error;

/// What an operator list is for (its flag).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ListRole {
    Disposable,
    Free,
    Allow,
    Block,
}

impl ListRole {
    /// The name shown by the admin API, the dashboard, the logs and the metrics' `kind` label.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Disposable => "disposable",
            Self::Free => "free",
            Self::Allow => "allowlist",
            Self::Block => "blocklist",
        }
    }

    fn flag(self) -> &'static str {
        match self {
            Self::Disposable => "--disposable-list",
            Self::Free => "--free-list",
            Self::Allow => "--allowlist",
            Self::Block => "--blocklist",
        }
    }
}

/// One operator list: its role, tier (meaningful for disposable lists) and location.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListSpec {
    pub role: ListRole,
    pub tier: Tier,
    pub location: Location,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Location {
    File(PathBuf),
    Url(ListUrl),
}

impl ListSpec {
    /// Reads a flag's value. A `weak:` / `strong:` prefix is accepted on disposable lists only
    /// (default strong, as an operator's own list always was); a path that really starts with
    /// one of them is written `./weak:…`.
    pub fn parse(role: ListRole, value: &str) -> anyhow::Result<Self> {
        let bad = |why: String| usage_error(format!("{} {}: {why}", role.flag(), redact(value)));
        let (tier, rest) = match value.split_once(':') {
            Some(("weak", rest)) => (Some(Tier::Weak), rest),
            Some(("strong", rest)) => (Some(Tier::Strong), rest),
            _ => (None, value),
        };
        if tier.is_some() && role != ListRole::Disposable {
            return Err(bad("a tier (weak: / strong:) applies to --disposable-list only".into()));
        }
        let location = if is_url(rest) {
            Location::Url(ListUrl::parse(rest).map_err(bad)?)
        } else if rest.contains("://") {
            return Err(bad("only http:// and https:// URLs are fetched".into()));
        } else if rest.is_empty() {
            return Err(bad("empty path".into()));
        } else {
            Location::File(PathBuf::from(rest))
        };
        Ok(Self { role, tier: tier.unwrap_or(Tier::Strong), location })
    }

    /// The location as shown: the path, or the redacted URL.
    pub fn shown(&self) -> String {
        match &self.location {
            Location::File(path) => path.display().to_string(),
            Location::Url(url) => url.redacted().to_owned(),
        }
    }

    pub fn is_url(&self) -> bool {
        matches!(self.location, Location::Url(_))
    }
}

fn is_url(s: &str) -> bool {
    let lower = s.get(..8).unwrap_or(s).to_ascii_lowercase();
    lower.starts_with("http://") || lower.starts_with("https://")
}

/// An `http(s)://` URL with its credentials kept apart from what is shown.
#[derive(Clone, PartialEq, Eq)]
pub struct ListUrl {
    /// The URL as requested: without user-info, with the query.
    request: String,
    /// `user:password` from the URL, percent-decoded, sent as HTTP Basic authentication.
    basic: Option<(String, String)>,
    redacted: String,
    /// The URL as given, for naming its kept copy (never shown).
    full: String,
}

impl ListUrl {
    pub fn parse(s: &str) -> Result<Self, String> {
        let uri: http::Uri = s.parse().map_err(|_| "not a valid URL".to_owned())?;
        let (Some(scheme), Some(authority)) = (uri.scheme_str(), uri.authority()) else {
            return Err("not an absolute URL".into());
        };
        let hostport = authority.as_str().rsplit('@').next().unwrap_or_default();
        if hostport.is_empty() || authority.host().is_empty() {
            return Err("no host".into());
        }
        let basic = authority.as_str().rsplit_once('@').map(|(info, _)| {
            let (user, pass) = info.split_once(':').unwrap_or((info, ""));
            (decode(user), decode(pass))
        });
        let path_query = uri.path_and_query().map_or("/", |p| p.as_str());
        let request = format!("{}://{hostport}{path_query}", scheme.to_ascii_lowercase());
        Ok(Self { request, basic, redacted: redact(s), full: s.to_owned() })
    }

    pub fn request(&self) -> &str {
        &self.request
    }

    pub fn basic(&self) -> Option<(&str, &str)> {
        self.basic.as_ref().map(|(u, p)| (u.as_str(), p.as_str()))
    }

    /// The URL without secrets: user-info replaced by `***`, every query value by `***`,
    /// no fragment.
    pub fn redacted(&self) -> &str {
        &self.redacted
    }

    pub fn full(&self) -> &str {
        &self.full
    }
}

impl fmt::Debug for ListUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ListUrl({})", self.redacted)
    }
}

fn decode(s: &str) -> String {
    percent_encoding::percent_decode_str(s).decode_utf8_lossy().into_owned()
}

/// `s` with any user-info and query values replaced by `***` and the fragment dropped; text
/// that is not a URL is returned as is (a path).
pub fn redact(s: &str) -> String {
    let Some((scheme, rest)) = s.split_once("://") else { return s.to_owned() };
    let rest = rest.split('#').next().unwrap_or_default();
    let (before_query, query) = match rest.split_once('?') {
        Some((b, q)) => (b, Some(q)),
        None => (rest, None),
    };
    let (authority, path) = before_query.split_at(before_query.find('/').unwrap_or(before_query.len()));
    let authority = match authority.rsplit_once('@') {
        Some((_, host)) => format!("***@{host}"),
        None => authority.to_owned(),
    };
    let mut out = format!("{scheme}://{authority}{path}");
    if let Some(query) = query {
        let params: Vec<String> = query
            .split('&')
            .map(|p| match p.split_once('=') {
                Some((name, _)) => format!("{name}=***"),
                None if p.is_empty() => String::new(),
                None => "***".to_owned(),
            })
            .collect();
        out.push('?');
        out.push_str(&params.join("&"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(role: ListRole, value: &str, expected: Result<(Tier, &str, bool), &str>) {
        let got = ListSpec::parse(role, value).map(|s| (s.tier, s.shown(), s.is_url())).map_err(|e| e.to_string());
        match expected {
            Ok((tier, shown, url)) => assert_eq!(got.ok(), Some((tier, shown.to_owned(), url)), "{value}"),
            Err(part) => assert!(got.as_ref().is_err_and(|e| e.contains(part)), "{value}: {got:?}"),
        }
    }

    #[test]
    fn flag_values() {
        use ListRole::*;
        check(Disposable, "/etc/lists/a.txt", Ok((Tier::Strong, "/etc/lists/a.txt", false)));
        check(Disposable, "weak:/etc/lists/a.txt", Ok((Tier::Weak, "/etc/lists/a.txt", false)));
        check(Disposable, "weak:https://l.example/a.txt", Ok((Tier::Weak, "https://l.example/a.txt", true)));
        check(Disposable, "strong:HTTP://l.example/a", Ok((Tier::Strong, "HTTP://l.example/a", true)));
        check(Disposable, "./weak:x.txt", Ok((Tier::Strong, "./weak:x.txt", false)));
        check(
            Block,
            "https://u:p@l.example/b?token=s3cret",
            Ok((Tier::Strong, "https://***@l.example/b?token=***", true)),
        );
        check(Block, "weak:https://l.example/b", Err("--disposable-list only"));
        check(Free, "ftp://l.example/f", Err("only http:// and https://"));
        check(Allow, "https:///nohost", Err("--allowlist"));
        check(Disposable, "weak:", Err("empty path"));
    }

    #[test]
    fn urls_keep_credentials_apart() {
        let url = ListUrl::parse("https://ana:p%40ss@lists.example:8443/x.txt?key=abc&v=2#frag").unwrap();
        assert_eq!(url.request(), "https://lists.example:8443/x.txt?key=abc&v=2");
        assert_eq!(url.basic(), Some(("ana", "p@ss")));
        assert_eq!(url.redacted(), "https://***@lists.example:8443/x.txt?key=***&v=***");
        let shown = format!("{url:?}");
        assert!(!shown.contains("abc") && !shown.contains("p%40ss") && !shown.contains("ana"), "{shown}");
        let plain = ListUrl::parse("http://127.0.0.1:9/list").unwrap();
        assert_eq!(
            (plain.request(), plain.basic(), plain.redacted()),
            ("http://127.0.0.1:9/list", None, "http://127.0.0.1:9/list")
        );
    }
}
