//! Every row of "Combinations seen in responses", and the verdict of each fixture domain.

use email_verdict_tests::verdict::{expect_fields, strings};
use email_verdict_tests::{DnsCounter, Nsd, Sidecar, start};
use serde_json::{Value, json};

/// The "no MX" row of the spec (domain_exists is given separately).
fn no_mx_row(domain_exists: bool) -> Vec<(&'static str, Value)> {
    vec![
        ("/result/has_mx", json!(false)),
        ("/result/domain_exists", json!(domain_exists)),
        ("/result/mx_records", json!([])),
        ("/result/mx_ip_address", json!([])),
        ("/result/business_email", json!(false)),
        ("/result/shared_mx", json!(false)),
        ("/result/free_provider", json!(false)),
        ("/result/review_required", json!(false)),
    ]
}

/// The "Any safe case" row.
fn safe_row() -> Vec<(&'static str, Value)> {
    vec![
        ("/result/verdict", json!("safe")),
        ("/result/disposable", json!(false)),
        ("/result/temporary", json!(false)),
        ("/result/safe", json!(true)),
        ("/result/level", json!("low")),
        ("/result/recommendation", json!("allow")),
        ("/result/allowlisted", json!(false)),
        ("/result/blocked", json!(false)),
        ("/result/mx_ip_match", json!(false)),
    ]
}

fn disposable_row() -> Vec<(&'static str, Value)> {
    vec![
        ("/result/verdict", json!("disposable")),
        ("/result/disposable", json!(true)),
        ("/result/temporary", json!(true)),
        ("/result/safe", json!(false)),
        ("/result/level", json!("critical")),
        ("/result/recommendation", json!("block")),
    ]
}

fn check(sc: &Sidecar, segment: &str, rows: &[Vec<(&'static str, Value)>]) -> Value {
    let v = sc.lookup_ok(segment);
    expect_fields(&v, &rows.concat(), segment);
    v
}

#[test]
fn no_mx_but_the_domain_resolves() {
    let (sc, _nsd) = start();
    check(&sc, "nomx.example", &[no_mx_row(true), safe_row()]);
}

#[test]
fn nxdomain_is_no_mx_and_does_not_exist() {
    let (sc, _nsd) = start();
    check(&sc, "doesnotexist.example", &[no_mx_row(false), safe_row()]);
    check(&sc, "deeper.doesnotexist.example", &[no_mx_row(false), safe_row()]);
}

#[test]
fn null_mx_is_no_mx_but_exists() {
    let (sc, _nsd) = start();
    check(&sc, "nullmx.example", &[no_mx_row(true), safe_row()]);
}

#[test]
fn business_on_shared_mx() {
    let (sc, _nsd) = start();
    let shared = vec![
        ("/result/has_mx", json!(true)),
        ("/result/domain_exists", json!(true)),
        ("/result/business_email", json!(true)),
        ("/result/shared_mx", json!(true)),
        ("/result/review_required", json!(true)),
        ("/result/free_provider", json!(false)),
        ("/result/mx_records", json!(["shopco-example.mail.protection.outlook.com"])),
        ("/result/mx_ip_address", json!(["192.0.2.30"])),
    ];
    check(&sc, "shopco.example", &[shared, safe_row()]);
}

fn own_mx_row() -> Vec<(&'static str, Value)> {
    vec![
        ("/result/has_mx", json!(true)),
        ("/result/domain_exists", json!(true)),
        ("/result/business_email", json!(false)),
        ("/result/shared_mx", json!(false)),
        ("/result/review_required", json!(true)),
        ("/result/free_provider", json!(false)),
        ("/result/mx_records", json!(["mx1.ownmail.example", "mx2.ownmail.example"])),
    ]
}

/// mx_ip_address holds exactly `want` (any order inside one host), hosts in MX order.
fn assert_mx_ips(v: &Value, per_host: &[&[&str]], what: &str) {
    let got = strings(&v["result"]["mx_ip_address"]);
    let mut want: Vec<&str> = per_host.concat();
    let mut sorted_got: Vec<&str> = got.iter().map(String::as_str).collect();
    want.sort_unstable();
    sorted_got.sort_unstable();
    assert_eq!(sorted_got, want, "{what}: mx_ip_address (as a set)\n{v:#}");
    let mut pos = 0;
    for host in per_host {
        let n = host.len();
        let mut chunk: Vec<&str> = got[pos..pos + n].iter().map(String::as_str).collect();
        let mut expected = host.to_vec();
        chunk.sort_unstable();
        expected.sort_unstable();
        assert_eq!(chunk, expected, "{what}: mx_ip_address not in MX order\n{v:#}");
        pos += n;
    }
}

#[test]
fn own_mx_sorted_by_preference_with_v4_and_v6() {
    let (sc, _nsd) = start();
    let v = check(&sc, "ownmail.example", &[own_mx_row(), safe_row()]);
    assert_mx_ips(&v, &[&["192.0.2.21", "2001:db8::21"], &["192.0.2.22"]], "ownmail.example");
}

#[test]
fn upper_case_mx_names_from_dns_are_lowercased() {
    let nsd = Nsd::start();
    let counter = DnsCounter::start_uppercasing_mx(nsd.addr());
    let sc = Sidecar::builder().dns(counter.addr()).start();
    let v = check(&sc, "ownmail.example", &[own_mx_row(), safe_row()]);
    assert_mx_ips(&v, &[&["192.0.2.21", "2001:db8::21"], &["192.0.2.22"]], "ownmail.example via upper-casing DNS");
    let v = check(&sc, "gmail.com", &[]);
    assert_eq!(v["result"]["mx_records"], json!(["gmail-smtp-in.l.google.com", "alt1.gmail-smtp-in.l.google.com"]));
}

#[test]
fn free_provider() {
    let (sc, _nsd) = start();
    let free = vec![
        ("/result/free_provider", json!(true)),
        ("/result/business_email", json!(false)),
        ("/result/review_required", json!(false)),
        ("/result/has_mx", json!(true)),
        ("/result/domain_exists", json!(true)),
        ("/result/mx_records", json!(["gmail-smtp-in.l.google.com", "alt1.gmail-smtp-in.l.google.com"])),
    ];
    let v = check(&sc, "gmail.com", &[free, safe_row()]);
    assert_mx_ips(&v, &[&["192.0.2.11", "2001:db8::11"], &["192.0.2.12", "2001:db8::12"]], "gmail.com");
}

#[test]
fn disposable_service_and_its_subdomains() {
    let (sc, _nsd) = start();
    for seg in ["mailinator.com", "sub.mailinator.com"] {
        let d = vec![
            ("/result/has_mx", json!(true)),
            ("/result/domain_exists", json!(true)),
            ("/result/free_provider", json!(false)),
            ("/result/mx_records", json!(["mail.mailinator.com"])),
            ("/result/mx_ip_address", json!(["192.0.2.10"])),
        ];
        check(&sc, seg, &[d, disposable_row()]);
    }
}

/// detection.md: business_email is never true for free or disposable domains, and
/// review_required marks only verdicts that are safe for lack of evidence.
#[test]
fn listed_domains_are_neither_business_nor_under_review() {
    let (sc, _nsd) = start();
    for seg in ["mailinator.com", "sub.mailinator.com", "gmail.com"] {
        let fields = vec![("/result/business_email", json!(false)), ("/result/review_required", json!(false))];
        check(&sc, seg, &[fields]);
    }
}

#[test]
fn idn_domain_resolves_in_punycode() {
    let (sc, _nsd) = start();
    let row = vec![
        ("/domain", json!("xn--bcher-kva.example")),
        ("/result/has_mx", json!(true)),
        ("/result/domain_exists", json!(true)),
        ("/result/mx_records", json!(["mx.ownmail.example"])),
        ("/result/mx_ip_address", json!(["192.0.2.23"])),
    ];
    check(&sc, "b%C3%BCcher.example", &[row, safe_row()]);
}

#[test]
fn public_suffix_subdomain_is_an_ordinary_domain() {
    let (sc, _nsd) = start();
    let row = vec![
        ("/domain", json!("shop.pp.ua")),
        ("/result/has_mx", json!(true)),
        ("/result/mx_records", json!(["mx.shop.pp.ua"])),
    ];
    check(&sc, "shop.pp.ua", &[row, safe_row()]);
}

/// The fields of a safe verdict that waits for review (rule 1).
fn under_review_row() -> Vec<(&'static str, Value)> {
    vec![
        ("/result/has_mx", json!(true)),
        ("/result/review_required", json!(true)),
        ("/result/free_provider", json!(false)),
    ]
}

/// Issue 14: a name only the weak source (mailchecker) lists, on its own mail server, is not
/// blocked: safe until a reviewer looks (the queue reason is checked in review.rs).
#[test]
fn weak_only_listing_with_its_own_mail_server_is_safe_under_review() {
    let (sc, _nsd) = start();
    for seg in ["firemail.cc", "baruchcc.edu", "waifu.club"] {
        check(&sc, seg, &[under_review_row(), safe_row()]);
    }
}

/// Issue 14: a name a free list and only the weak source carry (Hushmail, VFEmail) is
/// contested: not free webmail (never looked at again), not blocked on unreviewed evidence, but
/// safe under review. cock.li, which no disposable source lists, stays free webmail.
#[test]
fn free_webmail_listed_by_a_weak_source_only_is_safe_under_review() {
    let (sc, _nsd) = start();
    for seg in ["hush.com", "vfemail.net"] {
        check(&sc, seg, &[under_review_row(), safe_row()]);
    }
    let free = vec![("/result/free_provider", json!(true)), ("/result/review_required", json!(false))];
    check(&sc, "cock.li", &[free, safe_row()]);
}

/// Issue 14: a subdomain inherits its listed parent's verdict only when its mail goes where
/// the parent's does. x7.mailinator.com (the service's wildcard MX) does; corp.mailinator.com,
/// with a mail server of its own, does not: safe, under review.
#[test]
fn subdomain_inherits_its_parent_listing_only_with_the_parents_mail() {
    let (sc, _nsd) = start();
    let same_mail =
        vec![("/result/mx_records", json!(["mail.mailinator.com"])), ("/result/review_required", json!(false))];
    check(&sc, "x7.mailinator.com", &[same_mail, disposable_row()]);
    let own = vec![
        ("/result/mx_records", json!(["mx.corp.mailinator.com"])),
        ("/result/mx_ip_address", json!(["192.0.2.60"])),
    ];
    check(&sc, "corp.mailinator.com", &[own, under_review_row(), safe_row()]);
}
