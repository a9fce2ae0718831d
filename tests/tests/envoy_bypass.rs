//! Issue 13, items 1-3: ways a hostile client tried to get a disposable signup past block mode
//! in the shipped configuration (the rendered envoy/envoy.template.yaml with
//! envoy/plugin-config.json, in a real Envoy with the built filter, in front of a recording app;
//! each case on both builds, Wasm and dynamic module).
//! Each must be blocked, refused by Envoy, or answered by the filter: never reach the app.

use email_verdict_tests::envoy::{Gateway, each_build, form_encode, gateway_on};
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
    each_build(|build| {
        let g = gateway_on(build, |b| b);
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
    });
}

#[test]
fn an_encoded_slash_is_refused_by_envoy() {
    each_build(|build| {
        let g = gateway_on(build, |b| b);
        let resp = g.envoy.send(&post("/%2Fsignup", "application/json", &json_body("jane@gmail.com")));
        assert_eq!(resp.status, 400, "path_with_escaped_slashes_action REJECT_REQUEST\n{resp}");
        assert_eq!(g.app.count(), 0);
    });
}

#[test]
fn a_safe_signup_on_a_path_variant_reaches_the_app_judged() {
    each_build(|build| {
        let g = gateway_on(build, |b| b);
        let resp = g.envoy.send(&post("//Signup/", "application/json", &json_body("jane@gmail.com")));
        assert_eq!(resp.status, 200, "{resp}");
        let req = g.app.wait_for_request(1);
        assert_eq!(req.header("x-email-verdict"), Some("safe"), "{:?}", req.headers);
        // Envoy forwards the normalized path (merged slashes); the case is the app's business.
        assert_eq!(req.path(), "/Signup/");
    });
}

#[test]
fn requests_that_are_not_signups_still_pass_untouched() {
    each_build(|build| {
        let g = gateway_on(build, |b| b);
        let body = json_body(DISPOSABLE);
        for (method, path) in
            [("POST", "/signups"), ("POST", "/signup/confirm"), ("GET", "//signup"), ("PUT", "/signup")]
        {
            let resp = g.envoy.send(&Request::new(method, path).header("Content-Type", "application/json").body(&body));
            assert_eq!(resp.status, 200, "{method} {path}\n{resp}");
        }
        assert_eq!(g.envoy.counter("email_verdict.callouts").unwrap_or(0), 0);
    });
}

// ---- item 2: bodies the filter cannot read -----------------------------------------------------

fn assert_refused(g: &Gateway, before: usize, resp: &Response, error: &str, what: &str) {
    assert_eq!(g.app.count(), before, "{what}: reached the app\n{resp}");
    assert_eq!(resp.status, if error == "disposable_email" { 403 } else { 400 }, "{what}\n{resp}");
    assert_eq!(resp.json()["error"], error, "{what}\n{resp}");
}

fn multipart_part(boundary: &str, disposition: &str, value: &str) -> String {
    format!("--{boundary}\r\nContent-Disposition: {disposition}\r\n\r\n{value}\r\n")
}

/// JSON bodies that serde_json refuses but Python's json (and others) read: 400 unreadable_body
/// with the shipped config (on_missing_email allow used to let them through as no_email).
#[test]
fn unreadable_json_bodies_are_refused_not_let_through_as_no_email() {
    each_build(|build| {
        let g = gateway_on(build, |b| b);
        let deep = format!("{}{}", "[".repeat(129), "]".repeat(129));
        let bodies = [
            format!(r#"{{"email":"{DISPOSABLE}","n":NaN}}"#),
            format!(r#"{{"email":"{DISPOSABLE}","n":-Infinity}}"#),
            format!(r#"{{"email":"{DISPOSABLE}","n":1e400}}"#),
            format!(r#"{{"email":"{DISPOSABLE}","n":"\ud800"}}"#),
            format!(r#"{{"email":"{DISPOSABLE}","deep":{deep}}}"#),
        ];
        for body in &bodies {
            let resp = g.envoy.send(&post("/signup", "application/json", body.as_bytes()));
            assert_refused(&g, 0, &resp, "unreadable_body", &format!("JSON {body:.60}"));
        }
        // Bodies under a type no configured source reads, or encoded.
        let json = json_body(DISPOSABLE);
        for ct in ["text/plain", "application/x-www-form-urlencoded", "application/octet-stream"] {
            let resp = g.envoy.send(&post("/signup", ct, &json));
            assert_refused(&g, 0, &resp, "unreadable_body", &format!("JSON as {ct}"));
        }
        let resp = g.envoy.send(&Request::new("POST", "/signup").body(&json));
        assert_refused(&g, 0, &resp, "unreadable_body", "JSON without a content-type");
        let gzip = post("/signup", "application/json", &json).header("Content-Encoding", "gzip");
        assert_refused(&g, 0, &g.envoy.send(&gzip), "unreadable_body", "content-encoding gzip");
        assert_eq!(
            g.envoy.counter("email_verdict.unreadable_body"),
            Some(10),
            "{}",
            g.envoy.stats_matching("email_verdict")
        );
        assert_eq!(g.envoy.counter("email_verdict.no_email").unwrap_or(0), 0);
    });
}

#[test]
fn multipart_tricks_are_read_or_refused() {
    each_build(|build| {
        let g = gateway_on(build, |b| b);
        let b = "----trick";
        let ctype = format!("multipart/form-data; boundary={b}");
        let email_part = multipart_part(b, "form-data; name=\"email\"", DISPOSABLE);
        let filler = multipart_part(b, "form-data; name=\"f\"", "v");
        let big_headers = format!(
            "--{b}\r\nContent-Disposition: form-data; name=\"a\"\r\n{}\r\nv\r\n",
            "X-Padding: 1\r\n".repeat(33)
        );
        let cases = [
            // Over a limit: refused.
            (
                format!("{}{email_part}--{b}--\r\n", filler.repeat(256)),
                "unreadable_body",
                "the email as the 257th part",
            ),
            (format!("{big_headers}{email_part}--{b}--\r\n"), "unreadable_body", "after a part with 33 header lines"),
            (email_part.clone(), "unreadable_body", "no closing delimiter"),
            // What reasonable clients send: read, and blocked.
            (
                format!("{}--{b}--\r\n", multipart_part(b, "form-data; name*=utf-8''email", DISPOSABLE)),
                "disposable_email",
                "name*=utf-8''email",
            ),
            (
                // Django finds the delimiter anywhere in a line (issue 30): refused now.
                format!("--{b}x preamble\r\n{email_part}--{b}--\r\n"),
                "unreadable_body",
                "a preamble line starting with the boundary",
            ),
            (
                format!("{}--{b}--\r\n", multipart_part(b, "form-data;\r\n name=\"email\"", DISPOSABLE)),
                "disposable_email",
                "a folded Content-Disposition",
            ),
        ];
        for (body, error, what) in &cases {
            let resp = g.envoy.send(&post("/signup", &ctype, body.as_bytes()));
            assert_refused(&g, 0, &resp, error, what);
        }
    });
}

#[test]
fn on_unreadable_body_allow_lets_it_through_marked() {
    each_build(|build| {
        let g = gateway_on(build, |b| b.set("/on_unreadable_body", json!("allow")));
        let body = format!(r#"{{"email":"{DISPOSABLE}","n":NaN}}"#);
        let resp = g.envoy.send(&post("/signup", "application/json", body.as_bytes()));
        assert_eq!(resp.status, 200, "{resp}");
        let req = g.app.wait_for_request(1);
        assert_eq!(req.headers_named("x-email-verdict-bypass"), vec!["unreadable_body"], "{:?}", req.headers);
        assert!(req.header("x-email-verdict").is_none());
    });
}

// ---- item 3: duplicate JSON keys ---------------------------------------------------------------

#[test]
fn duplicate_json_keys_with_different_values_are_invalid() {
    each_build(|build| {
        let g = gateway_on(build, |b| b);
        let bodies = [
            format!(r#"{{"email":"{DISPOSABLE}","email":"y@gmail.com"}}"#),
            format!(r#"{{"email":"y@gmail.com","email":"{DISPOSABLE}"}}"#),
        ];
        for body in &bodies {
            let resp = g.envoy.send(&post("/signup", "application/json", body.as_bytes()));
            assert_refused(&g, 0, &resp, "invalid_email", body);
        }
        // The same value twice is one email: judged (and blocked).
        let body = format!(r#"{{"email":"{DISPOSABLE}","email":"{DISPOSABLE}"}}"#);
        assert_refused(
            &g,
            0,
            &g.envoy.send(&post("/signup", "application/json", body.as_bytes())),
            "disposable_email",
            &body,
        );
    });
}

#[test]
fn duplicate_nested_json_keys_with_different_values_are_invalid() {
    each_build(|build| {
        let g = gateway_on(build, |b| b.set("/email/json_pointers", json!(["/user/email"])));
        let body = format!(r#"{{"user":{{"email":"{DISPOSABLE}"}},"user":{{"email":"y@gmail.com"}}}}"#);
        assert_refused(
            &g,
            0,
            &g.envoy.send(&post("/signup", "application/json", body.as_bytes())),
            "invalid_email",
            &body,
        );
        let body = r#"{"user":{"email":"y@gmail.com","n":1},"user":{"email":"y@gmail.com","n":2}}"#;
        let resp = g.envoy.send(&post("/signup", "application/json", body.as_bytes()));
        assert_eq!(resp.status, 200, "the same value repeated\n{resp}");
        assert_eq!(g.app.wait_for_request(1).header("x-email-verdict"), Some("safe"));
    });
}

// ---- other sources: the query ------------------------------------------------------------------

/// Frameworks that merge query and body parameters (Rails, PHP `$_REQUEST`, Flask
/// `request.values`) read an email in the query: the shipped config reads it too, and a query
/// and a body that disagree are invalid.
#[test]
fn an_email_in_the_query_is_judged_and_must_agree_with_the_body() {
    each_build(|build| {
        let g = gateway_on(build, |b| b);
        let path = format!("/signup?email={}", form_encode(DISPOSABLE));
        let resp = g.envoy.send(&post(&path, "application/json", br#"{"name":"Mallory"}"#));
        assert_refused(&g, 0, &resp, "disposable_email", "the email only in the query");
        let resp = g.envoy.send(&post(&path, "application/json", &json_body("jane@gmail.com")));
        assert_refused(&g, 0, &resp, "invalid_email", "query and body disagree");
        let resp = g.envoy.send(&post(&path, "application/x-www-form-urlencoded", &form_body(DISPOSABLE)));
        assert_refused(&g, 0, &resp, "disposable_email", "query and body agree");
    });
}
