//! The per-request state machine.
//!
//! ```text
//! headers ─┬─ not a signup ───────────────────────────────► Continue (body not buffered)
//!          ├─ a body follows ─┬─ header hold: AwaitingBody (headers held) ─────────────┐
//!          │                  └─ block only: judge the headers' and query's addresses   │
//!          │                     (headers held for the callouts alone) ─► AwaitingBody ─┤
//!          └─ no body ──────────────────────────────────────────────────────────────────┤
//! end of body: the whole signup (every address, `extract::Carried`) ─► judge ◄──────────┘
//! judge: each distinct domain not judged yet: parse ─► cache hit │ miss ─► callout
//!        (all at once) ─► AwaitingVerdicts ─► the worst outcome (`signup::Worst`) answers
//! answer: block (local response) │ flag headers + go on │ failure / problem policies
//! ```
//! Every address the signup carries is judged, whatever its field's name; the configured
//! sources say which one is the signup's own (`on_missing_email`, the detail headers). A body
//! that cannot be read in full is `on_unreadable_body`, even with an address elsewhere.
//! Client copies of the flag headers (the detail headers too, sent or not) are stripped from
//! every request first. The detail headers' values are computed here from the whole address
//! (only its domain goes to the sidecar) and the embedded relay list, so a cached verdict or a
//! local one gets them too. Request headers can still be changed in the body phase because
//! Envoy runs the filter with `allow_on_headers_stop_iteration: true`. Without it
//! (`hold_headers: false`, block only) the addresses of the headers and the query are judged
//! before the headers go upstream (Node and Go handlers start before the body is complete),
//! then the headers go and the body is held until its verdicts: a blocked signup never reaches
//! the app complete, and nothing is added to the headers.

use std::rc::Rc;

use email_verdict_core::signup::velocity::{Action as LimitAction, Counts, too_many_signups};
use email_verdict_core::{Decision, Domain, EmailAddress, details};

use crate::cache::Lookup;
use email_verdict_core::signup::extract::{self, BodyKind, Carried, Domains, Name, Problem, Unusable};
use email_verdict_core::signup::{
    AddressDetails, AddressVerdict, Bypass, Judged, LocalReply, Mode, NoMx, Policy, Protocol, Reason, Refusing,
    Settled, Subaddressed, VerdictSummary, Via, Worst, rollout,
};

use crate::config::FilterConfig;
use crate::counting::{self, Velocity};
use crate::decision::{self, CalloutOutcome, Keep};
use crate::host::{Action, CalloutResponse, Counter, Host, HostError, LogLevel, RequestHeaders};
use crate::relay;
use trace::{NO_TRACE, TraceHeaders};

const LOG_PREFIX: &str = "email-verdict filter: ";

#[derive(Debug)]
enum State {
    Start,
    /// Nothing more to do: not a signup, or the request was let through.
    Passthrough,
    /// A signup with a body; the body is being buffered. `early`: what the headers and the
    /// query carried; `judging`: their verdicts when they were judged before the body.
    AwaitingBody {
        kind: BodyKind,
        early: Carried,
        judging: Judging,
    },
    /// Callouts are in flight; the request is held.
    AwaitingVerdicts {
        judging: Judging,
        then: Then,
    },
    /// A local response was sent.
    Responded,
}

/// The verdicts of one signup so far.
#[derive(Debug, Default)]
struct Judging {
    worst: Worst,
    /// Every domain judged or being judged.
    judged: Vec<Domain>,
    pending: Vec<Pending>,
    /// The signup's counts (`velocity`), once the sidecar answered; `None` when not counted.
    counts: Option<Result<Counts, Bypass>>,
}

/// A callout in flight.
#[derive(Debug)]
struct Pending {
    token: u32,
    what: Waiting,
}

/// What a callout asks.
#[derive(Debug)]
enum Waiting {
    /// A domain's verdict (`cas`: the cache slot's compare-and-swap token and the decisions' version).
    Verdict { domain: Domain, cas: crate::cache::Ticket },
    /// The signup's counts.
    Count,
    /// A domain's verdict from another stream's callout (`flight.rs`); no token of its own.
    Shared { domain: Domain },
}

/// What follows the last verdict.
#[derive(Debug)]
enum Then {
    /// Block-only mode, the headers' and query's addresses judged: refuse, or read the body.
    ReadBody { kind: BodyKind, early: Carried },
    /// The whole signup judged: answer.
    Answer(Answer),
}

/// What the answer needs beside the verdicts.
#[derive(Debug)]
struct Answer {
    /// Of the signup's own address, for the detail headers (the callouts carry domains only).
    details: Option<AddressDetails>,
    /// A problem of the signup that its policy let through: the bypass header, unless worse.
    problem: Option<Bypass>,
    /// `on_subaddressed: flag` and the address is sub-addressed: `subaddressed` in the flags.
    flag_subaddressed: bool,
}

/// Where a step of the logic leaves the request.
#[derive(Debug)]
enum Step {
    Proceed,
    Responded,
    AwaitBody { kind: BodyKind, early: Carried, judging: Judging },
    AwaitVerdicts { judging: Judging, then: Then },
}

/// One HTTP stream's filter.
pub struct RequestFilter {
    config: Rc<FilterConfig>,
    state: State,
    /// Envoy's `x-request-id` of the signup, when it has a usable one: sent with the callout
    /// (the sidecar logs it beside its own) and on every local reply, so one id finds the
    /// request in Envoy's access log and the sidecar's log.
    request_id: Option<String>,
    /// The request's trace headers, carried into the callouts.
    trace: TraceHeaders,
    /// The route is one of `graphql.paths`: a signup only when its body runs a named operation.
    graphql: bool,
    /// The protocol the request speaks: every local reply answers in it.
    protocol: Protocol,
    /// Judged as block mode would, nothing refused or added (`mode: shadow`, or outside
    /// `enforce_percent`): the body streams on while `copy` keeps what was read of it.
    shadow: bool,
    copy: Vec<u8>,
    /// The request's `content-length`, when it declares one.
    length: Option<u64>,
}

/// The protocol of a context without a request of its own (the root context's callouts).
static REST: Protocol = Protocol::Rest;

impl RequestFilter {
    pub fn new(config: Rc<FilterConfig>) -> Self {
        Self {
            config,
            state: State::Start,
            request_id: None,
            trace: TraceHeaders::default(),
            graphql: false,
            protocol: Protocol::Rest,
            shadow: false,
            copy: Vec::new(),
            length: None,
        }
    }

    pub fn on_request_headers(&mut self, host: &mut impl Host, end_of_stream: bool) -> Action {
        let config = Rc::clone(&self.config);
        let mut ctx = Ctx { config: &config, host, request_id: None, trace: &NO_TRACE, protocol: &REST, shadow: false };
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
        self.request_id = headers.request_id();
        self.length = headers.content_length();
        ctx.request_id = self.request_id.as_deref();
        let path = headers.text(":path");
        if !config.is_signup(&headers.text(":method"), &path) {
            self.state = State::Passthrough;
            return Action::Continue;
        }
        self.trace = TraceHeaders::of(&headers);
        ctx.trace = &self.trace;
        self.graphql = config.is_graphql(&path);
        self.protocol = Protocol::of(&|name| headers.values(name), self.graphql);
        ctx.protocol = &self.protocol;
        let enforce = &config.enforce;
        self.shadow = !rollout::enforces(enforce.mode, enforce.enforce_percent, ctx.host.client_address());
        ctx.shadow = self.shadow;
        if self.shadow {
            ctx.host.increment(Counter::Shadowed);
        }
        let step = match stripped {
            Ok(()) => ctx.signup_headers(&headers, &path, end_of_stream),
            Err(e) => ctx.host_failed("could not strip the flag headers", e),
        };
        self.settle(step)
    }

    pub fn on_request_body(&mut self, host: &mut impl Host, body_size: usize, end_of_stream: bool) -> Action {
        match &self.state {
            State::AwaitingBody { .. } if self.shadow => self.copy_chunk(host, body_size, end_of_stream),
            State::AwaitingBody { .. } if body_size > self.config.max_body_bytes => {
                let config = Rc::clone(&self.config);
                let step = self.ctx(&config, host).body_too_large();
                self.settle(step)
            }
            State::AwaitingBody { .. } if !end_of_stream => Action::Pause,
            State::AwaitingBody { .. } => self.body_complete(host),
            // Hold the body while the verdict is pending: continuing it would release the headers.
            State::AwaitingVerdicts { .. } | State::Responded => Action::Pause,
            State::Start | State::Passthrough => Action::Continue,
        }
    }

    /// Trailers end the body when the request has them.
    pub fn on_request_trailers(&mut self, host: &mut impl Host) -> Action {
        match &self.state {
            State::AwaitingBody { .. } => self.body_complete(host),
            State::AwaitingVerdicts { .. } | State::Responded => Action::Pause,
            State::Start | State::Passthrough => Action::Continue,
        }
    }

    /// The sidecar's answer (or Envoy's synthetic one) to the callout `token`.
    pub fn on_callout_response(&mut self, host: &mut impl Host, token: u32, response: &CalloutResponse) {
        // Waiters on this callout get the answer whatever this stream does with it.
        self.share_answer(host, token, response);
        let State::AwaitingVerdicts { judging, .. } = &mut self.state else {
            host.log(LogLevel::Debug, &format!("{LOG_PREFIX}ignoring the answer to callout {token}"));
            return;
        };
        let shared = |p: &Pending| matches!(p.what, Waiting::Shared { .. });
        let Some(at) = judging.pending.iter().position(|p| p.token == token && !shared(p)) else {
            host.log(LogLevel::Debug, &format!("{LOG_PREFIX}ignoring the answer to callout {token}"));
            return;
        };
        let pending = judging.pending.swap_remove(at);
        let State::AwaitingVerdicts { mut judging, then } = std::mem::replace(&mut self.state, State::Passthrough)
        else {
            return;
        };
        let config = Rc::clone(&self.config);
        let mut ctx = self.ctx(&config, &mut *host);
        match &pending.what {
            Waiting::Verdict { domain, cas } => {
                let judged = ctx.sidecar_answered(domain, *cas, response);
                judging.worst.add(judged);
            }
            Waiting::Count => judging.counts = Some(ctx.counted(response)),
            Waiting::Shared { .. } => {}
        }
        let step = ctx.next(judging, then);
        self.settle_held(step, host);
    }

    /// The logic's view of this stream.
    fn ctx<'a, H: Host>(&'a self, config: &'a FilterConfig, host: &'a mut H) -> Ctx<'a, H> {
        Ctx {
            config,
            host,
            request_id: self.request_id.as_deref(),
            trace: &self.trace,
            protocol: &self.protocol,
            shadow: self.shadow,
        }
    }

    /// Settles a step reached outside a request hook (a callout's answer, a wake-up): a held
    /// request that may go on is resumed.
    fn settle_held(&mut self, step: Step, host: &mut impl Host) {
        let resumes = matches!(step, Step::Proceed | Step::AwaitBody { .. });
        if self.settle(step) == Action::Continue
            && resumes
            && let Err(e) = host.resume_request()
        {
            host.log(LogLevel::Error, &format!("{LOG_PREFIX}could not resume the request: {e}"));
        }
    }

    /// True while callouts are in flight (the request is held for them). A host whose "pause"
    /// in the headers phase still hands it the body (the dynamic module's `StopIteration`) must
    /// then hold the body back from it instead (`StopAllIteration...`), as a Wasm VM's pause
    /// does: the body is delivered once the request is resumed.
    #[cfg(feature = "dynamic-module")]
    pub fn awaits_callouts(&self) -> bool {
        matches!(self.state, State::AwaitingVerdicts { .. })
    }

    /// After an internal error of the host glue (the dynamic module caught a panic): the request
    /// is answered as `failure_mode` says for a sidecar error, like a failed host call (deny: the
    /// failure reply; allow: on, with the bypass header while the headers are held). A request
    /// already answered stays answered. Logs nothing: the caller logs the one line. Only the
    /// dynamic module needs it (a panic kills a Wasm VM before anything could call it).
    #[cfg(any(test, feature = "dynamic-module"))]
    pub fn on_internal_error(&mut self, host: &mut impl Host) -> Action {
        if matches!(self.state, State::Responded) {
            return Action::Pause;
        }
        let config = Rc::clone(&self.config);
        let step = self.ctx(&config, host).fail(Bypass::SidecarError);
        self.settle(step)
    }

    fn body_complete(&mut self, host: &mut impl Host) -> Action {
        let State::AwaitingBody { kind, early, judging } = std::mem::replace(&mut self.state, State::Passthrough)
        else {
            return Action::Continue;
        };
        let config = Rc::clone(&self.config);
        let copy = std::mem::take(&mut self.copy);
        let mut ctx = self.ctx(&config, host);
        let body = match ctx.whole_body(self.shadow.then_some(copy)) {
            Ok(body) => body,
            Err(step) => return self.settle(*step),
        };
        if self.graphql && !ctx.runs_a_signup(&kind, &body) {
            return Action::Continue; // another operation on the GraphQL route: not a signup
        }
        let step = ctx.body_complete(&kind, early, judging, &body);
        self.settle(step)
    }

    fn settle(&mut self, step: Step) -> Action {
        let (state, action) = match step {
            Step::Proceed => (State::Passthrough, Action::Continue),
            Step::Responded => (State::Responded, Action::Pause),
            // Without the header hold a pause here would stall the stream: the body is held instead.
            Step::AwaitBody { kind, early, judging } => {
                let action = if self.config.hold_headers && !self.shadow { Action::Pause } else { Action::Continue };
                (State::AwaitingBody { kind, early, judging }, action)
            }
            Step::AwaitVerdicts { judging, then } => (State::AwaitingVerdicts { judging, then }, Action::Pause),
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
    trace: &'a TraceHeaders,
    protocol: &'a Protocol,
    /// Judge as block mode, refuse nothing, add nothing (`RequestFilter::shadow`).
    shadow: bool,
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

    /// A signup's headers: what the headers and the query carry; with a body, wait for it (an
    /// address there must agree with theirs, and the body may hold others). Without the header
    /// hold, their addresses are judged before the headers go upstream.
    fn signup_headers(&mut self, headers: &RequestHeaders, path: &str, end_of_stream: bool) -> Step {
        let sources = &self.config.enforce.email;
        let configured = extract::from_headers(|name| headers.values(name), &sources.headers);
        let early = Carried::new(configured, Domains::default()).and(extract::read_query(path, sources));
        let length = headers.content_length();
        if end_of_stream || length == Some(0) {
            return self.judge_whole(early, Judging::default());
        }
        if length.is_some_and(|len| len > self.config.max_body_bytes as u64) {
            return self.body_too_large();
        }
        let kind = BodyKind::for_request(&|name| headers.values(name));
        if self.config.hold_headers || self.shadow {
            return Step::AwaitBody { kind, early, judging: Judging::default() };
        }
        self.judge_early(kind, early)
    }

    /// Block-only mode: the headers' and query's addresses judged now, refusals they already
    /// decide (too many, an invalid one the policy denies) answered now, while the headers
    /// are still held.
    fn judge_early(&mut self, kind: BodyKind, early: Carried) -> Step {
        let whole = early.clone().to_judge(self.config.enforce.max_domains);
        match whole.problem {
            Some(Problem::TooManyDomains) => return self.too_many(),
            Some(Problem::Invalid(why)) if self.config.enforce.on_invalid_email == Policy::Deny => {
                return self.invalid_because(why);
            }
            _ => {}
        }
        let judging = self.judge(&whole.names, Judging::default());
        self.next(judging, Then::ReadBody { kind, early })
    }

    /// The whole body: the shadow's `copy`, or what Envoy buffered (over `max_body_bytes`: the
    /// step that refuses it).
    fn whole_body(&mut self, copy: Option<Vec<u8>>) -> Result<Vec<u8>, Box<Step>> {
        if let Some(copy) = copy {
            return Ok(copy); // bounded as it was copied
        }
        let max = self.config.max_body_bytes;
        match self.host.request_body(max.saturating_add(1)) {
            Ok(body) if body.len() > max => Err(Box::new(self.body_too_large())),
            Ok(body) => Ok(body),
            Err(e) => Err(Box::new(self.host_failed("could not read the request body", e))),
        }
    }

    fn body_complete(&mut self, kind: &BodyKind, early: Carried, judging: Judging, body: &[u8]) -> Step {
        let found = extract::read_body(kind, body, &self.config.enforce.email, self.config.max_body_bytes);
        self.judge_whole(early.and(found), judging)
    }

    /// On a GraphQL route: whether the body runs one of `graphql.operations` (a body that cannot
    /// be read counts as one: it is then refused as unreadable).
    fn runs_a_signup(&mut self, kind: &BodyKind, body: &[u8]) -> bool {
        let Some(graphql) = &self.config.enforce.graphql else { return true };
        extract::graphql::is_signup(kind, body, &graphql.operations, self.config.max_body_bytes)
    }

    fn body_too_large(&mut self) -> Step {
        self.host.increment(Counter::BodyTooLarge);
        self.respond(&LocalReply::BODY_TOO_LARGE)
    }

    /// The whole signup read: its problem's policy, then every domain not judged yet.
    fn judge_whole(&mut self, carried: Carried, judging: Judging) -> Step {
        let whole = carried.to_judge(self.config.enforce.max_domains);
        let problem = match whole.problem {
            None => None,
            Some(Problem::TooManyDomains) => return self.too_many(),
            Some(problem) => match self.problem(problem) {
                Ok(bypass) => Some(bypass),
                Err(refused) => return *refused,
            },
        };
        let subaddressed = whole.primary.as_ref().is_some_and(|e| details::is_subaddressed(e.local(), e.domain()));
        let policy = self.config.enforce.on_subaddressed;
        if subaddressed && policy == Subaddressed::Deny {
            self.host.increment(Counter::InvalidEmail);
            return self.respond(&LocalReply::SUBADDRESSED);
        }
        let flag_subaddressed = subaddressed && policy == Subaddressed::Flag;
        let details = whole.primary.as_ref().map(|email| AddressDetails::of(email, relay::is_relay(email.domain())));
        let mut judging = judging;
        judging.worst.set_primary(whole.primary.as_ref().map(|e| e.domain()));
        let mut judging = self.judge(&whole.names, judging);
        if let (Some(secret), Some(email)) = (&self.config.mailbox_secret, &whole.primary) {
            self.count(secret, email, &mut judging);
        }
        self.next(judging, Then::Answer(Answer { details, problem, flag_subaddressed }))
    }

    /// A problem of the signup: refused (`Err`, the step) or let through with its bypass value.
    fn problem(&mut self, problem: Problem) -> Result<Bypass, Box<Step>> {
        let (counter, policy, bypass) = match problem {
            Problem::Unreadable(why) => {
                self.log(LogLevel::Debug, &format!("the body is {}", why.as_str()));
                (Counter::UnreadableBody, self.config.enforce.on_unreadable_body, Bypass::UnreadableBody)
            }
            Problem::Invalid(why) => {
                let why_text = match why {
                    Some(Unusable::NotText) => "not text",
                    Some(Unusable::Conflicting) => "given several times with different values",
                    None => "not an address",
                };
                self.log(LogLevel::Debug, &format!("the email is {why_text}"));
                (Counter::InvalidEmail, self.config.enforce.on_invalid_email, Bypass::InvalidEmail)
            }
            Problem::Missing => (Counter::NoEmail, self.config.enforce.on_missing_email, Bypass::NoEmail),
            Problem::TooManyDomains => return Err(Box::new(self.too_many())),
        };
        self.host.increment(counter);
        match (policy, problem) {
            (Policy::Allow, _) => Ok(bypass),
            (Policy::Deny, Problem::Unreadable(_)) => Err(Box::new(self.respond(&LocalReply::UNREADABLE_BODY))),
            (Policy::Deny, Problem::Invalid(why)) => Err(Box::new(self.respond(&LocalReply::invalid(why)))),
            (Policy::Deny, _) => Err(Box::new(self.respond(&LocalReply::MISSING_EMAIL))),
        }
    }

    fn too_many(&mut self) -> Step {
        let max = self.config.enforce.max_domains;
        self.log(
            LogLevel::Debug,
            &format!("more than {max} domains (or {} names) in one signup", max * extract::NAMES_PER_DOMAIN),
        );
        self.host.increment(Counter::InvalidEmail);
        self.respond(&LocalReply::TOO_MANY_ADDRESSES)
    }

    /// Once nothing is pending (or a refusal is certain): what follows.
    fn next(&mut self, judging: Judging, then: Then) -> Step {
        let config = self.config;
        let no_mx = config.enforce.no_mx == NoMx::Block;
        let by =
            Refusing { block: self.blocks(), no_mx, denies: |b| config.failure_mode.for_reason(b) == Policy::Deny };
        if let Some(Err(bypass)) = judging.counts
            && (by.denies)(bypass)
        {
            return self.fail(bypass); // counting fails closed, whatever the verdicts
        }
        let refuses = judging.worst.refuses(&by);
        // A refusal waits for the signup's count (one callout, its timeout at most): a stream
        // that ends may take its callouts with it (the dynamic module's do), and repeated
        // refused attempts are what the counts are for. Verdicts still pending do not matter.
        let counting = judging.pending.iter().any(|p| matches!(p.what, Waiting::Count));
        if !judging.pending.is_empty() && (!refuses || counting) {
            return Step::AwaitVerdicts { judging, then };
        }
        match then {
            Then::ReadBody { kind, early } if !refuses => Step::AwaitBody { kind, early, judging },
            Then::ReadBody { .. } => {
                let answer = Answer { details: None, problem: None, flag_subaddressed: false };
                self.answer(judging.worst.settle(None, &by), &answer, None)
            }
            Then::Answer(answer) => {
                let counts = judging.counts;
                let settled = judging.worst.settle(answer.problem, &by);
                self.answer(settled, &answer, counts)
            }
        }
    }

    /// The worst outcome of the signup, answered; then its counts' limits (`velocity`).
    fn answer(&mut self, settled: Settled, answer: &Answer, counts: Option<Result<Counts, Bypass>>) -> Step {
        let details = answer.details.as_ref();
        let settled = match settled {
            Settled::Disposable(v) if answer.flag_subaddressed => Settled::Disposable(v.flagged_subaddressed()),
            Settled::Safe(v) if answer.flag_subaddressed => Settled::Safe(v.flagged_subaddressed()),
            other => other,
        };
        match settled {
            Settled::Disposable(v) if self.blocks() => self.judged(&v, details, None),
            Settled::Disposable(v) | Settled::Safe(v) => match self.velocity(counts) {
                Ok(velocity) => self.judged(&v, details, velocity.as_ref()),
                Err(refused) => *refused,
            },
            Settled::Undeliverable(v) => self.undeliverable(&v),
            Settled::Failed(bypass) => self.fail(bypass),
            Settled::Invalid => self.invalid_because(None),
            Settled::Bypass(bypass) => self.bypass(bypass),
        }
    }

    /// A verdict reached: block, or add the verdict headers (and the suggested provider domain
    /// of a probable typo, never the email's local part, and the detail headers `detail_headers`
    /// sends for the signup's own address) and go on.
    fn judged(
        &mut self,
        verdict: &AddressVerdict,
        details: Option<&AddressDetails>,
        velocity: Option<&Velocity>,
    ) -> Step {
        self.host.increment(Counter::Checked);
        if verdict.disposable {
            self.host.increment(Counter::disposable_by(verdict));
        }
        let enforce = &self.config.enforce;
        if verdict.disposable && self.shadow {
            return self.would_block(Reason::Disposable, Some(&verdict.domain));
        }
        if verdict.disposable && enforce.mode == Mode::Block {
            self.host.increment(Counter::Blocked);
            return self.respond(&LocalReply::blocked(enforce.block_status, &enforce.block_body));
        }
        if !self.config.hold_headers || self.shadow {
            return Step::Proceed; // the headers have gone upstream, or shadow mode adds none
        }
        let names = &self.config.enforce.flag_headers;
        let name = if verdict.disposable { "disposable" } else { "safe" };
        let suggested = verdict.suggestion.as_ref().map(|s| (names.suggestion.as_str(), s.as_str()));
        let detailed = details
            .into_iter()
            .flat_map(|d| d.headers(names, enforce.detail_headers))
            .filter_map(|(n, v)| Some((n, v?)));
        let counted = velocity.map(|v| v.headers(names, enforce.detail_headers)).unwrap_or_default();
        let set = [
            (names.verdict.as_str(), name),
            (names.domain.as_str(), verdict.domain.as_str()),
            (names.flags.as_str(), verdict.flags.as_str()),
        ]
        .into_iter()
        .chain(suggested)
        .chain(detailed)
        .chain(counted.iter().map(|(n, v)| (*n, v.as_str())))
        .try_for_each(|(name, value)| self.host.set_request_header(name, value));
        match set {
            Ok(()) => {
                self.host.increment(Counter::Flagged);
                self.host.increment(if verdict.disposable { Counter::FlaggedDisposable } else { Counter::FlaggedSafe });
                if verdict.undeliverable && enforce.no_mx == NoMx::Flag {
                    self.host.increment(Counter::FlaggedNoMx);
                }
                Step::Proceed
            }
            Err(e) => self.host_failed("could not add the verdict headers", e),
        }
    }

    fn log(&self, level: LogLevel, message: &str) {
        self.host.log(level, &format!("{LOG_PREFIX}{message}"));
    }
}

mod callouts;
mod replies;
mod shadow;
mod shared;
mod trace;

#[cfg(test)]
mod tests;
