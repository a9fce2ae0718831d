//! Issue 15: Envoy's own HTTP ext_authz filter (`envoy/ext-authz.template.yaml`, no Wasm) pointed
//! at the sidecar's `/ext_authz`, in a real Envoy, on NSD's fixture zones: body on, Content-Type
//! passed, the key added by Envoy from its environment.

use email_verdict_tests::envoy::{EnvoyBuilder, form_encode, gateway_with, multipart, sidecar_lookups, signup};
use email_verdict_tests::{Request, Response, UpstreamApp, VERDICT_HEADERS, free_port};
use serde_json::json;
use std::net::SocketAddr;
use std::time::Duration;

const KEY: &str = "ev_0123456789abcdef0123456789abcdef01234567";
/// Paths a servlet container routes to `/signup` (it drops every segment's `;parameters`, an
/// encoded `%3B` too) while Envoy keeps them (issue 23, section 5).
const PARAM_SPELLINGS: [&str; 8] = [
    "/;x/signup",
    "/;/signup",
    "/%3Bx/signup",
    "/%3bx/signup",
    "/x/..;/signup",
    "/;x/signup;y",
    "/;x/SignUp/",
    "/signup%3Bx",
];
/// `envoy/ext-authz-config.json`: the shipped settings (also read `?email=`, like the filter's).
fn shipped_config() -> String {
    email_verdict_tests::workspace_root().join("envoy/ext-authz-config.json").display().to_string()
}

fn ext_authz_gateway() -> email_verdict_tests::envoy::Gateway {
    gateway_with(|s| s.args(&["--ext-authz-config", &shipped_config()]), |e| e.ext_authz())
}

fn assert_blocked(resp: &Response, what: &str) {
    assert_eq!(resp.status, 403, "{what}: a disposable signup must be blocked\n{resp}");
    assert_eq!(resp.json()["error"], "disposable_email", "{what}: the block response body\n{resp}");
}

#[test]
fn disposable_signups_are_blocked_in_every_body_format_and_never_reach_the_app() {
    let g = ext_authz_gateway();
    assert_blocked(&g.envoy.signup_json("temp.user@mailinator.com"), "JSON");
    assert_blocked(&g.envoy.signup_form("Temp.User+x@Mailinator.COM"), "urlencoded");
    assert_blocked(&g.envoy.signup_multipart("someone@sub.mailinator.com"), "multipart");
    let query = format!("/signup?email={}", form_encode("q@mailinator.com"));
    assert_blocked(&g.envoy.send(&Request::new("POST", &query)), "query parameter, no body");
    // Path variants reach the check too (the route matches the normalized path leniently),
    // ;params before the signup segment included (servlet containers drop them; issue 23).
    for path in ["//signup", "/./signup", "/%73ignup", "/signup/", "/signup;x", "/SIGNUP", "/signup.json"]
        .into_iter()
        .chain(PARAM_SPELLINGS)
    {
        let body = json!({ "email": "v@mailinator.com" }).to_string();
        let req = Request::new("POST", path).header("Content-Type", "application/json").body(body.as_bytes());
        assert_blocked(&g.envoy.send(&req), path);
    }
    assert_eq!(g.app.count(), 0, "the app must not see a blocked signup: {:?}", g.app.requests());
    assert!(sidecar_lookups(&g.sidecar, "mailinator.com") == 0, "ext_authz checks are not lookup lines");
    let log = g.sidecar.stderr_text();
    assert!(log.contains("route=\"ext_authz\""), "one log line per check\n{log}");
    assert!(!log.contains("temp.user") && !log.contains(KEY), "no email, no key in the log\n{log}");
}

#[test]
fn a_safe_signup_reaches_the_app_with_the_verdict_headers_and_forgeries_are_replaced() {
    let g = ext_authz_gateway();
    let body = json!({ "email": "Jane.Doe@GMAIL.com", "name": "Jane" }).to_string();
    let req = signup("application/json", body.as_bytes())
        .header("x-email-verdict", "safe")
        .header("x-email-flags", "allowlisted")
        .header("x-email-verdict-bypass", "no_email");
    let resp = g.envoy.send(&req);
    assert_eq!(resp.status, 200, "{resp}");
    let seen = g.app.wait_for_request(1);
    assert_eq!(seen.headers_named("x-email-verdict"), ["safe"], "{:?}", seen.headers);
    assert_eq!(seen.headers_named("x-email-domain"), ["gmail.com"]);
    let flags = seen.headers_named("x-email-flags");
    assert_eq!(flags.len(), 1, "{:?}", seen.headers);
    assert!(flags[0].contains("free_provider") && !flags[0].contains("allowlisted"), "{flags:?}");
    assert!(seen.header("x-email-verdict-bypass").is_none(), "the forged bypass header is removed: {:?}", seen.headers);
    assert!(seen.header("x-email-verdict-key").is_none(), "the key never reaches the app: {:?}", seen.headers);
    assert_eq!(seen.body, body.as_bytes(), "the body arrives intact");
    // A forged "safe" on a disposable signup changes nothing.
    let forged = signup("application/json", br#"{"email":"x@mailinator.com"}"#).header("x-email-verdict", "safe");
    assert_blocked(&g.envoy.send(&forged), "forged verdict header");
    // A multipart signup, and a non-signup request (forged headers stripped, never checked).
    let (ctype, body) = multipart(&[("name", "Ann"), ("email", "ann@gmail.com")]);
    assert_eq!(g.envoy.send(&signup(&ctype, &body)).status, 200);
    assert_eq!(g.app.wait_for_request(2).headers_named("x-email-domain"), ["gmail.com"]);
    let other = Request::new("GET", "/home").header("x-email-verdict", "safe");
    assert_eq!(g.envoy.send(&other).status, 200);
    let seen = g.app.wait_for_request(3);
    for h in VERDICT_HEADERS {
        assert!(seen.header(h).is_none(), "a forged {h} reached the app: {:?}", seen.headers);
    }
}

#[test]
fn the_end_users_authorization_header_is_not_the_key() {
    // Envoy forwards the client's Authorization to the check; only x-email-verdict-key counts.
    let g = gateway_with(|s| s, |e| e.ext_authz());
    let req = signup("application/json", br#"{"email":"a@mailinator.com"}"#)
        .header("Authorization", "Bearer ev_ffffffffffffffffffffffffffffffffffffffff");
    assert_blocked(&g.envoy.send(&req), "with a client Authorization header");
}

#[test]
fn no_email_invalid_and_unreadable_bodies_follow_the_filters_defaults() {
    let g = ext_authz_gateway();
    // No email: on_missing_email allow, marked for the app.
    let resp = g.envoy.send(&signup("application/json", br#"{"name":"Ann"}"#).header("x-email-verdict", "safe"));
    assert_eq!(resp.status, 200, "{resp}");
    let seen = g.app.wait_for_request(1);
    assert_eq!(seen.headers_named("x-email-verdict-bypass"), ["no_email"], "{:?}", seen.headers);
    assert!(seen.header("x-email-verdict").is_none(), "a forged verdict is removed: {:?}", seen.headers);
    // Duplicate keys, an invalid address, unreadable JSON, an encoded body: refused with 400.
    let cases: [(&str, &[u8], &str); 4] = [
        ("application/json", br#"{"email":"x@mailinator.com","email":"y@gmail.com"}"#, "invalid_email"),
        ("application/json", br#"{"email":"not an email"}"#, "invalid_email"),
        ("application/json", br#"{"email":"x@mailinator.com","n":NaN}"#, "unreadable_body"),
        ("text/plain", b"email=x@mailinator.com", "unreadable_body"),
    ];
    for (ctype, body, error) in cases {
        let resp = g.envoy.send(&signup(ctype, body));
        assert_eq!(resp.status, 400, "{}\n{resp}", String::from_utf8_lossy(body));
        assert_eq!(resp.json()["error"], error, "{}", String::from_utf8_lossy(body));
    }
    assert_eq!(g.app.count(), 1, "refused signups never reach the app");
}

#[test]
fn an_ext_authz_config_file_changes_mode_and_sources() {
    let dir = email_verdict_tests::TestDir::new("ext-authz-config");
    let file = dir.join("ext-authz.json");
    let config = json!({ "mode": "flag", "email": { "json_pointers": ["/user/email"] }, "on_missing_email": "deny" });
    std::fs::write(&file, config.to_string()).unwrap();
    let file_arg = file.display().to_string();
    let g = gateway_with(|s| s.args(&["--ext-authz-config", &file_arg]), |e| e.ext_authz());
    let body = json!({ "user": { "email": "t@mailinator.com" } }).to_string();
    let resp = g.envoy.send(&signup("application/json", body.as_bytes()));
    assert_eq!(resp.status, 200, "flag mode lets a disposable signup through, marked\n{resp}");
    let seen = g.app.wait_for_request(1);
    assert_eq!(seen.headers_named("x-email-verdict"), ["disposable"], "{:?}", seen.headers);
    let resp = g.envoy.send(&signup("application/json", br#"{"email":"t@mailinator.com"}"#));
    assert_eq!((resp.status, resp.json()["error"].clone()), (400, json!("missing_email")), "{resp}");
}

#[test]
fn a_bad_ext_authz_config_is_refused_at_start_naming_the_field() {
    let dir = email_verdict_tests::TestDir::new("ext-authz-bad");
    let file = dir.join("bad.json");
    std::fs::write(&file, r#"{"mode":"dry_run"}"#).unwrap();
    let out = email_verdict_tests::sidecar::run_raw(
        dir.path(),
        &["serve", "--ext-authz-config", &file.display().to_string(), "--state", "sqlite:x.db"],
    );
    out.expect_code(2, "a bad --ext-authz-config");
    assert!(out.stderr.contains("mode: unknown variant `dry_run`"), "{}", out.stderr);
}

/// A port where nothing listens: connections are refused.
fn dead_sidecar() -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], free_port()))
}

#[test]
fn a_stopped_sidecar_gives_the_operators_failure_mode() {
    let app = UpstreamApp::start();
    let closed = EnvoyBuilder::new(dead_sidecar(), app.addr()).api_key(KEY).ext_authz().start();
    assert_eq!(closed.signup_json("jane@gmail.com").status, 503, "failure_mode_allow false: refused");
    assert_eq!(app.count(), 0);
    let open = EnvoyBuilder::new(dead_sidecar(), app.addr())
        .api_key(KEY)
        .ext_authz()
        .placeholder("FAILURE_MODE_ALLOW", "true")
        .start();
    let req = signup("application/json", br#"{"email":"jane@gmail.com"}"#).header("x-email-verdict", "safe");
    assert_eq!(open.send(&req).status, 200, "failure_mode_allow true: through");
    let seen = app.wait_for_request(1);
    assert_eq!(seen.header("x-envoy-auth-failure-mode-allowed"), Some("true"), "{:?}", seen.headers);
    assert!(seen.header("x-email-verdict").is_none(), "no forged verdict survives: {:?}", seen.headers);
}

#[test]
fn a_spent_gateway_key_still_blocks_strong_listed_domains() {
    // A free key: three verdicts a day, then the sidecar cannot judge (a 5xx for Envoy), but a
    // strong-listed domain is still refused (issue 13 item 4, the ext_authz way).
    let g = gateway_with(|s| s.keys(&["free"]).args(&["--ext-authz-config", &shipped_config()]), |e| e.ext_authz());
    // One a second: the free plan's burst.
    let pause = || std::thread::sleep(Duration::from_millis(1100));
    for i in 0..3 {
        let resp = g.envoy.signup_json(&format!("u{i}@gmail.com"));
        assert_eq!(resp.status, 200, "verdict {i}\n{resp}");
        pause();
    }
    assert_eq!(g.envoy.signup_json("later@gmail.com").status, 503, "quota spent: the failure mode decides");
    pause();
    assert_blocked(&g.envoy.signup_json("temp@mailinator.com"), "quota spent, strong-listed");
    assert_eq!(g.app.count(), 3);
    let metrics = Request::get("/metrics").send(g.sidecar.admin_addr()).text();
    for line in [
        "email_verdict_ext_authz_checks_total{outcome=\"judged\"} 3",
        "email_verdict_ext_authz_checks_total{outcome=\"failed\"} 1",
        "email_verdict_ext_authz_checks_total{outcome=\"local_decision\"} 1",
    ] {
        assert!(metrics.contains(line), "{line}\n{metrics}");
    }
}

#[test]
fn the_shipped_ext_authz_config_is_the_plugin_configs_shared_part() {
    let root = email_verdict_tests::workspace_root();
    let read = |name: &str| -> serde_json::Value {
        serde_json::from_str(&std::fs::read_to_string(root.join(name)).unwrap()).unwrap()
    };
    let (ext_authz, plugin) = (read("envoy/ext-authz-config.json"), read("envoy/plugin-config.json"));
    for (field, value) in ext_authz.as_object().unwrap() {
        assert_eq!(&plugin[field], value, "envoy/ext-authz-config.json and envoy/plugin-config.json differ on {field}");
    }
}

#[test]
fn ext_authz_yaml_is_the_rendered_template_and_envoy_accepts_it() {
    let root = email_verdict_tests::workspace_root();
    let out = email_verdict_tests::envoy::run({
        let mut c = std::process::Command::new("python3");
        c.arg(root.join("scripts/render-envoy.py")).arg("--template").arg(root.join("envoy/ext-authz.template.yaml"));
        c
    });
    assert!(out.success(), "scripts/render-envoy.py failed\n{out}");
    let shipped = std::fs::read_to_string(root.join("envoy/ext-authz.yaml")).expect("read envoy/ext-authz.yaml");
    assert!(shipped == out.stdout, "envoy/ext-authz.yaml is stale: run `make envoy-config`");
    let checked = email_verdict_tests::envoy::validate(&root.join("envoy/ext-authz.yaml"), &root);
    assert!(checked.success(), "Envoy refuses envoy/ext-authz.yaml\n{checked}");
}

/// The Envoy configuration istiod (resp. Envoy Gateway) generates for the shipped manifests,
/// reproduced in `envoy/*-generated-ext-authz.template.yaml` (sources in `envoy/GENERATED.md`),
/// against the real sidecar: disposable signups blocked, safe ones flagged, forged verdicts
/// replaced on checked requests.
fn generated_shape_enforces(template: &str, variants: &[&str]) {
    let g = gateway_with(|s| s.args(&["--ext-authz-config", &shipped_config()]), |e| e.ext_authz_template(template));
    assert_blocked(&g.envoy.signup_json("temp@mailinator.com"), template);
    assert_blocked(&g.envoy.signup_multipart("temp@mailinator.com"), template);
    for path in variants {
        let req = Request::new("POST", path)
            .header("Content-Type", "application/json")
            .body(br#"{"email":"v@mailinator.com"}"#);
        assert_blocked(&g.envoy.send(&req), &format!("{template} {path}"));
    }
    assert_eq!(g.app.count(), 0, "{template}: {:?}", g.app.requests());
    let req = signup("application/json", br#"{"email":"ann@gmail.com"}"#).header("x-email-verdict", "disposable");
    assert_eq!(g.envoy.send(&req).status, 200, "{template}");
    let seen = g.app.wait_for_request(1);
    assert_eq!(seen.headers_named("x-email-verdict"), ["safe"], "{template}: {:?}", seen.headers);
    assert_eq!(seen.headers_named("x-email-domain"), ["gmail.com"], "{template}");
    assert!(seen.header("x-email-verdict-key").is_none(), "{template}: the key reached the app");
    // The shipped configuration counts signups, the refused ones too; the client is the one this
    // Envoy saw (the check carries it): without it there is no client count.
    let judged = (3 + variants.len()).to_string();
    assert_eq!(seen.headers_named("x-email-client-signups"), [judged.as_str()], "{template}: {:?}", seen.headers);
    assert!(seen.header("x-email-verdict-client").is_none(), "{template}: the check's own header reached the app");
}

#[test]
fn what_istiod_generates_for_the_istio_manifests_enforces() {
    // Istio matches paths case-sensitively with exact, prefix or suffix patterns only: the
    // manifest lists the spellings it can (envoy/istio/ext-authz.yaml); pathNormalization
    // MERGE_SLASHES makes `//signup` a `/signup`.
    // `*/signup` suffixes and `/;*`, `/%3B*` prefixes take the ;param spellings.
    let variants: Vec<&str> =
        ["//signup", "/signup/", "/signup;x", "/SIGNUP"].into_iter().chain(PARAM_SPELLINGS).collect();
    generated_shape_enforces("istio-generated-ext-authz.template.yaml", &variants);
}

#[test]
fn what_envoy_gateway_generates_for_the_gateway_manifests_enforces() {
    let variants = ["//signup", "/./signup", "/%73ignup", "/signup/", "/signup;x", "/SiGnUp", "/signup.json"];
    let variants: Vec<&str> = variants.into_iter().chain(PARAM_SPELLINGS).collect();
    generated_shape_enforces("gateway-generated-ext-authz.template.yaml", &variants);
}
