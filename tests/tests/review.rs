//! Issue 5 as a reviewer tries it: the review queue, decisions changing the very next lookup
//! (on one process and across two sharing Redis), and new disposable domains caught by their
//! mail infrastructure (`mx_ip_match`) while shared infrastructure never is.

use std::time::Duration;

use email_verdict_tests::{Nsd, Redis, Request, Sidecar, start, wait_for};
use serde_json::{Value, json};

fn result(body: &Value) -> &Value {
    &body["result"]
}

/// Lookups until `pred` holds (background writes land within milliseconds; bounded anyway).
fn lookup_until(sc: &Sidecar, domain: &str, what: &str, pred: impl Fn(&Value) -> bool) -> Value {
    wait_for(what, Duration::from_secs(5), || {
        let body = sc.lookup_ok(domain);
        pred(result(&body)).then_some(body)
    })
}

/// The decision rows of `review history` (after the header, without the `# applies:` line).
fn history_rows(stdout: &str) -> Vec<&str> {
    stdout.lines().skip(1).filter(|l| !l.starts_with('#')).collect()
}

fn review_rows(sc: &Sidecar) -> Vec<Vec<String>> {
    let out = sc.cli().run(&["review", "list"]);
    out.expect_code(0, "review list");
    out.stdout.lines().skip(1).map(|l| l.split('\t').map(str::to_owned).collect()).collect()
}

/// An address shared by two disposable domains is enough at `--infra-threshold 1`: an address
/// needs twice the threshold (issue 24; `tests/infra.rs` tests the default).
fn start_threshold_1() -> (Sidecar, Nsd) {
    email_verdict_tests::start_with(|b| b.args(&["--infra-threshold", "1"]))
}

#[test]
fn new_domain_on_a_known_disposable_mail_server_is_caught() {
    let (sc, _nsd) = start_threshold_1();
    let before = sc.lookup_ok("fresh-burner.example");
    assert_eq!(result(&before)["verdict"], "safe", "nothing known yet: ambiguous");
    assert_eq!(result(&before)["review_required"], true);
    for listed in ["mailinator.com", "guerrillamail.com"] {
        assert_eq!(result(&sc.lookup_ok(listed))["verdict"], "disposable");
    }
    let caught =
        lookup_until(&sc, "fresh-burner.example", "mx_ip_match on fresh-burner.example", |r| r["mx_ip_match"] == true);
    let r = result(&caught);
    assert_eq!((r["verdict"].as_str(), r["disposable"].as_bool()), (Some("disposable"), Some(true)));
    assert_eq!((r["review_required"].as_bool(), r["blocked"].as_bool()), (Some(false), Some(false)));
    // A reviewer's allowlisting wins over the infrastructure signal.
    sc.cli().run(&["review", "set", "fresh-burner.example", "safe", "--note", "known customer"]).expect_code(0, "set");
    let r = sc.lookup_ok("fresh-burner.example");
    assert_eq!((result(&r)["verdict"].as_str(), result(&r)["allowlisted"].as_bool()), (Some("safe"), Some(true)));
    assert_eq!(result(&r)["mx_ip_match"], false);
}

#[test]
fn one_disposable_domain_is_below_the_threshold() {
    let (sc, _nsd) = start();
    sc.lookup_ok("mailinator.com");
    sc.lookup_ok("sub.mailinator.com"); // same registrable domain: still one
    std::thread::sleep(Duration::from_millis(300));
    let r = sc.lookup_ok("fresh-burner.example");
    assert_eq!((result(&r)["verdict"].as_str(), result(&r)["mx_ip_match"].as_bool()), (Some("safe"), Some(false)));
}

#[test]
fn shared_infrastructure_never_matches() {
    let (sc, _nsd) = start();
    for listed in ["10minutemail.com", "yopmail.com"] {
        let r = sc.lookup_ok(listed);
        assert_eq!(
            (result(&r)["verdict"].as_str(), result(&r)["shared_mx"].as_bool()),
            (Some("disposable"), Some(true))
        );
    }
    std::thread::sleep(Duration::from_millis(300));
    let r = sc.lookup_ok("newshop.example");
    let r = result(&r);
    assert_eq!(r["verdict"], "safe", "a business on Microsoft 365 is never caught: {r}");
    assert_eq!(
        (r["shared_mx"].as_bool(), r["business_email"].as_bool(), r["mx_ip_match"].as_bool()),
        (Some(true), Some(true), Some(false))
    );
}

#[test]
fn review_queue_lists_ambiguous_and_no_mx_domains_and_decisions_apply_at_once() {
    let (sc, _nsd) = start();
    sc.lookup_ok("ownmail.example");
    sc.lookup_ok("nomx.example");
    sc.lookup_ok("ownmail.example");
    sc.lookup_ok("gmail.com"); // free: never queued
    let rows = wait_for("both domains queued", Duration::from_secs(5), || {
        let rows = review_rows(&sc);
        (rows.len() == 2 && rows.iter().any(|r| r[4] == "2")).then_some(rows)
    });
    let by_domain =
        |d: &str| rows.iter().find(|r| r[0] == d).unwrap_or_else(|| panic!("{d} not queued: {rows:?}")).clone();
    assert_eq!(by_domain("ownmail.example")[1], "ambiguous");
    assert_eq!(by_domain("ownmail.example")[4], "2", "lookup count");
    assert_eq!(by_domain("nomx.example")[1], "no_mx");

    sc.cli().run(&["review", "set", "ownmail.example", "disposable", "--note", "burner network"]).expect_code(0, "set");
    let r = sc.lookup_ok("ownmail.example");
    let r = result(&r);
    assert_eq!(
        (r["verdict"].as_str(), r["blocked"].as_bool(), r["cached"].as_bool()),
        (Some("disposable"), Some(true), Some(true))
    );
    assert!(review_rows(&sc).iter().all(|row| row[0] != "ownmail.example"), "decided: off the queue");

    sc.cli().run(&["review", "set", "ownmail.example", "safe"]).expect_code(0, "change");
    let r = sc.lookup_ok("ownmail.example");
    let r = result(&r);
    assert_eq!(
        (r["verdict"].as_str(), r["allowlisted"].as_bool(), r["review_required"].as_bool()),
        (Some("safe"), Some(true), Some(false))
    );

    sc.cli().run(&["review", "clear", "ownmail.example"]).expect_code(0, "withdraw");
    let r = sc.lookup_ok("ownmail.example");
    assert_eq!(
        (result(&r)["allowlisted"].as_bool(), result(&r)["review_required"].as_bool()),
        (Some(false), Some(true))
    );
    let history = sc.cli().run(&["review", "history", "ownmail.example"]);
    let decisions: Vec<&str> =
        history_rows(&history.stdout).iter().map(|l| l.split('\t').nth(1).unwrap_or("")).collect();
    assert_eq!(decisions, ["disposable", "safe", "withdrawn"]);
    assert!(history.stdout.ends_with("# applies: none\n"), "{}", history.stdout);

    // A no-MX domain can be blocked by a reviewer.
    sc.cli().run(&["review", "set", "nomx.example", "disposable"]).expect_code(0, "block no-MX");
    assert_eq!(result(&sc.lookup_ok("nomx.example"))["verdict"], "disposable");
}

#[test]
fn free_webmail_cannot_be_made_disposable() {
    let (sc, _nsd) = start();
    let out = sc.cli().run(&["review", "set", "Gmail.com", "disposable"]);
    out.expect_code(2, "review set on free webmail");
    assert!(out.stderr.contains("rule 2"), "{}", out.stderr);
    let r = Request::new("PUT", "/admin/v1/reviews/gmail.com")
        .header("Content-Type", "application/json")
        .body(json!({"decision": "disposable"}).to_string().as_bytes())
        .send(sc.admin_addr());
    assert_eq!((r.status, r.json()["error"]["code"].as_str()), (409, Some("free_provider")));
    assert_eq!(result(&sc.lookup_ok("gmail.com"))["verdict"], "safe");
}

#[test]
fn admin_api_lists_the_queue_and_decides() {
    let (sc, _nsd) = start();
    sc.lookup_ok("nomx.example");
    let queue = wait_for("queue via admin API", Duration::from_secs(5), || {
        let body = Request::get("/admin/v1/reviews").send(sc.admin_addr()).json();
        (body["queue"].as_array().is_some_and(|q| !q.is_empty())).then_some(body)
    });
    assert_eq!(
        (queue["queue"][0]["domain"].as_str(), queue["queue"][0]["reason"].as_str()),
        (Some("nomx.example"), Some("no_mx"))
    );
    assert_eq!((&queue["queue"][0]["sources"], &queue["queue"][0]["listed_as"]), (&json!([]), &json!("")));
    let r = Request::new("PUT", "/admin/v1/reviews/nomx.example")
        .header("Content-Type", "application/json")
        .body(json!({"decision": "disposable", "note": "seen in abuse", "reviewer": "ana"}).to_string().as_bytes())
        .send(sc.admin_addr());
    assert_eq!((r.status, r.json()["decision"].as_str()), (200, Some("disposable")));
    assert_eq!(r.json()["applied"], json!({"decision": "disposable", "on": "nomx.example"}));
    assert_eq!(r.json()["history"][0]["reviewer"], "ana");
    assert_eq!(result(&sc.lookup_ok("nomx.example"))["blocked"], true);
    let r = Request::new("DELETE", "/admin/v1/reviews/nomx.example").send(sc.admin_addr());
    assert_eq!((r.status, r.json()["decision"].is_null()), (200, true));
    assert_eq!(result(&sc.lookup_ok("nomx.example"))["blocked"], false);
}

#[test]
fn decisions_and_queue_are_shared_across_replicas_on_redis() {
    let redis = Redis::start();
    let nsd = Nsd::start();
    let one = ["--infra-threshold", "1"];
    let a = Sidecar::builder().dns(nsd.addr()).state(&redis.url()).args(&one).start();
    let b = Sidecar::builder().dns(nsd.addr()).state(&redis.url()).keys(&[]).args(&one).start();
    let key = a.key().to_string();
    assert_eq!(result(&a.lookup_ok("ownmail.example"))["review_required"], true);
    b.lookup_with_key("nomx.example", &key);
    wait_for("both replicas feed one queue", Duration::from_secs(5), || (review_rows(&a).len() == 2).then_some(()));
    a.cli().run(&["review", "set", "ownmail.example", "disposable"]).expect_code(0, "decide on A's store");
    let r = b.lookup_with_key("ownmail.example", &key).json();
    assert_eq!((result(&r)["verdict"].as_str(), result(&r)["blocked"].as_bool()), (Some("disposable"), Some(true)));
    // Infrastructure learned on A catches a new domain on B.
    a.lookup_ok("mailinator.com");
    b.lookup_with_key("guerrillamail.com", &key);
    wait_for("B catches fresh-burner.example", Duration::from_secs(5), || {
        (result(&b.lookup_with_key("fresh-burner.example", &key).json())["mx_ip_match"] == true).then_some(())
    });
}

/// Issue 14: weak-only names are queued with the weak source named; a subdomain with its own
/// mail server under a listed parent is queued naming the parent's listing.
#[test]
fn weak_and_parent_listings_are_queued_with_their_sources() {
    let (sc, _nsd) = start();
    for domain in ["firemail.cc", "corp.mailinator.com", "ownmail.example"] {
        assert_eq!(result(&sc.lookup_ok(domain))["review_required"], true, "{domain}");
    }
    let rows = wait_for("three domains queued", Duration::from_secs(5), || {
        let rows = review_rows(&sc);
        (rows.len() == 3).then_some(rows)
    });
    let by_domain = |d: &str| {
        let row = rows.iter().find(|r| r[0] == d).unwrap_or_else(|| panic!("{d} not queued: {rows:?}"));
        (row[1].clone(), row[5].clone(), row[6].clone())
    };
    assert_eq!(by_domain("firemail.cc"), ("weak_listing".into(), "mailchecker".into(), "firemail.cc".into()));
    assert_eq!(
        by_domain("corp.mailinator.com"),
        ("parent_listing".into(), "disposable-email-domains,fakefilter,mailchecker".into(), "mailinator.com".into())
    );
    assert_eq!(by_domain("ownmail.example"), ("ambiguous".into(), "-".into(), "-".into()));
    let body = Request::get("/admin/v1/reviews").send(sc.admin_addr()).json();
    let item = body["queue"].as_array().unwrap().iter().find(|i| i["domain"] == "firemail.cc").cloned().unwrap();
    assert_eq!(
        (&item["reason"], &item["sources"], &item["listed_as"]),
        (&json!("weak_listing"), &json!(["mailchecker"]), &json!("firemail.cc"))
    );
}

/// Issue 14: a weak-only name whose own mail server serves strong-listed disposable domains
/// (looked up first, so the index knows them) is corroborated: disposable with mx_ip_match.
#[test]
fn weak_only_name_on_a_known_disposable_mail_server_is_caught() {
    let (sc, _nsd) = start_threshold_1();
    for listed in ["mailinator.com", "guerrillamail.com"] {
        assert_eq!(result(&sc.lookup_ok(listed))["verdict"], "disposable");
    }
    let caught = lookup_until(&sc, "tempemailco.com", "mx_ip_match on tempemailco.com", |r| r["mx_ip_match"] == true);
    let r = result(&caught);
    assert_eq!((r["verdict"].as_str(), r["review_required"].as_bool()), (Some("disposable"), Some(false)));
}

/// Issue 14: the index never learns from weak-only names, the very names in question: two of
/// them on one mail server (the threshold is 2) do not make that server disposable.
#[test]
fn weak_only_names_teach_the_infrastructure_index_nothing() {
    let (sc, _nsd) = start();
    sc.lookup_ok("firemail.cc");
    sc.lookup_ok("waifu.club");
    std::thread::sleep(Duration::from_millis(300));
    for domain in ["firemail.cc", "waifu.club"] {
        let r = sc.lookup_ok(domain);
        assert_eq!((result(&r)["verdict"].as_str(), result(&r)["mx_ip_match"].as_bool()), (Some("safe"), Some(false)));
    }
}

/// Issue 13 item 11: a reviewer's decision on a name covers its subdomains, as `--blocklist`
/// does, unless a more specific decision exists; `review history` says which decision applies.
#[test]
fn reviewer_decision_covers_subdomains() {
    let (sc, _nsd) = start();
    assert_eq!(result(&sc.lookup_ok("sub.rtdisp.example"))["verdict"], "safe");
    sc.cli().run(&["review", "set", "rtdisp.example", "disposable"]).expect_code(0, "set on the parent");
    for domain in ["rtdisp.example", "sub.rtdisp.example", "a.b.rtdisp.example"] {
        let r = sc.lookup_ok(domain);
        assert_eq!(
            (result(&r)["verdict"].as_str(), result(&r)["blocked"].as_bool()),
            (Some("disposable"), Some(true)),
            "{domain}"
        );
    }
    let history = sc.cli().run(&["review", "history", "sub.rtdisp.example"]);
    history.expect_code(0, "history of the subdomain");
    assert!(history_rows(&history.stdout).is_empty(), "no decision on the subdomain itself: {}", history.stdout);
    assert!(history.stdout.contains("# applies: disposable (decided on rtdisp.example)"), "{}", history.stdout);
    sc.cli().run(&["review", "set", "ok.rtdisp.example", "safe"]).expect_code(0, "a more specific decision");
    let r = sc.lookup_ok("x.ok.rtdisp.example");
    assert_eq!((result(&r)["verdict"].as_str(), result(&r)["allowlisted"].as_bool()), (Some("safe"), Some(true)));
    let r = Request::get("/admin/v1/reviews/x.ok.rtdisp.example").send(sc.admin_addr()).json();
    assert_eq!(
        (&r["decision"], &r["applied"]),
        (&json!(null), &json!({"decision": "safe", "on": "ok.rtdisp.example"}))
    );
}

/// Issue 14: on a fresh install the warm-up resolves strong-listed domains in the background,
/// so a weak-only name on their mail server is caught before anyone looked them up; its
/// progress is in the admin API and the metrics, and survives a restart.
#[test]
fn warmup_catches_a_weak_only_name_on_a_fresh_install() {
    let nsd = Nsd::start();
    let args = ["--warmup-rate", "1000", "--infra-threshold", "1"];
    let mut sc = Sidecar::builder().dns(nsd.addr()).args(&args).start();
    let admin = sc.admin_addr(); // the same after a restart
    let status = || Request::get("/admin/v1/warmup").send(admin).json();
    // The first names in sorted order: 0-mail.com, ..., 00000000000.pro (both on 192.0.2.80).
    wait_for("the warm-up passed 00000000000.pro", Duration::from_secs(30), || {
        let s = status();
        (s["cursor"].as_str().is_some_and(|c| c >= "00000000000.pro")).then_some(())
    });
    let r = sc.lookup_ok("tempemailaddress.com");
    let r = result(&r);
    assert_eq!((r["verdict"].as_str(), r["mx_ip_match"].as_bool()), (Some("disposable"), Some(true)), "{r}");
    let s = status();
    assert!(s["learned"].as_u64() >= Some(2) && s["total"].as_u64() > Some(10_000), "{s}");
    let metrics = Request::get("/metrics").send(admin).text();
    assert!(metrics.contains("email_verdict_warmup_domains_total{outcome=\"learned\"}"), "{metrics}");
    let before = status()["done"].as_u64().unwrap_or(0);
    sc.restart();
    let after = status()["done"].as_u64().unwrap_or(0);
    assert!(after >= before, "a restart goes on from the stored cursor: {before} then {after}");
}

/// The `data-why` keys of a domain's public page in `lang`, and the page.
fn why_on_page(sc: &Sidecar, lang: &str, domain: &str) -> (Vec<String>, String) {
    let resp = Request::get(&format!("/{lang}/domain/{domain}")).send(sc.addr());
    assert_eq!(resp.status, 200, "{resp}");
    let html = resp.text();
    let keys = html.split("data-why=\"").skip(1).filter_map(|s| s.split('"').next()).map(str::to_owned).collect();
    (keys, html)
}

/// Issue 14: the public page says why, in every language: the sources and their tier, the
/// parent listing, the reviewer's decision (and on which name), or that nothing marks it.
#[test]
fn public_page_says_why() {
    let (sc, _nsd) = start();
    for lang in ["en", "de", "fr", "es", "pt", "ja"] {
        let (keys, html) = why_on_page(&sc, lang, "firemail.cc");
        assert_eq!(keys, ["listed_weak"], "{lang}");
        assert!(html.contains("mailchecker ("), "{lang}: the source is named with its tier");
        assert!(!html.contains("why_listed_weak"), "{lang}: a message for the key exists");
    }
    let (keys, html) = why_on_page(&sc, "en", "mailinator.com");
    assert_eq!(keys, ["listed_strong"]);
    assert!(html.contains(
        "disposable-email-domains (reviewed list), fakefilter (reviewed list), mailchecker (unreviewed list)"
    ));
    assert_eq!(why_on_page(&sc, "en", "x7.mailinator.com").0, ["parent_same_mail"]);
    assert_eq!(why_on_page(&sc, "en", "corp.mailinator.com").0, ["parent_own_mail"]);
    assert_eq!(why_on_page(&sc, "en", "gmail.com").0, ["free"]);
    assert_eq!(why_on_page(&sc, "en", "ownmail.example").0, ["nothing"]);
    sc.cli().run(&["review", "set", "rtdisp.example", "disposable"]).expect_code(0, "set");
    let (keys, html) = why_on_page(&sc, "en", "sub.rtdisp.example");
    assert_eq!(keys, ["decision_block"]);
    assert!(html.contains("A reviewer decided that rtdisp.example is disposable."), "{html}");
}

/// Issue 14: a page for a domain caught by its mail server names the server.
#[test]
fn public_page_names_the_mail_server_that_links_a_domain_to_disposable_ones() {
    let (sc, _nsd) = start_threshold_1();
    for listed in ["mailinator.com", "guerrillamail.com"] {
        sc.lookup_ok(listed);
    }
    lookup_until(&sc, "tempemailco.com", "mx_ip_match on tempemailco.com", |r| r["mx_ip_match"] == true);
    let (keys, html) = why_on_page(&sc, "en", "tempemailco.com");
    assert_eq!(keys, ["listed_weak", "infra"]);
    assert!(html.contains("Its mail server 192.0.2.10 also serves 2 domains known to be disposable."), "{html}");
}
