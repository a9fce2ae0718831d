//! `ANY /ext_authz/{original path}`: Envoy's HTTP ext_authz check for a signup (Envoy's
//! `path_prefix: /ext_authz`, Istio's `envoyExtAuthzHttp.pathPrefix`, Envoy Gateway's
//! `extAuth.http.path`). Envoy sends the signup's method, its path with the query, the headers
//! it is told to pass and the buffered body. The check itself ([`decide`] on a [`Signup`]) knows
//! no transport: `grpc_authz` serves the same decision as Envoy's gRPC `Authorization/Check`.
//!
//! The email is found exactly as the filter finds it (core's `signup::extract`, with the same
//! settings: `--ext-authz-config`) and judged by the lookup API's own path ([`lookup::judge`]:
//! key, limits, reviewer decisions, caches). The answers follow Envoy's contract:
//! - allow: `200`, the flag headers (for `allowed_upstream_headers`; the suggestion header carries
//!   the suggested provider domain of a probable typo, never the email's local part; the detail
//!   headers the address's normalized form, role account and relay, computed here from the whole
//!   address as the lookup API's `details` are) and `x-envoy-auth-headers-to-remove` naming the
//!   flag headers this answer does not set, so a client's forged copy never reaches the app;
//! - block: the block response (default `403` JSON); refusals: the filter's `400`/`413` replies;
//!   each in the words of the request's protocol, as the filter says them (core's
//!   `LocalReply::render`, `Via::ExtAuthz`: gRPC's `grpc-status`, Connect's and GraphQL's error
//!   JSON), never as a `200`;
//! - our own failure (DNS, store, the gateway key missing, invalid, over quota or burst): `5xx`,
//!   so Envoy's `failure_mode_allow` / `status_on_error` decides. Except for a domain the strong
//!   lists (or the operator's blocklist) name: it is judged `disposable` without the rest, so
//!   spending the gateway key's burst on purpose opens no door (the filter's `local_fallback`).
//!
//! The API key comes only from `x-email-verdict-key` (set by Envoy from a Secret), never from
//! the end user's `Authorization` header or `?key=`, which Envoy forwards as they came. It is
//! checked before the body is read: a missing or invalid key gets its `5xx` at once, without
//! the body (so without a local decision), and an anonymous client can neither make the sidecar
//! read a body nor hold a connection open while it trickles one in. A body then has
//! `body::BODY_IDLE` / `BODY_TIME` to arrive, else `408`.

use email_verdict_core::signup::extract::{self, BodyKind, Carried, Domains, Extracted, Name, Problem, ToJudge};
use email_verdict_core::signup::path::normalize as normalize_path;
use email_verdict_core::signup::{
    AddressDetails, AddressVerdict, Bypass, Enforcement, GraphQl, Judged as Outcome, LocalReply, Mode, NoMx, Policy,
    Protocol, Reason, Refusing, Settled, Subaddressed, VerdictSummary, Worst, rollout,
};
use std::net::IpAddr;

use email_verdict_core::{Decision, Domain, EmailAddress, LookupInput, details};
use http::{Response, StatusCode};
use pingora::protocols::http::ServerSession;

pub use super::body::Unread;
use super::body::read_body;
use super::lookup::{auth_error, judge};
use super::velocity::{self, CLIENT_HEADER, Counted};
use super::{Api, ApiError, LogFields, Request};
use crate::auth::AuthError;
use crate::metrics::CheckOutcome;
use crate::plans::GATEWAY_PLAN;
use crate::state::KeyRecord;

pub const PREFIX: &str = "/ext_authz";
/// Where Envoy puts the gateway's API key (`authorization_request.headers_to_add`).
pub const KEY_HEADER: &str = "x-email-verdict-key";
/// Set by Envoy when `allow_partial_message` cut the body.
const PARTIAL_BODY_HEADER: &str = "x-envoy-auth-partial-body";
/// Envoy's list of request headers to strip before the request goes upstream.
const HEADERS_TO_REMOVE: &str = "x-envoy-auth-headers-to-remove";
/// The filter's own ceiling (`max_body_bytes` at most 10 MiB); Envoy's `max_request_bytes`
/// should be far lower.
pub const MAX_BODY_BYTES: usize = 10 * 1024 * 1024;

/// The original path when `path` is an ext_authz check.
pub fn original_path(path: &str) -> Option<&str> {
    let rest = path.strip_prefix(PREFIX)?;
    (rest.is_empty() || rest.starts_with('/')).then_some(rest)
}

mod refusal;
use refusal::Refusal;

/// What one check came to: the answer and how it is counted. The answer is HTTP-shaped
/// whatever the transport (the gRPC check, `grpc_authz`, maps it to a `CheckResponse`); a
/// refusal is said in the request's protocol ([`Checked::into_response`]).
pub struct Checked {
    response: Answer,
    pub outcome: CheckOutcome,
}

impl Checked {
    /// The answer, a refusal in the words of `protocol` ([`protocol_of`]).
    pub fn into_response(self, protocol: &Protocol) -> Response<Vec<u8>> {
        match self.response {
            Answer::Ready(response) => response,
            Answer::Refusal(refusal) => refusal.render(protocol),
        }
    }
}

/// One signup to check, as any transport hands it over (the HTTP check's request, the gRPC
/// check's `CheckRequest`).
pub struct Signup<'a> {
    /// The gateway's API key.
    pub key: Option<&'a str>,
    /// The signup's original path with its query.
    pub target: &'a str,
    /// The signup's header values by lower-case name.
    pub headers: &'a (dyn Fn(&str) -> Vec<Vec<u8>> + Sync),
    /// Whole, unless `partial`.
    pub body: &'a [u8],
    /// Envoy cut the body (`allow_partial_message`).
    pub partial: bool,
    /// The signup's client as the gateway names it, for the signup counts.
    pub client: Option<IpAddr>,
}

/// A check's answer: ready as it is, or a refusal, said in the request's protocol at the edge.
enum Answer {
    Ready(Response<Vec<u8>>),
    Refusal(Refusal),
}

impl From<Response<Vec<u8>>> for Answer {
    fn from(response: Response<Vec<u8>>) -> Self {
        Answer::Ready(response)
    }
}

pub async fn handle(
    api: &Api,
    session: &mut ServerSession,
    request: &Request,
    log: &mut LogFields,
) -> Response<Vec<u8>> {
    let checked = crate::telemetry::span("ext_authz.check", Box::pin(check(api, session, request, log)), traced).await;
    api.metrics.ext_authz(checked.outcome);
    log.outcome = Some(checked.outcome.as_str());
    let headers = &session.req_header().headers;
    let values = |name: &str| headers.get_all(name).iter().map(|v| v.as_bytes().to_vec()).collect();
    checked.into_response(&protocol_of(
        &api.ext_authz.load(),
        &values,
        original_path(&request.path).unwrap_or_default(),
    ))
}

/// The `ext_authz.check` span's attributes (HTTP and gRPC).
pub fn traced(checked: &Checked) -> Vec<crate::telemetry::Attribute> {
    vec![crate::telemetry::Attribute::new("email_verdict.outcome", checked.outcome.as_str())]
}

/// The protocol a signup's refusal is said in: its headers, and whether its path (`target`,
/// the query ignored) is one of `graphql.paths`.
pub fn protocol_of(config: &Enforcement, headers: &dyn Fn(&str) -> Vec<Vec<u8>>, target: &str) -> Protocol {
    Protocol::of(headers, graphql_route(config, target).is_some())
}

/// The `graphql` setting when `target`'s path is one of its `paths` (both normalized).
fn graphql_route<'a>(config: &'a Enforcement, target: &str) -> Option<&'a GraphQl> {
    let graphql = config.graphql.as_ref()?;
    let path = normalize_path(target);
    graphql.paths.iter().any(|p| normalize_path(p) == path).then_some(graphql)
}

async fn check(api: &Api, session: &mut ServerSession, request: &Request, log: &mut LogFields) -> Checked {
    let headers = &session.req_header().headers;
    let client = headers.get(CLIENT_HEADER).and_then(|v| v.to_str().ok()).and_then(|v| v.trim().parse().ok());
    let checked = check_enforced(api, session, request, log).await;
    rollout(api, client, checked, log)
}

/// The check as block or flag mode answers it.
async fn check_enforced(api: &Api, session: &mut ServerSession, request: &Request, log: &mut LogFields) -> Checked {
    // The gateway's key before the body: a client without one gets its 5xx at once, and never
    // holds a connection open while it trickles a body in.
    let key = session.req_header().headers.get(KEY_HEADER).and_then(|v| v.to_str().ok()).map(|v| v.trim().to_owned());
    if let Some(refused) = key_refused(api, key.as_deref(), request, log).await {
        session.set_keepalive(None); // the body is not read
        return refused;
    }
    let body = match read_body(session, MAX_BODY_BYTES).await {
        Ok(body) => body,
        Err(unread) => return not_read(api, unread),
    };
    let headers = &session.req_header().headers;
    let path = original_path(&request.path).unwrap_or_default();
    let target = match &request.query {
        Some(query) => format!("{path}?{query}"),
        None => path.to_owned(),
    };
    let values = |name: &str| headers.get_all(name).iter().map(|v| v.as_bytes().to_vec()).collect::<Vec<_>>();
    let partial = headers.get(PARTIAL_BODY_HEADER).is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"true"));
    let client = headers.get(CLIENT_HEADER).and_then(|v| v.to_str().ok()).and_then(|v| v.trim().parse().ok());
    let signup = Signup { key: key.as_deref(), target: &target, headers: &values, body: &body, partial, client };
    decide(api, &signup, request, log).await
}

/// The key's refusal (a 5xx), or `None` to go on. A store failure is no answer about the key:
/// the check goes on, so the local decision can still refuse a listed domain.
pub async fn key_refused(api: &Api, key: Option<&str>, request: &Request, log: &mut LogFields) -> Option<Checked> {
    match api.auth.authenticate(key, request.client).await {
        Ok(_) | Err(AuthError::Store(_)) => None,
        Err(e) => Some(failed(auth_error(api, e), log)),
    }
}

/// `mode: shadow`, or a client outside `enforce_percent` (core's `rollout`): allowed whatever
/// the check came to, a client's forged flag headers removed and none added; what block mode
/// would have refused is counted by reason and logged (the request's one line, with its domain).
/// A check that failed (5xx: no verdict, a refused gateway key) is `verdict_unavailable`, whatever
/// Envoy's `failure_mode_allow` would have made of it.
pub fn rollout(api: &Api, client: Option<IpAddr>, checked: Checked, log: &mut LogFields) -> Checked {
    let config = &*api.ext_authz.load_full();
    if rollout::enforces(config.mode, config.enforce_percent, client) || checked.outcome == CheckOutcome::NotSignup {
        return checked;
    }
    let reason = match &checked.response {
        Answer::Refusal(refusal) => Some(Reason::of_details(refusal.details)),
        Answer::Ready(r) if r.status().is_server_error() => Some(Reason::VerdictUnavailable),
        Answer::Ready(r) if r.status() != StatusCode::OK => Some(Reason::UnreadableBody), // the body timed out
        Answer::Ready(_) => None,
    };
    let outcome = match reason {
        Some(reason) => {
            api.metrics.would_block(reason);
            log.would_block = Some(reason.as_str());
            CheckOutcome::WouldBlock
        }
        None => checked.outcome,
    };
    Checked { response: allow(&[], &config.flag_headers.all()).into(), outcome }
}

/// The answer to a body that could not be read whole.
pub fn not_read(api: &Api, unread: Unread) -> Checked {
    match unread {
        Unread::TooLarge => refused(&LocalReply::BODY_TOO_LARGE),
        Unread::Failed => unreadable(api),
        Unread::TimedOut => body_timed_out(),
    }
}

/// The check itself, whatever the transport: the email and every other address found with
/// core's `signup::extract`, judged, answered.
pub async fn decide(api: &Api, signup: &Signup<'_>, request: &Request, log: &mut LogFields) -> Checked {
    let config = &*api.ext_authz.load_full();
    let (target, values, body) = (signup.target, signup.headers, signup.body);
    let sources = &config.email;
    let configured = extract::from_headers(values, &sources.headers);
    let early = Carried::new(configured, Domains::default()).and(extract::read_query(target, sources));
    let kind = BodyKind::for_request(values);
    if let Some(graphql) = graphql_route(config, target)
        && !extract::graphql::is_signup(&kind, body, &graphql.operations, MAX_BODY_BYTES)
    {
        let unread = allow(&[], &config.flag_headers.all()); // a client's forged flags removed
        return Checked { response: Answer::Ready(unread), outcome: CheckOutcome::NotSignup };
    }
    let found = if body.is_empty() {
        Carried::nothing()
    } else if signup.partial {
        Carried::new(Extracted::Unreadable(extract::Unreadable::TooComplex), Domains::default())
    } else {
        extract::read_body(&kind, body, sources, MAX_BODY_BYTES)
    };
    let whole = early.and(found).to_judge(config.max_domains);
    let problem = match whole.problem {
        None => None,
        Some(problem) => match by_problem(api, problem) {
            Ok(bypass) => Some(bypass),
            Err(reply) => return refused(&reply),
        },
    };
    judge_all(api, (signup.key, signup.client), request, whole, problem, log).await
}

/// A problem of the signup: refused (`Err`, the refusal) or let through with its bypass value.
fn by_problem(api: &Api, problem: Problem) -> Result<Bypass, LocalReply<'static>> {
    let config = &*api.ext_authz.load_full();
    let (policy, bypass, reply) = match problem {
        Problem::Unreadable(_) => (config.on_unreadable_body, Bypass::UnreadableBody, LocalReply::UNREADABLE_BODY),
        Problem::Invalid(why) => (config.on_invalid_email, Bypass::InvalidEmail, LocalReply::invalid(why)),
        Problem::Missing => (config.on_missing_email, Bypass::NoEmail, LocalReply::MISSING_EMAIL),
        Problem::TooManyDomains => return Err(LocalReply::TOO_MANY_ADDRESSES),
    };
    match policy {
        Policy::Allow => Ok(bypass),
        Policy::Deny => Err(reply),
    }
}

/// A body not received within `body::BODY_IDLE` / `BODY_TIME` (Envoy sends its buffered body at
/// once): `408`, which Envoy hands the client as the check's denial. Never a pass.
fn body_timed_out() -> Checked {
    let body = br#"{"error":"body_timeout","message":"The request body was not received in time."}"#.to_vec();
    Checked {
        response: response(StatusCode::REQUEST_TIMEOUT, &[("content-type", "application/json")], body).into(),
        outcome: CheckOutcome::Refused,
    }
}

fn invalid(api: &Api, why: Option<extract::Unusable>) -> Checked {
    by_policy(api, api.ext_authz.load().on_invalid_email, Bypass::InvalidEmail, &LocalReply::invalid(why))
}

fn unreadable(api: &Api) -> Checked {
    by_policy(api, api.ext_authz.load().on_unreadable_body, Bypass::UnreadableBody, &LocalReply::UNREADABLE_BODY)
}

/// Every name of the signup judged at once (within `max_domains`); the worst
/// outcome answers (`signup::Worst`). A failure is our own: a 5xx, so Envoy's failure mode
/// decides, unless a disposable verdict already refuses the signup.
async fn judge_all(
    api: &Api,
    (key, client): (Option<&str>, Option<IpAddr>),
    request: &Request,
    whole: ToJudge,
    problem: Option<Bypass>,
    log: &mut LogFields,
) -> Checked {
    let config = &*api.ext_authz.load_full();
    let subaddressed = whole.primary.as_ref().is_some_and(|e| details::is_subaddressed(e.local(), e.domain()));
    if subaddressed && config.on_subaddressed == Subaddressed::Deny {
        return refused(&LocalReply::SUBADDRESSED);
    }
    let flag_subaddressed = subaddressed && config.on_subaddressed == Subaddressed::Flag;
    let catalog = api.verdicts.catalog();
    let details = whole.primary.as_ref().map(|email| AddressDetails::of(email, catalog.relay.contains(email.domain())));
    log.domain = whole.names.first().map(|n| n.domain.to_string());
    let (key, mut error) = match api.auth.authenticate(key, request.client).await {
        Ok(key) => {
            log.key_id = Some(key.id.clone());
            (Some(key), None)
        }
        Err(e) => (None, Some(auth_error(api, e))),
    };
    let outcomes =
        futures::future::join_all(whole.names.iter().map(|n| judge_domain(api, key.as_deref(), n, config.no_mx))).await;
    let mut worst = Worst::default();
    worst.set_primary(whole.primary.as_ref().map(EmailAddress::domain));
    let mut local = false;
    for outcome in outcomes {
        match outcome {
            DomainOutcome::Judged(judged, cached) => {
                log.cached = Some(cached);
                worst.add(judged);
            }
            DomainOutcome::Local(judged) => {
                local = true;
                worst.add(judged);
            }
            DomainOutcome::Failed(e) => {
                if let Some(e) = e {
                    error.get_or_insert(e);
                }
                worst.add(Outcome::Failed(Bypass::SidecarError));
            }
        }
    }
    let by = Refusing { block: blocks(config), no_mx: config.no_mx == NoMx::Block, denies: |_| true };
    let counted = if local { CheckOutcome::LocalDecision } else { CheckOutcome::Judged };
    match worst.settle(problem, &by) {
        Settled::Disposable(v) | Settled::Safe(v) => {
            let v = if flag_subaddressed { v.flagged_subaddressed() } else { v };
            let refused = v.disposable && blocks(config);
            match count(api, (config, key.as_deref()), whole.primary.as_ref(), (client, &request.id), refused, log)
                .await
            {
                Ok(counts) => verdict_answer(config, &v, details.as_ref(), &counts, counted),
                Err(answer) => answer,
            }
        }
        // Counted like every refused signup (as the filter does), then refused.
        Settled::Undeliverable(_) => {
            match count(api, (config, key.as_deref()), whole.primary.as_ref(), (client, &request.id), true, log).await {
                Ok(_) => refused(&LocalReply::NO_MX),
                Err(answer) => answer,
            }
        }
        Settled::Failed(_) => match error {
            Some(e) => failed(e, log),
            None => failed(ApiError::new(email_verdict_core::ErrorCode::InternalError, "no verdict"), log),
        },
        Settled::Invalid => invalid(api, None),
        Settled::Bypass(bypass) => {
            Checked { response: bypassed(config, bypass).into(), outcome: CheckOutcome::Bypassed }
        }
    }
}

/// Counts a judged signup (`velocity`): every one, a `refused` one too (repeated attempts are
/// what the counts are for), whose answer then stays the refusal. The count headers for the app,
/// or the answer that replaces the verdict's (too many signups, a failed count).
async fn count(
    api: &Api,
    (config, key): (&Enforcement, Option<&KeyRecord>),
    primary: Option<&EmailAddress>,
    (client, request_id): (Option<IpAddr>, &str),
    refused: bool,
    log: &mut LogFields,
) -> Result<Vec<(String, String)>, Checked> {
    let (Some(email), Some(limits), Some(counting)) = (primary, &config.velocity, &api.ext_authz_counting) else {
        return Ok(Vec::new());
    };
    // Counts are written with the gateway's key only (a caller of /ext_authz with a customer's
    // key must not flag anyone); no key at all: its error is logged.
    if key.is_none_or(|k| k.plan.as_str() != GATEWAY_PLAN) {
        if key.is_some() {
            velocity::refused_for_the_plan(api);
        }
        return Ok(Vec::new());
    }
    match velocity::count(api, (limits, counting), email, client, request_id).await {
        _ if refused => Ok(Vec::new()),
        Counted::Pass(headers) => Ok(headers),
        Counted::Blocked { body, retry_after } => Err(too_many_signups(body, retry_after)),
        Counted::Failed(e) => Err(failed(e, log)),
    }
}

/// What judging one domain came to.
enum DomainOutcome {
    /// A verdict of the lookup path, and whether it was cached.
    Judged(Outcome, bool),
    /// Disposable without the full verdict (`decided_locally`).
    Local(Outcome),
    /// No verdict: the lookup's error (none when the key was refused: that error is kept once).
    Failed(Option<ApiError>),
}

/// One name, through the lookup API's own path ([`judge`]) with the gateway's key (none when
/// it was refused): only the domain is judged, as the filter asks; a name found in free text
/// teaches nothing (`learn=false`).
async fn judge_domain(api: &Api, key: Option<&KeyRecord>, name: &Name, no_mx: NoMx) -> DomainOutcome {
    let domain = &name.domain;
    let verdict = match key {
        Some(key) => judge(api, key, &LookupInput::Domain(domain.clone()), !name.mention).await.map_err(Some),
        None => Err(None),
    };
    match verdict {
        Ok((judged, _)) => {
            let summary = VerdictSummary {
                suggestion: judged.suggestion.clone(),
                source: Some(judged.source),
                mail: judged.mail,
                ..VerdictSummary::from_result(&judged.result)
            };
            let verdict = AddressVerdict::of(domain, &summary, no_mx);
            DomainOutcome::Judged(Outcome::Verdict(verdict), judged.result.cached)
        }
        Err(_) if decided_locally(api, domain).await => {
            DomainOutcome::Local(Outcome::Verdict(AddressVerdict::local_fallback(domain)))
        }
        Err(e) => DomainOutcome::Failed(e),
    }
}

/// What decides `disposable` without the sidecar's full verdict (the key refused, the store or
/// DNS failing): a reviewer's block decision when the store still answers within
/// [`LOCAL_DECISION_WAIT`], else the operator's blocklist or a strong listing, unless the
/// operator allowlists the name. (The filter's embedded lists know less.)
async fn decided_locally(api: &Api, domain: &Domain) -> bool {
    let reviewer = tokio::time::timeout(LOCAL_DECISION_WAIT, api.verdicts.decision(domain)).await;
    let catalog = api.verdicts.catalog();
    if let Ok(Ok(Some(decision))) = reviewer {
        return decision == Decision::Block && !catalog.free.contains(domain);
    }
    if catalog.allow.contains(domain) {
        return false;
    }
    catalog.block.contains(domain) || catalog.disposable_listing(domain).is_some_and(|l| catalog.is_strong(l.sources))
}

/// How long the local decision waits for the store's reviewer decision.
const LOCAL_DECISION_WAIT: std::time::Duration = std::time::Duration::from_millis(100);

/// The verdict's answer: the block response, or 200 with the flag headers (the suggestion's
/// only when there is one: the suggested provider domain; the detail headers `detail_headers`
/// sends for the signup's own address, when they have a value; the client's copies of the
/// others removed).
fn verdict_answer(
    config: &Enforcement,
    verdict: &AddressVerdict,
    details: Option<&AddressDetails>,
    counts: &[(String, String)],
    outcome: CheckOutcome,
) -> Checked {
    if verdict.disposable && blocks(config) {
        let reply = LocalReply::blocked(config.block_status, &config.block_body);
        return Checked { response: Answer::Refusal(Refusal::of(&reply)), outcome };
    }
    let names = &config.flag_headers;
    let name = if verdict.disposable { "disposable" } else { "safe" };
    let mut set = vec![
        (names.verdict.as_str(), name),
        (names.domain.as_str(), verdict.domain.as_str()),
        (names.flags.as_str(), verdict.flags.as_str()),
    ];
    let mut remove = vec![names.bypass.as_str()];
    set.extend(counts.iter().map(|(name, value)| (name.as_str(), value.as_str())));
    remove.extend(names.count_names().into_iter().filter(|n| !counts.iter().any(|(set, _)| set == n)));
    match &verdict.suggestion {
        Some(suggested) => set.push((names.suggestion.as_str(), suggested.as_str())),
        None => remove.push(names.suggestion.as_str()),
    }
    let detailed = details.map(|d| d.headers(names, config.detail_headers));
    let detailed = detailed.unwrap_or_else(|| names.detail_names().map(|n| (n, None)));
    for (name, value) in detailed {
        match value {
            Some(value) => set.push((name, value)),
            None => remove.push(name),
        }
    }
    Checked { response: allow(&set, &remove).into(), outcome }
}

/// Block mode's judgement: block mode, and shadow mode (`rollout` then lets it through).
fn blocks(config: &Enforcement) -> bool {
    matches!(config.mode, Mode::Block | Mode::Shadow)
}

/// Over a `block` limit of `velocity`: `429 too_many_signups`, which Envoy hands the client.
fn too_many_signups(body: Vec<u8>, retry_after: u64) -> Checked {
    let mut refusal = Refusal::of(&LocalReply::too_many_signups(&body));
    refusal.retry_after = Some(retry_after);
    Checked { response: Answer::Refusal(refusal), outcome: CheckOutcome::Refused }
}

/// No usable email: the policy's refusal, or through with the bypass header.
fn by_policy(api: &Api, policy: Policy, bypass: Bypass, refusal: &LocalReply<'_>) -> Checked {
    match policy {
        Policy::Deny => refused(refusal),
        Policy::Allow => {
            Checked { response: bypassed(&api.ext_authz.load(), bypass).into(), outcome: CheckOutcome::Bypassed }
        }
    }
}

/// Through without a verdict: the bypass header set, every other flag header removed.
fn bypassed(config: &Enforcement, bypass: Bypass) -> Response<Vec<u8>> {
    let names = &config.flag_headers;
    let others: Vec<&str> = names.all().into_iter().filter(|n| *n != names.bypass).collect();
    allow(&[(&names.bypass, bypass.as_str())], &others)
}

fn refused(reply: &LocalReply<'_>) -> Checked {
    Checked { response: Answer::Refusal(Refusal::of(reply)), outcome: CheckOutcome::Refused }
}

/// Our own failure: a 5xx, so the gateway's failure mode decides.
fn failed(e: ApiError, log: &mut LogFields) -> Checked {
    log.code = Some(e.code.as_str());
    let status = StatusCode::from_u16(e.code.status())
        .ok()
        .filter(StatusCode::is_server_error)
        .unwrap_or(StatusCode::SERVICE_UNAVAILABLE);
    let body = format!(r#"{{"error":"verdict_unavailable","cause":"{}"}}"#, e.code.as_str());
    let response = response(status, &[("content-type", "application/json")], body.into_bytes());
    Checked { response: response.into(), outcome: CheckOutcome::Failed }
}

/// `200`: these headers set on the request, those removed from it.
fn allow(set: &[(&str, &str)], remove: &[&str]) -> Response<Vec<u8>> {
    let remove = remove.join(",");
    let mut headers: Vec<(&str, &str)> = set.to_vec();
    headers.push((HEADERS_TO_REMOVE, &remove));
    response(StatusCode::OK, &headers, Vec::new())
}

/// A response with these headers. One that cannot be built (a header value that is not one)
/// is a `500`, never a `200` without its headers: Envoy would then let the signup through with
/// whatever verdict headers the client sent.
fn response(status: StatusCode, headers: &[(&str, &str)], body: Vec<u8>) -> Response<Vec<u8>> {
    let mut builder = Response::builder().status(status).header(http::header::CONTENT_LENGTH, body.len());
    for (name, value) in headers {
        builder = builder.header(*name, *value);
    }
    builder.body(body).unwrap_or_else(|_| {
        let mut failed = Response::new(Vec::new());
        *failed.status_mut() = StatusCode::INTERNAL_SERVER_ERROR;
        failed
    })
}

/// The headers of a check's answer, for tests.
#[cfg(test)]
fn header<'a>(response: &'a Response<Vec<u8>>, name: &str) -> Option<&'a str> {
    response.headers().get(name).and_then(|v| v.to_str().ok())
}

#[cfg(test)]
mod tests;
