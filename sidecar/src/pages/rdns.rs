//! Reverse DNS (PTR) of MX addresses for the public pages, cached so that page views cost no
//! DNS traffic after the first: names for an hour, "none" for five minutes, failures for one.
//!
//! Bounded, since an anonymous page view chooses the addresses (issue 23: 20,000 PTR queries
//! for one view): at most [`PTR_PER_PAGE`] addresses a page, [`PTR_AT_ONCE`] of its lookups
//! under way at once and [`PTR_IN_FLIGHT`] in the whole process, all of a page's within twice
//! the lookup timeout. An address past those is shown without its name.

use std::collections::HashMap;
use std::net::IpAddr;
use std::num::NonZeroUsize;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use lru::LruCache;
use tokio::sync::Semaphore;
use tokio::time::Instant;

use crate::dns::HickoryResolver;

const FOUND_TTL: Duration = Duration::from_secs(3600);
const NONE_TTL: Duration = Duration::from_secs(300);
const FAILED_TTL: Duration = Duration::from_secs(60);
const CAPACITY: usize = 10_000;
/// Addresses of one page whose reverse DNS is looked up (the first ones, in MX order).
pub const PTR_PER_PAGE: usize = 20;
/// A page's reverse lookups under way at once.
pub const PTR_AT_ONCE: usize = 5;
/// Reverse lookups under way in the whole process, every page together.
pub const PTR_IN_FLIGHT: usize = 64;

pub struct ReverseDns {
    resolver: Arc<HickoryResolver>,
    timeout: Duration,
    cache: Mutex<LruCache<IpAddr, (Option<String>, Instant)>>,
    in_flight: Semaphore,
}

impl ReverseDns {
    /// `timeout` bounds each lookup: a slow PTR costs the page its host name, not its answer.
    pub fn new(resolver: Arc<HickoryResolver>, timeout: Duration) -> Self {
        let capacity = NonZeroUsize::new(CAPACITY).unwrap_or(NonZeroUsize::MIN);
        let in_flight = Semaphore::new(PTR_IN_FLIGHT);
        Self { resolver, timeout, cache: Mutex::new(LruCache::new(capacity)), in_flight }
    }

    /// The host name of each of the first [`PTR_PER_PAGE`] addresses (`None`: no PTR, or the
    /// lookup failed or did not finish in time), [`PTR_AT_ONCE`] at a time, all within twice
    /// the lookup timeout. Later addresses are not in the map: not looked up.
    pub async fn names(&self, ips: &[IpAddr]) -> HashMap<IpAddr, Option<String>> {
        let ips = &ips[..ips.len().min(PTR_PER_PAGE)];
        let mut found: HashMap<IpAddr, Option<String>> = ips.iter().map(|ip| (*ip, None)).collect();
        let lookups = futures::stream::iter(ips.iter().copied())
            .map(|ip| async move { (ip, self.name(ip).await) })
            .buffer_unordered(PTR_AT_ONCE);
        let collect = lookups.for_each(|(ip, name)| {
            found.insert(ip, name);
            futures::future::ready(())
        });
        // Whatever did not finish in time is shown without a name; it was not cached.
        let _ = tokio::time::timeout(self.timeout * 2, collect).await;
        found
    }

    /// Forgets these addresses, for a re-check.
    pub fn forget(&self, ips: &[IpAddr]) {
        let mut cache = self.lock();
        for ip in ips {
            cache.pop(ip);
        }
    }

    async fn name(&self, ip: IpAddr) -> Option<String> {
        if let Some((name, until)) = self.lock().get(&ip).cloned()
            && Instant::now() < until
        {
            return name;
        }
        // Waiting for a turn counts against the page's time, not the lookup's own timeout.
        let Ok(_turn) = self.in_flight.acquire().await else { return None };
        let (name, ttl) = match self.resolver.reverse(ip, self.timeout).await {
            Ok(Some(name)) => (Some(name), FOUND_TTL),
            Ok(None) => (None, NONE_TTL),
            Err(e) => {
                tracing::debug!(ip = %ip, error = %e, "reverse lookup failed");
                (None, FAILED_TTL)
            }
        };
        self.lock().put(ip, (name.clone(), Instant::now() + ttl));
        name
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, LruCache<IpAddr, (Option<String>, Instant)>> {
        self.cache.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}
