//! Keys, their quota and burst, admissions under concurrency, and a Redis outage.

use super::*;

async fn keys_round_trip(open: impl Fn() -> Arc<dyn StateStore>) {
    let store = open();
    let (key, secret) = new_key(&*store, plan("free")).await;
    assert_eq!(store.key_by_hash(&secret.hash()).await.unwrap().as_deref(), Some(&key));
    assert_eq!(store.key_by_id(&key.id).await.unwrap(), Some(key.clone()));
    assert_eq!(store.key_by_hash(&ApiKey::generate().unwrap().hash()).await.unwrap(), None);
    let nets = vec!["192.0.2.0/24".parse().unwrap(), "2001:db8::/32".parse().unwrap()];
    let change = KeyChange { plan: Some(plan("pro")), allow_ips: Some(nets.clone()), name: None };
    let changed = store.update_key(&key.id, change).await.unwrap().unwrap();
    assert_eq!((changed.plan.clone(), changed.allow_ips.clone(), changed.name.as_str()), (plan("pro"), nets, "t"));
    assert_eq!(store.update_key("key_nope", KeyChange::default()).await.unwrap(), None);
    // Another handle (another process) sees the change and the revocation.
    let other = open();
    assert_eq!(other.key_by_hash(&secret.hash()).await.unwrap().as_deref(), Some(&changed));
    assert!(store.revoke_key(&key.id).await.unwrap());
    assert!(!store.revoke_key("key_nope").await.unwrap());
    assert!(other.key_by_id(&key.id).await.unwrap().unwrap().revoked);
    let listed = other.list_keys("2026-11-22").await.unwrap();
    assert_eq!(listed.len(), 1);
    assert!(listed[0].key.revoked);
}
with_all_backends!(keys, keys_round_trip);

/// A key's record as a replica that already read it (and keeps it in memory) reads it again
/// once its version check is due.
async fn read_after_a_check(replica: &dyn StateStore, secret: &ApiKey) -> Option<Arc<KeyRecord>> {
    tokio::time::sleep(Duration::from_millis(email_verdict::state::KEY_CHECK_MS * 3)).await;
    replica.key_by_hash(&secret.hash()).await.unwrap()
}

/// Issue 46: key records are served from memory, and a change made through another handle (a
/// replica, the CLI) reaches this one at its next version check, not after a fixed time.
async fn a_key_change_reaches_a_replica_that_holds_it_in_memory(open: impl Fn() -> Arc<dyn StateStore>) {
    let (store, replica) = (open(), open());
    let (key, secret) = new_key(&*store, plan("free")).await;
    assert_eq!(replica.key_by_hash(&secret.hash()).await.unwrap().map(|k| k.plan.clone()), Some(plan("free")));
    let change = KeyChange { plan: Some(plan("pro")), ..KeyChange::default() };
    store.update_key(&key.id, change).await.unwrap().unwrap();
    assert_eq!(read_after_a_check(&*replica, &secret).await.map(|k| k.plan.clone()), Some(plan("pro")), "plan change");
    assert!(store.revoke_key(&key.id).await.unwrap());
    assert!(read_after_a_check(&*replica, &secret).await.is_some_and(|k| k.revoked), "revocation");
    // A key the replica was shown before it existed (remembered as unknown), then created.
    let (later, later_secret) = (ApiKey::generate().unwrap(), ApiKey::generate().unwrap());
    assert_eq!(replica.key_by_hash(&later_secret.hash()).await.unwrap(), None);
    let record = KeyRecord {
        id: email_verdict::keys::new_key_id().unwrap(),
        name: "late".into(),
        plan: plan("basic"),
        allow_ips: vec![],
        created_at: 2,
        revoked: false,
    };
    store.insert_key(record.clone(), later_secret.hash()).await.unwrap();
    assert_eq!(read_after_a_check(&*replica, &later_secret).await.as_deref(), Some(&record), "a key created");
    assert_eq!(replica.key_by_hash(&later.hash()).await.unwrap(), None);
}
with_all_backends!(key_changes, a_key_change_reaches_a_replica_that_holds_it_in_memory);

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
with_all_backends!(quota, quota_is_exact_and_resets_at_midnight, valkey_cluster);

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

/// A replica's place block renewed in place: the new block replaces it, counted as at least the
/// places spent before the renewal (they stay in the window), and grows by half of what is free
/// beyond them; refused, the renewal closes the block.
async fn a_renewal_replaces_its_block_and_counts_what_was_spent(open: impl Fn() -> Arc<dyn StateStore>) {
    let store = open();
    let (key, _) = new_key(&*store, plan("pro")).await;
    let limits = Limits { daily_quota: 1_000, burst_per_second: 20 };
    let t = DAY_START + 5_000;
    let ask = |places_min, places_want, close: Option<(String, u64)>| LeaseAsk {
        units_min: 1,
        units_want: 1,
        places_min,
        places_want,
        hold_ms: 3_000,
        renew: close.is_some(),
        close: close.map(|(block, spent)| Closing { block, spent, last_ms: t + 10 }),
        ..LeaseAsk::default()
    };
    let lease = async |ask: LeaseAsk, at: i64| match store.lease(&key.id, limits, &ask, at).await.unwrap() {
        Leased::Granted { places, block, .. } => (places, block),
        other => panic!("{other:?}"),
    };
    let (places, a) = lease(ask(1, 10, None), t).await;
    assert_eq!(places, 10, "half of the 20 free");
    assert_eq!(lease(ask(1, 100, None), t + 1).await.0, 5, "another replica: half of the 10 left");
    // 8 of the first block spent; renewed for 2: it still counts 8 (the spends stay in the window).
    let (places, a) = lease(ask(1, 2, Some((a, 8))), t + 20).await;
    assert_eq!(places, 2);
    assert_eq!(lease(ask(1, 100, None), t + 21).await.0, 3, "20 - 5 - 8 = 7 free, half of them");
    // Renewed again, wanting more: what it spent (2) and half of the rest (20 - 5 - 3 - 2 = 10).
    let (places, a) = lease(ask(3, 20, Some((a, 2))), t + 30).await;
    assert_eq!(places, 7);
    // A renewal that needs more than is free is refused and closes the block (its 2 spent
    // stay): 12 free beside it, 13 needed; 20 - 5 - 3 - 2 = 10 free after it.
    let refused = store.lease(&key.id, limits, &ask(13, 20, Some((a, 2))), t + 40).await.unwrap();
    assert!(matches!(refused, Leased::RateLimited { .. }), "{refused:?}");
    assert_eq!(lease(ask(1, 100, None), t + 41).await.0, 5, "half of the 10 free");
}
with_all_backends!(renewal, a_renewal_replaces_its_block_and_counts_what_was_spent);

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
with_all_backends!(concurrency, concurrent_admissions_never_exceed_limits, valkey_cluster);

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
