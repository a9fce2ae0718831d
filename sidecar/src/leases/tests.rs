//! The leases' figures for `/metrics`: store calls and what they moved, what is held, what is
//! owed. Against a real SQLite store (the store that keeps a journal).

use std::sync::atomic::{AtomicI64, Ordering};

use super::*;
use crate::state::{BURST_WINDOW_MS, SqliteStore};

/// A time the test moves by hand (the sweep reads it).
struct Manual(AtomicI64);

impl Clock for Manual {
    fn now_ms(&self) -> i64 {
        self.0.load(Ordering::Relaxed)
    }
}

/// 2023-11-14 22:13:20 UTC: far from midnight, at the start of a rate slot.
const T: i64 = 1_700_000_000_000;
const PRO: Limits = Limits { daily_quota: 20_000, burst_per_second: 50 };

/// Leases on a fresh SQLite store in the build tree (not /tmp: nothing to clean up), and the
/// counters they bump.
fn leases(name: &str) -> (Leases, Arc<Manual>, LeaseCounters) {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("../target/test-state/leases-{name}"));
    let _ = std::fs::remove_dir_all(&dir); // a previous run's database, WAL and journal
    std::fs::create_dir_all(&dir).unwrap();
    let store: Arc<dyn StateStore> = Arc::new(SqliteStore::open(dir.join("state.db")).unwrap());
    let clock = Arc::new(Manual(AtomicI64::new(T)));
    let counters = LeaseCounters::default();
    (Leases::new(store, clock.clone(), counters.clone()), clock, counters)
}

async fn admit(leases: &Leases, now_ms: i64) {
    let outcome = leases.admit("k", PRO, 1, now_ms).await.unwrap();
    assert!(matches!(outcome, Outcome::Admitted { .. }), "{outcome:?}");
}

#[tokio::test]
async fn store_calls_what_they_moved_and_what_is_held_are_counted() {
    let (leases, clock, c) = leases("held");
    let none = LeaseHeld { journal: Some(true), ..LeaseHeld::default() };
    assert_eq!(leases.held(), none, "SQLite: the journal is on");
    // Nothing spent before: the first request leases one unit and one place, spent at once (a
    // one-place block ends in the store).
    admit(&leases, T).await;
    assert_eq!((c.lease_ok.get(), c.units_granted.get(), c.places_granted.get()), (1, 1, 1));
    assert_eq!(leases.held(), none);
    // The second, 1 ms later: the rate so far in the slot, over half a slot (1 in 50 ms: 20 a
    // second), sizes the lease: units for a hold (3 s: 60), places a second, twice the rate (40),
    // at most half of the 49 free (24). The next three are spent from it.
    for i in 1..5 {
        admit(&leases, T + i).await;
    }
    assert_eq!((c.lease_ok.get(), c.units_granted.get(), c.places_granted.get()), (2, 61, 25));
    assert_eq!(leases.held(), LeaseHeld { keys: 1, units: 56, places: 20, ..none });
    // The next slot: still from the lease.
    clock.0.store(T + RATE_SLOT_MS, Ordering::Relaxed);
    admit(&leases, T + RATE_SLOT_MS).await;
    assert_eq!((c.lease_ok.get(), c.units_granted.get(), c.places_granted.get()), (2, 61, 25));
    assert_eq!(leases.held(), LeaseHeld { keys: 1, units: 55, places: 19, ..none });
    assert_eq!((c.give_back_ok.get(), c.lease_error.get(), c.give_back_error.get()), (0, 0, 0));

    // Idle: the sweep gives the rest back in one call.
    clock.0.store(T + RATE_SLOT_MS + IDLE_MS, Ordering::Relaxed);
    leases.sweep().await;
    assert_eq!((c.give_back_ok.get(), c.units_given_back.get()), (1, 55));
    assert_eq!(leases.held(), none);
    assert_eq!(c.units_granted.get() - c.units_given_back.get(), 6, "granted = spent + given back");
}

#[tokio::test]
async fn give_backs_owed_are_counted_until_confirmed_or_their_day_is_over() {
    let (leases, clock, c) = leases("owed");
    let today = utc_day(T / 1000);
    let yesterday = utc_day(T / 1000 - 86_400);
    leases.retry_later("k", GiveBack { id: "a".into(), day: today.clone(), units: 3, ..GiveBack::default() });
    leases.retry_later("k", GiveBack { id: "b".into(), day: today, units: 2, ..GiveBack::default() });
    leases.retry_later("k", GiveBack { id: "c".into(), day: yesterday, units: 7, ..GiveBack::default() });
    assert_eq!(leases.held().pending, 3);
    clock.0.store(T + SWEEP.as_millis() as i64, Ordering::Relaxed);
    leases.sweep().await;
    assert_eq!(leases.held().pending, 0, "two confirmed, yesterday's dropped");
    assert_eq!((c.give_back_ok.get(), c.units_given_back.get(), c.give_back_error.get()), (2, 5, 0));
}

#[test]
fn give_backs_put_back_after_a_failed_retry_stay_within_the_bound() {
    let mut pending: Vec<usize> = (MAX_PENDING..MAX_PENDING + 10).collect(); // added during the retry
    let failed: Vec<usize> = (0..MAX_PENDING).collect();
    assert_eq!(requeue(&mut pending, failed), 10, "the ten oldest go");
    assert_eq!(pending.len(), MAX_PENDING);
    assert_eq!((pending[0], pending[MAX_PENDING - 1]), (10, MAX_PENDING + 9), "oldest first, the newest kept");
    let mut pending = vec![7];
    assert_eq!(requeue(&mut pending, vec![5, 6]), 0);
    assert_eq!(pending, [5, 6, 7]);
}

/// The gateway's key (unlimited quota and burst) is leased too: its requests queued behind the
/// first store call are granted in one more, and the day's count is exact once the lease ends.
#[tokio::test]
async fn an_unlimited_key_is_leased_for_the_requests_waiting() {
    let (leases, clock, c) = leases("unlimited");
    let gateway = Limits { daily_quota: Limits::UNLIMITED, burst_per_second: Limits::UNLIMITED };
    let admitted = futures::future::join_all((0..50).map(|_| leases.admit("g", gateway, 1, T))).await;
    assert!(admitted.iter().all(|a| matches!(a, Ok(Outcome::Admitted { .. }))), "{admitted:?}");
    // One, then the 49 queued, or a hold at the rate so far in the slot if more (1 spent in
    // its first 50 ms: 20 a second, 60 units).
    assert_eq!((c.lease_ok.get(), c.units_granted.get(), c.places_granted.get()), (2, 61, 0));
    // The next slot: the 11 left spent first, then units for a 3 s hold at the rate of the
    // first 100 ms (50 in it).
    clock.0.store(T + RATE_SLOT_MS, Ordering::Relaxed);
    for _ in 0..101 {
        leases.admit("g", gateway, 1, T + RATE_SLOT_MS).await.unwrap();
    }
    assert_eq!((c.lease_ok.get(), c.units_granted.get()), (3, 61 + 1_500), "one call for the slot");
    clock.0.store(T + RATE_SLOT_MS + IDLE_MS, Ordering::Relaxed);
    leases.sweep().await;
    let used = leases.store.usage("g", &[utc_day(T / 1000)]).await.unwrap();
    assert_eq!(used, [151], "what was answered, the rest given back");
}

/// A steady rate well under the burst (32 a second against 50) is never refused: not when a
/// block is renewed, nor when one runs out; and its blocks keep up with it.
#[tokio::test]
async fn a_steady_rate_under_the_burst_is_never_refused() {
    let (leases, clock, c) = leases("steady");
    // Gaps of 1 to 61 ms (31 on average), as a loaded machine's client sends them.
    let outcomes = arrivals(&leases, &clock, 61, 640).await;
    let refused: Vec<_> = outcomes.iter().filter(|(_, o)| !matches!(o, Outcome::Admitted { .. })).collect();
    assert!(refused.is_empty(), "refused: {refused:?} ({} lease calls)", c.lease_ok.get());
    // A block renewed in place keeps the key's rate: a call about every 3 s (units topped up
    // and the block renewed together) and a few while the rate is learnt, not one per few
    // requests (13 here; 15 when units and block were renewed apart, 95 when a renewal's spends
    // counted beside the new block's places).
    assert!(c.lease_ok.get() <= 13, "{} lease calls for 640 requests", c.lease_ok.get());
}

/// Three replicas on one store, one key, rates from idle to several times the burst and back,
/// requests spread unevenly: no span of a second ever holds more admissions than the burst, as
/// blocks are granted, renewed in place, run out, idle and close (the store's proof, checked).
#[tokio::test]
async fn no_second_holds_more_than_the_burst_across_replicas() {
    let (first, clock, _) = leases("replicas");
    let store = first.store.clone();
    let others = (0..2).map(|_| Leases::new(store.clone(), clock.clone(), LeaseCounters::default()));
    let replicas: Vec<Leases> = std::iter::once(first).chain(others).collect();
    // Eight runs, each its own key and time, its own random arrivals and spread.
    for (run, first_seed) in [11u64, 23, 37, 41, 53, 67, 79, 97].into_iter().enumerate() {
        let key = format!("k{first_seed}");
        let start = T + run as i64 * 100_000;
        let (mut now_ms, mut seed, mut swept) = (start, first_seed, start);
        let mut random = |n: u64| {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (seed >> 33) % n
        };
        let mut admitted: Vec<i64> = Vec::new();
        // Requests a second in each 2 s phase.
        for rate in [10, 45, 48, 200, 30, 60, 0, 49, 500, 40, 20, 55] {
            let end = now_ms + 2_000;
            while now_ms < end {
                now_ms += (2 * 1_000u64).checked_div(rate).map_or(50, |gap| 1 + random(gap) as i64);
                clock.0.store(now_ms, Ordering::Relaxed);
                if now_ms - swept >= 100 {
                    for replica in &replicas {
                        replica.sweep().await;
                    }
                    swept = now_ms;
                }
                if rate == 0 {
                    continue;
                }
                // Most requests go to one replica, the rest split between the others.
                let replica = &replicas[[0, 0, 0, 1, 2][random(5) as usize]];
                if let Outcome::Admitted { .. } = replica.admit(&key, PRO, 1, now_ms).await.unwrap() {
                    admitted.push(now_ms);
                }
            }
        }
        let most = (0..admitted.len())
            .map(|i| admitted[..=i].iter().rev().take_while(|&&t| t > admitted[i] - BURST_WINDOW_MS).count())
            .max()
            .unwrap();
        assert!(most <= PRO.burst_per_second as usize, "run {run}: {most} admitted in one second, the burst is 50");
        assert!(most >= 40, "run {run}: the burst is used, not refused early everywhere: at most {most} in a second");
    }
}

/// A key that starts at 19 requests a second (a busy bench's share of 2,000 keys) is leased at
/// its rate from its first 100 ms: a handful of store calls while the rate is learnt, then
/// about one every 3 s (11 in its first 100 requests while its first blocks were sized from
/// a second it had mostly been idle for, 7 from 200 ms slots).
#[tokio::test]
async fn a_key_s_first_second_is_leased_at_its_rate() {
    let (leases, clock, c) = leases("ramp");
    let outcomes = arrivals(&leases, &clock, 105, 100).await;
    assert!(outcomes.iter().all(|(_, o)| matches!(o, Outcome::Admitted { .. })), "{outcomes:?}");
    assert!(c.lease_ok.get() <= 5, "{} lease calls for a key's first 100 requests", c.lease_ok.get());
}

/// A key at 30 a second from idle (the bench's keys at the start of a run): its second request
/// leases for a hold at the rate so far, so its first 100 ms cost two store calls, not one a
/// request until the slot is over, and its first 3 s three in all.
#[tokio::test]
async fn a_busy_key_s_first_slot_costs_two_store_calls() {
    let (leases, clock, c) = leases("busy");
    let mut calls = Vec::new();
    for i in 0..90 {
        let now_ms = T + 7 + i * 33;
        clock.0.store(now_ms, Ordering::Relaxed);
        if i % 3 == 0 {
            leases.sweep().await;
        }
        admit(&leases, now_ms).await;
        if i == 2 {
            calls.push(c.lease_ok.get());
        }
    }
    calls.push(c.lease_ok.get());
    assert_eq!(calls, [2, 3], "store calls after the first 100 ms, and after 3 s");
}

/// `n` requests for "k" from T, at random gaps of 1 to `gap_max` ms, the leases swept every
/// 100 ms as the sidecar does: when each came (ms after T) and its outcome.
async fn arrivals(leases: &Leases, clock: &Manual, gap_max: i64, n: usize) -> Vec<(i64, Outcome)> {
    let (mut now_ms, mut seed, mut swept) = (T, 7u64, T);
    let mut outcomes = Vec::with_capacity(n);
    for _ in 0..n {
        seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        now_ms += 1 + (seed >> 33) as i64 % gap_max;
        clock.0.store(now_ms, Ordering::Relaxed);
        if now_ms - swept >= 100 {
            leases.sweep().await;
            swept = now_ms;
        }
        outcomes.push((now_ms - T, leases.admit("k", PRO, 1, now_ms).await.unwrap()));
    }
    outcomes
}
