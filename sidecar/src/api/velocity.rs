//! `/ext_authz` with `velocity` (issue 32): the signup counted in the process — its mailbox as
//! the keyed hash of the canonical mailbox, its client as Envoy saw it (`x-email-verdict-client`,
//! from `%DOWNSTREAM_REMOTE_ADDRESS_WITHOUT_PORT%`), its domain and mail server — in one store
//! call bounded by [`COUNT_TIMEOUT`], then the operator's limits applied: over a `block` limit
//! `429 too_many_signups` with `Retry-After`; otherwise the count headers (mailbox: day, client:
//! hour) and `x-email-velocity` naming the `flag` limits passed. A store down or slow follows
//! the configuration's `failure_mode`: `allow` lets the signup through without counts, `deny`
//! refuses it with a 5xx (Envoy's failure mode then decides).

use std::net::IpAddr;
use std::time::Duration;

use email_verdict_core::signup::velocity::{Action, Counts, Passed, VelocityLimits, mailbox_hash, too_many_signups};
use email_verdict_core::signup::{FlagHeaders, Policy};
use email_verdict_core::{EmailAddress, ErrorCode};

use super::{Api, ApiError};
use crate::signups::Signup;

/// Where Envoy puts the signup's client address (`authorization_request.headers_to_add`).
pub const CLIENT_HEADER: &str = "x-email-verdict-client";
/// The longest a check waits for its count: a slow store never delays the verdict more.
pub const COUNT_TIMEOUT: Duration = Duration::from_millis(200);

/// Counting's settings beside the shared ones: the mailbox hash's secret (`--mailbox-secret`)
/// and what a failed count does (`failure_mode` of the `--ext-authz-config` file).
#[derive(Clone)]
pub struct Counting {
    pub secret: Vec<u8>,
    pub failure_mode: Policy,
}

impl std::fmt::Debug for Counting {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Counting").field("secret", &"[hidden]").field("failure_mode", &self.failure_mode).finish()
    }
}

/// What counting a signup came to.
pub enum Counted {
    /// Let through, with these headers set (none when the count failed and `failure_mode` allows).
    Pass(Vec<(String, String)>),
    /// Over a `block` limit: the 429's body and its `Retry-After`.
    Blocked { body: Vec<u8>, retry_after: u64 },
    /// The count failed and `failure_mode` denies.
    Failed(ApiError),
}

/// Counts the signup of `email` from `client` and applies `limits`.
pub async fn count(
    api: &Api,
    (limits, counting): (&VelocityLimits, &Counting),
    email: &EmailAddress,
    client: Option<IpAddr>,
    request_id: &str,
) -> Counted {
    let signup = Signup::of(email.domain().clone(), Some(mailbox_hash(&counting.secret, email)), client);
    let counts = match tokio::time::timeout(COUNT_TIMEOUT, api.signups.count(&api.verdicts, &signup)).await {
        Ok(Ok(counts)) => counts,
        Ok(Err(e)) => return failed(api, counting, &e.to_string()),
        Err(_) => return failed(api, counting, "timed out"),
    };
    let passed = limits.passed(&counts);
    if let Some(block) = passed.iter().find(|p| p.action == Action::Block) {
        return Counted::Blocked { body: too_many_signups(block, Some(request_id)), retry_after: block.retry_after };
    }
    Counted::Pass(headers(&api.ext_authz.flag_headers, &counts, &passed))
}

fn failed(api: &Api, counting: &Counting, why: &str) -> Counted {
    api.metrics.store_error();
    tracing::warn!(error = why, "signup count failed");
    match counting.failure_mode {
        Policy::Allow => Counted::Pass(Vec::new()),
        Policy::Deny => Counted::Failed(ApiError::new(ErrorCode::InternalError, "the signup could not be counted")),
    }
}

/// The count headers: the mailbox's day, the client's hour, the `flag` limits passed.
fn headers(names: &FlagHeaders, counts: &Counts, passed: &[Passed]) -> Vec<(String, String)> {
    let mut set = Vec::new();
    if let Some(mailbox) = counts.mailbox {
        set.push((names.mailbox_signups.clone(), mailbox.day.to_string()));
    }
    if let Some(client) = counts.client {
        set.push((names.client_signups.clone(), client.hour.to_string()));
    }
    if !passed.is_empty() {
        let scopes: Vec<&str> = passed.iter().map(|p| p.scope.as_str()).collect();
        set.push((names.velocity.clone(), scopes.join(",")));
    }
    set
}

#[cfg(test)]
mod tests {
    use super::*;
    use email_verdict_core::signup::velocity::{Scope, Window};

    #[test]
    fn the_headers_say_the_mailbox_day_the_client_hour_and_the_flags() {
        let names = FlagHeaders::default();
        let w = |hour, day| Some(Window { hour, day });
        let counts = Counts { mailbox: w(1, 3), client: w(7, 9), domain: w(1, 1), server: None };
        let flag = |scope| Passed { scope, action: Action::Flag, retry_after: 3600 };
        let got = headers(&names, &counts, &[flag(Scope::Mailbox), flag(Scope::Client)]);
        let got: Vec<(&str, &str)> = got.iter().map(|(n, v)| (n.as_str(), v.as_str())).collect();
        assert_eq!(
            got,
            [("x-email-mailbox-signups", "3"), ("x-email-client-signups", "7"), ("x-email-velocity", "mailbox,client")]
        );
        assert!(headers(&names, &Counts::default(), &[]).is_empty());
    }
}
