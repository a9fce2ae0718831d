//! The filter in a real Envoy in front of an app, asking the real sidecar (on NSD's fixture
//! zones): what a signup gets, what the app sees, what is counted (filter/CONFIG.md). Every test
//! but the last runs on both builds of the filter (`each_build`): the Wasm module and the
//! dynamic module.

use email_verdict_tests::envoy::{
    each_build, eventually, expected_flags, gateway, gateway_on, sidecar_lookup_lines, sidecar_lookups, signup,
};
use email_verdict_tests::{Recorded, Request, Response, VERDICT_HEADERS};
use serde_json::json;
use std::time::Duration;

fn assert_blocked(resp: &Response, what: &str) {
    assert_eq!(resp.status, 403, "{what}: a disposable signup must be blocked\n{resp}");
    assert!(
        resp.header("content-type").is_some_and(|v| v.starts_with("application/json")),
        "{what}: block response content-type\n{resp}"
    );
    let body = resp.json();
    assert_eq!(
        (&body["error"], &body["message"]),
        (&json!("disposable_email"), &json!("Please sign up with a permanent email address.")),
        "{what}: block response body"
    );
    // Envoy's request id, to find the lookup in the sidecar's log (absent only without one).
    assert_eq!(body["request_id"].as_str(), resp.header("x-request-id"), "{what}: {body}");
}

fn assert_passed(resp: &Response, what: &str) {
    assert_eq!(resp.status, 200, "{what}: should reach the app\n{resp}");
    assert_eq!(resp.json(), json!({"ok": true}), "{what}: the app's answer");
}

/// Exactly one value of `name` at the app.
fn one(req: &Recorded, name: &str) -> String {
    let v = req.headers_named(name);
    assert_eq!(v.len(), 1, "the app should see exactly one {name}: {:?}", req.headers);
    v[0].to_string()
}

fn flags(req: &Recorded) -> Vec<String> {
    let mut f: Vec<String> =
        one(req, "x-email-flags").split(',').map(|s| s.trim().to_string()).filter(|s| !s.is_empty()).collect();
    f.sort();
    f
}

fn no_verdict_headers(req: &Recorded, what: &str) {
    for h in VERDICT_HEADERS {
        assert!(req.header(h).is_none(), "{what}: the app saw {h}: {:?}", req.headers);
    }
}

// ---- block mode ----------------------------------------------------------------------------------

#[test]
fn disposable_json_signup_is_blocked_before_the_app() {
    each_build(|build| {
        let g = gateway_on(build, |b| b);
        assert_blocked(&g.envoy.signup_json("temp.user@mailinator.com"), "JSON signup");
        assert_eq!(g.app.count(), 0, "the app must not see a blocked signup");
        assert_eq!(sidecar_lookups(&g.sidecar, "mailinator.com"), 1, "one callout for the domain");
    });
}

#[test]
fn disposable_urlencoded_signup_is_blocked() {
    each_build(|build| {
        let g = gateway_on(build, |b| b);
        assert_blocked(&g.envoy.signup_form("Temp.User+x@Mailinator.COM"), "urlencoded signup");
        assert_eq!(g.app.count(), 0, "the app must not see a blocked signup");
    });
}

#[test]
fn disposable_multipart_signup_is_blocked() {
    each_build(|build| {
        let g = gateway_on(build, |b| b);
        assert_blocked(&g.envoy.signup_multipart("someone@sub.mailinator.com"), "multipart signup");
        assert_eq!(g.app.count(), 0, "the app must not see a blocked signup");
    });
}

#[test]
fn safe_signup_reaches_the_app_with_the_verdict_headers() {
    each_build(|build| {
        let g = gateway_on(build, |b| b);
        let body = json!({"email": "Jane.Doe@GMAIL.com", "name": "Jane"}).to_string();
        let resp = g.envoy.send(&signup("application/json", body.as_bytes()));
        assert_passed(&resp, "gmail signup");
        let req = g.app.wait_for_request(1);
        assert_eq!(req.method, "POST");
        assert_eq!(req.path(), "/signup");
        assert_eq!(req.body, body.as_bytes(), "the body reaches the app unchanged");
        assert_eq!(one(&req, "x-email-verdict"), "safe");
        assert_eq!(one(&req, "x-email-domain"), "gmail.com");
        assert_eq!(flags(&req), expected_flags(&g.sidecar, "gmail.com"));
        assert!(flags(&req).contains(&"free_provider".to_string()), "{:?}", req.headers);
        assert!(req.header("x-email-verdict-bypass").is_none(), "no bypass header with a verdict: {:?}", req.headers);

        // a business address on Microsoft 365, as a form
        assert_passed(&g.envoy.signup_form("ops@shopco.example"), "business signup");
        let req = g.app.wait_for_request(2);
        assert_eq!(one(&req, "x-email-verdict"), "safe");
        assert_eq!(one(&req, "x-email-domain"), "shopco.example");
        assert_eq!(flags(&req), expected_flags(&g.sidecar, "shopco.example"));
        assert!(flags(&req).contains(&"business_email".to_string()), "{:?}", req.headers);
    });
}

#[test]
fn forged_verdict_headers_never_reach_the_app() {
    each_build(|build| {
        let g = gateway_on(build, |b| b);
        let forge = |r: Request| {
            r.header("X-Email-Verdict", "safe")
                .header("x-email-domain", "forged.example")
                .header("x-email-flags", "allowlisted")
                .header("x-email-verdict-bypass", "no_email")
        };
        // a safe signup: the app sees the filter's values only, once
        let body = json!({"email": "jane@gmail.com"}).to_string();
        assert_passed(&g.envoy.send(&forge(signup("application/json", body.as_bytes()))), "forged + safe");
        let req = g.app.wait_for_request(1);
        assert_eq!(one(&req, "x-email-verdict"), "safe");
        assert_eq!(one(&req, "x-email-domain"), "gmail.com");
        assert!(!flags(&req).contains(&"allowlisted".to_string()), "forged flag kept: {:?}", req.headers);
        assert!(req.header("x-email-verdict-bypass").is_none(), "forged bypass kept: {:?}", req.headers);

        // a forged "safe" does not get a disposable signup through
        let body = json!({"email": "temp@mailinator.com"}).to_string();
        assert_blocked(&g.envoy.send(&forge(signup("application/json", body.as_bytes()))), "forged + disposable");
        assert_eq!(g.app.count(), 1);

        // a signup without an email passes (on_missing_email allow) with the filter's bypass value
        let body = json!({"name": "no email"}).to_string();
        assert_passed(&g.envoy.send(&forge(signup("application/json", body.as_bytes()))), "forged + no email");
        let req = g.app.wait_for_request(2);
        assert_eq!(req.headers_named("x-email-verdict-bypass"), vec!["no_email"]);
        for h in ["x-email-verdict", "x-email-domain", "x-email-flags"] {
            assert!(req.header(h).is_none(), "forged {h} kept: {:?}", req.headers);
        }

        // other routes (filter disabled there): the route removes the copies
        assert_passed(&g.envoy.send(&forge(Request::get("/account"))), "forged + other route");
        no_verdict_headers(&g.app.wait_for_request(3), "GET /account with forged headers");
        // GET /signup: not a signup method, so the catch-all route removes them
        assert_passed(&g.envoy.send(&forge(Request::get("/signup"))), "forged + GET /signup");
        no_verdict_headers(&g.app.wait_for_request(4), "GET /signup with forged headers");
    });
}

#[test]
fn non_signup_routes_are_untouched_and_cost_no_callout() {
    each_build(|build| {
        let g = gateway_on(build, |b| b);
        let body = json!({"email": "temp@mailinator.com"}).to_string();
        let post =
            |path: &str| Request::new("POST", path).header("Content-Type", "application/json").body(body.as_bytes());
        // Other paths, even with a disposable email in the body: the filter runs for POST but
        // they are not signup paths.
        assert_passed(&g.envoy.send(&Request::get("/")), "GET /");
        assert_passed(&g.envoy.send(&post("/api/profile")), "POST /api/profile");
        assert_passed(&g.envoy.send(&post("/signup/confirm")), "POST /signup/confirm");
        // The signup path with another method: the filter is disabled on that route.
        assert_passed(&g.envoy.send(&Request::get("/signup?email=temp%40mailinator.com")), "GET /signup");
        let reqs = g.app.requests();
        assert_eq!(reqs.len(), 4, "every request reaches the app");
        for r in &reqs {
            no_verdict_headers(r, &format!("{} {}", r.method, r.target));
        }
        assert_eq!(reqs[1].body, body.as_bytes(), "bodies pass unchanged");
        assert_eq!(sidecar_lookup_lines(&g.sidecar), 0, "no callout for requests that are not signups");
        assert_eq!(g.envoy.counter("email_verdict.callouts").unwrap_or(0), 0);
        assert_eq!(g.envoy.counter("email_verdict.checked").unwrap_or(0), 0);
    });
}

#[test]
fn invalid_and_missing_emails() {
    each_build(|build| {
        let g = gateway_on(build, |b| b);
        // on_invalid_email deny (default): 400 JSON
        let resp = g.envoy.signup_json("not-an-email");
        assert_eq!(resp.status, 400, "invalid email\n{resp}");
        assert_eq!(resp.json()["error"], "invalid_email");
        // on_missing_email allow (default): passes with bypass no_email
        let resp = g.envoy.send(&signup("application/json", br#"{"name":"x"}"#));
        assert_passed(&resp, "no email");
        assert_eq!(g.app.wait_for_request(1).headers_named("x-email-verdict-bypass"), vec!["no_email"]);
        assert_eq!(sidecar_lookup_lines(&g.sidecar), 0, "no callout without a valid email");
    });
}

#[test]
fn a_cached_domain_costs_no_second_callout() {
    each_build(|build| {
        // Two workers: the cache lives in shared data, common to both.
        let g = gateway_on(build, |b| b.concurrency(2));
        assert_blocked(&g.envoy.signup_json("first@mailinator.com"), "first signup");
        for i in 0..4 {
            assert_blocked(&g.envoy.signup_form(&format!("user{i}@MAILINATOR.com")), "cached signup");
        }
        assert_passed(&g.envoy.signup_json("a@gmail.com"), "gmail");
        assert_passed(&g.envoy.signup_json("b@gmail.com"), "gmail again");
        assert_eq!(sidecar_lookups(&g.sidecar, "mailinator.com"), 1, "mailinator.com looked up more than once");
        assert_eq!(sidecar_lookups(&g.sidecar, "gmail.com"), 1, "gmail.com looked up more than once");
        // the second gmail signup still carries the (cached) verdict
        let req = g.app.wait_for_request(2);
        assert_eq!(one(&req, "x-email-verdict"), "safe");
        assert_eq!(one(&req, "x-email-domain"), "gmail.com");
        eventually("email_verdict.cache_hits >= 5", || g.envoy.counter("email_verdict.cache_hits").unwrap_or(0) >= 5);
        assert_eq!(g.envoy.counter("email_verdict.callouts"), Some(2), "{}", g.envoy.stats_matching("email_verdict"));
    });
}

#[test]
fn a_body_over_max_body_bytes_gets_413() {
    each_build(|build| {
        let g = gateway_on(build, |b| b.set("/max_body_bytes", json!(1024)));
        let padding = "x".repeat(2000);
        let body = json!({"email": "jane@gmail.com", "bio": padding}).to_string();
        let resp = g.envoy.send(&signup("application/json", body.as_bytes()));
        assert_eq!(resp.status, 413, "a {} byte body over max_body_bytes 1024\n{resp}", body.len());
        assert_eq!(resp.json()["error"], "body_too_large");
        assert_eq!(g.app.count(), 0, "the app must not see it");
        // just under the limit still works
        let body = json!({"email": "jane@gmail.com", "bio": "x".repeat(900)}).to_string();
        assert!(body.len() <= 1024);
        assert_passed(&g.envoy.send(&signup("application/json", body.as_bytes())), "a body under the limit");
        eventually("email_verdict.body_too_large == 1", || g.envoy.counter("email_verdict.body_too_large") == Some(1));
    });
}

#[test]
fn stats_count_what_the_filter_did() {
    each_build(|build| {
        let g = gateway_on(build, |b| b);
        assert_blocked(&g.envoy.signup_json("x@mailinator.com"), "disposable");
        assert_passed(&g.envoy.signup_json("y@gmail.com"), "safe");
        assert_passed(&g.envoy.send(&signup("application/json", br#"{}"#)), "no email");
        let want = [
            ("email_verdict.checked", 2),
            ("email_verdict.blocked", 1),
            ("email_verdict.flagged", 1),
            ("email_verdict.callouts", 2),
            ("email_verdict.no_email", 1),
        ];
        eventually("the email_verdict counters", || want.iter().all(|(n, v)| g.envoy.counter(n) == Some(*v)));
        for (n, v) in want {
            assert_eq!(g.envoy.counter(n), Some(v), "{n}\n{}", g.envoy.stats_matching("email_verdict"));
        }
        // and in Prometheus format
        let prom = Request::get("/stats/prometheus").send(g.envoy.admin_addr()).text();
        assert!(prom.contains("email_verdict"), "no email_verdict metric in /stats/prometheus");
    });
}

// ---- flag mode -----------------------------------------------------------------------------------

#[test]
fn flag_mode_lets_disposable_signups_through_with_headers() {
    each_build(|build| {
        let g = gateway_on(build, |b| b.set("/mode", json!("flag")));
        assert_passed(&g.envoy.signup_json("temp@mailinator.com"), "flag mode, disposable (JSON)");
        let req = g.app.wait_for_request(1);
        assert_eq!(one(&req, "x-email-verdict"), "disposable");
        assert_eq!(one(&req, "x-email-domain"), "mailinator.com");
        assert_eq!(flags(&req), expected_flags(&g.sidecar, "mailinator.com"));

        assert_passed(&g.envoy.signup_multipart("ops@shopco.example"), "flag mode, business (multipart)");
        let req = g.app.wait_for_request(2);
        assert_eq!(one(&req, "x-email-verdict"), "safe");
        assert_eq!(one(&req, "x-email-domain"), "shopco.example");
        assert_eq!(flags(&req), expected_flags(&g.sidecar, "shopco.example"));

        assert_passed(&g.envoy.signup_form("someone@ownmail.example"), "flag mode, own MX (form)");
        let req = g.app.wait_for_request(3);
        assert_eq!(one(&req, "x-email-verdict"), "safe");
        assert_eq!(flags(&req), expected_flags(&g.sidecar, "ownmail.example"));
        assert!(flags(&req).contains(&"review_required".to_string()), "{:?}", req.headers);
        eventually("email_verdict.flagged == 3", || g.envoy.counter("email_verdict.flagged") == Some(3));
        assert_eq!(g.envoy.counter("email_verdict.blocked"), Some(0));
    });
}

// ---- without allow_on_headers_stop_iteration (what a plain Istio WasmPlugin gives) -----------------

/// The filter holds the request headers while it reads the body; Envoy allows that only with
/// `allow_on_headers_stop_iteration: true`. Without it a signup with a body stalls: no answer, and
/// nothing reaches the app. Istio's WasmPlugin cannot set it: there the filter runs with
/// `hold_headers: false` (block only, `tests/tests/filter_block_only.rs`), or envoyfilter.yaml
/// declares it with the setting.
#[test]
fn without_allow_on_headers_stop_iteration_a_body_signup_stalls() {
    let g =
        gateway(|b| b.edit_config("allow_on_headers_stop_iteration: true", "allow_on_headers_stop_iteration: false"));
    let req = signup("application/json", br#"{"email":"jane@gmail.com"}"#).timeout(Duration::from_secs(2));
    match req.try_send(g.envoy.addr()) {
        Err(e) => assert!(
            matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut),
            "expected no answer (a read timeout), got {e}"
        ),
        Ok(resp) => panic!("the signup was answered without allow_on_headers_stop_iteration:\n{resp}"),
    }
    assert_eq!(g.app.count(), 0, "nothing reaches the app");
    // Requests the filter lets go in the headers phase are not affected.
    assert_passed(&g.envoy.send(&Request::get("/signup")), "GET /signup");
}
