//! Reverse DNS (PTR) of MX addresses for the public pages, cached so that page views cost no
//! DNS traffic after the first: names for an hour, "none" for five minutes, failures for one.

use std::collections::HashMap;
use std::net::IpAddr;
use std::num::NonZeroUsize;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::join_all;
use lru::LruCache;
use tokio::time::Instant;

use crate::dns::HickoryResolver;

const FOUND_TTL: Duration = Duration::from_secs(3600);
const NONE_TTL: Duration = Duration::from_secs(300);
const FAILED_TTL: Duration = Duration::from_secs(60);
const CAPACITY: usize = 10_000;

pub struct ReverseDns {
    resolver: Arc<HickoryResolver>,
    timeout: Duration,
    cache: Mutex<LruCache<IpAddr, (Option<String>, Instant)>>,
}

impl ReverseDns {
    /// `timeout` bounds each lookup: a slow PTR costs the page its host name, not its answer.
    pub fn new(resolver: Arc<HickoryResolver>, timeout: Duration) -> Self {
        let capacity = NonZeroUsize::new(CAPACITY).unwrap_or(NonZeroUsize::MIN);
        Self { resolver, timeout, cache: Mutex::new(LruCache::new(capacity)) }
    }

    /// The host name of each address (`None`: no PTR, or the lookup failed), looked up
    /// concurrently.
    pub async fn names(&self, ips: &[IpAddr]) -> HashMap<IpAddr, Option<String>> {
        let found = join_all(ips.iter().map(|ip| self.name(*ip))).await;
        ips.iter().copied().zip(found).collect()
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
