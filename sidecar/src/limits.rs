//! Plans applied to requests: the daily quota (402) and the per-second burst (429), spent from
//! leases taken atomically from the state store (`leases/`), so that replicas sharing it never
//! go over: a request may be refused early (while another replica holds units or places it has
//! not spent, at most [`crate::leases::IDLE_MS`]), never served beyond the plan.
//!
//! What counts: a request is admitted (and counted) after its key is accepted; if it then fails
//! on our side (DNS or store failure) or on its input (400), its quota unit is given back, up
//! to a day's quota of units given back per key ([`refund_cap`]). So a day's count is the key's
//! 200 answers plus its failed lookups past that cap, its lookups in a day are at most twice
//! its quota, and every admitted request, answered or not, takes a place in the burst window.
//!
//! Headers (GitHub's convention): `X-RateLimit-Limit` (daily quota), `X-RateLimit-Remaining`,
//! `X-RateLimit-Reset` (Unix seconds of the next midnight UTC); `Retry-After` on 402 and 429.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use crate::clock::{Clock, next_midnight, utc_day};
use crate::leases::{Leases, Outcome};
use crate::metrics::{Metrics, PlanLimit};
use crate::plans::PlanBook;
use crate::state::{KeyRecord, Limits, StateError, StateStore};

pub struct Limiter {
    store: Arc<dyn StateStore>,
    clock: Arc<dyn Clock>,
    metrics: Arc<Metrics>,
    plans: Arc<PlanBook>,
    leases: Arc<Leases>,
    /// Keys whose undefined plan was already logged (one line per key and process).
    undefined_logged: Mutex<HashSet<String>>,
}

/// An admitted request: what to give back if it is not answered, and its headers.
#[derive(Debug, Clone)]
pub struct Grant {
    key_id: String,
    day: String,
    quota: u64,
    used: u64,
    reset: i64,
}

pub type Headers = Vec<(&'static str, String)>;

/// Why a request was not admitted. The HTTP edge turns it into its answer (`api::response`).
#[derive(Debug)]
pub enum Refused {
    /// The key's plan is not defined in this server's configuration (fail closed).
    PlanUndefined,
    Store(StateError),
    /// 402: the daily quota does not cover the request.
    QuotaExceeded {
        message: String,
        retry_after: u64,
        headers: Headers,
    },
    /// 429: over the per-second burst.
    RateLimited {
        message: String,
        retry_after: u64,
        headers: Headers,
    },
}

impl Grant {
    pub fn headers(&self) -> Headers {
        rate_headers(self.quota, self.quota.saturating_sub(self.used), self.reset)
    }
}

/// The most units a key gets back in a UTC day: its daily quota. A refund costs the key
/// nothing, and a batch of names whose DNS fails would otherwise buy DNS work without end (a
/// basic key: 6,000 lookups in 9 s for one unit, issue 31); so a key's lookups in a day are at
/// most twice its quota, whatever fails.
pub fn refund_cap(daily_quota: u64) -> u64 {
    daily_quota
}

/// None for an unlimited quota (there is nothing to count down).
fn rate_headers(limit: u64, remaining: u64, reset: i64) -> Headers {
    if limit == Limits::UNLIMITED {
        return Vec::new();
    }
    vec![
        // Lowercase, as they go on the wire (`api::response::header_name`).
        ("x-ratelimit-limit", limit.to_string()),
        ("x-ratelimit-remaining", remaining.to_string()),
        ("x-ratelimit-reset", reset.to_string()),
    ]
}

impl Limiter {
    pub fn new(store: Arc<dyn StateStore>, clock: Arc<dyn Clock>, metrics: Arc<Metrics>, plans: Arc<PlanBook>) -> Self {
        metrics.plans_known(plans.current().iter().map(|p| p.name.as_str()));
        let leases = Arc::new(Leases::new(store.clone(), clock.clone(), metrics.lease_counters()));
        Self { store, clock, metrics, plans, leases, undefined_logged: Mutex::default() }
    }

    /// The leases this limiter spends from (for the service that ends them).
    pub fn leases(&self) -> Arc<Leases> {
        self.leases.clone()
    }

    /// The figures of `key`'s plan; a plan the configuration no longer defines refuses the key
    /// (fail closed: never a key without limits), with one operator log line per key.
    fn limits(&self, key: &KeyRecord) -> Result<Limits, Refused> {
        if let Some(plan) = self.plans.current().get(&key.plan) {
            return Ok(Limits::from(plan));
        }
        let first = self.undefined_logged.lock().is_ok_and(|mut seen| seen.insert(key.id.clone()));
        if first {
            tracing::error!(
                key_id = %key.id,
                plan = %key.plan,
                "key refused: its plan is not defined in this server's configuration (add [plans.{}] to the --config file or change the key's plan)",
                key.plan
            );
        }
        Err(Refused::PlanUndefined)
    }

    /// Admits one request for `key`, worth `units` of its daily quota (a lookup: 1; a batch: its
    /// valid inputs), or says why not.
    pub async fn admit(&self, key: &KeyRecord, units: u64) -> Result<Grant, Refused> {
        let limits = self.limits(key)?;
        let now_ms = self.clock.now_ms();
        let reset = next_midnight(now_ms.div_euclid(1000));
        let admission = self.leases.admit(&key.id, limits, units, now_ms).await.map_err(|e| {
            self.metrics.store_error();
            Refused::Store(e)
        })?;
        let quota = limits.daily_quota;
        match admission {
            Outcome::Admitted { used, day } => Ok(Grant { key_id: key.id.clone(), day, quota, used, reset }),
            Outcome::QuotaExceeded { used } => {
                let wait = (reset - now_ms.div_euclid(1000)).max(1) as u64;
                let left = quota.saturating_sub(used);
                let message = if units > 1 {
                    format!(
                        "the batch needs {units} lookups and {left} of the daily quota of {quota} remain; it resets at midnight UTC"
                    )
                } else {
                    format!("daily quota of {quota} lookups reached; it resets at midnight UTC, or upgrade the plan")
                };
                self.metrics.plan_rejection(key.plan.as_str(), PlanLimit::Quota);
                Err(Refused::QuotaExceeded { message, retry_after: wait, headers: rate_headers(quota, left, reset) })
            }
            Outcome::RateLimited { retry_after_ms } => {
                let (burst, wait) = (limits.burst_per_second, retry_after_ms.div_ceil(1000).max(1));
                let used = self.store.usage(&key.id, &[utc_day(now_ms.div_euclid(1000))]).await;
                let used = used.inspect_err(|_| self.metrics.store_error()).ok();
                let remaining = used.and_then(|u| u.first().copied()).map_or(quota, |u| quota.saturating_sub(u));
                let message = format!("more than {burst} requests per second; retry after a short delay");
                self.metrics.plan_rejection(key.plan.as_str(), PlanLimit::Burst);
                Err(Refused::RateLimited { message, retry_after: wait, headers: rate_headers(quota, remaining, reset) })
            }
        }
    }

    /// Whether `key`'s plan is unlimited in quota and burst: its admission cannot refuse.
    pub fn unlimited(&self, key: &KeyRecord) -> bool {
        self.plans
            .current()
            .get(&key.plan)
            .is_some_and(|p| p.daily_quota.is_unlimited() && p.burst_per_second.is_unlimited())
    }

    /// Whether `key` would be admitted now, under both its daily quota and its burst (an
    /// unlimited plan: always), without spending either: the connection guard's test of good
    /// standing. A store failure: no.
    pub async fn would_admit(&self, key: &KeyRecord) -> bool {
        let Ok(limits) = self.limits(key) else { return false };
        if limits.daily_quota == Limits::UNLIMITED && limits.burst_per_second == Limits::UNLIMITED {
            return true;
        }
        let now_ms = self.clock.now_ms();
        if self.leases.could_admit(&key.id, limits, now_ms) {
            return true;
        }
        match self.store.would_admit(&key.id, limits, now_ms).await {
            Ok(admit) => admit,
            Err(_) => {
                self.metrics.store_error();
                false
            }
        }
    }

    /// Gives `units` of the grant back (lookups not answered with a verdict), at most the daily
    /// quota's worth in a day ([`refund_cap`]).
    pub async fn refund(&self, grant: &mut Grant, units: u64) {
        self.give_back(grant, units, Some(refund_cap(grant.quota))).await;
    }

    /// Gives the unit of an invalid input back: it cost no DNS, so no cap and not counted.
    pub async fn refund_invalid(&self, grant: &mut Grant) {
        self.give_back(grant, 1, None).await;
    }

    async fn give_back(&self, grant: &mut Grant, units: u64, cap: Option<u64>) {
        if units == 0 {
            return;
        }
        match self.store.refund(&grant.key_id, &grant.day, units, cap).await {
            Ok(given) => {
                grant.used = grant.used.saturating_sub(given);
                self.leases.refunded(&grant.key_id, &grant.day, given).await;
            }
            Err(e) => {
                self.metrics.store_error();
                tracing::error!(key_id = %grant.key_id, error = %e, "could not refund a failed lookup");
            }
        }
    }
}
