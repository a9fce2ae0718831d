//! Issue 23, section 2: what the sidecar already decided must not need DNS. A domain blocked by
//! a reviewer or the operator's blocklist, whose owner makes its DNS answer slowly (or not at
//! all, or with an error), is refused all the same: by the API, by the filter in a real Envoy and
//! by ext_authz. And the gateway's key, on the `gateway` plan, cannot be spent by end users.

use std::sync::Arc;

use email_verdict_tests::dns::BlackHole;
use email_verdict_tests::envoy::{EnvoyBuilder, gateway_with};
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
