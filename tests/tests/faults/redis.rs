//! Redis (and Valkey, the same test) is killed (SIGKILL) while two sidecars sharing it take
//! requests, then restarted on the same port and data (append-only file, fsync on every write:
//! see `tests/src/redis.rs`).

use std::time::{Duration, Instant};

use email_verdict_tests::{Load, Nsd, Outcome, Redis, Request, Server, Sidecar, wait_for};

use super::{PACE, PROGRESS, both_recovered, check_store_fault, lookup, nonempty, usage};

const PLANS: [&str; 4] = ["pro", "pro", "pro", "free"];

#[test]
fn redis_killed_under_load_gives_bounded_500s_and_recovers_with_exact_counts() {
    killed_under_load(Server::Redis);
}

#[test]
fn valkey_killed_under_load_gives_bounded_500s_and_recovers_with_exact_counts() {
    killed_under_load(Server::Valkey);
}

/// `/readyz` takes a sidecar whose store is gone out of its Service (503 naming the store) and
/// back once the store answers; `/healthz`, the liveness probe, stays 200 throughout (a restart
/// would not bring Redis back).
#[test]
fn readiness_follows_the_store_and_liveness_does_not() {
    let mut redis = Redis::start();
    let sc = Sidecar::builder().state(&redis.url()).keys(&[]).start();
    let probe = |path: &str| {
        let r = Request::get(path).send(sc.admin_addr());
        (r.status, String::from_utf8_lossy(&r.body).into_owned())
    };
    assert_eq!(probe("/readyz"), (200, "ready".to_owned()));
    redis.kill();
    let (status, why) = wait_for("/readyz to say 503", Duration::from_secs(10), || {
        Some(probe("/readyz")).filter(|(status, _)| *status == 503)
    });
    assert!(why.contains("state store"), "{status} {why}");
    assert_eq!(probe("/healthz").0, 200, "liveness must not follow the store");
    redis.restart();
    wait_for("/readyz to say 200 again", Duration::from_secs(15), || {
        Some(probe("/readyz")).filter(|(status, _)| *status == 200)
    });
}

fn killed_under_load(server: Server) {
    let mut redis = Redis::start_on(server);
    let nsd = Nsd::start();
    let a = Sidecar::builder().dns(nsd.addr()).state(&redis.url()).keys(&PLANS).start();
    let b = Sidecar::builder().dns(nsd.addr()).state(&redis.url()).keys(&[]).start();
    let (addrs, keys) = ([a.addr(), b.addr()], a.keys().to_vec());
    // Worker w uses key w: 0 on A, 1 on B, 2 and 3 (free) alternate between them.
    let load = Load::start(PLANS.len(), PACE, move |w, n| {
        let side = match w {
            0 => 0,
            1 => 1,
            _ => n as usize % 2,
        };
        lookup(addrs[side], "ownmail.example", &keys[w], ["A", "B"][side])
    });
    load.wait_each(5, PROGRESS);
    redis.kill();
    let down = Instant::now();
    std::thread::sleep(Duration::from_millis(1500)); // past the 0.5 s key cache
    load.wait_each(3, PROGRESS);
    let repairing = Instant::now();
    redis.restart();
    let up = Instant::now();
    let recovered = both_recovered(&load, up, Duration::from_secs(20));
    load.wait_each(5, PROGRESS);
    let outcomes = load.stop();

    check_store_fault(&outcomes, &PLANS, recovered, [&a, &b]);
    for side in ["A", "B"] {
        let out: Vec<&Outcome> = outcomes.iter().filter(|o| o.tag == side && o.within(down, repairing)).collect();
        for o in nonempty(out, &format!("the outage on {side}")) {
            assert_eq!(o.status(), Some(500), "Redis down: {o}");
        }
    }
    check_counts(&a, &outcomes);
}

/// Each key's stored count against what its worker got. Every 200 was counted and persisted
/// before it was sent (Redis acknowledges a write only after the fsync), so count >= 200s. A
/// request counted without a 200 is one whose refund could not reach Redis: it got a 500. So
/// 200s <= count <= 200s + 500s; and a free key never passes its quota of 3.
fn check_counts(a: &Sidecar, outcomes: &[Outcome]) {
    for (w, plan) in PLANS.iter().enumerate() {
        let id = a.cli().row_named(&format!("test-{w}")).id;
        let used = usage(a, &id);
        let of = |s: u16| outcomes.iter().filter(|o| o.worker == w && o.status() == Some(s)).count() as u64;
        let (ok, failed) = (of(200), of(500));
        assert!(ok <= used && used <= ok + failed, "key {w} ({plan}): count {used}, 200s {ok}, 500s {failed}");
        if *plan == "free" {
            assert!(used <= 3 && ok <= 3, "free key: count {used}, 200s {ok}: past the quota");
        }
    }
}
