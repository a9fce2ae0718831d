//! DNS behaviour: caching, coalescing of concurrent lookups, failures (never reported as "no
//! MX"), serving stale answers while the nameserver is down.

use email_verdict_tests::dns::{BlackHole, qtype};
use email_verdict_tests::process::free_udp_tcp_port;
use email_verdict_tests::verdict::{check_error, check_ok};
use email_verdict_tests::{DnsCounter, Nsd, Request, Response, Sidecar, api_target, start, start_with, wait_for};
use std::net::SocketAddr;
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

/// The bound on a lookup against a broken nameserver: a hang guard, not a performance target.
const HANG_GUARD: Duration = Duration::from_secs(15);

/// Asserts a 500 internal_error with a Retry-After header.
fn check_retry_later(resp: &Response, what: &str) {
    check_error(resp, 500, "internal_error", what);
    let ra = resp.header("retry-after").unwrap_or_else(|| panic!("{what}: no Retry-After\n{resp}"));
    assert!(
        ra.trim().parse::<u64>().is_ok() || ra.contains("GMT"),
        "{what}: Retry-After {ra:?} is neither seconds nor an HTTP date"
    );
}

/// One lookup, timed, with a generous client timeout.
fn timed_lookup(sc: &Sidecar, seg: &str) -> (Response, Duration) {
    let req = Request::get(&api_target(seg, sc.key())).timeout(HANG_GUARD + Duration::from_secs(5));
    let started = Instant::now();
    let resp = sc.send(&req);
    (resp, started.elapsed())
}

#[test]
fn second_lookup_is_cached() {
    let (sc, _nsd) = start();
    for seg in ["shopco.example", "gmail.com"] {
        let first = sc.lookup_ok(seg);
        assert_eq!(first["result"]["cached"], false, "{seg}, first lookup: {first:#}");
        let second = sc.lookup_ok(seg);
        assert_eq!(second["result"]["cached"], true, "{seg}, second lookup: {second:#}");
        let (mut a, mut b) = (first["result"].clone(), second["result"].clone());
        a["cached"] = true.into();
        b["cached"] = true.into();
        assert_eq!(a, b, "{seg}: a cached answer differs from the fresh one");
    }
    // the cache is per domain, not per input: an email and other spellings hit it too (a bare
    // domain may end with DNS's root dot; an email may not, as validators refuse it)
    let v = sc.lookup_ok("someone%40SHOPCO.example");
    assert_eq!(v["result"]["cached"], true, "{v:#}");
    let v = sc.lookup_ok("SHOPCO.example.");
    assert_eq!(v["result"]["cached"], true, "{v:#}");
}

#[test]
fn negative_answers_are_cached_too() {
    let (sc, _nsd) = start();
    for seg in ["nomx.example", "doesnotexist.example", "nullmx.example"] {
        let first = sc.lookup_ok(seg);
        assert_eq!(first["result"]["cached"], false, "{seg}, first lookup: {first:#}");
        let second = sc.lookup_ok(seg);
        assert_eq!(second["result"]["cached"], true, "{seg}, second lookup: {second:#}");
    }
}

#[test]
fn concurrent_lookups_of_one_domain_make_one_mx_query() {
    const N: usize = 50;
    let nsd = Nsd::start();
    let counter = DnsCounter::start(nsd.addr());
    // five keys, ten requests each: well inside every plan's burst limit
    let sc = Arc::new(Sidecar::builder().dns(counter.addr()).keys(&["pro", "pro", "pro", "pro", "pro"]).start());
    let barrier = Arc::new(Barrier::new(N));
    let threads: Vec<_> = (0..N)
        .map(|i| {
            let sc = sc.clone();
            let barrier = barrier.clone();
            std::thread::spawn(move || {
                let key = sc.keys()[i % sc.keys().len()].clone();
                let req = Request::get(&api_target("ownmail.example", &key));
                barrier.wait();
                sc.send(&req)
            })
        })
        .collect();
    let responses: Vec<Response> = threads.into_iter().map(|t| t.join().expect("thread")).collect();
    for (i, resp) in responses.iter().enumerate() {
        let v = check_ok(resp, &format!("concurrent request {i}"));
        assert_eq!(
            v["result"]["mx_records"],
            serde_json::json!(["mx1.ownmail.example", "mx2.ownmail.example"]),
            "request {i}"
        );
    }
    let mx = counter.count("ownmail.example", qtype::MX);
    assert_eq!(mx, 1, "{N} concurrent lookups made {mx} MX queries; all queries seen: {:?}", counter.queries());
    let fresh = responses.iter().filter(|r| r.json()["result"]["cached"] == false).count();
    assert!(fresh >= 1, "no response says it was a fresh lookup");
}

#[test]
fn a_cached_domain_makes_no_more_queries() {
    let nsd = Nsd::start();
    let counter = DnsCounter::start(nsd.addr());
    let sc = Sidecar::builder().dns(counter.addr()).start();
    sc.lookup_ok("ownmail.example");
    let before = counter.queries().len();
    for _ in 0..5 {
        sc.lookup_ok("ownmail.example");
    }
    assert_eq!(counter.queries().len(), before, "cached lookups went to DNS: {:?}", &counter.queries()[before..]);
}

#[test]
fn dead_nameserver_is_an_internal_error_not_no_mx() {
    let port = free_udp_tcp_port();
    let dead = SocketAddr::from(([127, 0, 0, 1], port));
    let sc = Sidecar::builder().dns(dead).start();
    for attempt in ["first", "second"] {
        let (resp, took) = timed_lookup(&sc, "ownmail.example");
        check_retry_later(&resp, &format!("{attempt} lookup with a dead nameserver"));
        assert!(took < HANG_GUARD, "{attempt} lookup took {took:?}");
    }
}

#[test]
fn silent_nameserver_times_out_into_an_internal_error() {
    let hole = BlackHole::start();
    let sc = Sidecar::builder().dns(hole.addr()).args(&["--dns-timeout-ms", "500"]).start();
    let (resp, took) = timed_lookup(&sc, "ownmail.example");
    check_retry_later(&resp, "lookup with a nameserver that never answers");
    // README: a whole lookup is bounded by 4 x --dns-timeout-ms + 0.5 s (plus 1 s of slack here)
    assert!(took < Duration::from_millis(4 * 500 + 500 + 1000), "lookup took {took:?}");
}

#[test]
fn stale_answer_is_served_while_the_nameserver_is_down() {
    let (sc, mut nsd) =
        start_with(|b| b.args(&["--cache-min-ttl", "1", "--cache-max-ttl", "1", "--dns-timeout-ms", "500"]));
    let fresh = sc.lookup_ok("ownmail.example");
    assert_eq!(fresh["result"]["cached"], false);
    nsd.stop();
    std::thread::sleep(Duration::from_millis(2500));
    let (resp, took) = timed_lookup(&sc, "ownmail.example");
    let stale = check_ok(&resp, "lookup of an expired entry while the nameserver is down");
    assert!(took < HANG_GUARD, "stale lookup took {took:?}");
    assert_eq!(stale["result"]["cached"], true, "{stale:#}");
    assert_eq!(stale["result"]["mx_records"], fresh["result"]["mx_records"]);
    assert_eq!(stale["result"]["verdict"], fresh["result"]["verdict"]);

    let (resp, took) = timed_lookup(&sc, "shopco.example");
    check_retry_later(&resp, "never-seen domain while the nameserver is down");
    assert!(took < HANG_GUARD, "lookup took {took:?}");

    // the failure was not cached: once the nameserver is back, the domain resolves
    nsd.restart();
    let v = sc.lookup_ok("shopco.example");
    assert_eq!(v["result"]["shared_mx"], true, "{v:#}");
}

#[test]
fn an_entry_is_refreshed_after_cache_max_ttl() {
    let nsd = Nsd::start();
    let counter = DnsCounter::start(nsd.addr());
    let sc = Sidecar::builder().dns(counter.addr()).args(&["--cache-min-ttl", "1", "--cache-max-ttl", "1"]).start();
    sc.lookup_ok("ownmail.example");
    sc.lookup_ok("ownmail.example");
    assert_eq!(counter.count("ownmail.example", qtype::MX), 1, "{:?}", counter.queries());
    std::thread::sleep(Duration::from_millis(2200));
    // a refresh may happen in the request or behind it (serve-stale): either way it reaches DNS
    sc.lookup_ok("ownmail.example");
    wait_for("a second MX query after the entry outlived --cache-max-ttl 1", Duration::from_secs(2), || {
        (counter.count("ownmail.example", qtype::MX) >= 2).then_some(())
    });
}

#[test]
fn ttl_of_the_records_bounds_the_cache_from_below_by_min_ttl() {
    // the fixture TTL is 60 s; --cache-max-ttl 3600 keeps it 60 s, so nothing expires in 2 s
    let nsd = Nsd::start();
    let counter = DnsCounter::start(nsd.addr());
    let sc = Sidecar::builder().dns(counter.addr()).start();
    sc.lookup_ok("ownmail.example");
    std::thread::sleep(Duration::from_millis(1500));
    let v = sc.lookup_ok("ownmail.example");
    assert_eq!(v["result"]["cached"], true, "{v:#}");
    assert_eq!(counter.count("ownmail.example", qtype::MX), 1, "{:?}", counter.queries());
}
