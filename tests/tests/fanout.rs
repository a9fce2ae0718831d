//! Issue 23, section 3: one anonymous request makes a bounded number of DNS queries, whatever
//! the domain's owner publishes. The resolver keeps 20 MX host names (by preference), resolves
//! the first 10 (A and AAAA) and keeps 8 addresses each; a page looks up the reverse DNS of at
//! most 20 addresses. What is cut off is said (page) and never hides a host the verdict knows
//! by name: a known-disposable MX host eleventh, behind ten others, is still caught.
//!
//! The answers (1,000 MX hosts; 10 MX hosts with 2,000 addresses each) are generated
//! into this test's NSD ([`generated_zone`]); the small cases are `fixtures/zones/fanout.example.zone`.

use std::path::PathBuf;
use std::time::Duration;

use email_verdict_tests::dns::qtype;
use email_verdict_tests::nsd::fixture_zones;
use email_verdict_tests::{DnsCounter, Nsd, Request, Response, Sidecar, TestDir, start_with, wait_for};
use serde_json::Value;

/// The generated zone.
const GEN: &str = "fanout-gen.example";
/// 1 MX query and A + AAAA of 10 hosts; each may go twice (an answer too big for UDP is asked
/// again over TCP). Retries after a timeout would add more, but NSD on loopback answers.
const FORWARD_QUERIES: usize = 2 * (1 + 2 * 10);
/// Addresses whose reverse DNS one page looks up; each lookup is tried up to 3 times when the
/// answer is a failure (NSD refuses reverse names it does not serve).
const PTR_PER_PAGE: usize = 20;
const PTR_TRIES: usize = 3;
const PTR: u16 = 12;

/// `wide`: 1,000 MX hosts with one address each (the issue: 2,001 queries for one lookup).
/// `deep`: 10 MX hosts with 2,000 addresses each (the issue: 20,021 queries, 395 MB and a
/// 6 MB page for one page view). Addresses from 198.18.0.0/15, whose reverse zone NSD does not
/// serve (REFUSED, answered at once).
fn generated_zone(dir: &TestDir) -> (String, PathBuf) {
    let mut z = format!(
        "$ORIGIN {GEN}.\n$TTL 60\n@ IN SOA ns1.example. hostmaster.example. 1 3600 600 86400 60\n@ IN NS ns1.example.\n"
    );
    for i in 0..1000 {
        z.push_str(&format!("wide IN MX {} w{i}.wide\nw{i}.wide IN A 198.51.100.{}\n", 10 + i, 1 + i % 250));
    }
    for h in 0..10u32 {
        z.push_str(&format!("deep IN MX {} d{h}.deep\n", 10 + h));
        for j in 0..2000u32 {
            let n = h * 2000 + j + 1;
            z.push_str(&format!("d{h}.deep IN A 198.18.{}.{}\n", n >> 8, n & 0xff));
        }
    }
    (GEN.to_owned(), dir.write(&format!("{GEN}.zone"), &z))
}

/// NSD with the fixture zones and the generated one, a counter in front, a sidecar behind it.
fn start_generated() -> (Sidecar, DnsCounter, Nsd, TestDir) {
    let dir = TestDir::new("fanout-zone");
    let mut zones = fixture_zones();
    zones.push(generated_zone(&dir));
    let nsd = Nsd::start_zones(zones);
    let counter = DnsCounter::start(nsd.addr());
    let sc = Sidecar::builder().dns(counter.addr()).start();
    public_listener_up(&sc);
    (sc, counter, nsd, dir)
}

fn public_listener_up(sc: &Sidecar) {
    wait_for("the public listener", Duration::from_secs(5), || std::net::TcpStream::connect(sc.addr()).ok());
}

/// Queries for names in the generated zone; reverse (PTR) queries, and the distinct names they
/// asked about.
fn counted(counter: &DnsCounter) -> (usize, usize, usize) {
    let queries = counter.queries();
    let forward = queries.iter().filter(|(name, _)| name.ends_with(GEN)).count();
    let reverse: Vec<&String> = queries.iter().filter(|(_, t)| *t == PTR).map(|(name, _)| name).collect();
    let distinct = reverse.iter().collect::<std::collections::HashSet<_>>().len();
    (forward, reverse.len(), distinct)
}

fn page(sc: &Sidecar, domain: &str) -> Response {
    let resp = Request::get(&format!("/en/domain/{domain}")).timeout(Duration::from_secs(60)).send(sc.addr());
    assert_eq!(resp.status, 200, "page of {domain}:\n{resp}");
    resp
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array().map(|a| a.iter().filter_map(|s| s.as_str().map(str::to_owned)).collect()).unwrap_or_default()
}

fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).unwrap_or_default();
    line.split_whitespace().nth(1).and_then(|n| n.parse().ok()).unwrap_or(0)
}

#[test]
fn a_lookup_of_a_thousand_mx_hosts_makes_a_bounded_number_of_queries() {
    let (sc, counter, _nsd, _dir) = start_generated();
    let v = sc.lookup_ok(&format!("wide.{GEN}"));
    let (forward, reverse, _) = counted(&counter);
    assert!(
        forward <= FORWARD_QUERIES,
        "one lookup made {forward} queries (bound {FORWARD_QUERIES}): {:?}",
        &counter.queries()[..forward.min(40)]
    );
    assert_eq!(reverse, 0, "the API looks up no reverse DNS");
    assert!(counter.count(&format!("wide.{GEN}"), qtype::MX) >= 1, "{:?}", counter.queries());
    let records = strings(&v["result"]["mx_records"]);
    let first: Vec<String> = (0..20).map(|i| format!("w{i}.wide.{GEN}")).collect();
    assert_eq!(records, first, "the first 20 MX hosts by preference");
    assert_eq!(strings(&v["result"]["mx_ip_address"]).len(), 10, "addresses of the first 10");
    // Cached: no query at all the second time.
    let before = counter.queries().len();
    sc.lookup_ok(&format!("wide.{GEN}"));
    assert_eq!(counter.queries().len(), before);
}

#[test]
fn a_page_view_of_hosts_with_thousands_of_addresses_is_bounded() {
    let (sc, counter, _nsd, _dir) = start_generated();
    let rss_before = rss_kib(sc.pid());
    let resp = page(&sc, &format!("deep.{GEN}"));
    let (forward, reverse, addresses) = counted(&counter);
    assert!(forward <= FORWARD_QUERIES, "one page view made {forward} forward queries (bound {FORWARD_QUERIES})");
    assert!(
        addresses <= PTR_PER_PAGE && reverse <= PTR_PER_PAGE * PTR_TRIES,
        "one page view looked up the reverse DNS of {addresses} addresses in {reverse} queries (bound \
         {PTR_PER_PAGE} in {})",
        PTR_PER_PAGE * PTR_TRIES
    );
    let html = resp.text();
    assert!(html.len() < 64 * 1024, "a page of {} bytes", html.len());
    // 10 hosts, 8 addresses each shown, the other 1,992 of each said, not shown.
    assert_eq!(html.matches("class=\"ip\"").count(), 80, "{html}");
    assert_eq!(html.matches("data-more-ips=\"1992\"").count(), 10, "{html}");
    // Reverse DNS of the first 20 addresses only; the others say so.
    assert_eq!(html.matches("not looked up</td>").count(), 60, "{html}");
    let grown = rss_kib(sc.pid()).saturating_sub(rss_before);
    assert!(grown < 64 * 1024, "RSS grew by {grown} KiB for one page view");
    // The API's answer of the same lookup is bounded too.
    let v = sc.lookup_ok(&format!("deep.{GEN}"));
    assert_eq!(strings(&v["result"]["mx_ip_address"]).len(), 80);
}

/// The index knows mailinator.com's mail server (threshold 1: one disposable domain is enough
/// here). Behind ten own hosts, the eleventh is past those whose addresses are looked up, but
/// judged by its name: caught. One known only by its address cannot be (its address is not
/// looked up): the domain is not vouched for, it stays under review, and the page says why.
#[test]
fn a_known_disposable_host_hidden_as_the_eleventh_mx_is_still_caught() {
    let (sc, _nsd) = start_with(|b| b.args(&["--infra-threshold", "1"]));
    public_listener_up(&sc);
    assert_eq!(sc.lookup_ok("mailinator.com")["result"]["verdict"], "disposable");
    let caught = wait_for("mx_ip_match on hidden11.fanout.example", Duration::from_secs(5), || {
        let v = sc.lookup_ok("hidden11.fanout.example");
        (v["result"]["mx_ip_match"] == true).then_some(v)
    });
    let r = &caught["result"];
    assert_eq!((r["verdict"].as_str(), r["disposable"].as_bool()), (Some("disposable"), Some(true)), "{r}");
    let records = strings(&r["mx_records"]);
    assert_eq!(records.len(), 11, "{r}");
    assert_eq!(records.last().map(String::as_str), Some("mail.mailinator.com"));
    assert!(!strings(&r["mx_ip_address"]).contains(&"192.0.2.10".to_owned()), "the 11th is not resolved: {r}");

    let v = sc.lookup_ok("hiddenip.fanout.example");
    let r = &v["result"];
    assert_eq!((r["verdict"].as_str(), r["mx_ip_match"].as_bool()), (Some("safe"), Some(false)), "{r}");
    assert_eq!((r["review_required"].as_bool(), r["business_email"].as_bool()), (Some(true), Some(false)), "{r}");
    let html = page(&sc, "hiddenip.fanout.example").text();
    assert!(html.contains("data-host=\"inbound.fresh-burner.example\""), "{html}");
    assert_eq!(html.matches("data-resolved=\"false\"").count(), 1, "{html}");
    assert!(html.contains("addresses not looked up (only those of the first 10 mail servers are)"), "{html}");
}

/// 25 MX hosts, the first with 12 addresses: 20 shown (10 with addresses), 5 more said, 4
/// more addresses said; the API carries the same 20 names.
#[test]
fn the_page_says_what_the_answer_left_out() {
    let (sc, _nsd) = start_with(|b| b);
    public_listener_up(&sc);
    let html = page(&sc, "wide.fanout.example").text();
    assert_eq!(html.matches("<tbody data-host=").count(), 20, "{html}");
    assert!(html.contains("data-more-hosts=\"5\""), "{html}");
    assert!(html.contains("5 more mail servers in the answer are not shown and were not checked."), "{html}");
    assert!(html.contains("data-more-ips=\"4\">4 more addresses not shown"), "{html}");
    assert_eq!(html.matches("data-resolved=\"false\"").count(), 10, "{html}");
    let v = sc.lookup_ok("wide.fanout.example");
    let records = strings(&v["result"]["mx_records"]);
    assert_eq!(records, (1..=20).map(|i| format!("m{i}.wide.fanout.example")).collect::<Vec<_>>());
    assert_eq!(strings(&v["result"]["mx_ip_address"]).len(), 8 + 9);
}
