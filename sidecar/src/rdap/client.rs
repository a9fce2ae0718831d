//! One RDAP domain query (RFC 9082 section 3.1.3: `GET {base}domain/{name}`), bounded in time
//! and size, over `ureq` (blocking: the workers of [`super::DomainAges`] run it on their own
//! threads). Only the registered domain's name is sent: never a local part, never a subdomain.

use std::time::Duration;

use super::book::Outcome;
use super::response::{Unusable, registration, retry_after};
use crate::clock::unix_now;
use crate::outbound::{self, Failure, Reach};

/// The largest answer read (a domain object with its entities is a few kilobytes).
const MAX_BODY: u64 = 1024 * 1024;
/// Redirects followed (within the server's origin: `outbound`).
const MAX_REDIRECTS: u32 = 3;

pub struct Client {
    client: outbound::Client,
}

impl Client {
    /// Every request is bounded by `timeout`, from connecting to the body's last byte; `reach`:
    /// which addresses an RDAP server may have (`--allow-private-outbound`).
    pub fn new(timeout: Duration, reach: Reach) -> Self {
        Self { client: outbound::Client::new(timeout, MAX_REDIRECTS, reach) }
    }

    /// Asks the RDAP service at `base` (ending with `/`) about `domain` (normalized ASCII).
    pub fn fetch(&self, base: &str, domain: &str) -> Outcome {
        let url = format!("{base}domain/{domain}");
        let response = match self.client.get(&url, &[("accept", "application/rdap+json, application/json")]) {
            Ok(r) => r,
            Err(Failure::Refused(refusal)) => return Outcome::Refused(refusal),
            Err(Failure::Failed(why)) => return Outcome::Unavailable(why),
        };
        let status = response.status().as_u16();
        let wait = response
            .headers()
            .get("retry-after")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| retry_after(v, unix_now()))
            .map(Duration::from_secs);
        match status {
            200..=299 => {}
            404 => return Outcome::NotFound,
            429 => return Outcome::RateLimited(wait),
            503 if wait.is_some() => return Outcome::RateLimited(wait),
            403 | 500..=599 => return Outcome::Unavailable(format!("HTTP {status}")),
            _ => return Outcome::Unusable(format!("HTTP {status}")),
        }
        let body = match response.into_body().with_config().limit(MAX_BODY).read_to_vec() {
            Ok(body) => body,
            Err(e) => return Outcome::Unavailable(outbound::failure(e)),
        };
        match registration(&body) {
            Ok(Some(t)) => Outcome::Registered(t),
            Ok(None) => Outcome::NoRegistration,
            Err(e @ (Unusable::NotJson | Unusable::NotADomain)) => Outcome::Unusable(e.to_string()),
        }
    }
}
