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

use email_verdict_core::signup::Policy;
use email_verdict_core::signup::velocity::{
    Action, Scope, VelocityLimits, count_headers, mailbox_hash, too_many_signups,
};
use email_verdict_core::{EmailAddress, ErrorCode};

use super::{Api, ApiError};
use crate::metrics::Route;
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
    let flagged: Vec<Scope> = passed.iter().map(|p| p.scope).collect();
    let config = &*api.ext_authz.load_full();
    let headers = count_headers(&config.flag_headers, config.detail_headers, &counts, &flagged);
    Counted::Pass(headers.into_iter().map(|(name, value)| (name.to_owned(), value)).collect())
}

/// The check's key is not on the `gateway` plan: counts are written by gateways only (as
/// `POST /api/v1/signups` answers `403`), so the signup is judged without its count, never
/// refused for it. A configuration error: logged and counted as a refused count.
pub fn refused_for_the_plan(api: &Api) {
    api.metrics.request(Route::Signups, 403, Some(ErrorCode::Forbidden));
    tracing::error!("signup not counted: the gateway's key (x-email-verdict-key) must be on the gateway plan");
}

fn failed(api: &Api, counting: &Counting, why: &str) -> Counted {
    api.metrics.store_error();
    tracing::warn!(error = why, "signup count failed");
    match counting.failure_mode {
        Policy::Allow => Counted::Pass(Vec::new()),
        Policy::Deny => Counted::Failed(ApiError::new(ErrorCode::InternalError, "the signup could not be counted")),
    }
}
