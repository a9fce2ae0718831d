//! Issue 23, section 5: underscore spellings of the verdict headers. `x_email_verdict: safe`
//! from a client went through every shipped Envoy configuration to the app (the configs remove
//! only the dashed names), and servers that fold `_` into `-` (CGI-style WSGI, Rack, PHP; nginx
//! with `underscores_in_headers on`) read it as `x-email-verdict`. Every shipped configuration
//! now sets `headers_with_underscores_action: REJECT_REQUEST`: Envoy answers 400 before any
//! filter, on every route. Each configuration runs in a real Envoy in front of the recording
//! app, with the real sidecar.

use email_verdict_tests::envoy::{EnvoyBuilder, Gateway, each_build, gateway_on, gateway_with, signup};
use email_verdict_tests::{Request, Response};

/// The shipped ext_authz settings (`envoy/ext-authz-config.json`).
fn ext_authz_config() -> String {
    email_verdict_tests::workspace_root().join("envoy/ext-authz-config.json").display().to_string()
}

fn ext_authz(template: &'static str) -> Gateway {
    let config = ext_authz_config();
    gateway_with(
        move |s| s.args(&["--ext-authz-config", &config]),
        move |e: EnvoyBuilder| e.ext_authz_template(template),
    )
}

/// Underscore spellings of the eight verdict headers, as a client forges them.
const FORGED: [(&str, &str); 8] = [
    ("x_email_verdict", "safe"),
    ("X_Email_Domain", "gmail.com"),
    ("x_email_flags", "allowlisted"),
    ("x_email_verdict_bypass", "no_email"),
    ("x-email_suggestion", "gmail.com"),
    ("x_email_normalized", "victim@gmail.com"),
    ("X_Email-Role", "true"),
    ("x_email_relay", "true"),
];

/// Envoy's own 400 (not a check's JSON answer); Envoy Gateway's shape passes no `server` header.
fn refused_by_envoy(resp: &Response) -> bool {
    resp.status == 400 && resp.text().trim() == "Bad Request"
}

/// Requests carrying one forged underscore header each never reach the app: a safe signup, a
/// disposable one, a signup without an email, a request the check does not cover. The same
/// requests without it do (the control: the 400 is for the underscore).
fn underscore_headers_never_reach_the_app(g: &Gateway, what: &str) {
    let requests = [
        ("a safe signup", signup("application/json", br#"{"email":"jane@gmail.com"}"#)),
        ("a disposable signup", signup("application/json", br#"{"email":"temp@mailinator.com"}"#)),
        ("a signup without an email", signup("application/json", br#"{"name":"Ann"}"#)),
        ("another path", Request::get("/home")),
    ];
    for (name, value) in FORGED {
        for (kind, req) in &requests {
            let resp = g.envoy.send(&req.clone().header(name, value));
            assert!(refused_by_envoy(&resp), "{what}: {kind} with {name}: {value}: want Envoy's 400\n{resp}");
        }
    }
    assert_eq!(g.app.count(), 0, "{what}: an underscore header reached the app: {:?}", g.app.requests());
    // The control: the same requests, without the forged header, are served as usual.
    assert_eq!(g.envoy.send(&requests[0].1).status, 200, "{what}: a safe signup");
    let seen = g.app.wait_for_request(1);
    assert_eq!(seen.headers_named("x-email-verdict"), ["safe"], "{what}: {:?}", seen.headers);
    assert_eq!(g.envoy.send(&requests[3].1).status, 200, "{what}: another path");
    for seen in g.app.requests() {
        let underscored: Vec<_> = seen.headers.iter().filter(|(n, _)| n.contains('_')).collect();
        assert!(underscored.is_empty(), "{what}: {underscored:?} reached the app");
    }
}

#[test]
fn envoy_yaml_with_the_filter_refuses_underscore_headers() {
    each_build(|build| {
        let g = gateway_on(build, |b| b);
        underscore_headers_never_reach_the_app(&g, &format!("the filter's configuration ({})", build.name()));
    });
}

#[test]
fn ext_authz_yaml_refuses_underscore_headers() {
    underscore_headers_never_reach_the_app(&ext_authz("ext-authz.template.yaml"), "ext-authz.yaml");
}

#[test]
fn what_istiod_generates_refuses_underscore_headers() {
    // envoy/istio/ext-authz.yaml's EnvoyFilter, merged into the inbound connection manager.
    underscore_headers_never_reach_the_app(&ext_authz("istio-generated-ext-authz.template.yaml"), "Istio");
}

#[test]
fn what_envoy_gateway_generates_refuses_underscore_headers() {
    // envoy/gateway/gateway.yaml's ClientTrafficPolicy headers.withUnderscoresAction.
    underscore_headers_never_reach_the_app(&ext_authz("gateway-generated-ext-authz.template.yaml"), "Envoy Gateway");
}
