//! Issue 46: admission from leased quota, against real processes on one Redis. Three replicas
//! hammered at several times a key's limits never answer more than its plan: not in a day, not
//! in any second (the burst), not with a replica killed with `kill -9` and restarted mid-run,
//! not across midnight; and once the hammering stops, the leases end and what is left of the
//! quota is usable again; and the same hammering on a Redis Cluster. Each test fails if a
//! single unit goes over.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use email_verdict_tests::{Nsd, Redis, RedisCluster, Request, Sidecar, api_target};

/// One answer: when its request was sent and answered (its admission lies between), its status
/// and the day its units counted on (`X-RateLimit-Reset`: the midnight after it).
struct Answer {
    sent: Instant,
    got: Instant,
    status: u16,
    reset: Option<String>,
}

/// A plan small enough to spend in a test: quota 40, burst 20 (and the built-in four).
const TINY: &str = "[plans.tiny]\ndaily-quota = 40\nburst-per-second = 20\n";

fn replicas(state: &str, nsd: &Nsd, plans: &[&str], env: &[(&str, &str)]) -> Vec<Sidecar> {
    (0..3)
        .map(|i| {
            let mut b = Sidecar::builder().dns(nsd.addr()).state(state).settings(TINY);
            b = b.keys(if i == 0 { plans } else { &[] });
            for (k, v) in env {
                b = b.env(k, v);
            }
            b.start()
        })
        .collect()
}

/// `threads` clients sending lookups with `key` as fast as they are answered, each through
/// every replica in turn, until `until`; a request that finds no process (one killed) is skipped.
fn hammer(addrs: &[SocketAddr], key: &str, threads: usize, until: Instant) -> std::thread::JoinHandle<Vec<Answer>> {
    let (addrs, target) = (addrs.to_vec(), api_target("ownmail.example", key));
    std::thread::spawn(move || {
        let clients: Vec<_> = (0..threads)
            .map(|t| {
                let (addrs, target) = (addrs.clone(), target.clone());
                std::thread::spawn(move || {
                    let mut answers = Vec::new();
                    let mut i = t;
                    while Instant::now() < until {
                        let req = Request::get(&target).timeout(Duration::from_secs(5));
                        let sent = Instant::now();
                        if let Ok(r) = req.try_send(addrs[i % addrs.len()]) {
                            let reset = r.header("x-ratelimit-reset").map(str::to_owned);
                            answers.push(Answer { sent, got: Instant::now(), status: r.status, reset });
                        }
                        i += 1;
                    }
                    answers
                })
            })
            .collect();
        clients.into_iter().flat_map(|c| c.join().expect("client thread")).collect()
    })
}

fn ok(answers: &[Answer]) -> Vec<&Answer> {
    answers.iter().filter(|a| a.status == 200).collect()
}

/// Only 200, 402 and 429 (a store failure or anything else fails the test).
fn assert_only_limits(answers: &[Answer], what: &str) {
    let other: Vec<u16> = answers.iter().map(|a| a.status).filter(|s| ![200, 402, 429].contains(s)).collect();
    assert!(other.is_empty(), "{what}: unexpected statuses {other:?}");
}

/// No second with more than `burst` answered 200: fails when `burst + 1` of them were surely
/// admitted within less than a second (all sent after the first was sent, and answered less than
/// a second after it).
fn assert_no_second_over(answers: &[Answer], burst: usize, what: &str) {
    let mut oks = ok(answers);
    oks.sort_by_key(|a| a.sent);
    for (i, first) in oks.iter().enumerate() {
        let mut got: Vec<Instant> = oks[i..].iter().map(|a| a.got).collect();
        got.sort();
        if let Some(last) = got.get(burst) {
            let span = last.duration_since(first.sent);
            assert!(span >= Duration::from_secs(1), "{what}: {} answered 200 within {span:?}", burst + 1);
        }
    }
}

#[test]
fn three_replicas_hammered_never_answer_more_than_a_free_or_basic_plan() {
    let redis = Redis::start();
    hammered_free_and_basic(&redis.url());
}

/// The same on a Redis Cluster (three primaries, three replicas): a key's lease script, its
/// records and its window live in the key's one slot.
#[test]
fn three_replicas_on_a_cluster_never_answer_more_than_a_free_or_basic_plan() {
    let cluster = RedisCluster::start(3);
    hammered_free_and_basic(&cluster.url());
}

fn hammered_free_and_basic(state: &str) {
    let nsd = Nsd::start();
    let sc = replicas(state, &nsd, &["free", "basic"], &[]);
    let addrs: Vec<SocketAddr> = sc.iter().map(Sidecar::addr).collect();
    let (free, basic) = (sc[0].keys()[0].clone(), sc[0].keys()[1].clone());
    let until = Instant::now() + Duration::from_secs(4);
    let (free_run, basic_run) = (hammer(&addrs, &free, 6, until), hammer(&addrs, &basic, 9, until));
    let (free_answers, basic_answers) = (free_run.join().unwrap(), basic_run.join().unwrap());
    assert_only_limits(&free_answers, "free");
    assert_only_limits(&basic_answers, "basic");
    let free_ok = ok(&free_answers).len();
    assert!((1..=3).contains(&free_ok), "free key: {free_ok} answered 200 of a quota of 3");
    assert_no_second_over(&free_answers, 1, "free key");
    assert_no_second_over(&basic_answers, 10, "basic key");
    assert!(basic_answers.len() > 80, "basic: only {} requests: not several times its limit", basic_answers.len());
    assert!(ok(&basic_answers).len() >= 10, "basic: fewer than one second's burst answered in 4 s");
}

#[test]
fn a_replica_killed_with_sigkill_mid_run_never_lets_a_key_over() {
    let redis = Redis::start();
    let nsd = Nsd::start();
    let mut sc = replicas(&redis.url(), &nsd, &["tiny", "free"], &[]);
    let addrs: Vec<SocketAddr> = sc.iter().map(Sidecar::addr).collect();
    let (tiny, free) = (sc[0].keys()[0].clone(), sc[0].keys()[1].clone());
    let until = Instant::now() + Duration::from_secs(5);
    let (tiny_run, free_run) = (hammer(&addrs, &tiny, 9, until), hammer(&addrs, &free, 3, until));
    std::thread::sleep(Duration::from_millis(700));
    sc[1].kill();
    std::thread::sleep(Duration::from_millis(300));
    sc[1].restart();
    let (tiny_answers, free_answers) = (tiny_run.join().unwrap(), free_run.join().unwrap());
    assert_only_limits(&tiny_answers, "tiny");
    assert_only_limits(&free_answers, "free");
    let tiny_ok = ok(&tiny_answers).len();
    assert!(tiny_ok <= 40, "tiny key: {tiny_ok} answered 200 of a quota of 40 across a kill -9");
    assert!(tiny_ok >= 20, "tiny key: only {tiny_ok} of 40 answered in 5 s: refusals far too early");
    assert!(ok(&free_answers).len() <= 3, "free key: {} answered 200 of 3", ok(&free_answers).len());
    assert_no_second_over(&tiny_answers, 20, "tiny key");
    assert_no_second_over(&free_answers, 1, "free key");
}

#[test]
fn the_day_rolling_over_mid_run_gives_a_new_quota_and_never_more() {
    let redis = Redis::start();
    let nsd = Nsd::start();
    // Every replica's clock (test-only hook) 2.5 s before a midnight UTC, shifted alike.
    let now_ms = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as i64;
    let midnight = (now_ms / 86_400_000 + 1) * 86_400_000;
    // Replicas take a while to start: aim at the run, which starts after them.
    let offset = (midnight - 2_500 - now_ms - 4_000).to_string();
    let sc = replicas(&redis.url(), &nsd, &["tiny", "free"], &[("EMAIL_VERDICT_TEST_CLOCK_OFFSET_MS", &offset)]);
    let addrs: Vec<SocketAddr> = sc.iter().map(Sidecar::addr).collect();
    let (tiny, free) = (sc[0].keys()[0].clone(), sc[0].keys()[1].clone());
    let until = Instant::now() + Duration::from_secs(7);
    let (tiny_run, free_run) = (hammer(&addrs, &tiny, 9, until), hammer(&addrs, &free, 3, until));
    let (tiny_answers, free_answers) = (tiny_run.join().unwrap(), free_run.join().unwrap());
    for (answers, quota, what) in [(&tiny_answers, 40, "tiny"), (&free_answers, 3, "free")] {
        assert_only_limits(answers, what);
        let mut days: std::collections::BTreeMap<String, usize> = Default::default();
        for a in ok(answers) {
            *days.entry(a.reset.clone().expect("X-RateLimit-Reset on a 200")).or_default() += 1;
        }
        assert!(days.values().all(|&n| n <= quota), "{what}: over its quota of {quota} on a day: {days:?}");
        assert_eq!(days.len(), 2, "{what}: the run did not cross midnight: {days:?}");
    }
    assert_no_second_over(&tiny_answers, 20, "tiny key");
    assert_no_second_over(&free_answers, 1, "free key");
}

#[test]
fn refusals_stop_being_early_once_the_hammering_stops() {
    let redis = Redis::start();
    let nsd = Nsd::start();
    let sc = replicas(&redis.url(), &nsd, &["tiny"], &[]);
    let addrs: Vec<SocketAddr> = sc.iter().map(Sidecar::addr).collect();
    let tiny = sc[0].keys()[0].clone();
    // Long enough for the replicas to take blocks, not for the quota of 40 (20 a second at most).
    let answers = hammer(&addrs, &tiny, 6, Instant::now() + Duration::from_millis(900)).join().unwrap();
    assert_only_limits(&answers, "tiny");
    let first = ok(&answers).len();
    assert!(first < 40, "tiny: {first} answered in 0.9 s");
    // The leases end within their idle time (1 s) and a sweep: then one replica alone gets
    // exactly what is left, a second apart at most 20 a second.
    std::thread::sleep(Duration::from_millis(1_500));
    let target = api_target("ownmail.example", &tiny);
    let mut more = 0;
    let started = Instant::now();
    loop {
        let r = Request::get(&target).send(addrs[2]);
        match r.status {
            200 => more += 1,
            429 => std::thread::sleep(Duration::from_millis(100)),
            402 => break,
            s => panic!("unexpected {s}: {}", r.text()),
        }
        assert!(started.elapsed() < Duration::from_secs(20), "no 402 after 20 s");
    }
    assert_eq!(first + more, 40, "{first} answered while hammered, {more} after: the quota is 40");
}
