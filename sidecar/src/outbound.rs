//! Outbound HTTP (operator lists from URLs, RDAP): one way to build the blocking `ureq` client
//! and one way to say what went wrong. Statuses are judged by the caller (they are not errors
//! here); trust is the system's CA store (the image ships one), so a server behind a private
//! CA works; every request is bounded by `timeout`, from connecting to the body's last byte.

use std::time::Duration;

use ureq::tls::{RootCerts, TlsConfig};

/// A client bounded by `timeout` that follows at most `max_redirects` redirects.
pub fn agent(timeout: Duration, max_redirects: u32) -> ureq::Agent {
    ureq::Agent::config_builder()
        .timeout_global(Some(timeout))
        .http_status_as_error(false)
        .max_redirects(max_redirects)
        .user_agent(concat!("email-verdict/", env!("CARGO_PKG_VERSION")))
        .tls_config(TlsConfig::builder().root_certs(RootCerts::PlatformVerifier).build())
        .build()
        .into()
}

/// A transport failure in words that never carry the URL (it may hold credentials, and an
/// RDAP URL names the domain asked about).
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
