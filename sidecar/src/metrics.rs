//! Prometheus metrics of `serve`: the one registry and every metric, exposed on the admin
//! listener's `GET /metrics` in the OpenMetrics text format (which Prometheus scrapes natively).
//!
//! Invariants: no label carries a key id, a domain or anything else unbounded; label values are
//! `&'static str` or small integers, so counting allocates nothing once a series exists. The
//! series that can be known up front are created at start, so they read 0 rather than missing.

mod leases;
mod lists;

pub use leases::{LeaseCounters, LeaseHeld};

use std::time::Duration;

use email_verdict_core::ErrorCode;
use email_verdict_core::VerdictSource;
use email_verdict_core::api::Verdict;
use email_verdict_core::signup::Reason;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::{Registry, Unit};

/// The `Content-Type` of [`Metrics::encode`]'s output.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// Lookup latency buckets, in seconds: 100 µs (a cached answer) to 5 s (DNS timeouts).
const LATENCY_BUCKETS: [f64; 15] =
    [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0];

/// Which part of the public listener answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Route {
    /// `/api/v1/domain/...`
    Lookup,
    /// `POST /api/v1/domains`
    Batch,
    /// `GET /api/v1/decisions`
    Decisions,
    /// `POST /api/v1/signups`
    Signups,
    /// The public HTML pages.
    Page,
    /// Anything else (404).
    Other,
}

impl Route {
    fn as_str(self) -> &'static str {
        match self {
            Route::Lookup => "lookup",
            Route::Batch => "batch",
            Route::Decisions => "decisions",
            Route::Signups => "signups",
            Route::Page => "page",
            Route::Other => "other",
        }
    }
}

/// The record type of a DNS query.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QueryType {
    Mx,
    A,
    Aaaa,
    Ptr,
}

impl QueryType {
    const ALL: [QueryType; 4] = [QueryType::Mx, QueryType::A, QueryType::Aaaa, QueryType::Ptr];

    fn as_str(self) -> &'static str {
        match self {
            QueryType::Mx => "mx",
            QueryType::A => "a",
            QueryType::Aaaa => "aaaa",
            QueryType::Ptr => "ptr",
        }
    }
}

/// Why a DNS query failed. NXDOMAIN and "no records" are answers, not failures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DnsErrorKind {
    Timeout,
    Servfail,
    Refused,
    Other,
}

impl DnsErrorKind {
    const ALL: [DnsErrorKind; 4] =
        [DnsErrorKind::Timeout, DnsErrorKind::Servfail, DnsErrorKind::Refused, DnsErrorKind::Other];

    fn as_str(self) -> &'static str {
        match self {
            DnsErrorKind::Timeout => "timeout",
            DnsErrorKind::Servfail => "servfail",
            DnsErrorKind::Refused => "refused",
            DnsErrorKind::Other => "other",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct RequestLabels {
    route: &'static str,
    status: u16,
    code: &'static str,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct QueryLabels {
    r#type: &'static str,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct DnsErrorLabels {
    r#type: &'static str,
    kind: &'static str,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct VerdictLabels {
    verdict: &'static str,
    /// What decided it: [`VerdictSource::as_str`], six values.
    source: &'static str,
}

/// What the warm-up of the infrastructure index made of one strong-listed domain.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WarmupOutcome {
    /// Its own (not shared) mail servers were recorded as disposable infrastructure.
    Learned,
    /// Resolved, nothing to record (no MX, or only shared infrastructure).
    Nothing,
    /// DNS failed: skipped.
    Failed,
}

impl WarmupOutcome {
    const ALL: [WarmupOutcome; 3] = [WarmupOutcome::Learned, WarmupOutcome::Nothing, WarmupOutcome::Failed];

    fn as_str(self) -> &'static str {
        match self {
            WarmupOutcome::Learned => "learned",
            WarmupOutcome::Nothing => "nothing",
            WarmupOutcome::Failed => "failed",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct WarmupLabels {
    outcome: &'static str,
}

/// What an ext_authz check came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CheckOutcome {
    /// A verdict: allowed with the flag headers, or blocked.
    Judged,
    /// No full verdict, but a strong listing decided it (`local_fallback`).
    LocalDecision,
    /// Allowed without a verdict by policy (no email, invalid, unreadable): the bypass header.
    Bypassed,
    /// Refused by policy or a limit (400, 413).
    Refused,
    /// Our own failure (5xx): the gateway's failure mode decides.
    Failed,
    /// A request on a GraphQL route running none of `graphql.operations`: allowed unread.
    NotSignup,
    /// Shadowed (`mode: shadow`, or outside `enforce_percent`): allowed, though block mode would
    /// have refused it (`ext_authz_would_block` says why).
    WouldBlock,
}

impl CheckOutcome {
    const ALL: [CheckOutcome; 7] = [
        CheckOutcome::Judged,
        CheckOutcome::LocalDecision,
        CheckOutcome::Bypassed,
        CheckOutcome::Refused,
        CheckOutcome::Failed,
        CheckOutcome::NotSignup,
        CheckOutcome::WouldBlock,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            CheckOutcome::Judged => "judged",
            CheckOutcome::LocalDecision => "local_decision",
            CheckOutcome::Bypassed => "bypassed",
            CheckOutcome::Refused => "refused",
            CheckOutcome::Failed => "failed",
            CheckOutcome::NotSignup => "not_signup",
            CheckOutcome::WouldBlock => "would_block",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct CheckLabels {
    outcome: &'static str,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct ReasonLabels {
    reason: &'static str,
}

/// Which of a plan's limits refused a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PlanLimit {
    /// The daily quota (402 `quota_exceeded`).
    Quota,
    /// The per-second burst (429 `rate_limit_exceeded`).
    Burst,
}

impl PlanLimit {
    const ALL: [PlanLimit; 2] = [PlanLimit::Quota, PlanLimit::Burst];

    fn as_str(self) -> &'static str {
        match self {
            PlanLimit::Quota => "quota",
            PlanLimit::Burst => "burst",
        }
    }
}

/// A refusal by a plan's limit. `plan` is a configured plan's name (the built-in ones and the
/// `--config` file's `[plans.NAME]`, nothing a caller chooses): an owned string, but a small,
/// fixed set, and only refusals pay for the allocation.
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct RejectionLabels {
    plan: String,
    limit: &'static str,
}

/// What one RDAP request came to (`rdap::Outcome`, without its details).
pub const RDAP_OUTCOMES: [&str; 7] =
    ["registered", "no_registration", "not_found", "rate_limited", "unavailable", "unusable", "refused"];

/// An outbound request not made, or a redirect not followed (`outbound::Refusal`): for what
/// (`rdap`, `list`) and why (`address`, `redirect`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct RefusedLabels {
    purpose: &'static str,
    reason: &'static str,
}

/// The MX cache's counters (see `dns::MxCache`): hit ratio = hits / (hits + misses).
#[derive(Debug, Clone, Default)]
pub struct CacheCounters {
    /// A fresh answer was in the cache.
    pub hits: Counter,
    /// No fresh answer: the lookup started a resolution or joined one under way.
    pub misses: Counter,
    /// Misses that joined a resolution under way (single flight) instead of starting one.
    pub joins: Counter,
    /// Misses whose resolution failed and that were answered with the last good answer.
    pub stale_served: Counter,
}

/// Every metric of the process, and the registry that exposes them.
#[derive(Debug)]
pub struct Metrics {
    registry: Registry,
    requests: Family<RequestLabels, Counter>,
    lookup_latency: Histogram,
    pub cache: CacheCounters,
    dns_queries: Family<QueryLabels, Counter>,
    dns_errors: Family<DnsErrorLabels, Counter>,
    verdicts: Family<VerdictLabels, Counter>,
    decided_without_dns: Counter,
    store_errors: Counter,
    warmup: Family<WarmupLabels, Counter>,
    warmup_remaining: Gauge,
    ext_authz: Family<CheckLabels, Counter>,
    would_block: Family<ReasonLabels, Counter>,
    rdap_requests: Family<CheckLabels, Counter>,
    rdap_not_queued: Counter,
    outbound_refused: Family<RefusedLabels, Counter>,
    new_domain_signups: Counter,
    signup_waves: Counter,
    rankings_dropped: Counter,
    rejections: Family<RejectionLabels, Counter>,
    review_queue_entries: Gauge,
    review_queue_capacity: Gauge,
    lists: lists::ListMetrics,
    leases: leases::LeaseMetrics,
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    pub fn new() -> Self {
        let mut metrics = Self {
            registry: Registry::with_prefix("email_verdict"),
            requests: Family::default(),
            lookup_latency: Histogram::new(LATENCY_BUCKETS),
            cache: CacheCounters::default(),
            dns_queries: Family::default(),
            dns_errors: Family::default(),
            verdicts: Family::default(),
            decided_without_dns: Counter::default(),
            store_errors: Counter::default(),
            warmup: Family::default(),
            warmup_remaining: Gauge::default(),
            ext_authz: Family::default(),
            would_block: Family::default(),
            rdap_requests: Family::default(),
            rdap_not_queued: Counter::default(),
            outbound_refused: Family::default(),
            new_domain_signups: Counter::default(),
            signup_waves: Counter::default(),
            rankings_dropped: Counter::default(),
            rejections: Family::default(),
            review_queue_entries: Gauge::default(),
            review_queue_capacity: Gauge::default(),
            lists: lists::ListMetrics::default(),
            leases: leases::LeaseMetrics::new(),
        };
        metrics.register();
        metrics.create_known_series();
        metrics
    }

    fn register(&mut self) {
        let (r, cache) = (&mut self.registry, &self.cache);
        let requests_help = "Requests on the public listener, by route, HTTP status and error code";
        r.register("requests", requests_help, self.requests.clone());
        let latency_help = "Time to answer a request on /api/v1/domain/..., whatever the answer";
        r.register_with_unit("lookup_duration", latency_help, Unit::Seconds, self.lookup_latency.clone());
        r.register("mx_cache_hits", "MX cache lookups answered from a fresh entry", cache.hits.clone());
        r.register("mx_cache_misses", "MX cache lookups without a fresh entry", cache.misses.clone());
        r.register("mx_cache_joins", "MX cache misses that joined a resolution under way", cache.joins.clone());
        let stale_help = "MX cache misses whose resolution failed, answered with the last good answer";
        r.register("mx_cache_stale_served", stale_help, cache.stale_served.clone());
        r.register("dns_queries", "DNS queries sent, by record type", self.dns_queries.clone());
        r.register("dns_errors", "DNS queries that failed, by record type and kind", self.dns_errors.clone());
        r.register(
            "verdicts",
            "Verdicts reached (API and pages), by verdict and deciding source",
            self.verdicts.clone(),
        );
        let decided_help =
            "Verdicts a decision or a list fixes, answered without MX data because DNS was slow or failing";
        r.register("decided_without_dns", decided_help, self.decided_without_dns.clone());
        r.register("store_errors", "State store calls that failed", self.store_errors.clone());
        let warmup_help = "Strong-listed domains the infrastructure warm-up resolved, by outcome";
        r.register("warmup_domains", warmup_help, self.warmup.clone());
        let remaining_help = "Strong-listed domains the infrastructure warm-up has yet to resolve";
        r.register("warmup_remaining", remaining_help, self.warmup_remaining.clone());
        let checks_help = "ext_authz checks, by outcome (judged, local_decision, bypassed, refused, failed)";
        r.register("ext_authz_checks", checks_help, self.ext_authz.clone());
        let would_help = "Shadowed ext_authz checks block mode would have refused, by reason";
        r.register("ext_authz_would_block", would_help, self.would_block.clone());
        let rdap_help = "RDAP requests for domain ages (serve --rdap), by outcome";
        r.register("rdap_requests", rdap_help, self.rdap_requests.clone());
        let not_queued_help = "Domain ages not asked for because the RDAP queue was full (asked on a later lookup)";
        r.register("rdap_not_queued", not_queued_help, self.rdap_not_queued.clone());
        let refused_help = "Outbound requests (RDAP, URL lists) not made to a non-public address, or redirects \
            not followed out of their origin, by purpose and reason";
        r.register("outbound_refused", refused_help, self.outbound_refused.clone());
        let new_help = "Signups of a never-seen domain (queued for review) on a mail server of its own";
        r.register("signups_new_domain", new_help, self.new_domain_signups.clone());
        let waves_help = "Times a mail server reached the wave threshold: that many distinct never-seen domains \
            signed up on it within an hour (each wave counted once, by the replica whose signup reached it)";
        r.register("signup_waves", waves_help, self.signup_waves.clone());
        let dropped_help = "Signup board rankings dropped because the queue to the store's one writer was full: the \
            boards may miss some counts (the counts themselves are exact)";
        r.register("signup_rankings_dropped", dropped_help, self.rankings_dropped.clone());
        let rejections_help = "Requests a key's plan refused, by plan and limit: quota (402 quota_exceeded) or \
            burst (429 rate_limit_exceeded); lookups, batches, signups and ext_authz checks alike";
        r.register("plan_rejections", rejections_help, self.rejections.clone());
        let queue_help = "Entries in the review queue (the store's, shared by every replica), as of the last scrape";
        r.register("review_queue_entries", queue_help, self.review_queue_entries.clone());
        let capacity_help = "The most entries the review queue keeps (--review-queue-capacity); past it the least \
            useful are dropped";
        r.register("review_queue_capacity", capacity_help, self.review_queue_capacity.clone());
        self.lists.register(r);
        self.leases.register(r);
    }

    /// Creates the series whose labels are known in advance, so that they read 0 from the start.
    fn create_known_series(&self) {
        let lookup_codes = [
            ErrorCode::InvalidInput,
            ErrorCode::MissingApiKey,
            ErrorCode::ApiKeyInvalid,
            ErrorCode::QuotaExceeded,
            ErrorCode::RateLimitExceeded,
            ErrorCode::InternalError,
            ErrorCode::MethodNotAllowed,
        ];
        self.requests.get_or_create_owned(&request_labels(Route::Lookup, 200, None));
        for code in lookup_codes {
            self.requests.get_or_create_owned(&request_labels(Route::Lookup, code.status(), Some(code)));
        }
        let not_found = ErrorCode::NotFound;
        self.requests.get_or_create_owned(&request_labels(Route::Other, not_found.status(), Some(not_found)));
        for outcome in CheckOutcome::ALL {
            self.ext_authz.get_or_create_owned(&CheckLabels { outcome: outcome.as_str() });
        }
        for reason in Reason::ALL {
            self.would_block.get_or_create_owned(&ReasonLabels { reason: reason.as_str() });
        }
        for outcome in RDAP_OUTCOMES {
            self.rdap_requests.get_or_create_owned(&CheckLabels { outcome });
        }
        for purpose in ["rdap", "list"] {
            for reason in ["address", "redirect"] {
                self.outbound_refused.get_or_create_owned(&RefusedLabels { purpose, reason });
            }
        }
        for outcome in WarmupOutcome::ALL {
            self.warmup.get_or_create_owned(&WarmupLabels { outcome: outcome.as_str() });
        }
        for qtype in QueryType::ALL {
            self.dns_queries.get_or_create_owned(&QueryLabels { r#type: qtype.as_str() });
            for kind in DnsErrorKind::ALL {
                self.dns_errors.get_or_create_owned(&DnsErrorLabels { r#type: qtype.as_str(), kind: kind.as_str() });
            }
        }
        for verdict in [Verdict::Disposable, Verdict::Safe] {
            for source in VerdictSource::ALL {
                self.verdicts
                    .get_or_create_owned(&VerdictLabels { verdict: verdict_str(verdict), source: source.as_str() });
            }
        }
    }

    /// The plans keys may have, so that their rejection series read 0 from the start.
    pub fn plans_known<'a>(&self, plans: impl IntoIterator<Item = &'a str>) {
        for plan in plans {
            for limit in PlanLimit::ALL {
                self.rejections.get_or_create_owned(&RejectionLabels { plan: plan.to_owned(), limit: limit.as_str() });
            }
        }
    }

    /// A request refused by `limit` of the key's `plan`.
    pub fn plan_rejection(&self, plan: &str, limit: PlanLimit) {
        self.rejections.get_or_create(&RejectionLabels { plan: plan.to_owned(), limit: limit.as_str() }).inc();
    }

    /// The review queue's size and bound, read from the store when scraped.
    pub fn review_queue(&self, entries: usize, capacity: usize) {
        self.review_queue_entries.set(i64::try_from(entries).unwrap_or(i64::MAX));
        self.review_queue_capacity.set(i64::try_from(capacity).unwrap_or(i64::MAX));
    }

    /// One answered request on the public listener. `code` is the API error code (`None` for a
    /// verdict, counted as `ok`); pages have no code and are counted with `code=""`.
    pub fn request(&self, route: Route, status: u16, code: Option<ErrorCode>) {
        self.requests.get_or_create(&request_labels(route, status, code)).inc();
    }

    /// How long a request on the lookup route took to answer.
    pub fn lookup_latency(&self, elapsed: Duration) {
        self.lookup_latency.observe(elapsed.as_secs_f64());
    }

    /// Counts a DNS query; its outcome is told to the returned guard. A query dropped before
    /// that (cut short by the sidecar's own time bound) counts as a timeout.
    pub fn dns_query(&self, qtype: QueryType) -> DnsQuery<'_> {
        self.dns_queries.get_or_create(&QueryLabels { r#type: qtype.as_str() }).inc();
        DnsQuery { metrics: self, qtype, done: false }
    }

    fn dns_error(&self, qtype: QueryType, kind: DnsErrorKind) {
        self.dns_errors.get_or_create(&DnsErrorLabels { r#type: qtype.as_str(), kind: kind.as_str() }).inc();
    }

    /// A verdict reached, with what decided it.
    pub fn verdict(&self, verdict: Verdict, source: VerdictSource) {
        self.verdicts.get_or_create(&VerdictLabels { verdict: verdict_str(verdict), source: source.as_str() }).inc();
    }

    /// A decided verdict answered without waiting for DNS.
    pub fn decided_without_dns(&self) {
        self.decided_without_dns.inc();
    }

    /// One domain done by the warm-up, with how many are left.
    pub fn warmup(&self, outcome: WarmupOutcome, remaining: usize) {
        self.warmup.get_or_create(&WarmupLabels { outcome: outcome.as_str() }).inc();
        self.warmup_remaining.set(i64::try_from(remaining).unwrap_or(i64::MAX));
    }

    /// The warm-up's starting point: `remaining` domains to resolve.
    pub fn warmup_remaining(&self, remaining: usize) {
        self.warmup_remaining.set(i64::try_from(remaining).unwrap_or(i64::MAX));
    }

    pub fn would_block(&self, reason: Reason) {
        self.would_block.get_or_create(&ReasonLabels { reason: reason.as_str() }).inc();
    }

    pub fn ext_authz(&self, outcome: CheckOutcome) {
        self.ext_authz.get_or_create(&CheckLabels { outcome: outcome.as_str() }).inc();
    }

    /// One RDAP request ended; `outcome` is one of [`RDAP_OUTCOMES`].
    pub fn rdap_request(&self, outcome: &'static str) {
        self.rdap_requests.get_or_create(&CheckLabels { outcome }).inc();
    }

    /// An outbound request for `purpose` (`rdap`, `list`) refused for `reason` (`address`,
    /// `redirect`).
    pub fn outbound_refused(&self, purpose: &'static str, reason: &'static str) {
        self.outbound_refused.get_or_create(&RefusedLabels { purpose, reason }).inc();
    }

    /// A domain age not asked for: the RDAP queue was full.
    pub fn rdap_not_queued(&self) {
        self.rdap_not_queued.inc();
    }

    /// Operator list `index` exists (its series read 0 until it loads), fetched every
    /// `refresh_secs` (0: a file, re-read when it changes, or a URL fetched on SIGHUP only).
    pub fn list_known(&self, index: usize, kind: &'static str, refresh_secs: u64) {
        self.lists.known(index, kind, refresh_secs);
    }

    /// Operator list `index` holds `entries` names, loaded successfully at unix time `at`.
    pub fn list_loaded(&self, index: usize, kind: &'static str, entries: usize, at: Option<i64>) {
        self.lists.loaded(index, kind, entries, at);
    }

    /// A load of operator list `index` failed.
    pub fn list_failed(&self, index: usize, kind: &'static str) {
        self.lists.failed(index, kind);
    }

    /// A ranking of the signup boards dropped (the writer's queue full); the total so far.
    pub fn ranking_dropped(&self) -> u64 {
        self.rankings_dropped.inc().saturating_add(1)
    }

    /// A signup of a never-seen domain on its own mail server; `wave`: it brought the server's
    /// distinct new domains of the last hour to the wave threshold.
    pub fn new_domain_signup(&self, wave: bool) {
        self.new_domain_signups.inc();
        if wave {
            self.signup_waves.inc();
        }
    }

    /// The handles `Leases` counts its store calls with (registered here).
    pub fn lease_counters(&self) -> LeaseCounters {
        self.leases.counters()
    }

    /// What the leases hold, read at scrape time.
    pub fn leases_held(&self, held: &LeaseHeld) {
        self.leases.held(held);
    }

    pub fn store_error(&self) {
        self.store_errors.inc();
    }

    /// The whole exposition, OpenMetrics text (ends with `# EOF`).
    pub fn encode(&self) -> String {
        let mut out = String::new();
        // Writing to a String cannot fail; an encoder error would only cut the output short.
        if let Err(e) = prometheus_client::encoding::text::encode(&mut out, &self.registry) {
            tracing::error!(error = %e, "cannot encode the metrics");
        }
        out
    }
}

/// A DNS query under way (see [`Metrics::dns_query`]).
pub struct DnsQuery<'a> {
    metrics: &'a Metrics,
    qtype: QueryType,
    done: bool,
}

impl DnsQuery<'_> {
    /// The query ended: with an answer (`None`) or a failure of this kind.
    pub fn finish(mut self, failure: Option<DnsErrorKind>) {
        self.done = true;
        if let Some(kind) = failure {
            self.metrics.dns_error(self.qtype, kind);
        }
    }
}

impl Drop for DnsQuery<'_> {
    fn drop(&mut self) {
        if !self.done {
            self.metrics.dns_error(self.qtype, DnsErrorKind::Timeout);
        }
    }
}

fn request_labels(route: Route, status: u16, code: Option<ErrorCode>) -> RequestLabels {
    let code = match (route, code) {
        (_, Some(code)) => code.as_str(),
        (Route::Page, None) => "",
        (_, None) => "ok",
    };
    RequestLabels { route: route.as_str(), status, code }
}

fn verdict_str(verdict: Verdict) -> &'static str {
    match verdict {
        Verdict::Disposable => "disposable",
        Verdict::Safe => "safe",
    }
}

#[cfg(test)]
mod tests;
