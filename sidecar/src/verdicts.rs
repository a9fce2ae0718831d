//! The verdict for a lookup input: DNS (through the cache), the catalog, the reviewer's current
//! decision and the infrastructure index, by the core rules. Then, off the request's path, the
//! lookup feeds the review queue and the index (not when [`Verdicts::read_only`]).
//!
//! Infrastructure (`mx_ip_match`): the domain's own MX hosts and addresses judged on what the
//! index knows of them, by the rules of `verdicts/infra.rs` (ownership, names before addresses,
//! fading facts, reviewers' marks). Hosts on shared multi-tenant infrastructure, and their
//! addresses, never enter the index and never match (rule 3).
//!
//! A fact the lists give (not a reviewer's decision) is not written again by one process for
//! [`RELEARN_AFTER`]: a popular disposable domain would otherwise cost a store write on every
//! lookup.
//!
//! With `--rdap` ([`Verdicts::with_domain_ages`]), a verdict also carries the registered
//! domain's age when it is already known (`crate::rdap`: never waited for); it never changes the
//! verdict, and a young domain goes higher in the review queue.

use std::num::NonZeroUsize;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::time::Instant as Deadline;

use lru::LruCache;

use email_verdict_core::details::DomainDetails;
use email_verdict_core::suggest::did_you_mean;
use email_verdict_core::verdict::{decide, decide_without_mx};
use email_verdict_core::{Catalog, Decision, Domain, LookupInput, Mail, MxInfo, Signals, VerdictResult, VerdictSource};

use crate::clock::Clock;
use crate::dns::{DnsFailure, MxCache};
use crate::lists::LiveCatalog;
use crate::metrics::Metrics;
use crate::rdap::{DomainAge, DomainAges};
use crate::state::{AppliedDecision, ReviewReason, StateError, StateStore};
use infra::InfraJudgement;
pub(crate) use infra::OwnInfra;
use learning::{knowledge, review_cause, teacher, teaches};
use memo::{Judgement, Memo, Reached};
use record::about;

#[derive(Debug, thiserror::Error)]
pub enum LookupError {
    #[error(transparent)]
    Dns(#[from] DnsFailure),
    #[error(transparent)]
    Store(#[from] StateError),
}

pub struct Verdicts {
    /// Read once per judgement: a reload swaps it whole, so the next lookup follows it.
    catalog: Arc<LiveCatalog>,
    mx: Arc<MxCache>,
    store: Arc<dyn StateStore>,
    clock: Arc<dyn Clock>,
    threshold: u64,
    metrics: Arc<Metrics>,
    learned: Mutex<LruCache<u64, Instant>>,
    /// The domains this process last judged: the mail server each was queued under for review
    /// (`None`: not queued on one), and when (Unix seconds). See [`Self::queued_on`].
    queued: Mutex<LruCache<String, (Option<String>, i64)>>,
    /// Whether lookups feed the review queue and the infrastructure index ([`Self::read_only`]).
    feeds_store: bool,
    /// Domain ages from RDAP, when `--rdap` is on.
    ages: Option<Arc<DomainAges>>,
    /// How long one lookup waits for all its DNS work ([`Self::with_dns_deadline`]).
    dns_deadline: Duration,
    /// The last verdicts reached, with what they were reached from.
    memo: Memo,
}

/// A verdict, and the popular provider the domain is very probably a typo of (`did_you_mean`:
/// `core::suggest`, only for a domain without mail that nothing vouches for).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Judged {
    pub result: SharedResult,
    pub suggestion: Option<Domain>,
    /// The registered domain's age, when RDAP already told it (`details.domain_age_days`).
    pub age: Option<DomainAge>,
    /// The MX data could not be had in time: the verdict is what is known without it.
    pub mx_unavailable: bool,
    /// What decided it (the `x-email-verdict-source` header; never in the JSON record).
    pub source: VerdictSource,
    /// Where its mail goes (the `x-email-verdict-mail` header), unless the MX data was unavailable.
    pub mail: Option<Mail>,
    /// What `details` says of the domain (its provider, whether a relay).
    pub about: DomainDetails,
}

/// What a judgement may change beside its answer.
#[derive(Debug, Clone, Copy)]
struct Judging {
    /// Feed the review queue, the infrastructure index and RDAP.
    learn: bool,
    /// Count the verdict in the metrics.
    counted: bool,
}

/// A verdict with what it was reached from.
struct Decided {
    result: SharedResult,
    catalog: Arc<Catalog>,
    suggestion: Option<Domain>,
    mx: Arc<MxInfo>,
    signals: Signals,
    /// What the domain's own mail servers weigh (`verdicts/infra.rs`).
    infra: InfraJudgement,
    age: Option<DomainAge>,
    mx_unavailable: bool,
    source: VerdictSource,
    about: DomainDetails,
}

/// The `lookup` span's attributes: what decided and how, never the name looked up.
fn describe(decided: &Result<Decided, LookupError>) -> Vec<crate::telemetry::Attribute> {
    use crate::telemetry::Attribute;
    match decided {
        Ok(d) => vec![
            Attribute::new(
                "email_verdict.verdict",
                match d.result.verdict {
                    email_verdict_core::api::Verdict::Disposable => "disposable",
                    email_verdict_core::api::Verdict::Safe => "safe",
                },
            ),
            Attribute::new("email_verdict.source", d.source.as_str()),
            Attribute::new("email_verdict.cache_hit", d.result.cached),
            Attribute::new("email_verdict.mx_unavailable", d.mx_unavailable),
        ],
        Err(_) => vec![Attribute::new("email_verdict.outcome", "error")],
    }
}

/// A verdict, its MX answer, and why (see [`Verdicts::verdict_explained`]).
pub struct Explained {
    pub result: VerdictResult,
    pub suggestion: Option<Domain>,
    pub mx: Arc<MxInfo>,
    pub why: Why,
    /// The catalog the verdict was reached with (the page describes the domain by it).
    pub catalog: Arc<Catalog>,
    /// The registered domain's age, when known.
    pub age: Option<DomainAge>,
    /// The MX data could not be had in time (`mx` is then empty).
    pub mx_unavailable: bool,
    /// The own servers that made it disposable infrastructure, and why each (`why.infra` in full).
    pub infra: Vec<InfraMatch>,
    /// What decided it, as the metric and `x-email-verdict-source` name it.
    pub source: VerdictSource,
}

/// How long a verdict that a decision already fixes waits for DNS, for its MX data only.
pub const DECIDED_DNS_WAIT: Duration = Duration::from_millis(100);

/// How long an infrastructure fact written to the store is not written again by this process.
const RELEARN_AFTER: Duration = Duration::from_secs(600);
/// Facts remembered for that purpose (a bound, not a limit: a forgotten one is written again).
const LEARNED_FACTS: usize = 10_000;
/// Judged domains remembered for signup waves (the least recently judged are forgotten).
const QUEUED_REMEMBERED: usize = 20_000;

impl Verdicts {
    pub fn new(
        catalog: Arc<LiveCatalog>,
        mx: Arc<MxCache>,
        store: Arc<dyn StateStore>,
        clock: Arc<dyn Clock>,
        threshold: u64,
        metrics: Arc<Metrics>,
    ) -> Self {
        let learned = Mutex::new(LruCache::new(NonZeroUsize::new(LEARNED_FACTS).unwrap_or(NonZeroUsize::MIN)));
        let queued = Mutex::new(LruCache::new(NonZeroUsize::new(QUEUED_REMEMBERED).unwrap_or(NonZeroUsize::MIN)));
        let dns_deadline = mx.lookup_timeout();
        let (threshold, feeds_store, ages) = (threshold.max(1), true, None);
        let memo = Memo::default();
        Self { catalog, mx, store, clock, threshold, metrics, learned, queued, feeds_store, ages, dns_deadline, memo }
    }

    /// One lookup waits at most `deadline` for all its DNS work (the domain's MX, a listed
    /// parent's, the owners of hosts that reached the bar); by default the resolution's own
    /// bound. Past it, a verdict that needs no DNS comes without MX data (`mx_unavailable`),
    /// any other is a DNS failure. The resolutions go on and fill the cache.
    pub fn with_dns_deadline(mut self, deadline: Duration) -> Self {
        self.dns_deadline = deadline;
        self
    }

    /// Verdicts carry the registered domain's age when RDAP already told it (`--rdap`).
    pub fn with_domain_ages(mut self, ages: Arc<DomainAges>) -> Self {
        self.ages = Some(ages);
        self
    }

    /// The registered domain's age if known; else it is asked for in the background.
    fn age_of(&self, domain: &Domain) -> Option<DomainAge> {
        self.ages.as_ref()?.age(domain, self.clock.now_ms().div_euclid(1000))
    }

    /// Reads the store (decisions, the infrastructure index) but never writes to it: for a
    /// `check` run against a server's own state, which must not fill its review queue.
    pub fn read_only(mut self) -> Self {
        self.feeds_store = false;
        self
    }

    /// The reviewer's decision in force for `domain` (made on it or on a parent up to its
    /// registrable domain; the most specific wins): one store round trip, or none when the
    /// store's decision cache has it (a decision reaches every replica within about 10 ms,
    /// `state/versioned_cache.rs`). The API reads it beside the admission.
    pub async fn decision(&self, domain: &Domain) -> Result<Option<Decision>, LookupError> {
        Ok(self.applied_decision(domain).await?.map(|a| a.decision))
    }

    /// Like [`decision`](Self::decision), with the name the decision was made on.
    pub async fn applied_decision(&self, domain: &Domain) -> Result<Option<AppliedDecision>, LookupError> {
        let names = crate::state::covering(domain);
        Ok(self.store.decision(&names).await.map_err(|e| self.store_failed(e))?)
    }

    /// The verdict for `input`, given the reviewer's current `decision` for its domain.
    pub async fn verdict(&self, input: &LookupInput, decision: Option<Decision>) -> Result<Judged, LookupError> {
        self.verdict_learning(input, decision, true).await
    }

    /// [`verdict`](Self::verdict); with `learn` false nothing is learned from the lookup: no
    /// review queue, no infrastructure index, no RDAP (a name a gateway found in free text,
    /// which nobody typed as their address).
    pub async fn verdict_learning(
        &self,
        input: &LookupInput,
        decision: Option<Decision>,
        learn: bool,
    ) -> Result<Judged, LookupError> {
        let decided = self.decided(input, decision, Judging { learn, counted: true });
        let d = crate::telemetry::span("lookup", decided, describe).await?;
        let mail = (!d.mx_unavailable).then(|| d.mx.mail());
        let (result, suggestion, age, mx_unavailable, source, about) =
            (d.result, d.suggestion, d.age, d.mx_unavailable, d.source, d.about);
        Ok(Judged { result, suggestion, age, mx_unavailable, source, mail, about })
    }

    /// The verdict and the MX answer it was reached from (for the public pages, which show
    /// each MX host's addresses; the JSON API shows only what the verdict carries).
    pub async fn verdict_with_mx(&self, input: &LookupInput) -> Result<(VerdictResult, Arc<MxInfo>), LookupError> {
        let decision = self.decision(input.domain()).await?;
        let d = self.decided(input, decision, Judging { learn: true, counted: true }).await?;
        Ok((d.result.into_owned(), d.mx))
    }

    /// Like [`verdict_with_mx`](Self::verdict_with_mx), with why the verdict is what it is
    /// (for the public page; never part of the JSON record).
    pub async fn verdict_explained(&self, input: &LookupInput) -> Result<Explained, LookupError> {
        self.verdict_explained_learning(input, true).await
    }

    /// [`verdict_explained`](Self::verdict_explained); with `learn` false nothing is learned
    /// and the verdict is not counted in the metrics (`email-verdict explain`: a support
    /// question is no signup).
    pub async fn verdict_explained_learning(&self, input: &LookupInput, learn: bool) -> Result<Explained, LookupError> {
        let applied = self.applied_decision(input.domain()).await?;
        let how = Judging { learn, counted: learn };
        let d = self.decided(input, applied.as_ref().map(|a| a.decision), how).await?;
        let servers = d.infra.matches.iter().map(|m| (m.server.value.clone(), m.disposable.max(1))).collect();
        let why = Why::new(&d.catalog, input.domain(), &d.signals, applied, servers);
        let (result, suggestion, mx_unavailable) = (d.result, d.suggestion, d.mx_unavailable);
        let (infra, source) = (d.infra.matches, d.source);
        let (mx, catalog, age) = (d.mx, d.catalog, d.age);
        let result = result.into_owned();
        Ok(Explained { result, suggestion, mx, why, catalog, age, mx_unavailable, infra, source })
    }

    async fn decided(
        &self,
        input: &LookupInput,
        decision: Option<Decision>,
        how: Judging,
    ) -> Result<Decided, LookupError> {
        let domain = input.domain();
        // One catalog for the whole judgement, whatever a reload swaps in meanwhile.
        let catalog = self.catalog.current();
        let deadline = Deadline::now() + self.dns_deadline;
        let lookup = match self.mx_for(&catalog, domain, decision, deadline).await {
            Ok(lookup) => lookup,
            Err(failure) => return self.decided_without_dns(catalog, domain, decision, failure, how),
        };
        let from = Reached { catalog: &catalog, mx: &lookup.mx, decision, cached: lookup.cached };
        if let Some(kept) = self.memo.get(domain, &from) {
            let judged = InfraJudgement::default();
            return Ok(self.conclude(domain, how, (catalog, lookup.mx), &kept.judgement, judged));
        }
        let mut signals = catalog.signals(domain, &lookup.mx, decision);
        let infra = OwnInfra::of(&catalog, &lookup.mx);
        let via_parent = signals.listing.is_some_and(|l| l.via_parent) && lookup.mx.has_mx();
        if via_parent {
            signals.parent_mail = Box::pin(self.mail_goes_to_parent(&catalog, domain, &infra, deadline)).await?;
        }
        let mut judged = InfraJudgement::default();
        let infra_checked = needs_infra_check(&signals) && !infra.is_empty();
        if infra_checked {
            let registrable = domain.registrable().unwrap_or(domain.as_str());
            let fresh_since = self.clock.now_ms().div_euclid(1000) - FACT_LIFETIME_SECS;
            let evidence = self
                .store
                .infra_evidence(registrable, &infra.servers(), fresh_since)
                .await
                .map_err(|e| self.store_failed(e))?;
            judged = infra::judge(&catalog, registrable, &infra, &evidence, self.threshold);
            for (host, owner) in judged.counted_hosts() {
                if Box::pin(self.receives_its_mail_on(&owner, &host, deadline)).await {
                    judged.owned_by_a_mail_domain(&host);
                }
            }
            signals.mx_ip_match = !judged.matches.is_empty();
        }
        let result = SharedResult::new(decide(&signals, &lookup.mx, lookup.cached));
        let suggestion =
            did_you_mean(&catalog.popular, domain, &signals, &lookup.mx).and_then(|name| Domain::parse(name).ok());
        // `decision` is the reviewer's; the operator's files enter only through `signals`.
        let source = VerdictSource::of(&signals, &result, decision.is_some());
        let about = about(&catalog, domain, &result);
        let teaches = teaches(domain, &signals, &result, &infra);
        let judgement = Judgement { result, signals, suggestion, infra, source, about, teaches };
        let decided = self.conclude(domain, how, (catalog.clone(), lookup.mx.clone()), &judgement, judged);
        // What read the store or another name's MX answer is judged again every time.
        if !via_parent && !infra_checked {
            self.memo.put(domain, &from, judgement);
        }
        Ok(decided)
    }

    /// A verdict judged now or kept ([`Memo`]): counted, learned from, and with the domain's age.
    fn conclude(
        &self,
        domain: &Domain,
        how: Judging,
        (catalog, mx): (Arc<Catalog>, Arc<MxInfo>),
        j: &Judgement,
        judged: InfraJudgement,
    ) -> Decided {
        if how.counted {
            self.metrics.verdict(j.result.verdict, j.source);
        }
        // A name DNS says does not exist is not asked about (nothing was registered).
        let age = if how.learn && mx.domain_exists() { self.age_of(domain) } else { None };
        let near = judged.nearest.as_ref().map_or(0, |(_, n)| *n);
        if how.learn {
            self.record(&catalog, domain, j, (near, judged.cleared, age));
        }
        let (result, suggestion, signals, source) = (j.result.clone(), j.suggestion.clone(), j.signals, j.source);
        let about = j.about.clone();
        Decided { result, catalog, suggestion, mx, signals, infra: judged, age, mx_unavailable: false, source, about }
    }

    /// The MX answer for `domain`, by `deadline`; a verdict that a decision already fixes (a
    /// reviewer's, or the operator's allow/block file) waits [`DECIDED_DNS_WAIT`] at most: such
    /// a verdict never waits for DNS, which the domain's owner controls. The resolution goes on
    /// in the background and fills the cache for the next lookup.
    async fn mx_for(
        &self,
        catalog: &Catalog,
        domain: &Domain,
        decision: Option<Decision>,
        deadline: Deadline,
    ) -> Result<crate::dns::Lookup, DnsFailure> {
        let deadline = if catalog.decision_fixes_verdict(domain, decision) {
            deadline.min(Deadline::now() + DECIDED_DNS_WAIT)
        } else {
            deadline
        };
        self.mx.lookup_within(domain, deadline).await
    }

    /// No MX answer by the deadline: the verdict that needs no DNS (`decide_without_mx`: a
    /// decision, free webmail, a relay, a strong listing of the name itself), without MX data
    /// and saying so; nothing is learned from it and nothing is queued. Any other verdict
    /// needs DNS: the failure.
    fn decided_without_dns(
        &self,
        catalog: Arc<Catalog>,
        domain: &Domain,
        decision: Option<Decision>,
        failure: DnsFailure,
        how: Judging,
    ) -> Result<Decided, LookupError> {
        let mx = Arc::new(MxInfo::NoMx);
        let signals = catalog.signals(domain, &mx, decision);
        let Some(result) = decide_without_mx(&signals) else { return Err(failure.into()) };
        tracing::debug!(domain = %domain, error = %failure, "no MX data in time; the verdict stands without it");
        let source = VerdictSource::of(&signals, &result, decision.is_some());
        if how.counted {
            self.metrics.verdict(result.verdict, source);
            self.metrics.decided_without_dns();
        }
        let age = if how.learn { self.age_of(domain) } else { None };
        let infra = InfraJudgement::default();
        let result = SharedResult::new(result);
        let about = about(&catalog, domain, &result);
        let mx_unavailable = true;
        Ok(Decided { result, catalog, suggestion: None, mx, signals, infra, age, mx_unavailable, source, about })
    }

    /// Forgets the cached MX answer of `domain`: its next lookup resolves afresh (a re-check).
    pub fn invalidate(&self, domain: &Domain) {
        self.mx.invalidate(domain);
    }

    /// The domain's own mail server as far as known now, without waiting for DNS: the first of
    /// its MX hosts that is not shared infrastructure, from the MX cache (the signup's `server`
    /// counter; `None` when the cache holds no answer or only shared hosts).
    pub fn known_mail_server(&self, domain: &Domain) -> Option<String> {
        let mx = self.mx.peek(domain)?;
        infra::OwnInfra::of(&self.catalog(), &mx).hosts.into_iter().next()
    }

    /// Whether `domain` waits for review on a mail server of its own, as this process last
    /// learned it within the hour (its own judgement, or the store's answer it remembered):
    /// `Some(Some(server))` grouped under that server, `Some(None)` not (not queued, or without
    /// a server of its own), `None` not known here. Never waits for anything (a signup's wave).
    pub fn queued_on(&self, domain: &Domain) -> Option<Option<String>> {
        let now = self.clock.now_ms().div_euclid(1000);
        let mut queued = self.queued.lock().unwrap_or_else(|p| p.into_inner());
        let (server, at) = queued.get(domain.as_str())?;
        (*at > now - crate::state::signups::WAVE_WINDOW).then(|| server.clone())
    }

    /// Remembers for an hour that `domain` waits on `server` (or does not, `None`).
    pub fn remember_queued_on(&self, domain: &Domain, server: Option<String>) {
        let now = self.clock.now_ms().div_euclid(1000);
        let mut queued = self.queued.lock().unwrap_or_else(|p| p.into_inner());
        // A busy name's entry is refreshed in place (no copy of the name on every lookup).
        match queued.get_mut(domain.as_str()) {
            Some(kept) => *kept = (server, now),
            None => {
                queued.put(domain.as_str().to_owned(), (server, now));
            }
        }
    }

    /// The catalog in force now.
    pub fn catalog(&self) -> Arc<Catalog> {
        self.catalog.current()
    }

    fn store_failed(&self, e: StateError) -> StateError {
        self.metrics.store_error();
        e
    }

    /// Whether the fact hashed as `key` ([`teaches`]) was not recorded by this process in the
    /// last [`RELEARN_AFTER`] (and marks it recorded now). A fact whose write then fails is
    /// written again after that time.
    fn first_sight(&self, key: u64) -> bool {
        let mut learned = self.learned.lock().unwrap_or_else(|p| p.into_inner());
        if learned.get(&key).is_some_and(|at| at.elapsed() < RELEARN_AFTER) {
            return false;
        }
        learned.put(key, Instant::now());
        true
    }

    /// Whether `owner` (a registrable domain) has `host` among its own MX hosts. A DNS failure
    /// says no: the evidence then counts, as it did before it was asked.
    async fn receives_its_mail_on(&self, owner: &str, host: &str, deadline: Deadline) -> bool {
        let Ok(owner) = Domain::parse(owner) else { return false };
        match self.mx.lookup_within(&owner, deadline).await {
            Ok(lookup) => lookup.mx.hosts().iter().any(|h| h.name.trim_end_matches('.').eq_ignore_ascii_case(host)),
            Err(_) => false,
        }
    }

    /// Whether `domain`'s own mail servers (`infra`) are among those of the listed parent it
    /// matched through: the parent is resolved through the same cache. Shared infrastructure
    /// is left out on both sides (rule 3): two tenants of one provider share nothing else.
    async fn mail_goes_to_parent(
        &self,
        catalog: &Catalog,
        domain: &Domain,
        infra: &OwnInfra,
        deadline: Deadline,
    ) -> Result<bool, LookupError> {
        let Some(parent) = catalog.disposable_listing(domain).and_then(|l| Domain::parse(l.entry).ok()) else {
            return Ok(false);
        };
        let parent = OwnInfra::of(catalog, &self.mx.lookup_within(&parent, deadline).await?.mx);
        Ok(infra.hosts.iter().any(|h| parent.hosts.contains(h)) || infra.ips.iter().any(|ip| parent.ips.contains(ip)))
    }

    /// Feeds the review queue and the infrastructure index, in the background: a failure there
    /// must not fail the lookup.
    fn record(
        &self,
        catalog: &Catalog,
        domain: &Domain,
        j: &Judgement,
        (near, cleared, age): (u64, bool, Option<DomainAge>),
    ) {
        if !self.feeds_store {
            return;
        }
        let (signals, result, infra) = (&j.signals, &*j.result, &j.infra);
        // A domain nothing marks, on a server a reviewer marked safe, waits for no one.
        let cause = review_cause(catalog, domain, signals, result, infra, near, age.map(|a| a.days))
            .filter(|c| !(cleared && c.reason == ReviewReason::Ambiguous));
        self.remember_queued_on(domain, cause.as_ref().and_then(|c| c.servers.first().cloned()));
        let (known, known_disposable) = knowledge(signals, result);
        // A reviewer's decision can flip, here or on another replica: those are always written.
        let teach = teacher(domain).filter(|_| signals.decision.is_some() || self.first_sight(j.teaches));
        if cause.is_none() && teach.is_none() {
            return;
        }
        let (store, now, metrics) = (self.store.clone(), self.clock.now_ms().div_euclid(1000), self.metrics.clone());
        let (name, teach) = (domain.as_str().to_owned(), teach.map(str::to_owned));
        let facts = if known && teach.is_some() { infra.facts().to_vec() } else { Vec::new() };
        tokio::spawn(async move {
            if let Some(cause) = cause
                && let Err(e) = store.note_for_review(&name, &cause, now).await
            {
                metrics.store_error();
                tracing::warn!(domain = %name, error = %e, "could not queue for review");
            }
            if let Some(registrable) = teach
                && let Err(e) = store.learn_infra(&registrable, known_disposable, &facts, now).await
            {
                metrics.store_error();
                tracing::warn!(domain = %name, error = %e, "could not record mail infrastructure");
            }
        });
    }
}

/// Only a domain that nothing else decides can be caught by its infrastructure (a weak-only
/// listing, or a parent's listing whose mail the domain does not share, decides nothing). A
/// shared MX host beside its own ones does not spare them (issue 24): they are judged alone.
fn needs_infra_check(s: &Signals) -> bool {
    !(s.free || s.relay || s.listing_decides() || s.decision.is_some())
}

mod decided;
mod infra;
mod learning;
mod memo;
mod record;
mod shared;
mod why;

pub use decided::MAX_DECIDED;
pub use infra::{ADDRESS_FACTOR, FACT_LIFETIME_SECS, InfraMatch, InfraReason, owner_of};
pub use record::record;
pub use shared::SharedResult;
pub use why::{Why, WhyDecision, WhyListing};

#[cfg(test)]
mod tests;
