//! The nameserver stops and comes back while lookups keep coming. `dns.rs` covers the single
//! lookups; here the cache expires under load (`--cache-max-ttl 1`), so every cached answer
//! during the outage is a stale one.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use email_verdict_tests::verdict::{check_error, check_ok};
use email_verdict_tests::{Load, Outcome, start_with};
use serde_json::Value;

use super::{PACE, PROGRESS, assert_all_answered, lookup, nonempty, tagged};

/// Looked up before the outage; each in a different verdict class.
const CACHED: [&str; 3] = ["ownmail.example", "mailinator.com", "gmail.com"];

#[test]
fn dns_outage_under_load_serves_stale_verdicts_fails_new_names_and_recovers() {
    let (sc, mut nsd) = start_with(|b| {
        b.keys(&["pro", "pro", "pro"]).args(&[
            "--cache-min-ttl",
            "1",
            "--cache-max-ttl",
            "1",
            "--dns-timeout-ms",
            "300",
        ])
    });
    let before: HashMap<String, Value> =
        CACHED.iter().map(|d| (d.to_string(), sc.lookup_ok(d)["result"].clone())).collect();
    let (addr, keys) = (sc.addr(), sc.keys().to_vec());
    // Workers 0 and 1 cycle through the cached domains; worker 2 asks for a new name each time
    // (NXDOMAIN under `example`, so never in the cache).
    let load = Load::start(3, PACE, move |w, n| match w {
        0 | 1 => lookup(addr, CACHED[n as usize % CACHED.len()], &keys[w], "cached"),
        _ => lookup(addr, &format!("fault-{n}.example"), &keys[w], "uncached"),
    });
    load.wait_each(5, PROGRESS);
    let stopping = Instant::now();
    nsd.stop();
    let down = Instant::now();
    std::thread::sleep(Duration::from_millis(2000)); // past --cache-max-ttl: all cached answers stale
    load.wait_each(3, PROGRESS);
    let repairing = Instant::now();
    nsd.restart();
    let up = Instant::now();
    load.wait_each(5, PROGRESS);
    let outcomes = load.stop();

    assert_all_answered(&outcomes);
    check_cached(&outcomes, &before, down, repairing);
    check_uncached(&outcomes, [stopping, down, repairing, up]);
    let v = sc.lookup_ok("shopco.example"); // never asked before: a real resolution again
    assert_eq!(v["result"]["shared_mx"], true, "{v:#}");
}

/// Cached domains: 200 at all times with the verdict and MX hosts they had before; from the
/// cache (stale) during the outage.
fn check_cached(outcomes: &[Outcome], before: &HashMap<String, Value>, down: Instant, repairing: Instant) {
    for o in tagged(outcomes, "cached") {
        let v = check_ok(o.response().expect("answered"), &o.to_string());
        let domain = v["domain"].as_str().unwrap_or_default();
        let was = &before[domain];
        assert_eq!((&v["result"]["verdict"], &v["result"]["mx_records"]), (&was["verdict"], &was["mx_records"]), "{o}");
    }
    let stale = nonempty(tagged(outcomes, "cached").filter(|o| o.within(down, repairing)).collect(), "the outage");
    for o in stale {
        assert_eq!(o.response().expect("answered").json()["result"]["cached"], true, "during the outage: {o}");
    }
}

/// New names: 500 internal_error with Retry-After during the outage (never an answer about a
/// domain that could not be looked up); 200 NXDOMAIN answers before it and after NSD is back.
/// `moments`: NSD stopping, stopped, restarting, answering again.
fn check_uncached(outcomes: &[Outcome], moments: [Instant; 4]) {
    let [stopping, down, repairing, up] = moments;
    let failed = nonempty(tagged(outcomes, "uncached").filter(|o| o.within(down, repairing)).collect(), "the outage");
    for o in failed {
        let r = o.response().expect("answered");
        check_error(r, 500, "internal_error", &o.to_string());
        assert!(r.header("retry-after").is_some(), "no Retry-After: {o}");
    }
    let resolved: Vec<&Outcome> =
        tagged(outcomes, "uncached").filter(|o| o.finished < stopping || o.started >= up).collect();
    let after =
        nonempty(resolved.iter().copied().filter(|o| o.started >= up).collect(), "the time after NSD came back");
    assert!(after.len() < resolved.len(), "no new-name lookup before the outage");
    for o in resolved {
        let v = check_ok(o.response().expect("answered"), &o.to_string());
        assert_eq!(v["result"]["domain_exists"], false, "NXDOMAIN expected: {o}");
    }
    // Straddling the stop or the restart: either answer, but only these two.
    for o in tagged(outcomes, "uncached") {
        let status = o.status().expect("answered");
        assert!(status == 200 || status == 500, "{o}");
    }
}
