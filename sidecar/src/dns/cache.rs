//! `MxCache`: a bounded, TTL-honouring cache of MX answers in front of a resolver.
//!
//! - An answer is fresh for its DNS TTL clamped to `[min_ttl, max_ttl]`, then kept `stale_ttl`
//!   longer as a fallback for when DNS fails.
//! - Concurrent lookups of one domain share one resolution (single flight). The resolution runs
//!   in its own task, so a caller that goes away cannot strand the others.
//! - A failure is never cached: the last good answer is served if there is one, otherwise the
//!   failure goes to the caller.

use std::collections::HashMap;
use std::num::NonZeroUsize;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use email_verdict_core::{Domain, MxInfo};
use futures::FutureExt;
use futures::future::{BoxFuture, Shared};
use lru::LruCache;
use tokio::time::Instant;

use super::{DnsFailure, MxResolver};
use crate::metrics::Metrics;

#[derive(Debug, Clone)]
pub struct CacheConfig {
    pub capacity: NonZeroUsize,
    pub min_ttl: Duration,
    pub max_ttl: Duration,
    /// How long past freshness an answer is kept to serve when DNS fails.
    pub stale_ttl: Duration,
    /// Upper bound on one resolution (all its queries), so no caller waits forever. A lookup
    /// may wait less ([`MxCache::lookup_within`]); the resolution still runs to this bound.
    pub lookup_timeout: Duration,
}

/// The outcome of [`MxCache::lookup`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lookup {
    pub mx: Arc<MxInfo>,
    /// True when the answer came from the cache rather than a resolution made for this call.
    pub cached: bool,
}

#[derive(Debug, Clone)]
struct Entry {
    mx: Arc<MxInfo>,
    fresh_until: Instant,
    stale_until: Instant,
}

type Flight = Shared<BoxFuture<'static, Result<Arc<MxInfo>, DnsFailure>>>;

pub struct MxCache {
    resolver: Arc<dyn MxResolver>,
    config: CacheConfig,
    entries: Mutex<LruCache<Domain, Entry>>,
    flights: Mutex<HashMap<Domain, Flight>>,
    metrics: Arc<Metrics>,
}

impl MxCache {
    pub fn new(resolver: Arc<dyn MxResolver>, config: CacheConfig, metrics: Arc<Metrics>) -> Arc<Self> {
        let entries = Mutex::new(LruCache::new(config.capacity));
        Arc::new(Self { resolver, config, entries, flights: Mutex::default(), metrics })
    }

    /// The answer for `domain`, waiting at most the resolution's own bound (`lookup_timeout`).
    pub async fn lookup(self: &Arc<Self>, domain: &Domain) -> Result<Lookup, DnsFailure> {
        self.lookup_within(domain, Instant::now() + self.config.lookup_timeout).await
    }

    /// The answer for `domain`, waiting for a resolution until `deadline` at most: past it, the
    /// last good answer if there is one, else a failure. The resolution goes on in the
    /// background and fills the cache for the next lookup.
    pub async fn lookup_within(self: &Arc<Self>, domain: &Domain, deadline: Instant) -> Result<Lookup, DnsFailure> {
        let now = Instant::now();
        let known = self.entry(domain);
        if let Some(entry) = &known
            && now < entry.fresh_until
        {
            self.metrics.cache.hits.inc();
            return Ok(Lookup { mx: entry.mx.clone(), cached: true });
        }
        self.metrics.cache.misses.inc();
        // Boxed: a resolution's future is kilobytes, and every cached lookup's would carry it.
        let resolved = tokio::time::timeout_at(deadline, Box::pin(self.flight(domain)))
            .await
            .unwrap_or_else(|_| Err(DnsFailure("no answer within the lookup's deadline".into())));
        match resolved {
            Ok(mx) => Ok(Lookup { mx, cached: false }),
            Err(failure) => match known {
                Some(entry) if Instant::now() < entry.stale_until => {
                    tracing::warn!(domain = %domain, error = %failure, "DNS failed; serving the last good answer");
                    self.metrics.cache.stale_served.inc();
                    Ok(Lookup { mx: entry.mx, cached: true })
                }
                _ => Err(failure),
            },
        }
    }

    /// The bound on one resolution (all its queries).
    pub fn lookup_timeout(&self) -> Duration {
        self.config.lookup_timeout
    }

    /// The answer the cache holds for `domain`, fresh or stale, without resolving anything
    /// (not counted as a hit or a miss): for what must not wait for DNS.
    pub fn peek(&self, domain: &Domain) -> Option<Arc<MxInfo>> {
        let entry = self.lock_entries().peek(domain).cloned()?;
        (Instant::now() < entry.stale_until).then_some(entry.mx)
    }

    /// Makes a domain's answer stale, so the next lookup resolves afresh. The answer is kept
    /// for that lookup to fall back on (`cached: true`) if the resolution fails: a re-check
    /// during a DNS outage must not turn a known domain into an error.
    pub fn invalidate(&self, domain: &Domain) {
        if let Some(entry) = self.lock_entries().get_mut(domain) {
            entry.fresh_until = Instant::now();
        }
    }

    fn entry(&self, domain: &Domain) -> Option<Entry> {
        self.lock_entries().get(domain).cloned()
    }

    fn lock_entries(&self) -> std::sync::MutexGuard<'_, LruCache<Domain, Entry>> {
        self.entries.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn lock_flights(&self) -> std::sync::MutexGuard<'_, HashMap<Domain, Flight>> {
        self.flights.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Joins the resolution of `domain` under way, or starts one.
    fn flight(self: &Arc<Self>, domain: &Domain) -> Flight {
        let mut flights = self.lock_flights();
        if let Some(flight) = flights.get(domain) {
            self.metrics.cache.joins.inc();
            return flight.clone();
        }
        // The resolution runs on a task of its own; it keeps the trace of the lookup that started it.
        let task = tokio::spawn(crate::telemetry::carry(self.clone().resolve_and_store(domain.clone())));
        let flight =
            async move { task.await.unwrap_or_else(|e| Err(DnsFailure(format!("resolver task failed: {e}")))) }
                .boxed()
                .shared();
        flights.insert(domain.clone(), flight.clone());
        flight
    }

    async fn resolve_and_store(self: Arc<Self>, domain: Domain) -> Result<Arc<MxInfo>, DnsFailure> {
        let result = tokio::time::timeout(self.config.lookup_timeout, self.resolver.resolve(&domain))
            .await
            .unwrap_or_else(|_| Err(DnsFailure("timed out".into())));
        let result = result.map(|answer| {
            let mx = Arc::new(answer.mx);
            let now = Instant::now();
            let fresh_until = now + answer.ttl.clamp(self.config.min_ttl, self.config.max_ttl);
            let entry = Entry { mx: mx.clone(), fresh_until, stale_until: fresh_until + self.config.stale_ttl };
            self.lock_entries().put(domain.clone(), entry);
            mx
        });
        // Removed after the answer is stored, so a newcomer finds one or the other.
        self.lock_flights().remove(&domain);
        result
    }
}

#[cfg(test)]
mod tests;
