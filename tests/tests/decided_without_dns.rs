//! Issue 23, section 2: what the sidecar already decided must not need DNS. A domain blocked by
//! a reviewer or the operator's blocklist, whose owner makes its DNS answer slowly (or not at
//! all, or with an error), is refused all the same: by the API, by the filter in a real Envoy and
//! by ext_authz. And the gateway's key, on the `gateway` plan, cannot be spent by end users.

use std::sync::Arc;

use email_verdict_tests::dns::BlackHole;
use email_verdict_tests::envoy::{EnvoyBuilder, each_build, gateway_with, gateway_with_on};
use email_verdict_tests::verdict::{check_error, check_ok};
use email_verdict_tests::{Sidecar, TestDir, UpstreamApp};

/// A sidecar whose nameserver never answers, with `blocked.example` decided by a reviewer and
/// `operator-blocked.example` on the operator's blocklist.
fn sidecar_without_dns(dir: &TestDir, extra: &[&str]) -> (Sidecar, BlackHole) {
    let dns = BlackHole::start();
    let blocklist = dir.join("blocklist.txt");
    std::fs::write(&blocklist, "operator-blocked.example\n").unwrap();
    let mut args = vec!["--blocklist", blocklist.to_str().unwrap()];
    args.extend_from_slice(extra);
    let sc = Sidecar::builder().dns(dns.addr()).keys(&["gateway"]).args(&args).start();
    sc.cli().run(&["review", "set", "blocked.example", "disposable", "--note", "burner"]).expect_code(0, "block");
    sc.cli().run(&["review", "set", "vouched.example", "safe"]).expect_code(0, "allow");
    (sc, dns)
}

#[test]
fn a_decided_domain_answers_without_waiting_for_dns() {
    let dir = TestDir::new("decided-no-dns");
    let (sc, _dns) = sidecar_without_dns(&dir, &[]);
    // A fresh subdomain per signup is covered by the decision on its parent.
    for name in ["blocked.example", "fresh-4711.blocked.example", "x@operator-blocked.example"] {
        let v = check_ok(&sc.lookup(name), name);
        let r = &v["result"];
        assert_eq!((r["verdict"].as_str(), r["blocked"].as_bool()), (Some("disposable"), Some(true)), "{name}\n{v}");
        assert_eq!((r["has_mx"].as_bool(), r["mx_records"].as_array().map(Vec::len)), (Some(false), Some(0)), "{v}");
    }
    let v = check_ok(&sc.lookup("vouched.example"), "allowlisted");
    assert_eq!((v["result"]["verdict"].as_str(), v["result"]["allowlisted"].as_bool()), (Some("safe"), Some(true)));
    // Nothing decided: DNS is needed, and its silence is an error, never "no MX".
    check_error(&sc.lookup("undecided.example"), 500, "internal_error", "undecided, DNS silent");
    let metrics = email_verdict_tests::Request::get("/metrics").send(sc.admin_addr()).text();
    assert!(metrics.contains("email_verdict_decided_without_dns_total 4"), "{metrics}");
}

#[test]
fn the_filter_blocks_a_decided_domain_whose_dns_is_silent() {
    let dir = TestDir::new("decided-no-dns-filter");
    let (sc, _dns) = sidecar_without_dns(&dir, &[]);
    let app = UpstreamApp::start();
    // The shipped plugin config: failure_mode allow, local_fallback on (which knows only the
    // strong lists, so without this fix the signups below passed as sidecar_timeout).
    let envoy = EnvoyBuilder::new(sc.addr(), app.addr()).api_key(sc.key()).start();
    for email in ["a@blocked.example", "b@fresh-1.blocked.example", "c@operator-blocked.example"] {
        let resp = envoy.signup_json(email);
        assert_eq!(resp.status, 403, "{email}\n{resp}");
        assert_eq!(resp.json()["error"], "disposable_email", "{resp}");
    }
    assert_eq!(app.count(), 0, "{:?}", app.requests());
}

#[test]
fn ext_authz_blocks_a_decided_domain_whose_dns_is_silent() {
    let dir = TestDir::new("decided-no-dns-ext-authz");
    let config = email_verdict_tests::workspace_root().join("envoy/ext-authz-config.json");
    let (sc, _dns) = sidecar_without_dns(&dir, &["--ext-authz-config", config.to_str().unwrap()]);
    let app = UpstreamApp::start();
    let envoy = EnvoyBuilder::new(sc.addr(), app.addr()).api_key(sc.key()).ext_authz().start();
    for email in ["a@blocked.example", "b@fresh-2.blocked.example", "c@operator-blocked.example"] {
        let resp = envoy.signup_json(email);
        assert_eq!(resp.status, 403, "{email}\n{resp}");
    }
    assert_eq!(app.count(), 0, "{:?}", app.requests());
}

/// `make demo`'s gateway key was on `pro`: 64 junk signups spent its burst and the next blocked
/// domain passed with `sidecar_rejected`. On the `gateway` plan nothing an end user sends can.
#[test]
fn junk_signups_cannot_exhaust_the_gateway_key() {
    let g = Arc::new(gateway_with(|s| s.keys(&["gateway"]), |b| b.set("/cache/ttl_seconds", serde_json::json!(0))));
    g.sidecar.cli().run(&["review", "set", "decided-burner.example", "disposable"]).expect_code(0, "block");
    let threads: Vec<_> = (0..8)
        .map(|t| {
            let g = g.clone();
            std::thread::spawn(move || {
                for i in 0..25 {
                    let _ = g.envoy.signup_json(&format!("junk{t}-{i}@gmail.com"));
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let before = g.app.count();
    let resp = g.envoy.signup_json("x@decided-burner.example");
    assert_eq!(resp.status, 403, "{resp}");
    assert_eq!(g.app.count(), before);
    let bypassed = g.app.requests().iter().filter(|r| r.header("x-email-verdict-bypass").is_some()).count();
    assert_eq!(bypassed, 0, "no junk signup was let through without a verdict");
}

// ---- the gateway knows the decisions when the sidecar gives no verdict ----------------------

/// `GET /api/v1/decisions`: the gateway's key only; the reviewer's and operator's decisions;
/// `304` for an unchanged list; names that decide nothing (a public suffix) left out.
#[test]
fn the_decisions_endpoint_serves_the_gateway_key_only() {
    let dir = TestDir::new("decisions-endpoint");
    let blocklist = dir.join("blocklist.txt");
    std::fs::write(&blocklist, "operator-blocked.example\n").unwrap();
    let nsd = email_verdict_tests::Nsd::start();
    let sc = Sidecar::builder()
        .dns(nsd.addr())
        .keys(&["gateway", "pro"])
        .args(&["--blocklist", blocklist.to_str().unwrap()])
        .start();
    sc.cli().run(&["review", "set", "blocked.example", "disposable"]).expect_code(0, "block");
    sc.cli().run(&["review", "set", "vouched.example", "safe"]).expect_code(0, "allow");
    sc.cli().run(&["review", "set", "gone.example", "disposable"]).expect_code(0, "block");
    sc.cli().run(&["review", "clear", "gone.example"]).expect_code(0, "clear");
    let get = |key: &str, etag: Option<&str>| {
        let mut req =
            email_verdict_tests::Request::get("/api/v1/decisions").header("Authorization", &format!("Bearer {key}"));
        if let Some(etag) = etag {
            req = req.header("If-None-Match", etag);
        }
        sc.send(&req)
    };
    check_error(&get(&sc.keys()[1], None), 403, "forbidden", "a customer key");
    check_error(&sc.get("/api/v1/decisions"), 401, "missing_api_key", "no key");
    let resp = get(sc.key(), None);
    assert_eq!(resp.status, 200, "{resp}");
    let list = resp.json();
    assert_eq!(list["reviewer"]["block"], serde_json::json!(["blocked.example"]), "{list}");
    assert_eq!(list["reviewer"]["allow"], serde_json::json!(["vouched.example"]), "{list}");
    assert_eq!(list["operator"]["block"], serde_json::json!(["operator-blocked.example"]), "{list}");
    assert_eq!(list["complete"], true);
    let etag = resp.header("etag").expect("an ETag").to_owned();
    let again = get(sc.key(), Some(&etag));
    assert_eq!((again.status, again.body.len()), (304, 0), "{again}");
    sc.cli().run(&["review", "set", "new.example", "disposable"]).expect_code(0, "block");
    assert_eq!(get(sc.key(), Some(&etag)).status, 200, "a new decision changes the list");
}

/// The filter keeps the sidecar's decisions: with the sidecar down, a reviewer's block (and
/// a fresh subdomain under it) and the operator's blocklist are still blocked, and a name a
/// reviewer vouched for is not blocked by the embedded strong lists. Both builds: the dynamic
/// module fetches from the main thread, woken by its own clock thread.
#[test]
fn the_filter_keeps_the_decisions_for_when_the_sidecar_is_down() {
    let dir = TestDir::new("decisions-filter");
    let blocklist = dir.join("blocklist.txt");
    std::fs::write(&blocklist, "operator-blocked.example\n").unwrap();
    let bl = blocklist.to_str().unwrap().to_owned();
    each_build(|build| {
        let mut g = gateway_with_on(
            build,
            |s| s.keys(&["gateway"]).args(&["--blocklist", &bl]),
            |b| b.set("/decision_sync_seconds", serde_json::json!(1)),
        );
        g.sidecar.cli().run(&["review", "set", "reviewer-blocked.example", "disposable"]).expect_code(0, "block");
        g.sidecar.cli().run(&["review", "set", "mailinator.com", "safe", "--note", "test"]).expect_code(0, "allow");
        // The list is fetched every second: wait for two fetches after the decisions (the first
        // may have been under way as they were made).
        let syncs = || g.envoy.counter("email_verdict.decision_syncs").unwrap_or(0);
        let before = syncs();
        email_verdict_tests::envoy::eventually("two syncs after the decisions", || syncs() >= before + 2);
        g.sidecar.kill();
        for email in [
            "a@reviewer-blocked.example",
            "b@fresh-77.reviewer-blocked.example",
            "c@operator-blocked.example",
            "d@yopmail.com",
        ] {
            let resp = g.envoy.signup_json(email);
            assert_eq!(resp.status, 403, "{email}: blocked without the sidecar\n{resp}");
        }
        assert_eq!(g.app.count(), 0, "{:?}", g.app.requests());
        // Vouched for by a reviewer: the strong lists do not block it; failure_mode (allow) decides.
        let resp = g.envoy.signup_json("e@mailinator.com");
        assert_eq!(resp.status, 200, "{resp}");
        let req = g.app.wait_for_request(1);
        assert_eq!(req.header("x-email-verdict-bypass"), Some("sidecar_error"), "{:?}", req.headers);
        assert!(g.envoy.counter("email_verdict.local_decisions").unwrap_or(0) >= 4);
    });
}

/// ext_authz: when the check gets no verdict (here: the key's plan is spent), a reviewer's
/// block still refuses the signup, as the strong lists do; before, only those did.
#[test]
fn ext_authz_applies_a_reviewers_block_when_it_gets_no_verdict() {
    let config = email_verdict_tests::workspace_root().join("envoy/ext-authz-config.json");
    let g =
        gateway_with(|s| s.keys(&["free"]).args(&["--ext-authz-config", config.to_str().unwrap()]), |e| e.ext_authz());
    g.sidecar.cli().run(&["review", "set", "reviewer-blocked.example", "disposable"]).expect_code(0, "block");
    // The free plan: 3 lookups a day, one a second. Spend them.
    for i in 0..4 {
        let _ = g.envoy.signup_json(&format!("junk{i}@gmail.com"));
        std::thread::sleep(std::time::Duration::from_millis(1100));
    }
    let resp = g.envoy.signup_json("x@fresh.reviewer-blocked.example");
    assert_eq!(resp.status, 403, "{resp}");
    assert_eq!(resp.json()["error"], "disposable_email", "{resp}");
    let metrics = email_verdict_tests::Request::get("/metrics").send(g.sidecar.admin_addr()).text();
    assert!(metrics.contains(r#"email_verdict_ext_authz_checks_total{outcome="local_decision"} 1"#), "{metrics}");
}
