//! When the sidecar cannot give a verdict: down (connection refused), hung (accepts and never
//! answers), or refusing the key. A domain on the embedded strong lists is then decided by the
//! filter itself (local_fallback: blocked); any other follows failure_mode: "allow" lets the
//! signup through with the bypass header, "deny" answers failure_status with
//! {"error":"verdict_unavailable"} (filter/CONFIG.md). The sidecar-down cases run on both builds
//! of the filter (Wasm and dynamic module).

use email_verdict_tests::envoy::{EnvoyBuilder, each_build, eventually, gateway_with};
use email_verdict_tests::{Response, SilentServer, UpstreamApp, free_port};
use serde_json::json;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

const KEY: &str = "ev_0123456789abcdef0123456789abcdef01234567";

fn assert_denied(resp: &Response, status: u16, what: &str) {
    assert_eq!(resp.status, status, "{what}: failure_mode deny\n{resp}");
    assert!(
        resp.header("content-type").is_some_and(|v| v.starts_with("application/json")),
        "{what}: content-type\n{resp}"
    );
    assert_eq!(resp.json()["error"], "verdict_unavailable", "{what}");
}

/// A port where nothing listens: connections are refused.
fn dead_sidecar() -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], free_port()))
}

#[test]
fn sidecar_down_allow_passes_with_the_bypass_header() {
    each_build(|build| {
        let app = UpstreamApp::start();
        let envoy = EnvoyBuilder::new(dead_sidecar(), app.addr()).api_key(KEY).build(build).start();
        let resp = envoy.signup_json("jane@unlisted.example");
        assert_eq!(resp.status, 200, "sidecar down, failure_mode allow\n{resp}");
        let req = app.wait_for_request(1);
        assert_eq!(req.headers_named("x-email-verdict-bypass"), vec!["sidecar_error"], "{:?}", req.headers);
        assert!(req.header("x-email-verdict").is_none(), "no verdict was had: {:?}", req.headers);
        eventually("email_verdict.bypassed == 1", || envoy.counter("email_verdict.bypassed") == Some(1));
        // A strong-listed domain is refused all the same (issue 13 item 4).
        assert_local_block(&envoy.signup_json("temp@mailinator.com"), "sidecar down");
        assert_eq!(app.count(), 1, "the disposable signup must not reach the app");
        eventually("email_verdict.local_decisions == 1", || envoy.counter("email_verdict.local_decisions") == Some(1));
    });
}

#[test]
fn sidecar_down_deny_answers_503() {
    each_build(|build| {
        let app = UpstreamApp::start();
        let envoy = EnvoyBuilder::new(dead_sidecar(), app.addr())
            .api_key(KEY)
            .build(build)
            .set("/failure_mode", json!("deny"))
            .start();
        assert_denied(&envoy.signup_json("jane@gmail.com"), 503, "sidecar down");
        assert_eq!(app.count(), 0, "a denied signup must not reach the app");
        eventually("email_verdict.denied_on_error == 1", || envoy.counter("email_verdict.denied_on_error") == Some(1));
    });
}

#[test]
fn sidecar_down_deny_uses_failure_status() {
    each_build(|build| {
        let app = UpstreamApp::start();
        let envoy = EnvoyBuilder::new(dead_sidecar(), app.addr())
            .api_key(KEY)
            .build(build)
            .set("/failure_mode", json!("deny"))
            .set("/failure_status", json!(502))
            .start();
        assert_denied(&envoy.signup_form("jane@gmail.com"), 502, "sidecar down, failure_status 502");
    });
}

#[test]
fn sidecar_hung_allow_passes_after_the_timeout() {
    let silent = SilentServer::start();
    let app = UpstreamApp::start();
    let envoy =
        EnvoyBuilder::new(silent.addr(), app.addr()).api_key(KEY).set("/sidecar/timeout_ms", json!(300)).start();
    let started = Instant::now();
    let resp = envoy.signup_json("jane@unlisted.example");
    let took = started.elapsed();
    assert_eq!(resp.status, 200, "sidecar hung, failure_mode allow\n{resp}");
    assert!(took >= Duration::from_millis(280), "answered after {took:?}, before the 300 ms timeout");
    assert!(took < Duration::from_secs(3), "answered after {took:?}: the timeout did not fire");
    let req = app.wait_for_request(1);
    assert_eq!(req.headers_named("x-email-verdict-bypass"), vec!["sidecar_timeout"], "{:?}", req.headers);
    assert!(silent.connections() >= 1, "Envoy never connected to the hung sidecar");
}

#[test]
fn sidecar_hung_deny_answers_503_after_the_timeout() {
    let silent = SilentServer::start();
    let app = UpstreamApp::start();
    let envoy = EnvoyBuilder::new(silent.addr(), app.addr())
        .api_key(KEY)
        .set("/sidecar/timeout_ms", json!(300))
        .set("/failure_mode", json!("deny"))
        .start();
    let started = Instant::now();
    let resp = envoy.signup_multipart("jane@unlisted.example");
    let took = started.elapsed();
    assert_denied(&resp, 503, "sidecar hung");
    assert!(took >= Duration::from_millis(280) && took < Duration::from_secs(3), "answered after {took:?}");
    assert_eq!(app.count(), 0, "a denied signup must not reach the app");
}

#[test]
fn a_key_the_sidecar_refuses_is_a_failure_not_a_verdict() {
    // The real sidecar, but Envoy holds an unknown key: 401 from the sidecar.
    let g = gateway_with(|s| s, |b| b.api_key(KEY));
    let resp = g.envoy.signup_json("jane@gmail.com");
    assert_eq!(resp.status, 200, "401 from the sidecar, failure_mode allow\n{resp}");
    let req = g.app.wait_for_request(1);
    assert_eq!(req.headers_named("x-email-verdict-bypass"), vec!["sidecar_rejected"], "{:?}", req.headers);
    assert_local_block(&g.envoy.signup_json("temp@mailinator.com"), "401 from the sidecar");

    let g = gateway_with(|s| s, |b| b.api_key(KEY).set("/failure_mode", json!("deny")));
    assert_denied(&g.envoy.signup_json("jane@gmail.com"), 503, "401 from the sidecar");
    assert_local_block(&g.envoy.signup_json("temp@mailinator.com"), "401 from the sidecar, deny");
}

fn assert_local_block(resp: &Response, what: &str) {
    assert_eq!(resp.status, 403, "{what}: a strong-listed domain is blocked without the sidecar\n{resp}");
    assert_eq!(resp.json()["error"], "disposable_email", "{what}");
}

/// Issue 13 item 4: spending the gateway key's burst and quota (a `free` key: 1/s, 3 a day)
/// (here with gmail.com signups) no longer lets a disposable signup through: the sidecar answers
/// 429/402, a strong-listed domain is decided locally, any other gets failure_mode.
#[test]
fn a_spent_gateway_key_is_no_bypass_for_strong_listed_domains() {
    for mode in ["block", "flag"] {
        let g =
            gateway_with(|s| s.keys(&["free"]), |b| b.set("/mode", json!(mode)).set("/cache/ttl_seconds", json!(0)));
        // Lookups until the sidecar refuses the key (the quota is 3 answers a day, so it must).
        let mut refused = None;
        for i in 0..10 {
            let before = g.app.count();
            let resp = g.envoy.signup_json(&format!("user{i}@gmail.com"));
            assert_eq!(resp.status, 200, "{resp}");
            let req = g.app.wait_for_request(before + 1);
            if req.header("x-email-verdict-bypass") == Some("sidecar_rejected") {
                refused = Some(i);
                break;
            }
        }
        assert!(refused.is_some(), "the free key was never refused in 10 signups");
        let before = g.app.count();
        let resp = g.envoy.signup_json("temp@mailinator.com");
        if mode == "block" {
            assert_local_block(&resp, "spent key, block mode");
            assert_eq!(g.app.count(), before, "the disposable signup reached the app");
        } else {
            assert_eq!(resp.status, 200, "{resp}");
            let req = g.app.wait_for_request(before + 1);
            assert_eq!(req.header("x-email-verdict"), Some("disposable"), "{:?}", req.headers);
            assert_eq!(req.header("x-email-flags"), Some("local_fallback"), "{:?}", req.headers);
            assert!(req.header("x-email-verdict-bypass").is_none(), "{:?}", req.headers);
        }
        eventually("email_verdict.local_decisions == 1", || {
            g.envoy.counter("email_verdict.local_decisions") == Some(1)
        });
        // A domain the strong lists do not name still gets failure_mode (allow: through, marked).
        let before = g.app.count();
        assert_eq!(g.envoy.signup_json("someone@gmail.com").status, 200);
        let req = g.app.wait_for_request(before + 1);
        assert_eq!(req.headers_named("x-email-verdict-bypass"), vec!["sidecar_rejected"], "{:?}", req.headers);
    }
}

#[test]
fn an_inline_api_key_works_like_the_env_one() {
    // api_key inline instead of api_key_env; Envoy's environment holds no key.
    let nsd = email_verdict_tests::Nsd::start();
    let sidecar = email_verdict_tests::Sidecar::builder().dns(nsd.addr()).start();
    let app = UpstreamApp::start();
    let envoy = EnvoyBuilder::new(sidecar.addr(), app.addr())
        .remove("/sidecar/api_key_env")
        .set("/sidecar/api_key", json!(sidecar.key()))
        .start();
    let resp = envoy.signup_json("temp@mailinator.com");
    assert_eq!(resp.status, 403, "inline api_key\n{resp}");
}
