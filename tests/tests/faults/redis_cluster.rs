//! Issue 16: two sidecars on one Redis Cluster (three primaries, three replicas): keys, quotas,
//! bursts and review decisions shared exactly; a primary killed under load, and the whole
//! cluster restarted: how long callers see 500 (with Retry-After), that both sidecars recover by
//! themselves, and that no key gets more 200 answers than its plan allows. Issue 31: a key
//! acknowledged by `keys create` survives its primary killed right after; a create that no
//! replica acknowledged in time says so.

use std::time::{Duration, Instant};

use email_verdict_tests::verdict::{check_error, check_ok};
use email_verdict_tests::{Load, Nsd, Outcome, RedisCluster, Request, Sidecar, api_target};

use super::{PACE, PROGRESS, both_recovered, check_store_fault, lookup, usage};

const PLANS: [&str; 4] = ["pro", "pro", "pro", "free"];

fn get(sc: &Sidecar, key: &str) -> email_verdict_tests::Response {
    sc.send(&Request::get(&api_target("ownmail.example", key)))
}

/// What `keys create` says on stderr when no replica had the key within the wait.
const NOT_REPLICATED: &str = "not yet on a replica";

#[test]
fn an_acknowledged_key_survives_a_failover_of_its_primary() {
    let mut cluster = RedisCluster::start(3);
    let nsd = Nsd::start();
    let a = Sidecar::builder().dns(nsd.addr()).state(&cluster.url()).keys(&[]).start();
    let out = a.cli().run(&["keys", "create", "--plan", "pro", "--name", "failover"]);
    out.expect_code(0, "keys create");
    assert!(!out.stderr.contains(NOT_REPLICATED), "healthy replicas had the key in time\n{out}");
    let key = out.last_line().to_owned();
    // The primary of the hash that authenticates the key, killed as soon as it is found.
    let owner = cluster.primary_holding("ev:keyhash:*").expect("a primary holds the key's hash");
    cluster.kill(owner);
    let killed = Instant::now();
    // 500 while the cluster fails over (2 s node timeout), then 200: the replica had the key.
    let answer = loop {
        let r = get(&a, &key);
        if r.status != 500 || killed.elapsed() > Duration::from_secs(30) {
            break r;
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    check_ok(&answer, "the key after its primary failed over");
}

#[test]
fn a_key_no_replica_acknowledged_in_time_is_created_with_a_warning() {
    let cluster = RedisCluster::start(3);
    let nsd = Nsd::start();
    let a = Sidecar::builder().dns(nsd.addr()).state(&cluster.primaries_url()).keys(&[]).start();
    let replicas = cluster.replicas();
    replicas.iter().for_each(|&i| cluster.signal(i, "-STOP"));
    let started = Instant::now();
    let out = a.cli().run(&["keys", "create", "--plan", "pro", "--name", "unreplicated"]);
    let took = started.elapsed();
    replicas.iter().for_each(|&i| cluster.signal(i, "-CONT"));
    out.expect_code(0, "keys create with the replicas stopped");
    assert!(out.stderr.contains(NOT_REPLICATED), "the answer says the key is not on a replica\n{out}");
    assert!(!out.stderr.contains(out.last_line()), "no key on stderr\n{out}");
    assert!(took < Duration::from_secs(3), "the wait is bounded: {took:?}");
}

#[test]
fn two_sidecars_on_a_cluster_share_keys_quotas_bursts_and_decisions() {
    let cluster = RedisCluster::start(3);
    let nsd = Nsd::start();
    let a = Sidecar::builder().dns(nsd.addr()).state(&cluster.url()).keys(&["free", "basic"]).start();
    let b = Sidecar::builder().dns(nsd.addr()).state(&cluster.url()).keys(&[]).start();
    let (free, basic) = (a.keys()[0].clone(), a.keys()[1].clone());
    // Two back-to-back requests of a free key (burst 1/s), one on each: 200 then 429.
    check_ok(&get(&a, &free), "free key on A");
    check_error(&get(&b, &free), 429, "rate_limit_exceeded", "the same second on B");
    // Then exactly three 200s in the day across both, then 402.
    let mut ok = 1;
    for i in 0..4 {
        std::thread::sleep(Duration::from_millis(1050));
        let r = get(if i % 2 == 0 { &b } else { &a }, &free);
        match r.status {
            200 => ok += 1,
            _ => {
                check_error(&r, 402, "quota_exceeded", "over the shared quota");
            }
        }
    }
    assert_eq!(ok, 3, "the free quota is shared exactly");
    // A reviewer's decision through A's CLI applies on B at once.
    check_ok(&get(&b, &basic), "before the decision");
    a.cli().run(&["review", "set", "ownmail.example", "disposable"]).expect_code(0, "review set");
    let after = get(&b, &basic);
    assert_eq!(check_ok(&after, "after the decision")["result"]["verdict"], "disposable", "{after}");
}

#[test]
fn a_primary_killed_under_load_and_a_whole_cluster_restart_are_survived() {
    let mut cluster = RedisCluster::start(3);
    let nsd = Nsd::start();
    let a = Sidecar::builder().dns(nsd.addr()).state(&cluster.url()).keys(&PLANS).start();
    let b = Sidecar::builder().dns(nsd.addr()).state(&cluster.url()).keys(&[]).start();
    let (addrs, keys) = ([a.addr(), b.addr()], a.keys().to_vec());
    // Worker w uses key w, alternating between the two sidecars.
    let load = Load::start(PLANS.len(), PACE, move |w, n| {
        let side = n as usize % 2;
        lookup(addrs[side], "ownmail.example", &keys[w], ["A", "B"][side])
    });
    load.wait_each(5, PROGRESS);

    // One primary killed: its replica takes over after the node timeout (2 s here).
    let victim = cluster.primaries()[0];
    cluster.kill(victim);
    let killed = Instant::now();
    let recovered = recovery(&load, killed);
    let failover = window_of_500s(&load.snapshot(), killed);
    cluster.restart(victim); // it rejoins as a replica
    cluster.wait_healthy();
    load.wait_each(5, PROGRESS);

    // Every node killed, then all started again from their append-only files.
    let all: Vec<usize> = (0..cluster.len()).collect();
    all.iter().for_each(|&i| cluster.kill(i));
    let down = Instant::now();
    std::thread::sleep(Duration::from_millis(1500));
    all.iter().for_each(|&i| cluster.restart(i));
    cluster.wait_healthy();
    let restart_recovered = recovery(&load, down);
    let restart = window_of_500s(&load.snapshot(), down);
    load.wait_each(5, PROGRESS);
    let outcomes = load.stop();

    eprintln!(
        "[measured] primary killed: 500s for {:?} (recovered {:?} after the kill); \
         whole cluster down 1.5 s and restarted: 500s for {:?} (recovered {:?} after the kill)",
        failover,
        recovered - killed,
        restart,
        restart_recovered - down
    );
    check_store_fault(&outcomes, &PLANS, restart_recovered, [&a, &b]);
    check_counts(&a, &outcomes, killed);
}

/// When both sidecars answered 200 again to requests sent after `since` (the first 100 ms are
/// left out: requests already on their way when the fault began).
fn recovery(load: &Load, since: Instant) -> Instant {
    both_recovered(load, since + Duration::from_millis(100), Duration::from_secs(30))
}

/// From the first request that got 500 after `since` to the end of the last one.
fn window_of_500s(outcomes: &[Outcome], since: Instant) -> Duration {
    let failed: Vec<&Outcome> = outcomes.iter().filter(|o| o.started >= since && o.status() == Some(500)).collect();
    match (failed.iter().map(|o| o.started).min(), failed.iter().map(|o| o.finished).max()) {
        (Some(first), Some(last)) => last - first,
        _ => Duration::ZERO,
    }
}

/// No key got more 200s than its plan allows (the free key: three), and every 200 was counted:
/// 200s <= count <= 200s + 500s (a 500 may follow an admission whose answer failed), except
/// what Redis's asynchronous replication can lose when a primary dies: admissions it
/// acknowledged in the moment before (`docs/configuration.md`, "State backends"), bounded here by the 200s
/// answered in the 50 ms before the kill.
fn check_counts(a: &Sidecar, outcomes: &[Outcome], killed: Instant) {
    for (k, plan) in PLANS.iter().enumerate() {
        let id = a.cli().row_named(&format!("test-{k}")).id;
        let used = usage(a, &id);
        let mine = || outcomes.iter().filter(move |o| o.worker == k);
        let of = |s: u16| mine().filter(|o| o.status() == Some(s)).count() as u64;
        let (ok, failed) = (of(200), of(500));
        let just_before = Duration::from_millis(50);
        let at_risk = mine()
            .filter(|o| o.status() == Some(200) && o.finished <= killed && o.finished + just_before >= killed)
            .count() as u64;
        if ok > used {
            eprintln!("[measured] key {k}: {} admissions lost with the killed primary", ok - used);
        }
        assert!(
            ok <= used + at_risk && used <= ok + failed,
            "key {k} ({plan}): count {used}, 200s {ok}, 500s {failed}, 200s just before the kill {at_risk}"
        );
        if *plan == "free" {
            assert!(ok <= 3, "free key: {ok} answers with a verdict, past its quota of 3");
        }
    }
}
