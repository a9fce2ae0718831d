//! When the sidecar cannot give a verdict: down (connection refused), hung (accepts and never
//! answers), or refusing the key. failure_mode "allow" lets the signup through with the bypass
//! header; "deny" answers failure_status with {"error":"verdict_unavailable"} (filter/CONFIG.md).

use email_verdict_tests::envoy::{EnvoyBuilder, eventually, gateway_with};
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
    let app = UpstreamApp::start();
    let envoy = EnvoyBuilder::new(dead_sidecar(), app.addr()).api_key(KEY).start();
    let resp = envoy.signup_json("temp@mailinator.com");
    assert_eq!(resp.status, 200, "sidecar down, failure_mode allow\n{resp}");
    let req = app.wait_for_request(1);
    assert_eq!(req.headers_named("x-email-verdict-bypass"), vec!["sidecar_error"], "{:?}", req.headers);
    assert!(req.header("x-email-verdict").is_none(), "no verdict was had: {:?}", req.headers);
    eventually("email_verdict.bypassed == 1", || envoy.counter("email_verdict.bypassed") == Some(1));
}

#[test]
fn sidecar_down_deny_answers_503() {
    let app = UpstreamApp::start();
    let envoy = EnvoyBuilder::new(dead_sidecar(), app.addr()).api_key(KEY).set("/failure_mode", json!("deny")).start();
    assert_denied(&envoy.signup_json("jane@gmail.com"), 503, "sidecar down");
    assert_eq!(app.count(), 0, "a denied signup must not reach the app");
    eventually("email_verdict.denied_on_error == 1", || envoy.counter("email_verdict.denied_on_error") == Some(1));
}

#[test]
fn sidecar_down_deny_uses_failure_status() {
    let app = UpstreamApp::start();
    let envoy = EnvoyBuilder::new(dead_sidecar(), app.addr())
        .api_key(KEY)
        .set("/failure_mode", json!("deny"))
        .set("/failure_status", json!(502))
        .start();
    assert_denied(&envoy.signup_form("jane@gmail.com"), 502, "sidecar down, failure_status 502");
}

#[test]
fn sidecar_hung_allow_passes_after_the_timeout() {
    let silent = SilentServer::start();
    let app = UpstreamApp::start();
    let envoy =
        EnvoyBuilder::new(silent.addr(), app.addr()).api_key(KEY).set("/sidecar/timeout_ms", json!(300)).start();
    let started = Instant::now();
    let resp = envoy.signup_json("temp@mailinator.com");
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
    let resp = envoy.signup_multipart("temp@mailinator.com");
    let took = started.elapsed();
    assert_denied(&resp, 503, "sidecar hung");
    assert!(took >= Duration::from_millis(280) && took < Duration::from_secs(3), "answered after {took:?}");
    assert_eq!(app.count(), 0, "a denied signup must not reach the app");
}

#[test]
fn a_key_the_sidecar_refuses_is_a_failure_not_a_verdict() {
    // The real sidecar, but Envoy holds an unknown key: 401 from the sidecar.
    let g = gateway_with(|s| s, |b| b.api_key(KEY));
    let resp = g.envoy.signup_json("temp@mailinator.com");
    assert_eq!(resp.status, 200, "401 from the sidecar, failure_mode allow\n{resp}");
    let req = g.app.wait_for_request(1);
    assert_eq!(req.headers_named("x-email-verdict-bypass"), vec!["sidecar_rejected"], "{:?}", req.headers);

    let g = gateway_with(|s| s, |b| b.api_key(KEY).set("/failure_mode", json!("deny")));
    assert_denied(&g.envoy.signup_json("temp@mailinator.com"), 503, "401 from the sidecar");
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
