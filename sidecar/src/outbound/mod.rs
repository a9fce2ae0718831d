//! Outbound HTTP (operator lists from URLs, RDAP): one client shape and one way to say what
//! went wrong. Statuses are judged by the caller (they are not errors here); trust is the
//! system's CA store (the image ships one), so a server behind a private CA works; every
//! request is bounded by `timeout`, from connecting to the last byte of the last redirect's body.
//!
//! **Invariants** (`--allow-private-outbound` lifts the first only):
//! - no connection to an address that is not public ([`address::is_public`]): the addresses a
//!   name resolves to are checked, not the URL's text, and the client connects only to those
//!   kept;
//! - redirects are followed here, never by ureq, and only to the same origin ([`redirect`]),
//!   at most `max_redirects` of them.

mod address;
mod redirect;
mod resolver;

use std::time::{Duration, Instant};

use ureq::http::{Response, Uri};
use ureq::tls::{RootCerts, TlsConfig};
use ureq::unversioned::transport::DefaultConnector;

pub use address::is_public;

/// Which addresses outbound requests may reach.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Reach {
    /// Public addresses only (the default).
    #[default]
    Public,
    /// Any address: loopback, private networks... (`--allow-private-outbound`).
    Any,
}

/// A request the client would not make.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    #[error("refused: the host has no public address (--allow-private-outbound allows private ones)")]
    NotPublic,
    #[error("refused: a redirect to another host, port or scheme (give the final URL)")]
    Redirect,
}

impl Refusal {
    /// Its label in the `outbound_refused` metric.
    pub fn as_str(self) -> &'static str {
        match self {
            Refusal::NotPublic => "address",
            Refusal::Redirect => "redirect",
        }
    }
}

/// Why a request got no response, in words that never carry the URL (it may hold
/// credentials, and an RDAP URL names the domain asked about).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Failure {
    #[error("{0}")]
    Refused(Refusal),
    #[error("{0}")]
    Failed(String),
}

impl From<ureq::Error> for Failure {
    fn from(e: ureq::Error) -> Self {
        match e {
            ureq::Error::Other(other) => match other.downcast::<Refusal>() {
                Ok(refusal) => Failure::Refused(*refusal),
                Err(other) => Failure::Failed(format!("other: {other}")),
            },
            e => Failure::Failed(failure(e)),
        }
    }
}

/// A blocking client: GETs bounded in time, redirects followed within the origin.
pub struct Client {
    agent: ureq::Agent,
    reach: Reach,
    timeout: Duration,
    max_redirects: u32,
}

impl Client {
    pub fn new(timeout: Duration, max_redirects: u32, reach: Reach) -> Self {
        let config = ureq::Agent::config_builder()
            .timeout_global(Some(timeout))
            .http_status_as_error(false)
            .max_redirects(0)
            .user_agent(concat!("email-verdict/", env!("CARGO_PKG_VERSION")))
            .tls_config(TlsConfig::builder().root_certs(RootCerts::PlatformVerifier).build())
            .build();
        let agent = match reach {
            Reach::Public => ureq::Agent::with_parts(config, DefaultConnector::new(), resolver::PublicOnly::default()),
            Reach::Any => ureq::Agent::new_with_config(config),
        };
        Self { agent, reach, timeout, max_redirects }
    }

    /// GETs `url` with `headers` (sent again on each redirect, which stays in the origin).
    /// The response may be any status but a redirect that could be followed.
    pub fn get(&self, url: &str, headers: &[(&str, &str)]) -> Result<Response<ureq::Body>, Failure> {
        let deadline = Instant::now() + self.timeout;
        let mut uri: Uri = url.parse().map_err(|_| Failure::Failed("bad URL".into()))?;
        for _ in 0..=self.max_redirects {
            self.check_literal(&uri)?;
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(Failure::Failed("timed out".into()));
            }
            let mut request = self.agent.get(uri.clone());
            for (name, value) in headers {
                request = request.header(*name, *value);
            }
            let response = request.config().timeout_global(Some(left)).build().call()?;
            let location = response.headers().get("location").and_then(|v| v.to_str().ok());
            match location {
                Some(location) if redirect::is_redirect(response.status().as_u16()) => {
                    uri = redirect::target(&uri, location).map_err(Failure::Refused)?;
                }
                _ => return Ok(response),
            }
        }
        Err(Failure::Failed("too many redirects".into()))
    }

    /// A host written as an address must be public: through a proxy, it would not be
    /// resolved here (names are then the proxy's to resolve).
    fn check_literal(&self, uri: &Uri) -> Result<(), Failure> {
        let host = uri.host().unwrap_or_default().trim_start_matches('[').trim_end_matches(']');
        match host.parse() {
            Ok(ip) if self.reach == Reach::Public && !is_public(ip) => Err(Failure::Refused(Refusal::NotPublic)),
            _ => Ok(()),
        }
    }
}

/// A transport failure in words that never carry the URL.
pub fn failure(e: ureq::Error) -> String {
    match e {
        ureq::Error::Timeout(_) => "timed out".into(),
        ureq::Error::BodyExceedsLimit(limit) => format!("body larger than {limit} bytes"),
        ureq::Error::HostNotFound => "host not found".into(),
        ureq::Error::ConnectionFailed => "connection failed".into(),
        ureq::Error::TooManyRedirects => "too many redirects".into(),
        ureq::Error::BadUri(_) | ureq::Error::Http(_) => "bad URL".into(),
        ureq::Error::Io(io) => format!("I/O error: {}", io.kind()),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests;
