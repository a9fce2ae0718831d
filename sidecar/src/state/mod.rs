//! The state store: API keys now; usage counters and review decisions build on it.
//!
//! One interface, chosen by `--state URL`. Every operation is one atomic step in the backend,
//! so the CLI and any number of servers can share a store.

mod infra;
pub mod queue;
mod redis;
pub mod signups;
mod sqlite;
mod versioned_cache;

use std::sync::Arc;

use async_trait::async_trait;
use ipnet::IpNet;

use email_verdict_core::Decision;

use crate::keys::KeyHash;
pub use crate::plans::Limits;
use crate::plans::PlanName;
pub use versioned_cache::CHECK_MS as DECISION_CHECK_MS;
pub use versioned_cache::{CHECK_MS as KEY_CHECK_MS, KEY_KEEP_MS};

pub use infra::{
    InfraStore, LearnedServer, MailServer, ServerEvidence, ServerFact, ServerKind, ServerMark, ServerPage, Teacher,
    mark_str,
};
pub use redis::RedisStore;
pub use signups::{Counter, SignupStore};
pub use sqlite::SqliteStore;

/// A stored API key (the key itself is never stored, only its hash).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyRecord {
    pub id: String,
    pub name: String,
    pub plan: PlanName,
    /// Networks the key may be used from; empty means anywhere.
    pub allow_ips: Vec<IpNet>,
    /// Unix seconds.
    pub created_at: i64,
    pub revoked: bool,
}

/// A key record with today's usage, for listings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyListing {
    pub key: KeyRecord,
    pub used_today: u64,
}

#[derive(Debug, thiserror::Error)]
pub enum StateError {
    /// The store cannot be reached or answered with an error: retrying may succeed.
    #[error("state store unavailable: {0}")]
    Unavailable(String),
    /// The store holds something this version cannot read.
    #[error("state store holds invalid data: {0}")]
    Invalid(String),
}

/// A change to a key's settings; `None` leaves a field as it is.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KeyChange {
    pub name: Option<String>,
    pub plan: Option<PlanName>,
    pub allow_ips: Option<Vec<IpNet>>,
}

/// Whether an acknowledged write is on a replica too (issue 31): Redis with replicas waits for
/// one, bounded (`state::redis::replicas`); a failover may lose a write that is not.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Replication {
    /// Nothing to wait for: SQLite, or a Redis node with no replica connected.
    NoReplicas,
    /// A replica acknowledged it.
    Replicated,
    /// Replicas exist and none acknowledged it in time: a failover now could lose it.
    Pending,
}

impl Replication {
    /// Both writes together: pending if either is.
    pub fn and(self, other: Self) -> Self {
        match (self, other) {
            (Self::Pending, _) | (_, Self::Pending) => Self::Pending,
            (Self::Replicated, _) | (_, Self::Replicated) => Self::Replicated,
            _ => Self::NoReplicas,
        }
    }
}

/// The outcome of [`KeyStore::admit`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admission {
    /// Counted: `used` lookups today, this one included.
    Admitted { used: u64 },
    /// Today's quota is spent; nothing was counted.
    QuotaExceeded { used: u64 },
    /// The plan's per-second burst is spent; the oldest request in the window leaves it in
    /// `retry_after_ms`. Nothing was counted.
    RateLimited { retry_after_ms: u64 },
}

/// What a replica asks of [`KeyStore::lease`]: quota units and burst places for one key, and
/// the end or the renewal of the place block it holds (in the same atomic step).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LeaseAsk {
    /// Quota units the waiting request needs (0: none), and how many to take if the store has
    /// them (the store gives at most a share of what is left, never less than `units_min`).
    pub units_min: u64,
    pub units_want: u64,
    /// Burst places: what the waiting request needs (1, or for a renewal the places its
    /// replica spent in the window with one more; 0 when none), and how many to take.
    pub places_min: u64,
    pub places_want: u64,
    /// Until when (ms after `now_ms`) the places may be spent: the block occupies the window as
    /// if spent at the end of that time until it is closed. A new block of only the place the
    /// asker needs is spent at once and ends at `now_ms` ([`spot`]).
    pub hold_ms: i64,
    /// The place block this replica holds, if any: closed first, or with `renew`, replaced by
    /// the block granted (counted as the larger of its places and `close.spent` until its end:
    /// the replica's spends are limited across the renewal by the newest block's places), or
    /// closed when no places are granted.
    pub close: Option<Closing>,
    pub renew: bool,
    /// Names the lease in the store ("" for none: [`KeyStore::admit`]). A call repeated with
    /// the same id (a client's retry) grants nothing more and answers the first grant; a lease
    /// whose answer was lost is settled by id in a [`GiveBack`].
    pub id: String,
    /// Leases of this key all spent: their records can go.
    pub ended: Vec<String>,
}

/// What [`KeyStore::give_back`] ends, applied once however often it is sent (by its `id`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GiveBack {
    pub id: String,
    /// The UTC day the units count on.
    pub day: String,
    /// Units leased on `day` and not spent.
    pub units: u64,
    /// Leases whose answer never came (an error or a timeout after the store may have run them):
    /// whatever each granted comes back whole, and a late run of one grants nothing.
    pub lost: Vec<String>,
    /// Leases ended by this give-back: their records can go.
    pub ended: Vec<String>,
    pub close: Option<Closing>,
}

impl GiveBack {
    /// Nothing to do in the store.
    pub fn is_empty(&self) -> bool {
        self.units == 0 && self.lost.is_empty() && self.ended.is_empty() && self.close.is_none()
    }
}

/// A place block that ends: how many of its places were spent, and the last of them (ms).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Closing {
    pub block: String,
    pub spent: u64,
    pub last_ms: i64,
}

/// The outcome of [`KeyStore::lease`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Leased {
    /// `units` of quota (counted in the day's usage now) and `places` burst places in `block`
    /// (empty when none); `used`: the day's count, these units included.
    Granted { units: u64, places: u64, block: String, used: u64 },
    /// Fewer than `units_min` units are left; nothing granted.
    QuotaExceeded { used: u64 },
    /// No burst place is free; the oldest block leaves the window in `retry_after_ms`.
    RateLimited { retry_after_ms: u64 },
}

/// The share of what is left that one lease may take: a quarter of the day's remainder (so a
/// free key's 3 are leased one at a time) and half of the free burst places.
pub const UNITS_SHARE: u64 = 4;
pub const PLACES_SHARE: u64 = 2;

/// The units [`KeyStore::lease`] grants from `left`.
pub fn units_granted(ask: &LeaseAsk, left: u64) -> u64 {
    ask.units_want.min(left / UNITS_SHARE).max(ask.units_min).min(left)
}

/// The places [`KeyStore::lease`] grants from `free` (the renewed block's own not taken):
/// half of what is free, beyond what a renewal carries.
pub fn places_granted(ask: &LeaseAsk, free: u64) -> u64 {
    let carried = if ask.renew { ask.close.as_ref().map_or(0, |c| c.spent.min(free)) } else { 0 };
    ask.places_want.min(carried + (free - carried) / PLACES_SHARE).max(ask.places_min).min(free)
}

/// Whether `places` granted for `ask` are a spot: the one place a new block's asker needs,
/// spent at once, so the block ends in the store when granted (no hold to outlive a crash).
pub fn spot(ask: &LeaseAsk, places: u64) -> bool {
    !ask.renew && places > 0 && places <= ask.places_min
}

/// Everything the server keeps: keys and their usage, the review queue, the infrastructure
/// index, the public pages' re-check times, and signup counts.
pub trait StateStore: KeyStore + ReviewStore + InfraStore + RecheckStore + SignupStore {}

impl<T: KeyStore + ReviewStore + InfraStore + RecheckStore + SignupStore> StateStore for T {}

/// The outcome of [`RecheckStore::try_recheck`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Recheck {
    /// Recorded: the caller may run a fresh lookup now.
    Allowed,
    /// The domain was re-checked less than an interval ago; the next one is possible at
    /// `next_at` (Unix seconds).
    Refused { next_at: i64 },
}

/// When the public pages last re-checked a domain (spec Limits rule 3).
#[async_trait]
pub trait RecheckStore: Send + Sync + 'static {
    /// One atomic step: if `domain` was not re-checked in the `interval` seconds before `now`
    /// (Unix seconds), record `now` as its re-check and allow it; else refuse. Of concurrent
    /// callers on any replica, exactly one is allowed per interval.
    async fn try_recheck(&self, domain: &str, now: i64, interval: i64) -> Result<Recheck, StateError>;

    /// Undoes the re-check recorded at `at` by [`Self::try_recheck`] (when it is still the last
    /// one), for a re-check that could not be completed: it must not spend the domain's slot.
    async fn give_back_recheck(&self, domain: &str, at: i64) -> Result<(), StateError>;
}

/// API keys, their daily usage and burst windows.
#[async_trait]
pub trait KeyStore: Send + Sync + 'static {
    /// Something wrong with the store's own files that requests would not show (an embedded
    /// database deleted or replaced under the running process), for `/healthz` and the log.
    fn problem(&self) -> Option<String> {
        None
    }
    /// Where a replica keeps the units it holds from leases, for the next process on this
    /// store's machine to give back after a crash (`leases::journal`); `None`: not kept.
    fn lease_journal_dir(&self) -> Option<std::path::PathBuf> {
        None
    }
    /// Stores a new key under its hash; the record's id must be unique. Whether it is on a
    /// replica yet: an owner's key lost in a failover answers 401. Revoking, changing and
    /// [`ReviewStore::decide`] wait for a replica the same way (and log when it times out).
    async fn insert_key(&self, key: KeyRecord, hash: KeyHash) -> Result<Replication, StateError>;
    async fn key_by_hash(&self, hash: &KeyHash) -> Result<Option<Arc<KeyRecord>>, StateError>;
    async fn key_by_id(&self, id: &str) -> Result<Option<KeyRecord>, StateError>;
    /// Every key, oldest first, with its usage on `day` (`YYYY-MM-DD`, UTC).
    async fn list_keys(&self, day: &str) -> Result<Vec<KeyListing>, StateError>;
    /// Marks a key revoked; `false` when no key has that id.
    async fn revoke_key(&self, id: &str) -> Result<bool, StateError>;
    /// Applies `change`; the updated record, or `None` when no key has that id.
    async fn update_key(&self, id: &str, change: KeyChange) -> Result<Option<KeyRecord>, StateError>;

    /// One atomic step: if `key_id` has `units` of quota left on the UTC day of `now_ms` and
    /// fewer than `burst` places taken in the window before `now_ms`, count one place in the
    /// burst window and its `units` (a lookup: 1; a batch: its valid inputs) in the quota.
    /// Otherwise nothing is counted. A lease of exactly one request, held for no time.
    async fn admit(&self, key_id: &str, limits: Limits, units: u64, now_ms: i64) -> Result<Admission, StateError> {
        let places = u64::from(limits.burst_per_second != Limits::UNLIMITED);
        let ask = LeaseAsk {
            units_min: units,
            units_want: units,
            places_min: places,
            places_want: places,
            ..LeaseAsk::default()
        };
        Ok(match self.lease(key_id, limits, &ask, now_ms).await? {
            Leased::Granted { used, .. } => Admission::Admitted { used },
            Leased::QuotaExceeded { used } => Admission::QuotaExceeded { used },
            Leased::RateLimited { retry_after_ms } => Admission::RateLimited { retry_after_ms },
        })
    }
    /// One atomic step: closes `ask.close` (its unspent places leave the window; its spent ones
    /// stay, as taken at its `last_ms`) or, with `ask.renew`, replaces it by the block granted
    /// (see [`LeaseAsk::close`]), and grants quota units on the UTC day of `now_ms` and
    /// burst places (see [`units_granted`], [`places_granted`]): the units are counted in the
    /// day's usage and the places in the window (as taken at `now_ms + hold_ms`, until closed)
    /// before the caller answers any of them. The window counts a block's places while its end
    /// is less than [`BURST_WINDOW_MS`] ago, so no second ever holds more than the burst spent.
    /// The close stays done when the grant is refused (a renewal refused closes its block).
    async fn lease(&self, key_id: &str, limits: Limits, ask: &LeaseAsk, now_ms: i64) -> Result<Leased, StateError>;
    /// Ends leases, in one atomic step applied once per `back.id`: `back.units` unspent and what
    /// each of `back.lost` granted go back to the day's count (never below zero, and not counted
    /// as refunds), and `back.close` (if any) is closed as [`KeyStore::lease`] does.
    async fn give_back(&self, key_id: &str, back: &GiveBack) -> Result<(), StateError>;
    /// Gives back `units` admitted on `day` that were not answered (a failure on our side, an
    /// invalid input), in one atomic step: never below zero; with a `cap`, never more than
    /// `cap` units so given back in all on that day (issue 31: refunds of failed lookups must
    /// not make a key's DNS work unbounded; an invalid input, which cost no DNS, is given back
    /// without one and is not counted). Returns the units given back.
    async fn refund(&self, key_id: &str, day: &str, units: u64, cap: Option<u64>) -> Result<u64, StateError>;
    /// Lookups counted for `key_id` on each of `days`.
    async fn usage(&self, key_id: &str, days: &[String]) -> Result<Vec<u64>, StateError>;
    /// Whether [`KeyStore::admit`] would admit one unit for `key_id` at `now_ms` (quota left on
    /// its UTC day, and fewer than `burst` places in the window before it), counting nothing.
    async fn would_admit(&self, key_id: &str, limits: Limits, now_ms: i64) -> Result<bool, StateError>;
}

/// Why a domain waits for manual review.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReviewReason {
    /// Has MX, on no list, no decision: `safe` only because nothing proved otherwise (rule 1).
    Ambiguous,
    /// No MX (none, null MX, or no such domain): reported `safe`, queued for review (rule 4).
    NoMx,
    /// Listed by weak sources only, and nothing independent corroborates it (issue 14).
    WeakListing,
    /// Listed only through a parent whose mail the domain does not share.
    ParentListing,
}

impl ReviewReason {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Ambiguous => "ambiguous",
            Self::NoMx => "no_mx",
            Self::WeakListing => "weak_listing",
            Self::ParentListing => "parent_listing",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        [Self::Ambiguous, Self::NoMx, Self::WeakListing, Self::ParentListing].into_iter().find(|r| r.as_str() == s)
    }
}

/// Why a lookup queued a domain: the reason, and the disposable listing behind it, if any.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReviewCause {
    pub reason: ReviewReason,
    /// The disposable sources that list the domain (or the parent it matched through).
    pub sources: Vec<String>,
    /// The list entry that matched: the domain itself or a parent; empty when not listed.
    pub listed_as: String,
    /// How likely the domain is to be disposable, per mille (`queue::likelihood`).
    pub likelihood: u32,
    /// Its own mail servers: host names, then addresses (at most [`queue::SERVERS_KEPT`]);
    /// the first is the one it is grouped under.
    pub servers: Vec<String>,
}

impl ReviewCause {
    pub fn new(reason: ReviewReason) -> Self {
        let likelihood = queue::likelihood(reason, 0, true);
        Self { reason, sources: Vec::new(), listed_as: String::new(), likelihood, servers: Vec::new() }
    }

    /// The servers as stored: joined by `,` (neither a host name nor an address has one).
    pub fn servers_text(&self) -> String {
        self.servers.join(",")
    }

    /// The sources as stored: names joined by `,` (a source name has no comma).
    pub fn sources_text(&self) -> String {
        self.sources.join(",")
    }

    pub fn parse_sources(text: &str) -> Vec<String> {
        text.split(',').filter(|s| !s.is_empty()).map(str::to_owned).collect()
    }
}

/// A domain in the review queue. The cause is the latest lookup's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReviewItem {
    pub domain: String,
    pub reason: ReviewReason,
    pub sources: Vec<String>,
    pub listed_as: String,
    /// Unix seconds.
    pub first_seen: i64,
    pub last_seen: i64,
    pub lookups: u64,
    /// Per mille, and its own mail servers, as [`ReviewCause`] has them.
    pub likelihood: u32,
    pub servers: Vec<String>,
}

impl ReviewItem {
    /// Likelihood × use: the queue's order, and what its bound keeps.
    pub fn priority(&self) -> u64 {
        queue::priority(self.likelihood, self.lookups)
    }

    /// The mail server it is grouped under (its first own host), `""` without one.
    pub fn server(&self) -> &str {
        self.servers.first().map_or("", String::as_str)
    }
}

/// The decision in force for a name: made on the name itself or on a parent (`on`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AppliedDecision {
    pub decision: Decision,
    pub on: String,
}

/// The names whose decisions cover `domain`, most specific first: the name and its parents up
/// to its registrable domain, the walk the lists use (a decision on a public suffix covers
/// nothing below it). A name that does not parse covers only itself.
pub fn covering_names(domain: &str) -> Vec<String> {
    match email_verdict_core::Domain::parse(domain) {
        Ok(d) => covering(&d),
        Err(_) => vec![domain.to_owned()],
    }
}

/// [`covering_names`] of a name already parsed (a lookup's: not parsed again).
pub fn covering(domain: &email_verdict_core::Domain) -> Vec<String> {
    let names: Vec<String> = domain.parents_to_registrable().map(str::to_owned).collect();
    if names.is_empty() { vec![domain.to_string()] } else { names }
}

/// One entry of a domain's decision history; `decision: None` withdraws the previous one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecisionRecord {
    pub domain: String,
    pub decision: Option<Decision>,
    pub reviewer: String,
    pub note: String,
    /// Unix seconds.
    pub at: i64,
}

/// `safe` / `disposable` / `withdrawn`, as decisions are written in the store and shown.
pub fn decision_str(d: Option<Decision>) -> &'static str {
    match d {
        Some(Decision::Allow) => "safe",
        Some(Decision::Block) => "disposable",
        None => "withdrawn",
    }
}

pub fn parse_decision(s: &str) -> Option<Option<Decision>> {
    match s {
        "safe" => Some(Some(Decision::Allow)),
        "disposable" => Some(Some(Decision::Block)),
        "withdrawn" => Some(None),
        _ => None,
    }
}

/// How far the background warm-up of the infrastructure index has gone (see `warmup.rs`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WarmupProgress {
    /// The last name done, in the warm-up's (sorted) order; empty before the first.
    pub cursor: String,
    /// Names resolved (with or without MX), names whose mail servers were recorded, and names
    /// whose resolution failed (skipped).
    pub resolved: u64,
    pub learned: u64,
    pub failed: u64,
    /// Unix seconds of the last update; 0 before the first.
    pub updated_at: i64,
}

/// The review queue, reviewers' decisions, and the warm-up's progress (the infrastructure index
/// is [`InfraStore`]).
#[async_trait]
pub trait ReviewStore: Send + Sync + 'static {
    /// Counts a lookup of `domain` that needs review (queues it if new; the cause is replaced).
    async fn note_for_review(&self, domain: &str, cause: &ReviewCause, now: i64) -> Result<(), StateError>;
    /// Queued domains with no decision in force (on them or a covering parent), oldest first:
    /// the whole queue, which the store bounds (`queue`: the least useful entries go first).
    async fn review_queue(&self) -> Result<Vec<ReviewItem>, StateError>;
    /// The most entries the queue keeps (`--review-queue-capacity`).
    fn queue_capacity(&self) -> usize;
    /// The entries the queue holds, what [`queue_capacity`](Self::queue_capacity) bounds
    /// (entries a decision took out of waiting included, until the bound drops them first): one
    /// read, whatever the queue holds, for `/metrics`.
    async fn review_queue_len(&self) -> Result<usize, StateError>;
    /// The mail server `domain` is grouped under (its first own server) when it waits in the
    /// queue undecided; `None` when it does not wait or has no server of its own. One read,
    /// whatever the queue holds: a signup asks it (its wave) when this process did not judge the
    /// domain lately.
    async fn queued_server(&self, domain: &str) -> Result<Option<String>, StateError>;
    /// How many entries the bound dropped from the queue, by reason (undecided ones only).
    async fn review_dropped(&self) -> Result<Vec<(ReviewReason, u64)>, StateError>;
    /// Takes these entries out of the queue (a reviewer settled them otherwise: a mark on their
    /// mail server); not counted as dropped. A later lookup may queue them again.
    async fn dismiss(&self, domains: &[String]) -> Result<(), StateError>;
    /// Records a decision (or, with `None`, withdraws the current one); the history is kept.
    /// Queued entries it covers leave the queue (and come back when it is withdrawn).
    async fn decide(&self, record: DecisionRecord) -> Result<(), StateError>;
    /// The decision in force for the first of `names` that has one (see [`covering_names`]:
    /// most specific first, so a decision on a subdomain wins over its parent's), in one
    /// round trip to the store.
    async fn decision(&self, names: &[String]) -> Result<Option<AppliedDecision>, StateError>;
    /// A number every decision moves (on any replica or process on this store): what
    /// `versioned_cache.rs` tags what it read with.
    async fn decisions_version(&self) -> Result<u64, StateError>;
    /// Every decision about `domain`, oldest first.
    async fn decision_history(&self, domain: &str) -> Result<Vec<DecisionRecord>, StateError>;
    /// Every decision in force (withdrawn ones left out), by name, at most `limit` of them:
    /// what the gateway's local decision learns (`api/decisions.rs`).
    async fn decisions_in_force(&self, limit: usize) -> Result<Vec<(String, Decision)>, StateError>;
    /// The warm-up's progress (all zero before it first ran).
    async fn warmup_progress(&self) -> Result<WarmupProgress, StateError>;
    /// Records the warm-up's progress, shared by every replica on the store.
    async fn save_warmup_progress(&self, progress: &WarmupProgress) -> Result<(), StateError>;
}

/// The burst window: requests admitted in the last this-many milliseconds are counted.
pub const BURST_WINDOW_MS: i64 = 1_000;

/// Why a `--state` value cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum StateUrlError {
    #[error("--state {0:?}: expected sqlite:PATH, redis://HOST:PORT[/DB] or redis+cluster://HOST:PORT[,HOST:PORT...]")]
    Malformed(String),
}

/// Opens the store a `--state` URL names, its review queue bounded at [`queue::QUEUE_CAPACITY`].
pub fn open(url: &str) -> anyhow::Result<Arc<dyn StateStore>> {
    open_with_capacity(url, queue::QUEUE_CAPACITY)
}

/// Opens the store a `--state` URL names, its review queue bounded at `capacity` entries.
pub fn open_with_capacity(url: &str, capacity: usize) -> anyhow::Result<Arc<dyn StateStore>> {
    if let Some(path) = url.strip_prefix("sqlite://").or_else(|| url.strip_prefix("sqlite:")) {
        if path.is_empty() {
            return Err(StateUrlError::Malformed(url.to_owned()).into());
        }
        return Ok(Arc::new(SqliteStore::open(path)?.with_queue_capacity(capacity)));
    }
    if url.starts_with("redis://") || url.starts_with("redis+cluster://") {
        let store = RedisStore::open(url).map_err(|_| StateUrlError::Malformed(url.to_owned()))?;
        return Ok(Arc::new(store.with_queue_capacity(capacity)));
    }
    Err(StateUrlError::Malformed(url.to_owned()).into())
}
