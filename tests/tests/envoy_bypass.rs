//! Issue 13, items 1-3: ways a hostile client tried to get a disposable signup past block mode
//! in the shipped configuration (the rendered envoy/envoy.template.yaml with
//! envoy/plugin-config.json, in a real Envoy with the built filter, in front of a recording app).
//! Each must be blocked, refused by Envoy, or answered by the filter: never reach the app.

use email_verdict_tests::envoy::{Gateway, form_encode, gateway};
use email_verdict_tests::{Request, Response};
use serde_json::json;

const DISPOSABLE: &str = "temp@mailinator.com";

fn post(path: &str, content_type: &str, body: &[u8]) -> Request {
    Request::new("POST", path).header("Content-Type", content_type).body(body)
}

fn json_body(email: &str) -> Vec<u8> {
    json!({ "email": email, "name": "Mallory" }).to_string().into_bytes()
}

fn form_body(email: &str) -> Vec<u8> {
    format!("name=Mallory&email={}", form_encode(email)).into_bytes()
}

/// The app got nothing new since `before`, and the answer is the block, or a refusal by Envoy.
fn assert_kept_out(g: &Gateway, before: usize, resp: &Response, what: &str) {
    assert_eq!(g.app.count(), before, "{what}: reached the app\n{resp}\n{:?}", g.app.requests().last());
    let blocked = resp.status == 403 && resp.json()["error"] == "disposable_email";
    let refused_by_envoy = resp.status == 400 && resp.header("server").is_some_and(|s| s == "envoy");
    assert!(blocked || refused_by_envoy, "{what}: expected the 403 block or Envoy's 400\n{resp}");
}

// ---- item 1: path variants -------------------------------------------------------------------

/// Paths an app may route to its `/signup` handler (it merges slashes, resolves dot segments,
/// decodes escapes, strips `;params`, ignores a trailing slash, the query or the case).
const SIGNUP_VARIANTS: [&str; 12] = [
    "//signup",
    "///signup",
    "/./signup",
    "/%73ignup",
    "/signup/",
    "/signup;x",
    "/signup?x=1",
    "/SIGNUP",
    "/%2Fsignup",
    "/x/../signup",
    "/signup.json",
    "/%2e/signup",
];

#[test]
fn path_variants_of_the_signup_route_cannot_skip_the_filter() {
    let g = gateway(|b| b);
    for path in SIGNUP_VARIANTS {
        let before = g.app.count();
        let resp = g.envoy.send(&post(path, "application/json", &json_body(DISPOSABLE)));
        assert_kept_out(&g, before, &resp, &format!("JSON POST {path}"));
        let resp = g.envoy.send(&post(path, "application/x-www-form-urlencoded", &form_body(DISPOSABLE)));
        assert_kept_out(&g, before, &resp, &format!("form POST {path}"));
    }
    // The filter itself judged them (only the encoded slash is refused by Envoy before routing).
    let blocked = g.envoy.counter("email_verdict.blocked").unwrap_or(0);
    assert!(blocked >= 2 * (SIGNUP_VARIANTS.len() as u64 - 1), "blocked {blocked}");
}

#[test]
fn an_encoded_slash_is_refused_by_envoy() {
    let g = gateway(|b| b);
    let resp = g.envoy.send(&post("/%2Fsignup", "application/json", &json_body("jane@gmail.com")));
    assert_eq!(resp.status, 400, "path_with_escaped_slashes_action REJECT_REQUEST\n{resp}");
    assert_eq!(g.app.count(), 0);
}

#[test]
fn a_safe_signup_on_a_path_variant_reaches_the_app_judged() {
    let g = gateway(|b| b);
    let resp = g.envoy.send(&post("//Signup/", "application/json", &json_body("jane@gmail.com")));
    assert_eq!(resp.status, 200, "{resp}");
    let req = g.app.wait_for_request(1);
    assert_eq!(req.header("x-email-verdict"), Some("safe"), "{:?}", req.headers);
    // Envoy forwards the normalized path (merged slashes); the case is the app's business.
    assert_eq!(req.path(), "/Signup/");
}

#[test]
fn requests_that_are_not_signups_still_pass_untouched() {
    let g = gateway(|b| b);
    let body = json_body(DISPOSABLE);
    for (method, path) in [("POST", "/signups"), ("POST", "/signup/confirm"), ("GET", "//signup"), ("PUT", "/signup")] {
        let resp = g.envoy.send(&Request::new(method, path).header("Content-Type", "application/json").body(&body));
        assert_eq!(resp.status, 200, "{method} {path}\n{resp}");
    }
    assert_eq!(g.envoy.counter("email_verdict.callouts").unwrap_or(0), 0);
}
