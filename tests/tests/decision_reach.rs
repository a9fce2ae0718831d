//! A wrong block undone in minutes: a reviewer's decision reaches every gateway within
//! `decision_sync_seconds`, verdicts the filter already cached included (filter/CONFIG.md, "A
//! decision reaches the cached verdicts"). The cache keeps a verdict 300 s here and the decisions are synced
//! every second, so a signup that follows the decision within the deadline below can only have
//! been judged again. Through both builds of the filter, and through ext_authz, where the
//! sidecar itself applies a decision to the very next signup.

use std::time::Duration;

use email_verdict_tests::envoy::{Gateway, each_build, gateway_with, gateway_with_on, sidecar_lookups};
use email_verdict_tests::wait_for;
use serde_json::json;

/// Far below the cache's 300 s and far above one sync period (1 s) plus a fetch: a failure
/// guard, never a measure.
const DEADLINE: Duration = Duration::from_secs(30);

/// Signs `email` up until the answer's status is `status` (each attempt is a real signup).
fn signups_until(g: &Gateway, email: &str, status: u16, what: &str) {
    wait_for(what, DEADLINE, || (g.envoy.signup_json(email).status == status).then_some(()));
}

/// Cached disposable verdicts (a name and a subdomain of it) are undone by a reviewer's `safe`
/// on the name, which covers the subdomain; a cached safe one is blocked by a reviewer's
/// `disposable`, and safe again once the decision is withdrawn.
#[test]
fn a_decision_reaches_the_verdicts_a_gateway_already_cached() {
    each_build(|build| {
        let g = gateway_with_on(
            build,
            |s| s,
            |b| b.set("/decision_sync_seconds", json!(1)).set("/cache/ttl_seconds", json!(300)),
        );
        let syncs = || g.envoy.counter("email_verdict.decision_syncs").unwrap_or(0);
        email_verdict_tests::envoy::eventually("a first sync of the decisions", || syncs() >= 1);

        // Disposable at the sidecar, and cached: the second signup of each asks nobody.
        for email in ["temp@mailinator.com", "temp@mailinator.com", "x@sub.mailinator.com", "x@sub.mailinator.com"] {
            let resp = g.envoy.signup_json(email);
            assert_eq!(resp.status, 403, "{email}\n{resp}");
        }
        for domain in ["mailinator.com", "sub.mailinator.com"] {
            assert_eq!(sidecar_lookups(&g.sidecar, domain), 1, "{domain}: the second signup was answered by the cache");
        }
        assert_eq!(g.app.count(), 0);
        // On the parent: it covers sub.mailinator.com too (at the sidecar, and so in the cache).
        g.sidecar.cli().run(&["review", "set", "mailinator.com", "safe", "--note", "a customer"]).expect_code(0, "set");
        signups_until(&g, "x@sub.mailinator.com", 200, "the reviewer's safe to reach the gateway");
        // Once the gateway knows the decision, no cached verdict outlives it.
        let resp = g.envoy.signup_json("temp@mailinator.com");
        assert_eq!(resp.status, 200, "the other cached name, at once\n{resp}");
        let req = g.app.last();
        assert_eq!(req.header("x-email-verdict"), Some("safe"), "{:?}", req.headers);
        assert!(req.header("x-email-flags").is_some_and(|f| f.contains("allowlisted")), "{:?}", req.headers);

        // The reverse: a safe business domain, cached, then blocked by a reviewer.
        for _ in 0..2 {
            let resp = g.envoy.signup_json("ops@shopco.example");
            assert_eq!(resp.status, 200, "{resp}");
        }
        assert_eq!(sidecar_lookups(&g.sidecar, "shopco.example"), 1, "the second signup was answered by the cache");
        g.sidecar.cli().run(&["review", "set", "shopco.example", "disposable"]).expect_code(0, "set");
        signups_until(&g, "ops@shopco.example", 403, "the reviewer's block to reach the gateway");
        // Once blocked, it stays blocked: the new verdict is what the cache now holds.
        let resp = g.envoy.signup_json("ops@shopco.example");
        assert_eq!(resp.status, 403, "{resp}");
        assert_eq!(resp.json()["error"], "disposable_email", "{resp}");
        // Withdrawing the decision is a decision too: shopco.example is safe again.
        g.sidecar.cli().run(&["review", "clear", "shopco.example"]).expect_code(0, "clear");
        signups_until(&g, "ops@shopco.example", 200, "the withdrawn block to reach the gateway");
    });
}

/// ext_authz asks the sidecar for every signup: a decision applies to the very next one.
#[test]
fn ext_authz_applies_a_decision_to_the_next_signup() {
    let config = email_verdict_tests::workspace_root().join("envoy/ext-authz-config.json");
    let g = gateway_with(|s| s.args(&["--ext-authz-config", config.to_str().unwrap()]), |e| e.ext_authz());
    for _ in 0..2 {
        assert_eq!(g.envoy.signup_json("temp@mailinator.com").status, 403);
    }
    g.sidecar.cli().run(&["review", "set", "mailinator.com", "safe"]).expect_code(0, "set");
    let resp = g.envoy.signup_json("temp@mailinator.com");
    assert_eq!(resp.status, 200, "the very next signup\n{resp}");
    assert_eq!(g.app.count(), 1);

    assert_eq!(g.envoy.signup_json("ops@shopco.example").status, 200);
    g.sidecar.cli().run(&["review", "set", "shopco.example", "disposable"]).expect_code(0, "set");
    let resp = g.envoy.signup_json("ops@shopco.example");
    assert_eq!(resp.status, 403, "the very next signup\n{resp}");
    assert_eq!(resp.json()["error"], "disposable_email", "{resp}");
    assert_eq!(g.app.count(), 2);
}
