use std::sync::atomic::{AtomicUsize, Ordering};

use async_trait::async_trait;

use email_verdict_core::MxHost;

use super::*;
use crate::dns::MxAnswer;

/// A resolver scripted per call: answers from a queue, counting calls, with a delay so that
/// concurrent callers overlap.
struct Scripted {
    calls: AtomicUsize,
    script: Mutex<Vec<Result<MxAnswer, DnsFailure>>>,
    delay: Duration,
}

#[async_trait]
impl MxResolver for Scripted {
    async fn resolve(&self, _: &Domain) -> Result<MxAnswer, DnsFailure> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        tokio::time::sleep(self.delay).await;
        let mut script = self.script.lock().unwrap();
        if script.is_empty() { Err(DnsFailure("script exhausted".into())) } else { script.remove(0) }
    }
}

fn answer(host: &str, ttl: u64) -> Result<MxAnswer, DnsFailure> {
    let mx = MxInfo::Mx { hosts: vec![MxHost::new(host, vec![])] };
    Ok(MxAnswer { mx, ttl: Duration::from_secs(ttl) })
}

fn cache(script: Vec<Result<MxAnswer, DnsFailure>>) -> (Arc<MxCache>, Arc<Scripted>) {
    let resolver =
        Arc::new(Scripted { calls: AtomicUsize::new(0), script: Mutex::new(script), delay: Duration::from_millis(10) });
    let config = CacheConfig {
        capacity: NonZeroUsize::new(2).unwrap(),
        min_ttl: Duration::from_secs(30),
        max_ttl: Duration::from_secs(600),
        stale_ttl: Duration::from_secs(3600),
        lookup_timeout: Duration::from_secs(5),
    };
    (MxCache::new(resolver.clone(), config, Arc::new(Metrics::new())), resolver)
}

fn domain(s: &str) -> Domain {
    Domain::parse(s).unwrap()
}

#[tokio::test(start_paused = true)]
async fn second_lookup_is_cached_until_the_clamped_ttl() {
    let (c, r) = cache(vec![answer("mx1.example", 5), answer("mx2.example", 5)]);
    let d = domain("a.example");
    assert!(!c.lookup(&d).await.unwrap().cached);
    assert!(c.lookup(&d).await.unwrap().cached);
    tokio::time::advance(Duration::from_secs(29)).await; // ttl 5 clamped up to min 30
    assert!(c.lookup(&d).await.unwrap().cached);
    tokio::time::advance(Duration::from_secs(2)).await;
    let fresh = c.lookup(&d).await.unwrap();
    assert!(!fresh.cached);
    assert_eq!(*fresh.mx, MxInfo::Mx { hosts: vec![MxHost::new("mx2.example", vec![])] });
    assert_eq!(r.calls.load(Ordering::SeqCst), 2);
    assert_eq!((c.metrics.cache.hits.get(), c.metrics.cache.misses.get()), (2, 2));
}

#[tokio::test(start_paused = true)]
async fn concurrent_lookups_share_one_resolution() {
    let (c, r) = cache(vec![answer("mx.example", 60)]);
    let d = domain("b.example");
    let lookups = (0..100).map(|_| {
        let (c, d) = (c.clone(), d.clone());
        tokio::spawn(async move { c.lookup(&d).await })
    });
    for l in futures::future::join_all(lookups).await {
        assert!(!l.unwrap().unwrap().cached);
    }
    assert_eq!(r.calls.load(Ordering::SeqCst), 1);
    assert_eq!((c.metrics.cache.misses.get(), c.metrics.cache.joins.get()), (100, 99));
}

#[tokio::test(start_paused = true)]
async fn failure_serves_stale_answer_and_is_never_cached() {
    let failure = Err(DnsFailure("SERVFAIL".into()));
    let (c, r) = cache(vec![answer("mx.example", 60), failure.clone(), answer("mx3.example", 60)]);
    let d = domain("c.example");
    c.lookup(&d).await.unwrap();
    tokio::time::advance(Duration::from_secs(61)).await;
    let stale = c.lookup(&d).await.unwrap();
    assert!(stale.cached, "stale answer served from cache");
    assert_eq!(*stale.mx, MxInfo::Mx { hosts: vec![MxHost::new("mx.example", vec![])] });
    // The failure was not stored: the next lookup resolves again.
    let again = c.lookup(&d).await.unwrap();
    assert!(!again.cached);
    assert_eq!(r.calls.load(Ordering::SeqCst), 3);
    assert_eq!((c.metrics.cache.misses.get(), c.metrics.cache.stale_served.get()), (3, 1));
}

#[tokio::test(start_paused = true)]
async fn failure_without_a_good_answer_reaches_the_caller() {
    let (c, _) = cache(vec![Err(DnsFailure("REFUSED".into()))]);
    assert_eq!(c.lookup(&domain("d.example")).await, Err(DnsFailure("REFUSED".into())));
}

#[tokio::test(start_paused = true)]
async fn stale_answers_expire_and_capacity_is_bounded() {
    let (c, _) = cache(vec![answer("mx.example", 60), Err(DnsFailure("timeout".into()))]);
    let d = domain("e.example");
    c.lookup(&d).await.unwrap();
    tokio::time::advance(Duration::from_secs(60 + 3600 + 1)).await;
    assert!(c.lookup(&d).await.is_err());
    let (c, _) = cache(vec![answer("a", 60), answer("b", 60), answer("c", 60)]);
    for name in ["f.example", "g.example", "h.example"] {
        c.lookup(&domain(name)).await.unwrap();
    }
    assert_eq!(c.lock_entries().len(), 2);
}

#[tokio::test(start_paused = true)]
async fn slow_resolver_is_bounded_by_the_lookup_timeout() {
    let resolver = Arc::new(Scripted {
        calls: AtomicUsize::new(0),
        script: Mutex::new(vec![answer("mx", 60)]),
        delay: Duration::from_secs(60),
    });
    let config = CacheConfig {
        capacity: NonZeroUsize::new(8).unwrap(),
        min_ttl: Duration::from_secs(1),
        max_ttl: Duration::from_secs(60),
        stale_ttl: Duration::ZERO,
        lookup_timeout: Duration::from_secs(3),
    };
    let c = MxCache::new(resolver, config, Arc::new(Metrics::new()));
    let started = Instant::now();
    assert!(c.lookup(&domain("slow.example")).await.is_err());
    assert_eq!(started.elapsed(), Duration::from_secs(3));
}

/// Issue 31: a lookup's deadline cuts its wait, not the resolution: past it, the last good
/// answer if any, else a failure; the resolution goes on and the next lookup has its answer.
#[tokio::test(start_paused = true)]
async fn a_lookup_waits_until_its_deadline_and_the_resolution_goes_on() {
    let resolver = Arc::new(Scripted {
        calls: AtomicUsize::new(0),
        script: Mutex::new(vec![answer("old.example", 1), answer("new.example", 60), answer("late.example", 60)]),
        delay: Duration::from_secs(2),
    });
    let config = CacheConfig {
        capacity: NonZeroUsize::new(8).unwrap(),
        min_ttl: Duration::from_secs(1),
        max_ttl: Duration::from_secs(60),
        stale_ttl: Duration::from_secs(3600),
        lookup_timeout: Duration::from_secs(5),
    };
    let c = MxCache::new(resolver.clone(), config, Arc::new(Metrics::new()));
    let (known, unknown) = (domain("known.example"), domain("unknown.example"));
    c.lookup(&known).await.unwrap();
    tokio::time::advance(Duration::from_secs(2)).await; // old.example's answer is stale now
    let started = Instant::now();
    let stale = c.lookup_within(&known, started + Duration::from_millis(500)).await.unwrap();
    assert_eq!((stale.cached, started.elapsed()), (true, Duration::from_millis(500)));
    assert_eq!(stale.mx.hosts()[0].name, "old.example");
    let started = Instant::now();
    let failed = c.lookup_within(&unknown, started + Duration::from_millis(500)).await;
    assert!(failed.is_err() && started.elapsed() == Duration::from_millis(500), "{failed:?}");
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(c.lookup(&known).await.unwrap().mx.hosts()[0].name, "new.example");
    assert_eq!(c.lookup(&unknown).await.unwrap().mx.hosts()[0].name, "late.example");
    assert_eq!(resolver.calls.load(Ordering::SeqCst), 3);
}
