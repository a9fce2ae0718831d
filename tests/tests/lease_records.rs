//! Issue 46: the Redis store's leases and give-backs are applied once, whatever a client
//! retries, and a lease whose answer was lost can be settled. Against a real Redis and a real
//! Redis Cluster, through `RedisStore` itself (the scripts as the sidecar runs them).

use email_verdict::state::{GiveBack, KeyStore, LeaseAsk, Leased, Limits, RedisStore};
use email_verdict_tests::{Redis, RedisCluster};

const DAY_MS: i64 = 1_790_000_000_000;
const LIMITS: Limits = Limits { daily_quota: 1_000, burst_per_second: 100 };

fn ask(id: &str) -> LeaseAsk {
    LeaseAsk {
        id: id.into(),
        units_min: 1,
        units_want: 10,
        places_min: 1,
        places_want: 5,
        hold_ms: 1_000,
        ..LeaseAsk::default()
    }
}

fn day() -> String {
    email_verdict::clock::utc_day(DAY_MS / 1000)
}

async fn used(store: &RedisStore, key: &str) -> u64 {
    store.usage(key, &[day()]).await.expect("usage")[0]
}

async fn units(store: &RedisStore, key: &str, ask: &LeaseAsk) -> u64 {
    match store.lease(key, LIMITS, ask, DAY_MS).await.expect("lease") {
        Leased::Granted { units, .. } => units,
        other => panic!("not granted: {other:?}"),
    }
}

async fn check(store: RedisStore) {
    let key = "records";
    // A lease sent twice (a retry after a lost answer) grants once and answers the same twice.
    let first = units(&store, key, &ask("a")).await;
    assert_eq!(first, 10);
    assert_eq!(units(&store, key, &ask("a")).await, first, "the retry answers the first grant");
    assert_eq!(used(&store, key).await, 10, "counted once");
    // A lease whose answer was lost ("b" ran, its caller saw an error): settled by id, whole.
    units(&store, key, &ask("b")).await;
    assert_eq!(used(&store, key).await, 20);
    let settle = GiveBack { id: "g1".into(), day: day(), lost: vec!["b".into()], ..GiveBack::default() };
    store.give_back(key, &settle).await.expect("give back");
    assert_eq!(used(&store, key).await, 10, "b's 10 units back");
    // The same give-back again (a retry) changes nothing.
    store.give_back(key, &settle).await.expect("give back again");
    assert_eq!(used(&store, key).await, 10, "applied once");
    // Settled before it ran (a late delivery): the lease then grants nothing.
    let early = GiveBack { id: "g2".into(), day: day(), lost: vec!["c".into()], ..GiveBack::default() };
    store.give_back(key, &early).await.expect("give back");
    assert_eq!(units(&store, key, &ask("c")).await, 0, "a settled lease grants nothing");
    assert_eq!(used(&store, key).await, 10);
    // Unspent units of a known lease, once.
    let unspent = GiveBack { id: "g3".into(), day: day(), units: 4, ended: vec!["a".into()], ..GiveBack::default() };
    store.give_back(key, &unspent).await.expect("give back");
    store.give_back(key, &unspent).await.expect("give back again");
    assert_eq!(used(&store, key).await, 6, "4 unspent back, once");
    // An ended lease's record is gone: the same id is a new lease.
    assert_eq!(units(&store, key, &ask("a")).await, 10, "a new lease under an ended id");
}

fn run(url: &str) {
    let store = RedisStore::open(url).expect("open");
    tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime").block_on(check(store));
}

#[test]
fn leases_and_give_backs_apply_once_on_redis() {
    let redis = Redis::start();
    run(&redis.url());
}

#[test]
fn leases_and_give_backs_apply_once_on_a_cluster() {
    let cluster = RedisCluster::start(3);
    run(&cluster.url());
}
