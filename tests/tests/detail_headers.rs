//! The detail headers at the gateway (`filter/CONFIG.md`, "Detail headers"): the app behind a
//! real Envoy receives `x-email-normalized`, `x-email-role` and `x-email-relay`, the lookup
//! record's `details` of the signup's own address, from the Wasm filter and from Envoy's
//! ext_authz with the sidecar's `/ext_authz`, on NSD's fixture zones. A client's copies never
//! reach the app, whatever the path (a verdict, no email, a request that is no signup, the
//! sidecar down); switched off, none reach it; no email reaches a log line.

use email_verdict_tests::envoy::{EnvoyBuilder, Gateway, each_build, gateway_on, gateway_with, signup};
use email_verdict_tests::{Recorded, Request, TestDir, UpstreamApp, free_port};
use serde_json::json;
use std::net::SocketAddr;

const DETAIL_HEADERS: [&str; 3] = ["x-email-normalized", "x-email-role", "x-email-relay"];

/// What a client forges: someone else's address, a role and a relay the address does not have.
const FORGED: [(&str, &str); 3] =
    [("X-Email-Normalized", "victim@gmail.com"), ("x-email-role", "true"), ("x-email-relay", "true")];

fn forge(mut req: Request) -> Request {
    for (name, value) in FORGED {
        req = req.header(name, value);
    }
    req
}

fn json_signup(email: &str) -> Request {
    signup("application/json", json!({ "email": email, "name": "Ann" }).to_string().as_bytes())
}

/// The values of the three detail headers the app saw (each must come at most once).
fn seen(req: &Recorded) -> [Option<String>; 3] {
    DETAIL_HEADERS.map(|name| {
        let values = req.headers_named(name);
        assert!(values.len() <= 1, "{name} reached the app {} times: {:?}", values.len(), req.headers);
        values.first().map(|v| v.to_string())
    })
}

fn details(normalized: &str, role: &str, relay: &str) -> [Option<String>; 3] {
    [Some(normalized.to_owned()), Some(role.to_owned()), Some(relay.to_owned())]
}

const NONE: [Option<String>; 3] = [None, None, None];

/// Sends `req`, expects it at the app as its `n`th request, and returns what the app saw.
fn through(g: &Gateway, req: &Request, n: usize, what: &str) -> Recorded {
    let resp = g.envoy.send(req);
    assert_eq!(resp.status, 200, "{what}: should reach the app\n{resp}");
    g.app.wait_for_request(n)
}

/// The same behaviour, whichever enforcement point `g` runs.
fn the_app_gets_the_details_of_the_address_and_never_a_forged_one(g: &Gateway, mode: &str) {
    let cases = [
        // Gmail's rules: dots and +tag ignored, lowercased.
        ("J.o.h.n+x@gmail.com", details("john@gmail.com", "false", "false")),
        // A role account (RFC 2142's postmaster), a domain without a provider rule: kept as given.
        ("Postmaster@shopco.example", details("Postmaster@shopco.example", "true", "false")),
        // A relay service (data/relay.txt).
        ("Abc.123@duck.com", details("Abc.123@duck.com", "false", "true")),
    ];
    let mut n = 0;
    for (email, expected) in &cases {
        // Without and with forged copies: the app sees the real values, once.
        for forged in [false, true] {
            let req = if forged { forge(json_signup(email)) } else { json_signup(email) };
            n += 1;
            let req = through(g, &req, n, &format!("{mode}: {email}"));
            assert_eq!(&seen(&req), expected, "{mode}: {email} (forged copies sent: {forged}): {:?}", req.headers);
            assert_eq!(req.headers_named("x-email-verdict"), ["safe"], "{mode}: {email}");
        }
    }
    // A form body gets the same.
    n += 1;
    let form = signup("application/x-www-form-urlencoded", b"email=J.o.h.n%2Bx%40gmail.com");
    let req = through(g, &forge(form), n, &format!("{mode}: a form"));
    assert_eq!(seen(&req), details("john@gmail.com", "false", "false"), "{mode}: a form");

    // No email (on_missing_email allow): the bypass header, no detail header.
    n += 1;
    let req = through(g, &forge(signup("application/json", br#"{"name":"Ann"}"#)), n, &format!("{mode}: no email"));
    assert_eq!(req.headers_named("x-email-verdict-bypass"), ["no_email"], "{mode}");
    assert_eq!(seen(&req), NONE, "{mode}: no email: {:?}", req.headers);
    // A request that is no signup (the filter or the check never runs there).
    n += 1;
    let req = through(g, &forge(Request::get("/home")), n, &format!("{mode}: GET /home"));
    assert_eq!(seen(&req), NONE, "{mode}: GET /home: {:?}", req.headers);
    // A disposable signup is refused before the app, forged headers or not.
    let resp = g.envoy.send(&forge(json_signup("temp@mailinator.com")));
    assert_eq!(resp.status, 403, "{mode}\n{resp}");
    assert_eq!(g.app.count(), n, "{mode}: a blocked signup reached the app");
    // The addresses never reach a log line (the sidecar's and Envoy's).
    let logs = format!("{}\n{}", g.sidecar.stderr_text(), g.envoy.log_text()).to_ascii_lowercase();
    for part in ["j.o.h.n", "john@", "postmaster@", "abc.123", "victim@"] {
        assert!(!logs.contains(part), "{mode}: {part} in a log line:\n{logs}");
    }
}

#[test]
fn the_filter_passes_the_details_and_strips_forged_copies() {
    each_build(|build| {
        let g = gateway_on(build, |b| b);
        the_app_gets_the_details_of_the_address_and_never_a_forged_one(&g, build.name());
        // A cached verdict (gmail.com was asked once above) carries this signup's own details.
        let before = g.app.count();
        let req = through(&g, &forge(json_signup("Info+news@gmail.com")), before + 1, "filter: from the cache");
        assert_eq!(seen(&req), details("info@gmail.com", "true", "false"), "{:?}", req.headers);
    });
}

/// The shipped `--ext-authz-config` (`envoy/ext-authz-config.json`).
fn shipped_ext_authz_config() -> String {
    email_verdict_tests::workspace_root().join("envoy/ext-authz-config.json").display().to_string()
}

#[test]
fn ext_authz_passes_the_details_and_strips_forged_copies() {
    let config = shipped_ext_authz_config();
    let g = gateway_with(|s| s.args(&["--ext-authz-config", &config]), |e| e.ext_authz());
    the_app_gets_the_details_of_the_address_and_never_a_forged_one(&g, "ext_authz");
}

#[test]
fn what_istiod_and_envoy_gateway_generate_pass_the_details_upstream() {
    let config = shipped_ext_authz_config();
    for template in ["istio-generated-ext-authz.template.yaml", "gateway-generated-ext-authz.template.yaml"] {
        let g = gateway_with(|s| s.args(&["--ext-authz-config", &config]), |e| e.ext_authz_template(template));
        let req = through(&g, &forge(json_signup("J.o.h.n+x@gmail.com")), 1, template);
        assert_eq!(seen(&req), details("john@gmail.com", "false", "false"), "{template}: {:?}", req.headers);
    }
}

// ---- switched off ----------------------------------------------------------------------------------

fn none_reach_the_app(g: &Gateway, mode: &str) {
    for (i, email) in ["J.o.h.n+x@gmail.com", "postmaster@duck.com"].iter().enumerate() {
        let req = through(g, &forge(json_signup(email)), i + 1, &format!("{mode}: {email}"));
        assert_eq!(seen(&req), NONE, "{mode}: {email}: {:?}", req.headers);
        assert_eq!(req.headers_named("x-email-verdict"), ["safe"], "{mode}: the verdict headers still come");
    }
}

#[test]
fn switched_off_no_detail_header_reaches_the_app() {
    let off = json!({ "normalized_email": false, "role_account": false, "relay": false });
    each_build(|build| {
        let g = gateway_on(build, |b| b.set("/detail_headers", off.clone()));
        none_reach_the_app(&g, build.name());
    });

    let dir = TestDir::new("detail-headers-off");
    let file = dir.join("ext-authz.json");
    std::fs::write(&file, json!({ "detail_headers": off }).to_string()).expect("write the ext_authz config");
    let file = file.display().to_string();
    let g = gateway_with(|s| s.args(&["--ext-authz-config", &file]), |e| e.ext_authz());
    none_reach_the_app(&g, "ext_authz");
}

#[test]
fn one_detail_header_switched_off_the_others_still_come() {
    each_build(|build| {
        let g = gateway_on(build, |b| b.set("/detail_headers/normalized_email", json!(false)));
        let req = through(&g, &forge(json_signup("postmaster@duck.com")), 1, build.name());
        assert_eq!(seen(&req), [None, Some("true".into()), Some("true".into())], "{:?}", req.headers);
    });
}

// ---- without the sidecar -----------------------------------------------------------------------------

/// A port where nothing listens: connections are refused.
fn dead_sidecar() -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], free_port()))
}

#[test]
fn with_the_sidecar_down_forged_copies_are_still_removed() {
    // The filter in flag mode: a strong-listed domain is judged in the proxy (local_fallback) and
    // gets the details computed there; any other goes on with the bypass header only.
    each_build(|build| {
        let app = UpstreamApp::start();
        let envoy = EnvoyBuilder::new(dead_sidecar(), app.addr())
            .api_key("ev_0123456789abcdef0123456789abcdef01234567")
            .build(build)
            .set("/mode", json!("flag"))
            .start();
        let resp = envoy.send(&forge(json_signup("Info@mailinator.com")));
        assert_eq!(resp.status, 200, "{resp}");
        let req = app.wait_for_request(1);
        assert_eq!(req.headers_named("x-email-flags"), ["local_fallback"], "{:?}", req.headers);
        assert_eq!(seen(&req), details("Info@mailinator.com", "true", "false"), "{:?}", req.headers);
        let resp = envoy.send(&forge(json_signup("J.o.h.n@gmail.com")));
        assert_eq!(resp.status, 200, "{resp}");
        let req = app.wait_for_request(2);
        assert_eq!(req.headers_named("x-email-verdict-bypass"), ["sidecar_error"], "{:?}", req.headers);
        assert_eq!(seen(&req), NONE, "{:?}", req.headers);
    });

    // ext_authz with failure_mode_allow: through without an answer; Envoy's header mutation
    // removed the client's copies before the check.
    let app = UpstreamApp::start();
    let envoy = EnvoyBuilder::new(dead_sidecar(), app.addr())
        .api_key("ev_0123456789abcdef0123456789abcdef01234567")
        .ext_authz()
        .placeholder("FAILURE_MODE_ALLOW", "true")
        .start();
    let resp = envoy.send(&forge(json_signup("J.o.h.n@gmail.com")));
    assert_eq!(resp.status, 200, "{resp}");
    let req = app.wait_for_request(1);
    assert_eq!(req.header("x-envoy-auth-failure-mode-allowed"), Some("true"), "{:?}", req.headers);
    assert_eq!(seen(&req), NONE, "{:?}", req.headers);
}
