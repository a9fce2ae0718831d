//! One suite, run against every state backend: SQLite on a temp file, a real `redis-server`, a
//! real Redis Cluster (three primaries, three replicas), and both again on Valkey, started here. Time is injected (`now_ms`), so day boundaries and one-second windows are
//! exact and nothing sleeps on the wall clock, except the Redis outage test.

use std::sync::Arc;
use std::time::{Duration, Instant};

use email_verdict::keys::ApiKey;
use email_verdict::plans::{PlanName, Plans};
use email_verdict::state::{
    Admission, AppliedDecision, DecisionRecord, KeyChange, KeyRecord, KeyStore, Limits, MailServer, RedisStore,
    ReviewCause, ReviewReason, ServerFact, ServerMark, SqliteStore, StateError, StateStore, WarmupProgress,
    covering_names,
};
use email_verdict_core::Decision;
use email_verdict_tests::{Redis, RedisCluster, Server};

/// 2026-11-22T00:00:00Z in ms.
const DAY_START: i64 = 1_795_305_600_000;

fn temp_db(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("ev-backends-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("state.db");
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
    }
    path
}

/// Runs `$check` against a fresh store of each backend; `$open` makes a second handle on the
/// same state (another process's view).
macro_rules! with_all_backends {
    ($name:ident, $check:ident) => {
        mod $name {
            use super::*;

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn sqlite() {
                let path = temp_db(stringify!($name));
                let dir = path.parent().map(std::path::Path::to_path_buf);
                let open = move || -> Arc<dyn StateStore> { Arc::new(SqliteStore::open(&path).unwrap()) };
                $check(open).await;
                dir.map(std::fs::remove_dir_all); // passed: nothing left in /tmp
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn redis() {
                on_single(Server::Redis, $check).await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn redis_cluster() {
                on_cluster(Server::Redis, $check).await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn valkey() {
                on_single(Server::Valkey, $check).await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn valkey_cluster() {
                on_cluster(Server::Valkey, $check).await;
            }
        }
    };
}

/// Like the above, with a review queue bounded at `$cap` entries.
macro_rules! with_all_backends_bounded {
    ($name:ident, $check:ident, $cap:expr) => {
        mod $name {
            use super::*;

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn sqlite() {
                let path = temp_db(stringify!($name));
                let dir = path.parent().map(std::path::Path::to_path_buf);
                let open = move || -> Arc<dyn StateStore> {
                    Arc::new(SqliteStore::open(&path).unwrap().with_queue_capacity($cap))
                };
                $check(open).await;
                dir.map(std::fs::remove_dir_all); // passed: nothing left in /tmp
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn redis() {
                let single = Redis::start_on(Server::Redis);
                $check(bounded_opener(single.url(), $cap)).await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn redis_cluster() {
                let _one_at_a_time = CLUSTERS.lock().await;
                let cluster = RedisCluster::start_on(Server::Redis, 3);
                $check(bounded_opener(cluster.url(), $cap)).await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn valkey() {
                let single = Redis::start_on(Server::Valkey);
                $check(bounded_opener(single.url(), $cap)).await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn valkey_cluster() {
                let _one_at_a_time = CLUSTERS.lock().await;
                let cluster = RedisCluster::start_on(Server::Valkey, 3);
                $check(bounded_opener(cluster.url(), $cap)).await;
            }
        }
    };
}

fn bounded_opener(url: String, capacity: usize) -> Opener {
    Box::new(move || -> Arc<dyn StateStore> { Arc::new(RedisStore::open(&url).unwrap().with_queue_capacity(capacity)) })
}

/// A store handle maker on `url` (Redis, Valkey, alone or as a cluster).
type Opener = Box<dyn Fn() -> Arc<dyn StateStore> + Send + Sync>;

fn opener(url: String) -> Opener {
    Box::new(move || -> Arc<dyn StateStore> { Arc::new(RedisStore::open(&url).unwrap()) })
}

/// Runs `check` against a fresh single `server`.
async fn on_single<F, Fut>(server: Server, check: F)
where
    F: FnOnce(Opener) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let single = Redis::start_on(server);
    check(opener(single.url())).await;
}

/// Runs `check` against a fresh three-primary cluster of `server`. One cluster (six processes)
/// at a time: forming many at once on a small machine makes their nodes time out and fail over.
async fn on_cluster<F, Fut>(server: Server, check: F)
where
    F: FnOnce(Opener) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let _one_at_a_time = CLUSTERS.lock().await;
    let cluster = RedisCluster::start_on(server, 3);
    check(opener(cluster.url())).await;
}

static CLUSTERS: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// A built-in plan's name.
fn plan(name: &str) -> PlanName {
    name.parse().unwrap()
}

/// A built-in plan's limits.
fn limits(name: &str) -> Limits {
    Limits::from(Plans::builtin().resolve(name).unwrap())
}

async fn new_key(store: &dyn StateStore, plan: PlanName) -> (KeyRecord, ApiKey) {
    let secret = ApiKey::generate().unwrap();
    let id = email_verdict::keys::new_key_id().unwrap();
    let key = KeyRecord { id, name: "t".into(), plan, allow_ips: vec![], created_at: 1, revoked: false };
    store.insert_key(key.clone(), secret.hash()).await.unwrap();
    (key, secret)
}

fn admitted(a: &Admission) -> bool {
    matches!(a, Admission::Admitted { .. })
}

async fn keys_round_trip(open: impl Fn() -> Arc<dyn StateStore>) {
    let store = open();
    let (key, secret) = new_key(&*store, plan("free")).await;
    assert_eq!(store.key_by_hash(&secret.hash()).await.unwrap(), Some(key.clone()));
    assert_eq!(store.key_by_id(&key.id).await.unwrap(), Some(key.clone()));
    assert_eq!(store.key_by_hash(&ApiKey::generate().unwrap().hash()).await.unwrap(), None);
    let nets = vec!["192.0.2.0/24".parse().unwrap(), "2001:db8::/32".parse().unwrap()];
    let change = KeyChange { plan: Some(plan("pro")), allow_ips: Some(nets.clone()), name: None };
    let changed = store.update_key(&key.id, change).await.unwrap().unwrap();
    assert_eq!((changed.plan.clone(), changed.allow_ips.clone(), changed.name.as_str()), (plan("pro"), nets, "t"));
    assert_eq!(store.update_key("key_nope", KeyChange::default()).await.unwrap(), None);
    // Another handle (another process) sees the change and the revocation.
    let other = open();
    assert_eq!(other.key_by_hash(&secret.hash()).await.unwrap(), Some(changed));
    assert!(store.revoke_key(&key.id).await.unwrap());
    assert!(!store.revoke_key("key_nope").await.unwrap());
    assert!(other.key_by_id(&key.id).await.unwrap().unwrap().revoked);
    let listed = other.list_keys("2026-11-22").await.unwrap();
    assert_eq!(listed.len(), 1);
    assert!(listed[0].key.revoked);
}
with_all_backends!(keys, keys_round_trip);

async fn quota_is_exact_and_resets_at_midnight(open: impl Fn() -> Arc<dyn StateStore>) {
    let store = open();
    let (key, _) = new_key(&*store, plan("free")).await;
    let limits = limits("free");
    let mut now = DAY_START + 10 * 3_600_000;
    for expected in 1..=3 {
        assert_eq!(store.admit(&key.id, limits, 1, now).await.unwrap(), Admission::Admitted { used: expected });
        now += 1_001;
    }
    assert_eq!(store.admit(&key.id, limits, 1, now).await.unwrap(), Admission::QuotaExceeded { used: 3 });
    // A refund gives one back; the count is then exactly the answered lookups.
    assert_eq!(store.refund(&key.id, "2026-11-22", 1, Some(3)).await.unwrap(), 1);
    assert_eq!(store.usage(&key.id, &["2026-11-22".into()]).await.unwrap(), vec![2]);
    now += 1_001;
    assert_eq!(store.admit(&key.id, limits, 1, now).await.unwrap(), Admission::Admitted { used: 3 });
    // The last millisecond of the day is still the same day; midnight starts a new one.
    let last_ms = DAY_START + 86_400_000 - 1;
    assert!(matches!(store.admit(&key.id, limits, 1, last_ms).await.unwrap(), Admission::QuotaExceeded { .. }));
    let midnight = DAY_START + 86_400_000;
    assert_eq!(store.admit(&key.id, limits, 1, midnight).await.unwrap(), Admission::Admitted { used: 1 });
    assert_eq!(store.usage(&key.id, &["2026-11-22".into(), "2026-11-23".into()]).await.unwrap(), vec![3, 1]);
}
with_all_backends!(quota, quota_is_exact_and_resets_at_midnight);

async fn unlimited_limits_never_refuse_and_still_count(open: impl Fn() -> Arc<dyn StateStore>) {
    let store = open();
    let (key, _) = new_key(&*store, plan("pro")).await;
    let limits = Limits { daily_quota: Limits::UNLIMITED, burst_per_second: Limits::UNLIMITED };
    let t = DAY_START + 7_000;
    for used in 1..=500 {
        // 500 in the same millisecond: no burst window, no quota.
        assert_eq!(store.admit(&key.id, limits, 1, t).await.unwrap(), Admission::Admitted { used });
    }
    assert_eq!(store.usage(&key.id, &["2026-11-22".into()]).await.unwrap(), vec![500]);
    // A finite burst with an unlimited quota still holds the window.
    let (other, _) = new_key(&*store, plan("pro")).await;
    let burst_only = Limits { daily_quota: Limits::UNLIMITED, burst_per_second: 1 };
    assert!(admitted(&store.admit(&other.id, burst_only, 1, t).await.unwrap()));
    assert!(matches!(store.admit(&other.id, burst_only, 1, t + 10).await.unwrap(), Admission::RateLimited { .. }));
}
with_all_backends!(unlimited, unlimited_limits_never_refuse_and_still_count);

async fn batches_take_units_whole_or_not_at_all(open: impl Fn() -> Arc<dyn StateStore>) {
    let store = open();
    let (key, _) = new_key(&*store, plan("basic")).await;
    let limits = Limits { daily_quota: 10, burst_per_second: 100 };
    let t = DAY_START + 9_000;
    assert_eq!(store.admit(&key.id, limits, 7, t).await.unwrap(), Admission::Admitted { used: 7 });
    // 4 more would pass the quota: refused whole, nothing counted.
    assert_eq!(store.admit(&key.id, limits, 4, t + 1).await.unwrap(), Admission::QuotaExceeded { used: 7 });
    assert_eq!(store.admit(&key.id, limits, 3, t + 2).await.unwrap(), Admission::Admitted { used: 10 });
    // Units given back (invalid or failed items), never below zero.
    assert_eq!(store.refund(&key.id, "2026-11-22", 4, None).await.unwrap(), 4);
    assert_eq!(store.usage(&key.id, &["2026-11-22".into()]).await.unwrap(), vec![6]);
    assert_eq!(store.refund(&key.id, "2026-11-22", 100, None).await.unwrap(), 6);
    assert_eq!(store.usage(&key.id, &["2026-11-22".into()]).await.unwrap(), vec![0]);
    // Failed lookups are given back up to a cap a day (issue 31); uncapped ones do not count.
    assert!(admitted(&store.admit(&key.id, limits, 10, t + 3).await.unwrap()));
    assert_eq!(store.refund(&key.id, "2026-11-22", 4, Some(6)).await.unwrap(), 4);
    assert_eq!(store.refund(&key.id, "2026-11-22", 1, None).await.unwrap(), 1);
    assert_eq!(store.refund(&key.id, "2026-11-22", 4, Some(6)).await.unwrap(), 2, "the cap: 6 a day");
    assert_eq!(store.refund(&key.id, "2026-11-22", 1, Some(6)).await.unwrap(), 0);
    assert_eq!(store.usage(&key.id, &["2026-11-22".into()]).await.unwrap(), vec![3]);
    assert_eq!(store.refund(&key.id, "2026-11-22", 9, None).await.unwrap(), 3);
    // A request of no units (a batch of invalid inputs) still takes its place in the burst.
    let one = Limits { daily_quota: 10, burst_per_second: 1 };
    let (other, _) = new_key(&*store, plan("basic")).await;
    assert!(admitted(&store.admit(&other.id, one, 0, t).await.unwrap()));
    assert!(matches!(store.admit(&other.id, one, 0, t + 5).await.unwrap(), Admission::RateLimited { .. }));
}
with_all_backends!(units, batches_take_units_whole_or_not_at_all);

async fn burst_is_a_sliding_second(open: impl Fn() -> Arc<dyn StateStore>) {
    let store = open();
    let (key, _) = new_key(&*store, plan("pro")).await;
    let limits = Limits { daily_quota: 1_000, burst_per_second: 2 };
    let t = DAY_START + 5_000;
    assert!(admitted(&store.admit(&key.id, limits, 1, t).await.unwrap()));
    assert!(admitted(&store.admit(&key.id, limits, 1, t + 600).await.unwrap()));
    // Two in (t+999-1000, t+999]: refused until the first leaves the window at t+1000.
    assert_eq!(store.admit(&key.id, limits, 1, t + 999).await.unwrap(), Admission::RateLimited { retry_after_ms: 1 });
    assert!(admitted(&store.admit(&key.id, limits, 1, t + 1_000).await.unwrap()));
    assert_eq!(
        store.admit(&key.id, limits, 1, t + 1_100).await.unwrap(),
        Admission::RateLimited { retry_after_ms: 500 }
    );
    // A refused request does not take a place in the window.
    assert!(admitted(&store.admit(&key.id, limits, 1, t + 1_600).await.unwrap()));
}
with_all_backends!(burst, burst_is_a_sliding_second);

/// The connection guard's test of good standing: would the next request be admitted, under the
/// quota and the burst? Asking spends neither.
async fn would_admit_reads_quota_and_burst_and_spends_nothing(open: impl Fn() -> Arc<dyn StateStore>) {
    let store = open();
    let (key, _) = new_key(&*store, plan("basic")).await;
    let limits = Limits { daily_quota: 3, burst_per_second: 2 };
    let t = DAY_START + 5_000;
    for _ in 0..5 {
        assert!(store.would_admit(&key.id, limits, t).await.unwrap(), "asking spends nothing");
    }
    assert!(admitted(&store.admit(&key.id, limits, 1, t).await.unwrap()));
    assert!(admitted(&store.admit(&key.id, limits, 1, t + 100).await.unwrap()));
    assert!(!store.would_admit(&key.id, limits, t + 999).await.unwrap(), "the burst is spent");
    assert!(store.would_admit(&key.id, limits, t + 1_000).await.unwrap(), "the first left the window");
    assert!(admitted(&store.admit(&key.id, limits, 1, t + 1_000).await.unwrap()));
    assert!(!store.would_admit(&key.id, limits, t + 5_000).await.unwrap(), "the quota is spent");
    assert!(store.would_admit(&key.id, limits, t + 86_400_000).await.unwrap(), "a new day");
    let unlimited_burst = Limits { daily_quota: 3, burst_per_second: Limits::UNLIMITED };
    let (other, _) = new_key(&*store, plan("basic")).await;
    assert!(store.would_admit(&other.id, unlimited_burst, t).await.unwrap());
}
with_all_backends!(would_admit, would_admit_reads_quota_and_burst_and_spends_nothing);

async fn concurrent_admissions_never_exceed_limits(open: impl Fn() -> Arc<dyn StateStore>) {
    // Two handles stand for two replicas; 60 concurrent admissions at one instant.
    let stores = [open(), open()];
    let (key, _) = new_key(&*stores[0], plan("basic")).await;
    let limits = limits("basic");
    let now = DAY_START + 7_000;
    let tasks: Vec<_> = (0..60)
        .map(|i| {
            let (store, id) = (stores[i % 2].clone(), key.id.clone());
            tokio::spawn(async move { store.admit(&id, limits, 1, now).await.unwrap() })
        })
        .collect();
    let mut results = Vec::new();
    for t in tasks {
        results.push(t.await.unwrap());
    }
    assert_eq!(results.iter().filter(|a| admitted(a)).count(), 10, "exactly the burst: {results:?}");
    // Quota: 12 more seconds of full bursts against a quota of 100 admits exactly 100.
    let tight = Limits { daily_quota: 100, burst_per_second: 10 };
    let (key, _) = new_key(&*stores[0], plan("basic")).await;
    let mut total = 0;
    for second in 0..12 {
        let tasks: Vec<_> = (0..20)
            .map(|i| {
                let (store, id) = (stores[i % 2].clone(), key.id.clone());
                tokio::spawn(async move { store.admit(&id, tight, 1, now + second * 1_000).await.unwrap() })
            })
            .collect();
        for t in tasks {
            total += usize::from(admitted(&t.await.unwrap()));
        }
    }
    assert_eq!(total, 100);
}
with_all_backends!(concurrency, concurrent_admissions_never_exceed_limits);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_outage_is_a_bounded_error_and_recovers() {
    let mut redis = Redis::start();
    let store = RedisStore::open(&redis.url()).unwrap();
    let (key, _) = new_key(&store, plan("pro")).await;
    let limits = limits("pro");
    redis.kill();
    let started = Instant::now();
    let err = store.admit(&key.id, limits, 1, DAY_START).await.unwrap_err();
    assert!(matches!(err, StateError::Unavailable(_)), "{err}");
    assert!(started.elapsed() < Duration::from_secs(5), "bounded: {:?}", started.elapsed());
    // Same port and data: the store reconnects by itself.
    redis.restart();
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match store.admit(&key.id, limits, 1, DAY_START).await {
            Ok(a) => {
                assert!(admitted(&a));
                break;
            }
            Err(_) if Instant::now() < deadline => tokio::time::sleep(Duration::from_millis(100)).await,
            Err(e) => panic!("did not recover: {e}"),
        }
    }
}

/// The decision in force for `domain` (through its covering names), as (decision, made on).
async fn applied(store: &dyn StateStore, domain: &str) -> Option<(Decision, String)> {
    store.decision(&covering_names(domain)).await.unwrap().map(|AppliedDecision { decision, on }| (decision, on))
}

fn decision_on(domain: &str, decision: Option<Decision>, at: i64) -> DecisionRecord {
    DecisionRecord { domain: domain.into(), decision, reviewer: "ana".into(), note: "checked".into(), at }
}

async fn review_queue_and_decisions(open: impl Fn() -> Arc<dyn StateStore>) {
    let (store, other) = (open(), open());
    let weak = ReviewCause {
        sources: vec!["mailchecker".into()],
        listed_as: "new.example".into(),
        ..ReviewCause::new(ReviewReason::WeakListing)
    };
    store.note_for_review("new.example", &ReviewCause::new(ReviewReason::Ambiguous), 100).await.unwrap();
    store.note_for_review("old.example", &ReviewCause::new(ReviewReason::NoMx), 50).await.unwrap();
    other.note_for_review("new.example", &weak, 130).await.unwrap();
    let queue = store.review_queue().await.unwrap();
    let summary: Vec<_> =
        queue.iter().map(|i| (i.domain.as_str(), i.reason, i.first_seen, i.last_seen, i.lookups)).collect();
    assert_eq!(
        summary,
        [("old.example", ReviewReason::NoMx, 50, 50, 1), ("new.example", ReviewReason::WeakListing, 100, 130, 2)]
    );
    assert_eq!((queue[0].sources.len(), queue[0].listed_as.as_str()), (0, ""));
    assert_eq!(
        (queue[1].sources.clone(), queue[1].listed_as.as_str()),
        (vec!["mailchecker".to_owned()], "new.example")
    );
    let record = |decision, at| decision_on("new.example", decision, at);
    store.decide(record(Some(Decision::Block), 200)).await.unwrap();
    assert_eq!(applied(&*other, "new.example").await, Some((Decision::Block, "new.example".into())));
    assert_eq!(other.review_queue().await.unwrap().len(), 1, "a decided domain leaves the queue");
    store.decide(record(Some(Decision::Allow), 210)).await.unwrap();
    assert_eq!(applied(&*other, "new.example").await, Some((Decision::Allow, "new.example".into())));
    store.decide(record(None, 220)).await.unwrap();
    assert_eq!(applied(&*other, "new.example").await, None);
    assert_eq!(other.review_queue().await.unwrap().len(), 2, "withdrawn: back in the queue");
    let history: Vec<_> =
        other.decision_history("new.example").await.unwrap().iter().map(|r| (r.decision, r.at)).collect();
    assert_eq!(history, [(Some(Decision::Block), 200), (Some(Decision::Allow), 210), (None, 220)]);
    assert_eq!(applied(&*store, "never.example").await, None);
    assert_eq!(store.decision(&[]).await.unwrap(), None);
}
with_all_backends!(review, review_queue_and_decisions);

/// Issue 13 item 11: a decision on a name covers its subdomains (down to the registrable
/// domain's walk), unless a more specific decision exists; a withdrawn one is no decision.
async fn decisions_cover_subdomains(open: impl Fn() -> Arc<dyn StateStore>) {
    let (store, other) = (open(), open());
    store.decide(decision_on("rtdisp.example", Some(Decision::Block), 10)).await.unwrap();
    let block_on_parent = Some((Decision::Block, "rtdisp.example".to_owned()));
    assert_eq!(applied(&*other, "rtdisp.example").await, block_on_parent);
    assert_eq!(applied(&*other, "sub.rtdisp.example").await, block_on_parent);
    assert_eq!(applied(&*other, "a.b.rtdisp.example").await, block_on_parent);
    assert_eq!(applied(&*other, "notrtdisp.example").await, None);
    store.decide(decision_on("ok.rtdisp.example", Some(Decision::Allow), 20)).await.unwrap();
    let allow_on_sub = Some((Decision::Allow, "ok.rtdisp.example".to_owned()));
    assert_eq!(applied(&*other, "ok.rtdisp.example").await, allow_on_sub, "the more specific wins");
    assert_eq!(applied(&*other, "x.ok.rtdisp.example").await, allow_on_sub);
    store.decide(decision_on("ok.rtdisp.example", None, 30)).await.unwrap();
    assert_eq!(applied(&*other, "x.ok.rtdisp.example").await, block_on_parent, "withdrawn: the parent's applies");
    // A decision on a public suffix covers nothing below it (the walk stops at the registrable domain).
    store.decide(decision_on("pp.ua", Some(Decision::Block), 40)).await.unwrap();
    assert_eq!(applied(&*other, "shop.pp.ua").await, None);
    // A queued subdomain of a decided parent is not waiting for review.
    store.note_for_review("sub.rtdisp.example", &ReviewCause::new(ReviewReason::Ambiguous), 50).await.unwrap();
    store.note_for_review("else.example", &ReviewCause::new(ReviewReason::Ambiguous), 60).await.unwrap();
    let queued: Vec<_> = other.review_queue().await.unwrap().into_iter().map(|i| i.domain).collect();
    assert_eq!(queued, ["else.example"]);
}
with_all_backends!(review_subdomains, decisions_cover_subdomains);

/// Issue 24: the queue keeps each entry's likelihood and own mail servers, and its bound drops
/// decided entries first, then the lowest priority (likelihood × use), counting by reason what
/// it dropped undecided. Bounded at 3 here.
async fn queue_is_ranked_and_bounded(open: impl Fn() -> Arc<dyn StateStore>) {
    let (store, other) = (open(), open());
    let cause = |reason, likelihood, servers: &[&str]| ReviewCause {
        likelihood,
        servers: servers.iter().map(|s| s.to_string()).collect(),
        ..ReviewCause::new(reason)
    };
    let note = |store: &Arc<dyn StateStore>, domain: &'static str, cause: ReviewCause, at: i64| {
        let store = store.clone();
        async move { store.note_for_review(domain, &cause, at).await.unwrap() }
    };
    note(&store, "a.example", cause(ReviewReason::Ambiguous, 100, &["mx.a.example"]), 10).await;
    note(&store, "b.example", cause(ReviewReason::WeakListing, 500, &["mx.b.example", "192.0.2.1"]), 20).await;
    for at in 30..33 {
        note(&other, "c.example", cause(ReviewReason::Ambiguous, 100, &[]), at).await;
    }
    // Over the bound: the lowest priority goes, the new entry itself here, then a.example.
    note(&other, "d.example", cause(ReviewReason::NoMx, 20, &[]), 40).await;
    note(&store, "e.example", cause(ReviewReason::Ambiguous, 250, &["mx.b.example"]), 50).await;
    let queue = other.review_queue().await.unwrap();
    let summary: Vec<_> = queue.iter().map(|i| (i.domain.as_str(), i.lookups, i.likelihood, i.priority())).collect();
    assert_eq!(summary, [("b.example", 1, 500, 500), ("c.example", 3, 100, 200), ("e.example", 1, 250, 250)]);
    assert_eq!(queue[0].servers, ["mx.b.example", "192.0.2.1"]);
    assert_eq!(store.review_queue_len().await.unwrap(), 3, "what /metrics reads: the bound held");
    assert_eq!(queue[0].server(), "mx.b.example");
    let dropped = store.review_dropped().await.unwrap();
    assert_eq!(dropped, [(ReviewReason::Ambiguous, 1), (ReviewReason::NoMx, 1)]);
    // A decided entry leaves the queue and is the first to go when the bound needs room; it is
    // not counted as dropped (nothing was lost).
    store.decide(decision_on("b.example", Some(Decision::Block), 55)).await.unwrap();
    note(&store, "f.example", cause(ReviewReason::Ambiguous, 100, &[]), 60).await;
    let queued: Vec<_> = other.review_queue().await.unwrap().into_iter().map(|i| i.domain).collect();
    assert_eq!(queued, ["c.example", "e.example", "f.example"]);
    assert_eq!(other.review_queue_len().await.unwrap(), 3, "the decided entry went first");
    assert_eq!(store.review_dropped().await.unwrap(), dropped);
    store.decide(decision_on("b.example", None, 70)).await.unwrap();
    assert_eq!(other.review_queue().await.unwrap().len(), 3, "b.example was dropped: nothing comes back");
    // Settled otherwise (a mark on their mail server): out of the queue, not counted as dropped.
    store.dismiss(&["c.example".to_owned(), "gone.example".to_owned()]).await.unwrap();
    let queued: Vec<_> = other.review_queue().await.unwrap().into_iter().map(|i| i.domain).collect();
    assert_eq!(queued, ["e.example", "f.example"]);
    assert_eq!(store.review_dropped().await.unwrap(), dropped);
    note(&other, "c.example", cause(ReviewReason::Ambiguous, 100, &[]), 80).await;
    let c = other.review_queue().await.unwrap().into_iter().find(|i| i.domain == "c.example").map(|i| i.lookups);
    assert_eq!(c, Some(1), "a later lookup queues it afresh");
}
with_all_backends_bounded!(review_bound, queue_is_ranked_and_bounded, 3);

/// The infrastructure warm-up's progress survives the handle (a restart) and is shared.
async fn warmup_progress_round_trip(open: impl Fn() -> Arc<dyn StateStore>) {
    let (store, other) = (open(), open());
    assert_eq!(store.warmup_progress().await.unwrap(), WarmupProgress::default());
    let p =
        WarmupProgress { cursor: "b.example".into(), resolved: 7, learned: 3, failed: 1, updated_at: 1_800_000_000 };
    store.save_warmup_progress(&p).await.unwrap();
    assert_eq!(other.warmup_progress().await.unwrap(), p);
    let later = WarmupProgress { cursor: "c.example".into(), resolved: 8, ..p };
    other.save_warmup_progress(&later).await.unwrap();
    assert_eq!(open().warmup_progress().await.unwrap(), later);
}
with_all_backends!(warmup, warmup_progress_round_trip);

fn fact(server: MailServer, via: &str) -> ServerFact {
    ServerFact { server, via: via.into() }
}

/// What a domain self-hosting on `host` (under `owner`) at `ip` teaches.
fn own(host: &str, owner: &str, ip: &str) -> Vec<ServerFact> {
    vec![fact(MailServer::host(host), owner), fact(MailServer::address(ip), owner)]
}

/// (disposable, legitimate) on each server, about `judged`, counting facts seen since `since`.
async fn evidence(store: &dyn StateStore, judged: &str, servers: &[MailServer], since: i64) -> Vec<(u64, u64)> {
    let e = store.infra_evidence(judged, servers, since).await.unwrap();
    e.iter().map(|e| (e.disposable, e.legitimate)).collect()
}

/// Issue 24: what each domain teaches is replaced when learned again (its MX moved) and
/// forgotten when it teaches nothing; counts leave out the judged domain and what was taught
/// through hosts it owns; only fresh facts count.
async fn infrastructure_index(open: impl Fn() -> Arc<dyn StateStore>) {
    let (store, other) = (open(), open());
    let ip = MailServer::address("192.0.2.10");
    let mx = MailServer::host("mx.burner.example");
    store
        .learn_infra("burner-a.example", true, &own("mx.burner.example", "burner.example", "192.0.2.10"), 100)
        .await
        .unwrap();
    other
        .learn_infra("burner-b.example", true, &own("mail.burner-b.example", "burner-b.example", "192.0.2.10"), 100)
        .await
        .unwrap();
    store
        .learn_infra("burner-b.example", true, &own("mail.burner-b.example", "burner-b.example", "192.0.2.10"), 110)
        .await
        .unwrap();
    store
        .learn_infra("webmail.example", false, &own("mx.webmail.example", "webmail.example", "192.0.2.99"), 100)
        .await
        .unwrap();
    let servers = [mx.clone(), MailServer::host("unknown.example"), ip.clone(), MailServer::address("192.0.2.99")];
    assert_eq!(evidence(&*other, "new.example", &servers, 0).await, [(1, 0), (0, 0), (2, 0), (0, 1)]);
    // The judged domain's own facts are left out, and so is what reached a server through a
    // host it owns: burner-b.example's address, for burner-b.example.
    assert_eq!(evidence(&*other, "burner-a.example", &[mx.clone(), ip.clone()], 0).await, [(0, 0), (1, 0)]);
    assert_eq!(
        evidence(&*other, "burner.example", std::slice::from_ref(&ip), 0).await,
        [(1, 0)],
        "taught through its host"
    );
    // Only fresh facts: burner-a.example was seen at 100, burner-b.example again at 110.
    assert_eq!(evidence(&*other, "new.example", std::slice::from_ref(&ip), 105).await, [(1, 0)]);
    // A domain that turns out legitimate moves sides; one whose MX moved leaves its old servers.
    store
        .learn_infra("burner-a.example", false, &own("mx.burner.example", "burner.example", "192.0.2.10"), 120)
        .await
        .unwrap();
    assert_eq!(evidence(&*store, "new.example", std::slice::from_ref(&ip), 0).await, [(1, 1)]);
    store
        .learn_infra("burner-b.example", true, &own("mx.moved.example", "moved.example", "192.0.2.77"), 130)
        .await
        .unwrap();
    let moved = [ip.clone(), MailServer::host("mx.moved.example"), MailServer::address("192.0.2.77")];
    assert_eq!(evidence(&*other, "new.example", &moved, 0).await, [(0, 1), (1, 0), (1, 0)]);
    // Teaching nothing forgets.
    store.learn_infra("burner-a.example", false, &[], 140).await.unwrap();
    assert_eq!(evidence(&*other, "new.example", &[ip.clone(), mx.clone()], 0).await, [(0, 0), (0, 0)]);
    // The reviewer's view: servers with their counts, most disposable domains first, and who
    // taught each.
    let page = other.learned_servers(0, 0, 10).await.unwrap();
    let listed: Vec<_> = page.servers.iter().map(|s| (s.server.value.as_str(), s.disposable, s.legitimate)).collect();
    assert_eq!(
        listed,
        [("mx.moved.example", 1, 0), ("192.0.2.77", 1, 0), ("mx.webmail.example", 0, 1), ("192.0.2.99", 0, 1)]
    );
    assert_eq!((page.total, page.servers[0].last_seen), (4, 130));
    let next = other.learned_servers(0, 3, 10).await.unwrap();
    assert_eq!(next.servers.iter().map(|s| s.server.value.as_str()).collect::<Vec<_>>(), ["192.0.2.99"]);
    let taught = other.server_teachers(&MailServer::address("192.0.2.77"), 0, 10).await.unwrap();
    assert_eq!(
        taught.iter().map(|t| (t.domain.as_str(), t.disposable, t.via.clone(), t.seen)).collect::<Vec<_>>(),
        [("burner-b.example", true, vec!["moved.example".to_owned()], 130)]
    );
}
with_all_backends!(infra, infrastructure_index);

/// Issue 24: a reviewer's mark on a server is in force for every domain and kept with its
/// history; a marked server is listed even without facts.
async fn server_marks(open: impl Fn() -> Arc<dyn StateStore>) {
    let (store, other) = (open(), open());
    let server = MailServer::host("mx.victim.example");
    let mark =
        |decision, at| ServerMark { server: server.clone(), decision, reviewer: "ana".into(), note: "n".into(), at };
    assert_eq!(other.infra_evidence("x.example", std::slice::from_ref(&server), 0).await.unwrap()[0].mark, None);
    store.mark_server(mark(Some(Decision::Block), 10)).await.unwrap();
    assert_eq!(
        other.infra_evidence("x.example", std::slice::from_ref(&server), 0).await.unwrap()[0].mark,
        Some(Decision::Block)
    );
    store.mark_server(mark(Some(Decision::Allow), 20)).await.unwrap();
    assert_eq!(
        other.infra_evidence("victim.example", std::slice::from_ref(&server), 0).await.unwrap()[0].mark,
        Some(Decision::Allow)
    );
    let page = other.learned_servers(0, 0, 10).await.unwrap();
    assert_eq!((page.total, page.servers[0].mark, page.servers[0].disposable), (1, Some(Decision::Allow), 0));
    store.mark_server(mark(None, 30)).await.unwrap();
    assert_eq!(other.infra_evidence("x.example", std::slice::from_ref(&server), 0).await.unwrap()[0].mark, None);
    let history: Vec<_> = other.server_marks(&server).await.unwrap().iter().map(|m| (m.decision, m.at)).collect();
    assert_eq!(history, [(Some(Decision::Block), 10), (Some(Decision::Allow), 20), (None, 30)]);
}
with_all_backends!(marks, server_marks);

/// Spec Limits rule 3: one public re-check per domain per interval, atomically for every caller.
async fn one_recheck_per_domain_per_interval(open: impl Fn() -> Arc<dyn StateStore>) {
    use email_verdict::state::Recheck;
    let store = open();
    let t0 = DAY_START / 1000;
    assert_eq!(store.try_recheck("a.example", t0, 86_400).await.unwrap(), Recheck::Allowed);
    let refused = Recheck::Refused { next_at: t0 + 86_400 };
    assert_eq!(store.try_recheck("a.example", t0 + 10, 86_400).await.unwrap(), refused);
    assert_eq!(open().try_recheck("a.example", t0 + 86_399, 86_400).await.unwrap(), refused, "another replica");
    assert_eq!(store.try_recheck("b.example", t0 + 10, 86_400).await.unwrap(), Recheck::Allowed, "per domain");
    // Concurrent callers on separate handles: exactly one wins.
    let results = futures::future::join_all((0..8).map(|_| {
        let handle = open();
        async move { handle.try_recheck("c.example", t0, 3_600).await.unwrap() }
    }))
    .await;
    assert_eq!(results.iter().filter(|r| **r == Recheck::Allowed).count(), 1, "{results:?}");
}
with_all_backends!(recheck, one_recheck_per_domain_per_interval);

/// A re-check that could not be completed gives its slot back, and only its own.
async fn an_uncompleted_recheck_gives_its_slot_back(open: impl Fn() -> Arc<dyn StateStore>) {
    use email_verdict::state::Recheck;
    let store = open();
    let t0 = 1_800_000_000;
    assert_eq!(store.try_recheck("g.example", t0, 86_400).await.unwrap(), Recheck::Allowed);
    store.give_back_recheck("g.example", t0).await.unwrap();
    assert_eq!(open().try_recheck("g.example", t0 + 5, 86_400).await.unwrap(), Recheck::Allowed);
    store.give_back_recheck("g.example", t0).await.unwrap(); // an older one: changes nothing
    let refused = Recheck::Refused { next_at: t0 + 5 + 86_400 };
    assert_eq!(store.try_recheck("g.example", t0 + 6, 86_400).await.unwrap(), refused);
}
with_all_backends!(recheck_give_back, an_uncompleted_recheck_gives_its_slot_back);

/// After the interval the next re-check is allowed (SQLite by time arithmetic, Redis by the
/// key's expiry, which runs on Redis' own clock: so one real second here).
async fn recheck_is_allowed_again_after_the_interval(open: impl Fn() -> Arc<dyn StateStore>) {
    use email_verdict::state::Recheck;
    let store = open();
    let now = email_verdict::clock::unix_now();
    assert_eq!(store.try_recheck("d.example", now, 1).await.unwrap(), Recheck::Allowed);
    assert_eq!(store.try_recheck("d.example", now, 1).await.unwrap(), Recheck::Refused { next_at: now + 1 });
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let later = email_verdict::clock::unix_now().max(now + 1);
    assert_eq!(store.try_recheck("d.example", later, 1).await.unwrap(), Recheck::Allowed);
}
with_all_backends!(recheck_expiry, recheck_is_allowed_again_after_the_interval);

/// Issue 32: signup counts over the last hour and day, per counter, the same from every handle
/// (replica), sliding a bucket at a time, and exact under concurrent signups.
async fn signup_counts_slide_and_agree(open: impl Fn() -> Arc<dyn StateStore>) {
    use email_verdict::state::Counter;
    use email_verdict_core::signup::velocity::{Scope, Window};
    let (store, other) = (open(), open());
    let t0 = DAY_START / 1000;
    let mailbox = Counter::new(Scope::Mailbox, &"a".repeat(64));
    let client = Counter::new(Scope::Client, "203.0.113.7");
    let w = |hour, day| Window { hour, day };
    let both = [mailbox.clone(), client.clone()];
    assert_eq!(store.count_signup(&both, t0).await.unwrap(), [w(1, 1), w(1, 1)]);
    assert_eq!(other.count_signup(&both, t0 + 10).await.unwrap(), [w(2, 2), w(2, 2)], "another replica");
    assert_eq!(store.count_signup(std::slice::from_ref(&client), t0 + 20).await.unwrap(), [w(3, 3)]);
    assert_eq!(store.count_signup(&[], t0).await.unwrap(), []);
    // An hour later (12 five-minute buckets on) the hour starts over, the day goes on.
    assert_eq!(store.count_signup(&both, t0 + 3_600).await.unwrap(), [w(1, 3), w(1, 4)]);
    // Within the hour, the buckets before the last 55..60 minutes have left it.
    assert_eq!(store.count_signup(&both, t0 + 3_600 + 3_299).await.unwrap(), [w(2, 4), w(2, 5)]);
    assert_eq!(store.count_signup(&both, t0 + 3_600 + 3_600).await.unwrap(), [w(2, 5), w(2, 6)]);
    // A day later the day starts over too; other scopes with the same value are other counters.
    assert_eq!(store.count_signup(&both, t0 + 86_400 + 3_600).await.unwrap(), [w(1, 2), w(1, 2)]);
    assert_eq!(store.count_signup(&[Counter::new(Scope::Domain, "203.0.113.7")], t0).await.unwrap(), [w(1, 1)]);
    // Concurrent signups on separate handles: every one counted.
    let server = Counter::new(Scope::Server, "mx.example");
    let t1 = t0 + 10 * 86_400;
    let results = futures::future::join_all((0..20).map(|_| {
        let (handle, server) = (open(), server.clone());
        async move { handle.count_signup(&[server], t1).await.unwrap()[0] }
    }))
    .await;
    let mut hours: Vec<u64> = results.iter().map(|w| w.hour).collect();
    hours.sort_unstable();
    assert_eq!(hours, (1..=20).collect::<Vec<_>>());
}
with_all_backends!(signup_counts, signup_counts_slide_and_agree);

/// Issue 32, item 4: a server's wave is the distinct new domains signed up on it in the last
/// hour, the same from every handle, bounded; the boards keep the busiest values of their window,
/// at most `BOARD_KEPT`, and answer their floor once full.
async fn waves_and_boards(open: impl Fn() -> Arc<dyn StateStore>) {
    use email_verdict::state::signups::{BOARD_KEPT, Board, Entry, NewDomain, WAVE_DOMAINS_KEPT, Wave};
    let (store, other) = (open(), open());
    let t0 = DAY_START / 1000;
    let new = |domain: &str| NewDomain::new("mx.wave.example", domain);
    let wave = |n, added| Wave { new_domains: n, added };
    assert_eq!(store.count_new_domain(&new("a.example"), t0).await.unwrap(), wave(1, true));
    assert_eq!(other.count_new_domain(&new("a.example"), t0 + 5).await.unwrap(), wave(1, false), "one domain");
    assert_eq!(other.count_new_domain(&new("b.example"), t0 + 10).await.unwrap(), wave(2, true));
    let elsewhere = NewDomain::new("mx.other.example", "a.example");
    assert_eq!(store.count_new_domain(&elsewhere, t0 + 10).await.unwrap(), wave(1, true), "another server");
    // An hour after a.example's last signup it has left the wave; b.example has not yet.
    assert_eq!(store.count_new_domain(&new("c.example"), t0 + 3_605).await.unwrap(), wave(2, true));
    assert_eq!(store.count_new_domain(&new("a.example"), t0 + 3_606).await.unwrap(), wave(3, true), "new again");
    // Concurrent new domains on separate handles: each counted once.
    let t1 = t0 + 86_400;
    let results = futures::future::join_all((0..20).map(|i| {
        let (handle, new) = (open(), NewDomain::new("mx.burst.example", &format!("d{i}.example")));
        async move { handle.count_new_domain(&new, t1).await.unwrap() }
    }))
    .await;
    let mut counts: Vec<u64> = results.iter().map(|w| w.new_domains).collect();
    counts.sort_unstable();
    assert_eq!(counts, (1..=20).collect::<Vec<_>>());
    // Bounded: past WAVE_DOMAINS_KEPT the oldest go.
    let t2 = t1 + 86_400;
    for i in 0..WAVE_DOMAINS_KEPT + 5 {
        let got = store.count_new_domain(&NewDomain::new("mx.huge.example", &format!("h{i}.example")), t2).await;
        assert_eq!(got.unwrap().new_domains, (i + 1).min(WAVE_DOMAINS_KEPT));
    }

    // Boards: the latest count of each value, the busiest first, within the window.
    let entry = |board, value: &str, count| Entry { board, value: value.to_owned(), count };
    let floors = store
        .rank(&[entry(Board::Clients, "203.0.113.7", 3), entry(Board::Waves, "mx.wave.example", 12)], t0)
        .await
        .unwrap();
    assert_eq!(floors, [0, 0], "not full");
    other.rank(&[entry(Board::Clients, "198.51.100.1", 5)], t0 + 1).await.unwrap();
    other.rank(&[entry(Board::Clients, "203.0.113.7", 2)], t0 + 2).await.unwrap(); // overtaken: kept at 3
    let shown = |r: Vec<email_verdict::state::signups::Ranked>| -> Vec<(String, u64)> {
        r.into_iter().map(|r| (r.value, r.count)).collect()
    };
    let clients = shown(store.busiest(Board::Clients, t0 + 3, 10).await.unwrap());
    assert_eq!(clients, [("198.51.100.1".to_owned(), 5), ("203.0.113.7".to_owned(), 3)]);
    assert_eq!(shown(store.busiest(Board::Waves, t0 + 3, 10).await.unwrap()), [("mx.wave.example".to_owned(), 12)]);
    assert_eq!(store.busiest(Board::Waves, t0 + 3_600, 10).await.unwrap(), [], "the wave board is the hour's");
    assert_eq!(store.busiest(Board::Mailboxes, t0, 10).await.unwrap(), []);
    // A day later the count starts over from what it is then.
    store.rank(&[entry(Board::Clients, "203.0.113.7", 1)], t0 + 86_401).await.unwrap();
    assert_eq!(shown(store.busiest(Board::Clients, t0 + 86_401, 10).await.unwrap()), [("203.0.113.7".to_owned(), 1)]);
    // Bounded: past BOARD_KEPT the lowest counts go, and the floor says what can enter.
    let t3 = t0 + 3 * 86_400;
    let mut floor = 0;
    for i in 0..BOARD_KEPT as u64 + 10 {
        floor = store.rank(&[entry(Board::Servers, &format!("mx{i}.example"), i + 1)], t3).await.unwrap()[0];
    }
    let servers = store.busiest(Board::Servers, t3, BOARD_KEPT + 10).await.unwrap();
    assert_eq!(servers.len(), BOARD_KEPT);
    assert_eq!((servers[0].count, servers[BOARD_KEPT - 1].count, floor), (BOARD_KEPT as u64 + 10, 11, 11));

    // What a signup reads when another replica judged its domain: the server it waits on.
    let mut cause = ReviewCause::new(ReviewReason::Ambiguous);
    cause.servers = vec!["mx.wave.example".into(), "192.0.2.98".into()];
    store.note_for_review("w1.example", &cause, t0).await.unwrap();
    store.note_for_review("bare.example", &ReviewCause::new(ReviewReason::NoMx), t0).await.unwrap();
    assert_eq!(other.queued_server("w1.example").await.unwrap().as_deref(), Some("mx.wave.example"));
    assert_eq!(other.queued_server("bare.example").await.unwrap(), None, "no server of its own");
    assert_eq!(other.queued_server("never.example").await.unwrap(), None, "not queued");
    store.decide(decision_on("w1.example", Some(Decision::Allow), t0 + 1)).await.unwrap();
    assert_eq!(other.queued_server("w1.example").await.unwrap(), None, "decided: no longer waiting");
}
with_all_backends!(waves, waves_and_boards);
