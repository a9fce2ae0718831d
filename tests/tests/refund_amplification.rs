//! Issue 31: refunds do not amplify DNS work. Units of batch items that get no verdict (a DNS
//! failure) are given back, but at most a daily quota's worth a day per key (docs/api.md,
//! "What counts"): a `basic` key posting batches of a name whose DNS fails (REFUSED by the
//! nameserver, at once) used to be admitted without end, 6,000 lookups and 18,000 DNS queries in
//! 9 s while its quota moved by 1. Now its lookups in a day are at most twice its quota: after
//! 5,000 refunded, failed items are charged, and the key gets `402` once the quota is spent.

use std::time::Duration;

use email_verdict_tests::{DnsCounter, Nsd, Request, Sidecar};

/// The `basic` plan's daily quota.
const QUOTA: usize = 5_000;
/// Items per batch (the most a batch may hold).
const BATCH: usize = 1_000;
/// Outside every fixture zone: NSD answers REFUSED, a failure, never cached.
const FAILING: &str = "not-served.org";

/// Posts one batch of [`BATCH`] × [`FAILING`]; its status (after waiting out any 429).
fn post_batch(sc: &Sidecar, key: &str, body: &[u8]) -> u16 {
    loop {
        let r = sc.send(
            &Request::new("POST", "/api/v1/domains")
                .bearer(key)
                .header("Content-Type", "application/json")
                .body(body)
                .timeout(Duration::from_secs(60)),
        );
        if r.status != 429 {
            if r.status == 200 {
                let failed = r.json()["results"].as_array().unwrap().iter().filter(|i| i["error"].is_object()).count();
                assert_eq!(failed, BATCH, "every item fails: {}", r.text().chars().take(300).collect::<String>());
            }
            return r.status;
        }
        std::thread::sleep(Duration::from_millis(150));
    }
}

#[test]
fn refunds_of_failed_lookups_stop_at_a_daily_quota() {
    let nsd = Nsd::start();
    let dns = DnsCounter::start(nsd.addr());
    let sc = Sidecar::builder().dns(dns.addr()).keys(&["basic"]).start();
    let body = serde_json::json!({ "inputs": vec![FAILING; BATCH] }).to_string();
    // Twice the quota in lookups, and one batch more: the last must be refused.
    let statuses: Vec<u16> = (0..2 * QUOTA / BATCH + 1).map(|_| post_batch(&sc, sc.key(), body.as_bytes())).collect();
    let admitted = statuses.iter().filter(|s| **s == 200).count();
    assert_eq!(admitted, 2 * QUOTA / BATCH, "batches admitted: {statuses:?}");
    assert_eq!(statuses.last(), Some(&402), "{statuses:?}");
    // Each lookup is tried at most 3 times: the DNS work is bounded by the quota.
    let queries = dns.count(FAILING, 15);
    assert!(queries <= 3 * 2 * QUOTA, "{queries} MX queries for {} lookups", admitted * BATCH);
    // The day's count: the quota, spent by the failed lookups past the cap.
    let usage = Request::get("/admin/v1/keys").send(sc.admin_addr()).json();
    let used = usage["keys"][0]["used_today"].as_u64();
    assert_eq!(used, Some(QUOTA as u64), "{usage}");
}
