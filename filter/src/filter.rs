//! The per-request state machine.
//!
//! ```text
//! headers ─┬─ not a signup ───────────────────────────────► Continue (body not buffered)
//!          ├─ a body follows ─► AwaitingBody ── end of body ──► headers/query + body ─► check ─┐
//!          └─ no body ──► email in a header / query ──► check ─┐                               │
//!                         none ──► on_missing_email            │                               │
//! check: parse locally ─► cache hit ─► verdict │ cache miss ─► callout ─► AwaitingVerdict ─► answer
//! verdict: block (local response) │ flag headers + go on
//! ```
//! Every configured source is read and must agree (`extract`); a body that cannot be read in
//! full is `on_unreadable_body`, not a missing email.
//! Client copies of the flag headers (the detail headers too, sent or not) are stripped from
//! every request first. The detail headers' values are computed here from the whole address
//! (only its domain goes to the sidecar) and the embedded relay list, so a cached verdict or a
//! local one gets them too. Request
//! headers can still be changed in the body phase because Envoy runs the filter with
//! `allow_on_headers_stop_iteration: true`. Without it (`hold_headers: false`, block only) the
//! headers go upstream at once and the body is held until the verdict: a blocked signup never
//! reaches the app complete, and nothing is added to the headers.

use std::rc::Rc;

use email_verdict_core::{Decision, Domain, EmailAddress};

use crate::cache::Lookup;
use email_verdict_core::signup::extract::{self, BodyKind, Extracted, Unusable};
use email_verdict_core::signup::{
    AddressDetails, Bypass, LOCAL_FALLBACK_FLAG, LocalReply, Mode, Policy, VerdictSummary,
};

use crate::config::FilterConfig;
use crate::decision::{self, CalloutOutcome, Keep};
use crate::host::{Action, CalloutResponse, Counter, Host, HostError, LogLevel, RequestHeaders};
use crate::relay;

const LOG_PREFIX: &str = "email-verdict filter: ";

#[derive(Debug)]
enum State {
    Start,
    /// Nothing more to do: not a signup, or the request was let through.
    Passthrough,
    /// A signup with a body; the body is being buffered. `early`: what the headers and the
    /// query gave, to be combined with the body.
    AwaitingBody {
        kind: BodyKind,
        early: Extracted,
    },
    /// A callout is in flight; the request is held. `details`: of the whole address, for the
    /// detail headers (the callout carries the domain only).
    AwaitingVerdict {
        token: u32,
        domain: Domain,
        cas: Option<u32>,
        details: AddressDetails,
    },
    /// A local response was sent.
    Responded,
}

/// Where a step of the logic leaves the request.
#[derive(Debug)]
enum Step {
    Proceed,
    Responded,
    AwaitBody { kind: BodyKind, early: Extracted },
    AwaitVerdict { token: u32, domain: Domain, cas: Option<u32>, details: AddressDetails },
}

/// One HTTP stream's filter.
pub struct RequestFilter {
    config: Rc<FilterConfig>,
    state: State,
    /// Envoy's `x-request-id` of the signup, when it has a usable one: sent with the callout
    /// (the sidecar logs it beside its own) and on every local reply, so one id finds the
    /// request in Envoy's access log and the sidecar's log.
    request_id: Option<String>,
}

impl RequestFilter {
    pub fn new(config: Rc<FilterConfig>) -> Self {
        Self { config, state: State::Start, request_id: None }
    }

    pub fn on_request_headers(&mut self, host: &mut impl Host, end_of_stream: bool) -> Action {
        let config = Rc::clone(&self.config);
        let mut ctx = Ctx { config: &config, host, request_id: None };
        let headers = match ctx.host.request_headers() {
            Ok(headers) => headers,
            Err(e) => {
                // Nothing can be checked without the headers; still never let a forged verdict by.
                ctx.log(LogLevel::Warn, &format!("could not read the request headers: {e}"));
                let _ = ctx.strip_flag_headers(None);
                self.state = State::Passthrough;
                return Action::Continue;
            }
        };
        let stripped = ctx.strip_flag_headers(Some(&headers));
        self.request_id = request_id(&headers);
        ctx.request_id = self.request_id.as_deref();
        let path = headers.text(":path");
        if !config.is_signup(&headers.text(":method"), &path) {
            self.state = State::Passthrough;
            return Action::Continue;
        }
        let step = match stripped {
            Ok(()) => ctx.signup_headers(&headers, &path, end_of_stream),
            Err(e) => ctx.host_failed("could not strip the flag headers", e),
        };
        self.settle(step)
    }

    pub fn on_request_body(&mut self, host: &mut impl Host, body_size: usize, end_of_stream: bool) -> Action {
        match &self.state {
            State::AwaitingBody { .. } if body_size > self.config.max_body_bytes => {
                let config = Rc::clone(&self.config);
                let step = Ctx { config: &config, host, request_id: self.request_id.as_deref() }.body_too_large();
                self.settle(step)
            }
            State::AwaitingBody { .. } if !end_of_stream => Action::Pause,
            State::AwaitingBody { .. } => self.body_complete(host),
            // Hold the body while the verdict is pending: continuing it would release the headers.
            State::AwaitingVerdict { .. } | State::Responded => Action::Pause,
            State::Start | State::Passthrough => Action::Continue,
        }
    }

    /// Trailers end the body when the request has them.
    pub fn on_request_trailers(&mut self, host: &mut impl Host) -> Action {
        match &self.state {
            State::AwaitingBody { .. } => self.body_complete(host),
            State::AwaitingVerdict { .. } | State::Responded => Action::Pause,
            State::Start | State::Passthrough => Action::Continue,
        }
    }

    /// The sidecar's answer (or Envoy's synthetic one) to the callout `token`.
    pub fn on_callout_response(&mut self, host: &mut impl Host, token: u32, response: &CalloutResponse) {
        let expected = matches!(&self.state, State::AwaitingVerdict { token: t, .. } if *t == token);
        if !expected {
            host.log(LogLevel::Debug, &format!("{LOG_PREFIX}ignoring the answer to callout {token}"));
            return;
        }
        let State::AwaitingVerdict { domain, cas, details, .. } =
            std::mem::replace(&mut self.state, State::Passthrough)
        else {
            return;
        };
        let config = Rc::clone(&self.config);
        let mut ctx = Ctx { config: &config, host: &mut *host, request_id: self.request_id.as_deref() };
        let step = ctx.sidecar_answered(&domain, cas, &details, response);
        if self.settle(step) == Action::Continue
            && let Err(e) = host.resume_request()
        {
            host.log(LogLevel::Error, &format!("{LOG_PREFIX}could not resume the request: {e}"));
        }
    }

    fn body_complete(&mut self, host: &mut impl Host) -> Action {
        let State::AwaitingBody { kind, early } = std::mem::replace(&mut self.state, State::Passthrough) else {
            return Action::Continue;
        };
        let config = Rc::clone(&self.config);
        let step = Ctx { config: &config, host, request_id: self.request_id.as_deref() }.body_complete(&kind, early);
        self.settle(step)
    }

    fn settle(&mut self, step: Step) -> Action {
        let (state, action) = match step {
            Step::Proceed => (State::Passthrough, Action::Continue),
            Step::Responded => (State::Responded, Action::Pause),
            // Without the header hold a pause here would stall the stream: the body is held instead.
            Step::AwaitBody { kind, early } => {
                let action = if self.config.hold_headers { Action::Pause } else { Action::Continue };
                (State::AwaitingBody { kind, early }, action)
            }
            Step::AwaitVerdict { token, domain, cas, details } => {
                (State::AwaitingVerdict { token, domain, cas, details }, Action::Pause)
            }
        };
        self.state = state;
        action
    }
}

/// The logic of one callback: the configuration and the host.
struct Ctx<'a, H: Host> {
    config: &'a FilterConfig,
    host: &'a mut H,
    request_id: Option<&'a str>,
}

impl<H: Host> Ctx<'_, H> {
    /// Removes every value of those of the flag headers that `present` holds (all of them when
    /// the headers could not be read); all are tried, the first error returned.
    fn strip_flag_headers(&mut self, present: Option<&RequestHeaders>) -> Result<(), HostError> {
        let mut result = Ok(());
        for name in self.config.enforce.flag_headers.all() {
            if present.is_some_and(|h| h.first(name).is_none()) {
                continue;
            }
            if let Err(e) = self.host.remove_request_header(name) {
                result = result.and(Err(e));
            }
        }
        result
    }

    /// A signup's headers: the email from the headers and the query; with a body, wait for it
    /// (an email there must agree with them, and a body nothing reads may hold one).
    fn signup_headers(&mut self, headers: &RequestHeaders, path: &str, end_of_stream: bool) -> Step {
        let sources = &self.config.enforce.email;
        let early = extract::from_headers(|name| headers.values(name), &sources.headers)
            .and(extract::from_query(path, &sources.query_params));
        let length = declared_length(headers);
        if end_of_stream || length == Some(0) {
            return self.extracted(early);
        }
        let kind = BodyKind::for_request(&headers.values("content-type"), &headers.values("content-encoding"), sources);
        if !kind.needed_after(&early) {
            return self.extracted(early);
        }
        if length.is_some_and(|len| len > self.config.max_body_bytes as u64) {
            return self.body_too_large();
        }
        Step::AwaitBody { kind, early }
    }

    fn body_complete(&mut self, kind: &BodyKind, early: Extracted) -> Step {
        let max = self.config.max_body_bytes;
        let body = match self.host.request_body(max.saturating_add(1)) {
            Ok(body) => body,
            Err(e) => return self.host_failed("could not read the request body", e),
        };
        if body.len() > max {
            return self.body_too_large();
        }
        let found = extract::from_body(kind, &body, &self.config.enforce.email);
        self.extracted(early.and(found))
    }

    fn body_too_large(&mut self) -> Step {
        self.host.increment(Counter::BodyTooLarge);
        self.respond(&LocalReply::BODY_TOO_LARGE)
    }

    fn extracted(&mut self, found: Extracted) -> Step {
        match found {
            Extracted::NotFound => self.missing(),
            Extracted::Invalid(why) => {
                let why_text = match why {
                    Unusable::NotText => "not text",
                    Unusable::Conflicting => "given several times with different values",
                };
                self.log(LogLevel::Debug, &format!("the email is {why_text}"));
                self.invalid_because(Some(why))
            }
            Extracted::Unreadable(why) => {
                self.log(LogLevel::Debug, &format!("the body is {}", why.as_str()));
                self.unreadable()
            }
            Extracted::Email(raw) => self.check(&raw),
        }
    }

    /// Parses locally, then the cache, then the sidecar.
    fn check(&mut self, raw: &str) -> Step {
        let Ok(email) = EmailAddress::parse(raw.trim()) else {
            return self.invalid();
        };
        let domain = email.domain().clone();
        let details = AddressDetails::of(&email, relay::is_relay(&domain));
        let mut cas = None;
        if let Some(cache) = self.config.cache {
            let lookup = self.host.now_ms().and_then(|now| cache.lookup(&*self.host, &domain, now));
            match lookup {
                Ok(Lookup::Hit(summary)) => {
                    self.host.increment(Counter::CacheHits);
                    return self.verdict(&domain, &summary, &details);
                }
                Ok(Lookup::Miss { cas: token }) => cas = token,
                Err(e) => self.log(LogLevel::Warn, &format!("verdict cache unavailable: {e}")),
            }
        }
        self.call_sidecar(domain, cas, details)
    }

    fn call_sidecar(&mut self, domain: Domain, cas: Option<u32>, details: AddressDetails) -> Step {
        let sidecar = &self.config.sidecar;
        let path = decision::lookup_path(&domain);
        let headers = [
            (":method", "GET"),
            (":path", path.as_str()),
            (":authority", sidecar.authority.as_str()),
            ("authorization", sidecar.authorization.as_str()),
            ("accept", "application/json"),
        ];
        let id = self.request_id.map(|id| ("x-request-id", id));
        let headers: Vec<(&str, &str)> = headers.into_iter().chain(id).collect();
        match self.host.dispatch_http_call(&sidecar.cluster, &headers, sidecar.timeout) {
            Ok(token) => {
                self.host.increment(Counter::Callouts);
                Step::AwaitVerdict { token, domain, cas, details }
            }
            Err(e) => {
                let message = format!("callout to cluster {} failed for {domain}: {e}", sidecar.cluster);
                self.log(LogLevel::Warn, &message);
                self.no_verdict(&domain, Bypass::SidecarError, &details)
            }
        }
    }

    fn sidecar_answered(
        &mut self,
        domain: &Domain,
        cas: Option<u32>,
        details: &AddressDetails,
        response: &CalloutResponse,
    ) -> Step {
        match decision::classify(response) {
            CalloutOutcome::Verdict(summary, keep) => {
                self.remember(domain, &summary, cas, keep);
                self.verdict(domain, &summary, details)
            }
            CalloutOutcome::InvalidEmail => self.invalid(),
            CalloutOutcome::Failed(bypass) => {
                let status = response.status.map_or_else(|| "no status".to_owned(), |s| s.to_string());
                self.log(LogLevel::Warn, &format!("sidecar answered {status} for {domain}: {}", bypass.as_str()));
                self.no_verdict(domain, bypass, details)
            }
        }
    }

    fn remember(&mut self, domain: &Domain, summary: &VerdictSummary, cas: Option<u32>, keep: Keep) {
        let Some(cache) = self.config.cache else { return };
        let cache = if keep == Keep::Briefly { cache.briefly() } else { cache };
        let stored = self.host.now_ms().and_then(|now| cache.store(&mut *self.host, domain, summary, now, cas));
        if let Err(e) = stored {
            self.log(LogLevel::Warn, &format!("could not cache the verdict: {e}"));
        }
    }

    /// A verdict: block a disposable address in block mode, otherwise flag and go on.
    fn verdict(&mut self, domain: &Domain, summary: &VerdictSummary, details: &AddressDetails) -> Step {
        let flags = summary.flags.header_value();
        self.judged(domain, summary.disposable, &flags, summary.suggestion.as_ref(), details)
    }

    /// The sidecar gave no verdict: a name on the embedded strong lists is disposable all the
    /// same (flagged `local_fallback`, never cached); any other goes to `failure_mode`.
    fn no_verdict(&mut self, domain: &Domain, bypass: Bypass, details: &AddressDetails) -> Step {
        let decided = self.config.decisions.as_ref().and_then(|d| d.copy.decision(&*self.host, domain));
        match decided {
            Some(Decision::Block) => {
                self.host.increment(Counter::LocalDecisions);
                self.log(
                    LogLevel::Info,
                    &format!("{domain} is blocked by a decision of the sidecar's: disposable without it"),
                );
                return self.judged(domain, true, LOCAL_FALLBACK_FLAG, None, details);
            }
            Some(Decision::Allow) => return self.fail(bypass), // vouched for: never blocked by the lists
            None => {}
        }
        if self.config.local_lists.is_some_and(|lists| lists.is_listed(domain)) {
            self.host.increment(Counter::LocalDecisions);
            self.log(
                LogLevel::Info,
                &format!("{domain} is on the embedded strong lists: disposable without the sidecar"),
            );
            return self.judged(domain, true, LOCAL_FALLBACK_FLAG, None, details);
        }
        self.fail(bypass)
    }

    /// A verdict reached: block, or add the verdict headers (and the suggested provider domain
    /// of a probable typo, never the email's local part, and the detail headers `detail_headers`
    /// sends) and go on.
    fn judged(
        &mut self,
        domain: &Domain,
        disposable: bool,
        flags: &str,
        suggestion: Option<&Domain>,
        details: &AddressDetails,
    ) -> Step {
        self.host.increment(Counter::Checked);
        let enforce = &self.config.enforce;
        if disposable && enforce.mode == Mode::Block {
            self.host.increment(Counter::Blocked);
            return self.respond(&LocalReply::blocked(enforce.block_status, &enforce.block_body));
        }
        if !self.config.hold_headers {
            return Step::Proceed; // the headers have gone upstream
        }
        let names = &self.config.enforce.flag_headers;
        let verdict = if disposable { "disposable" } else { "safe" };
        let suggested = suggestion.map(|s| (names.suggestion.as_str(), s.as_str()));
        let detailed = details.headers(names, enforce.detail_headers).into_iter().filter_map(|(n, v)| Some((n, v?)));
        let set = [
            (names.verdict.as_str(), verdict),
            (names.domain.as_str(), domain.as_str()),
            (names.flags.as_str(), flags),
        ]
        .into_iter()
        .chain(suggested)
        .chain(detailed)
        .try_for_each(|(name, value)| self.host.set_request_header(name, value));
        match set {
            Ok(()) => {
                self.host.increment(Counter::Flagged);
                Step::Proceed
            }
            Err(e) => self.host_failed("could not add the verdict headers", e),
        }
    }

    fn missing(&mut self) -> Step {
        self.host.increment(Counter::NoEmail);
        match self.config.enforce.on_missing_email {
            Policy::Allow => self.bypass(Bypass::NoEmail),
            Policy::Deny => self.respond(&LocalReply::MISSING_EMAIL),
        }
    }

    fn unreadable(&mut self) -> Step {
        self.host.increment(Counter::UnreadableBody);
        match self.config.enforce.on_unreadable_body {
            Policy::Allow => self.bypass(Bypass::UnreadableBody),
            Policy::Deny => self.respond(&LocalReply::UNREADABLE_BODY),
        }
    }

    fn invalid(&mut self) -> Step {
        self.invalid_because(None)
    }

    fn invalid_because(&mut self, why: Option<Unusable>) -> Step {
        self.host.increment(Counter::InvalidEmail);
        match self.config.enforce.on_invalid_email {
            Policy::Allow => self.bypass(Bypass::InvalidEmail),
            Policy::Deny => self.respond(&LocalReply::invalid(why)),
        }
    }

    /// No verdict could be had: `failure_mode` for this reason.
    fn fail(&mut self, bypass: Bypass) -> Step {
        match self.config.failure_mode.for_reason(bypass) {
            Policy::Allow => {
                self.host.increment(Counter::Bypassed);
                self.bypass(bypass)
            }
            Policy::Deny => {
                self.host.increment(Counter::DeniedOnError);
                self.respond(&LocalReply::unavailable(self.config.failure_status))
            }
        }
    }

    /// A host call failed: logged, then handled like a sidecar error.
    fn host_failed(&mut self, what: &str, error: HostError) -> Step {
        self.log(LogLevel::Error, &format!("{what}: {error}"));
        self.fail(Bypass::SidecarError)
    }

    fn bypass(&mut self, bypass: Bypass) -> Step {
        if !self.config.hold_headers {
            return Step::Proceed; // the headers have gone upstream
        }
        if let Err(e) = self.host.set_request_header(&self.config.enforce.flag_headers.bypass, bypass.as_str()) {
            self.log(LogLevel::Error, &format!("could not add the bypass header: {e}"));
        }
        Step::Proceed
    }

    /// Answers the client. If even that fails there is no way to hold the request without
    /// hanging it, so it goes on (logged at error level).
    fn respond(&mut self, reply: &LocalReply<'_>) -> Step {
        let id = self.request_id.map(|id| ("x-request-id", id));
        let headers: Vec<(&str, &str)> = [("content-type", "application/json")].into_iter().chain(id).collect();
        let body = self.request_id.map_or_else(|| reply.body.to_vec(), |id| with_request_id(reply.body, id));
        match self.host.send_local_response(reply.status, reply.details, &headers, &body) {
            Ok(()) => Step::Responded,
            Err(e) => {
                self.log(
                    LogLevel::Error,
                    &format!("could not send the {} response, letting the request through: {e}", reply.status),
                );
                Step::Proceed
            }
        }
    }

    fn log(&self, level: LogLevel, message: &str) {
        self.host.log(level, &format!("{LOG_PREFIX}{message}"));
    }
}

/// Envoy's `x-request-id`, when it is plain (core's `plain_request_id`).
fn request_id(headers: &RequestHeaders) -> Option<String> {
    email_verdict_core::signup::plain_request_id(headers.first("x-request-id")?)
}

/// A JSON object body with `"request_id"` added (unless it has one); any other body unchanged.
fn with_request_id(body: &[u8], id: &str) -> Vec<u8> {
    match serde_json::from_slice::<serde_json::Value>(body) {
        Ok(serde_json::Value::Object(mut object)) if !object.contains_key("request_id") => {
            object.insert("request_id".to_owned(), id.into());
            serde_json::to_vec(&object).unwrap_or_else(|_| body.to_vec())
        }
        _ => body.to_vec(),
    }
}

fn declared_length(headers: &RequestHeaders) -> Option<u64> {
    std::str::from_utf8(headers.first("content-length")?).ok()?.trim().parse().ok()
}

#[cfg(test)]
mod tests;
