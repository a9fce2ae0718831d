//! The state machine against the mock host, one behaviour of `CONFIG.md` per test.

use std::rc::Rc;
use std::time::Duration;

use serde_json::{Value, json};

use super::*;
use crate::config::EnvError;
use crate::mock_host::{MockHost, Sent, Store, error_response, lookup_response, lookup_response_suggesting};

const FLAG_HEADERS: [&str; 11] = [
    "x-email-verdict",
    "x-email-domain",
    "x-email-flags",
    "x-email-verdict-bypass",
    "x-email-suggestion",
    "x-email-normalized",
    "x-email-role",
    "x-email-relay",
    "x-email-mailbox-signups",
    "x-email-client-signups",
    "x-email-velocity",
];
/// The verdict's three and the three detail headers: what a signup with a verdict gets.
const WITH_A_VERDICT: [&str; 6] =
    ["x-email-verdict", "x-email-domain", "x-email-flags", "x-email-normalized", "x-email-role", "x-email-relay"];

/// A filter configuration: the minimal document with `overrides` merged in at the top level.
struct Harness {
    config: Rc<FilterConfig>,
    store: Store,
}

impl Harness {
    fn new(overrides: Value) -> Self {
        let mut doc = json!({
            "sidecar": { "cluster": "email_verdict", "authority": "verdict.internal", "api_key": "ev_test" },
            "signup_routes": [
                { "method": "POST", "path": "/signup" },
                { "method": "post", "path_prefix": "/api/register" }
            ],
        });
        if let (Some(doc), Value::Object(overrides)) = (doc.as_object_mut(), overrides) {
            doc.extend(overrides);
        }
        let bytes = serde_json::to_vec(&doc).unwrap();
        let config = FilterConfig::from_json(&bytes, &|_| Err(EnvError::NotSet)).unwrap();
        Self { config: Rc::new(config), store: Store::default() }
    }

    fn filter(&self) -> RequestFilter {
        RequestFilter::new(Rc::clone(&self.config))
    }

    /// A host holding this request (every "worker" shares the harness's shared data).
    fn host(&self, method: &str, path: &str, headers: &[(&str, &str)], body: &[u8]) -> MockHost {
        let mut host = MockHost::new(Rc::clone(&self.store));
        host.headers.push((":method".into(), method.as_bytes().to_vec()));
        host.headers.push((":path".into(), path.as_bytes().to_vec()));
        host.headers.extend(headers.iter().map(|(k, v)| (k.to_string(), v.as_bytes().to_vec())));
        host.body = body.to_vec();
        host
    }
}

/// Headers, then the whole body in one chunk; the actions of both phases.
fn send(filter: &mut RequestFilter, host: &mut MockHost) -> (Action, Action) {
    let has_body = !host.body.is_empty();
    let headers = filter.on_request_headers(host, !has_body);
    let size = host.body.len();
    let body = if has_body { filter.on_request_body(host, size, true) } else { Action::Continue };
    (headers, body)
}

fn json_signup(h: &Harness, email: &str) -> MockHost {
    let body = json!({ "email": email, "name": "Ann" }).to_string();
    h.host("POST", "/signup", &[("content-type", "application/json")], body.as_bytes())
}

/// Answers the pending callout (the last dispatched one).
fn answer(filter: &mut RequestFilter, host: &mut MockHost, response: crate::host::CalloutResponse) {
    let token = host.dispatched.last().expect("a callout").token;
    filter.on_callout_response(host, token, &response);
}

fn only_sent(host: &MockHost) -> &Sent {
    assert_eq!(host.sent.len(), 1, "exactly one local response: {:?}", host.sent);
    &host.sent[0]
}

fn assert_no_flag_headers_but(host: &MockHost, present: &[&str]) {
    for name in FLAG_HEADERS {
        assert_eq!(host.header(name).is_some(), present.contains(&name), "header {name}: {:?}", host.headers);
    }
}

#[test]
fn non_signup_requests_pass_untouched_without_buffering() {
    let h = Harness::new(json!({}));
    for (method, path) in [("GET", "/health"), ("GET", "/signup"), ("POST", "/signupx"), ("POST", "/api/login")] {
        let mut f = h.filter();
        let mut host =
            h.host(method, path, &[("content-type", "application/json")], br#"{"email":"a@mailinator.com"}"#);
        assert_eq!(f.on_request_headers(&mut host, false), Action::Continue, "{method} {path}");
        assert_eq!(f.on_request_body(&mut host, 10, false), Action::Continue);
        assert_eq!(f.on_request_body(&mut host, 20, true), Action::Continue);
        assert!(host.dispatched.is_empty() && host.sent.is_empty() && host.counters.is_empty());
    }
}

#[test]
fn forged_flag_headers_are_stripped_from_every_request() {
    let h = Harness::new(json!({}));
    let forged: Vec<(&str, &str)> =
        FLAG_HEADERS.iter().map(|n| (*n, "safe")).chain([("x-email-verdict", "x")]).collect();
    // Not a signup.
    let mut host = h.host("GET", "/home", &forged, b"");
    assert_eq!(h.filter().on_request_headers(&mut host, true), Action::Continue);
    assert_no_flag_headers_but(&host, &[]);
    // A signup: the client's copies are gone, the filter's own are set.
    let mut forged = forged.clone();
    forged.push(("content-type", "application/json"));
    let body = json!({ "email": "ann@gmail.com" }).to_string();
    let mut host = h.host("POST", "/signup", &forged, body.as_bytes());
    let mut f = h.filter();
    send(&mut f, &mut host);
    assert_no_flag_headers_but(&host, &[]);
    answer(&mut f, &mut host, lookup_response("gmail.com", "safe", &["free_provider"]));
    assert_eq!(host.header("x-email-verdict").as_deref(), Some("safe"));
    assert_no_flag_headers_but(&host, &WITH_A_VERDICT);
    assert_eq!(host.header("x-email-normalized").as_deref(), Some("ann@gmail.com"));
}

#[test]
fn headers_are_read_once_and_only_present_flag_headers_removed() {
    // A cached signup reads the headers once and removes nothing the client did not send.
    let h = Harness::new(json!({}));
    let mut f = h.filter();
    let mut host = json_signup(&h, "ann@gmail.com");
    send(&mut f, &mut host);
    answer(&mut f, &mut host, lookup_response("gmail.com", "safe", &[]));
    let mut host = json_signup(&h, "bob@gmail.com");
    assert_eq!(send(&mut h.filter(), &mut host), (Action::Pause, Action::Continue));
    assert_eq!(host.count(Counter::CacheHits), 1);
    assert_eq!((*host.header_reads.borrow(), host.header_removals), (1, 0));
    // A forged copy: exactly that one is removed.
    let mut host = h.host("GET", "/home", &[("x-email-flags", "blocked")], b"");
    assert_eq!(h.filter().on_request_headers(&mut host, true), Action::Continue);
    assert_eq!((*host.header_reads.borrow(), host.header_removals), (1, 1));
    assert_no_flag_headers_but(&host, &[]);
}

#[test]
fn disposable_signups_are_blocked_whatever_the_body_format() {
    let h = Harness::new(json!({ "cache": { "ttl_seconds": 0 } }));
    let multipart = "--XyZ\r\nContent-Disposition: form-data; name=\"name\"\r\n\r\nAnn\r\n\
                     --XyZ\r\nContent-Disposition: form-data; name=\"email\"\r\n\r\nann@mailinator.com\r\n--XyZ--\r\n";
    let cases: &[(&str, &str)] = &[
        ("application/json", r#"{"email":"ann@Mailinator.COM"}"#),
        ("application/x-www-form-urlencoded", "name=Ann&email=ann%40mailinator.com"),
        ("multipart/form-data; boundary=XyZ", multipart),
    ];
    for (content_type, body) in cases {
        let mut f = h.filter();
        let mut host = h.host("POST", "/signup", &[("content-type", content_type)], body.as_bytes());
        assert_eq!(f.on_request_headers(&mut host, false), Action::Pause, "{content_type}");
        // The body is buffered until its end.
        assert_eq!(f.on_request_body(&mut host, 5, false), Action::Pause);
        assert!(host.dispatched.is_empty());
        assert_eq!(f.on_request_body(&mut host, body.len(), true), Action::Pause);
        let call = &host.dispatched[0];
        assert_eq!(call.cluster, "email_verdict");
        assert_eq!(call.header(":method"), Some("GET"));
        assert_eq!(call.header(":path"), Some("/api/v1/domain/mailinator.com"));
        assert_eq!(call.header(":authority"), Some("verdict.internal"));
        assert_eq!(call.header("authorization"), Some("Bearer ev_test"));
        assert_eq!(call.timeout, Duration::from_millis(1000));
        // The local part never leaves the proxy.
        assert!(call.headers.iter().all(|(_, v)| !v.contains("ann")), "{:?}", call.headers);
        answer(&mut f, &mut host, lookup_response("mailinator.com", "disposable", &["has_mx"]));
        let sent = only_sent(&host);
        assert_eq!(sent.status, 403);
        assert_eq!(
            sent.json(),
            json!({"error": "disposable_email", "message": "Please sign up with a permanent email address."})
        );
        assert_eq!(sent.headers, vec![("content-type".to_owned(), "application/json".to_owned())]);
        assert_eq!(host.resumed, 0);
        assert_eq!(
            (host.count(Counter::Callouts), host.count(Counter::Checked), host.count(Counter::Blocked)),
            (1, 1, 1)
        );
        // Later body callbacks cannot release the request.
        assert_eq!(f.on_request_body(&mut host, body.len(), true), Action::Pause);
    }
}

/// Issue 25: Envoy's `x-request-id` goes with the callout (the sidecar logs it) and comes back on
/// the block, as a header and in a JSON object body; an id that is not plain is never echoed.
#[test]
fn the_request_id_goes_with_the_callout_and_the_block() {
    let h = Harness::new(json!({ "cache": { "ttl_seconds": 0 } }));
    for (id, echoed) in [("5f1c2a9e-77b1-4c4e-9d8a-0b5f6c1e2d3f", true), ("<script>", false)] {
        let mut f = h.filter();
        let body = br#"{"email":"ann@mailinator.com"}"#;
        let mut host = h.host("POST", "/signup", &[("content-type", "application/json"), ("x-request-id", id)], body);
        send(&mut f, &mut host);
        assert_eq!(host.dispatched[0].header("x-request-id"), echoed.then_some(id), "{id}");
        answer(&mut f, &mut host, lookup_response("mailinator.com", "disposable", &["has_mx"]));
        let sent = only_sent(&host);
        assert_eq!(sent.status, 403);
        assert_eq!(sent.json()["request_id"].as_str(), echoed.then_some(id), "{id}");
        let header = sent.headers.iter().find(|(k, _)| k == "x-request-id").map(|(_, v)| v.as_str());
        assert_eq!(header, echoed.then_some(id), "{id}");
    }
}

#[test]
fn custom_block_response() {
    let h = Harness::new(json!({ "block_response": { "status": 422, "body": ["nope"] } }));
    let mut f = h.filter();
    let mut host = json_signup(&h, "a@mailinator.com");
    send(&mut f, &mut host);
    answer(&mut f, &mut host, lookup_response("mailinator.com", "disposable", &[]));
    assert_eq!((only_sent(&host).status, only_sent(&host).json()), (422, json!(["nope"])));
}

#[test]
fn safe_verdicts_add_the_flag_headers_and_resume() {
    let h = Harness::new(json!({}));
    let mut f = h.filter();
    let mut host = json_signup(&h, "Ann@GMail.com");
    send(&mut f, &mut host);
    answer(&mut f, &mut host, lookup_response("gmail.com", "safe", &["free_provider", "has_mx", "mx_ip_match"]));
    assert!(host.sent.is_empty());
    assert_eq!(host.resumed, 1);
    assert_eq!(host.header("x-email-verdict").as_deref(), Some("safe"));
    assert_eq!(host.header("x-email-domain").as_deref(), Some("gmail.com"));
    assert_eq!(host.header("x-email-flags").as_deref(), Some("free_provider,has_mx,mx_ip_match"));
    assert_eq!(host.header("x-email-verdict-bypass"), None);
    assert_eq!((host.count(Counter::Checked), host.count(Counter::Flagged), host.count(Counter::Blocked)), (1, 1, 0));
    // Once decided, the rest of the stream flows.
    assert_eq!(f.on_request_body(&mut host, 10, true), Action::Continue);
}

#[test]
fn a_probable_typo_adds_the_suggested_domain_only() {
    let h = Harness::new(json!({}));
    let mut f = h.filter();
    let mut host = json_signup(&h, "ann@gmial.com");
    send(&mut f, &mut host);
    // The callout carried the domain only; so does the sidecar's answer and the header.
    assert_eq!(host.dispatched[0].header(":path"), Some("/api/v1/domain/gmial.com"));
    answer(&mut f, &mut host, lookup_response_suggesting("gmial.com", "gmail.com"));
    assert_eq!(host.resumed, 1);
    assert_eq!(host.header("x-email-suggestion").as_deref(), Some("gmail.com"));
    assert_eq!(host.header("x-email-domain").as_deref(), Some("gmial.com"));
    // Cached with the verdict: the next signup at that domain gets it without a callout.
    let mut host = json_signup(&h, "bob@gmial.com");
    assert_eq!(send(&mut h.filter(), &mut host), (Action::Pause, Action::Continue));
    assert!(host.dispatched.is_empty());
    assert_eq!(host.header("x-email-suggestion").as_deref(), Some("gmail.com"));
    // A client's forged copy never reaches the app, with a suggestion or without.
    let mut host = json_signup(&h, "ann@gmail.com");
    host.headers.push(("x-email-suggestion".into(), b"evil.example".to_vec()));
    let mut f = h.filter();
    send(&mut f, &mut host);
    answer(&mut f, &mut host, lookup_response("gmail.com", "safe", &["free_provider"]));
    assert_eq!(host.header("x-email-verdict").as_deref(), Some("safe"));
    assert_eq!(host.header("x-email-suggestion"), None);
}

#[test]
fn flag_mode_lets_disposable_signups_through_with_headers() {
    let h = Harness::new(json!({ "mode": "flag", "flag_headers": { "verdict": "X-Verdict" } }));
    let mut f = h.filter();
    let mut host = json_signup(&h, "a@mailinator.com");
    send(&mut f, &mut host);
    answer(&mut f, &mut host, lookup_response("mailinator.com", "disposable", &[]));
    assert!(host.sent.is_empty());
    assert_eq!(host.resumed, 1);
    assert_eq!(host.header("x-verdict").as_deref(), Some("disposable"));
    assert_eq!(host.header("x-email-flags").as_deref(), Some(""));
    assert_eq!((host.count(Counter::Flagged), host.count(Counter::Blocked)), (1, 0));
}

#[test]
fn a_cached_verdict_makes_no_second_callout() {
    let h = Harness::new(json!({}));
    let mut f = h.filter();
    let mut first = json_signup(&h, "a@mailinator.com");
    send(&mut f, &mut first);
    answer(&mut f, &mut first, lookup_response("mailinator.com", "disposable", &[]));
    // Another address at the same domain, on another "worker" sharing the data.
    let mut f = h.filter();
    let mut second = json_signup(&h, "B@MAILINATOR.com");
    assert_eq!(send(&mut f, &mut second), (Action::Pause, Action::Pause));
    assert!(second.dispatched.is_empty());
    assert_eq!(only_sent(&second).status, 403);
    assert_eq!((second.count(Counter::CacheHits), second.count(Counter::Checked)), (1, 1));
    // A safe cached verdict lets the body phase continue synchronously, headers set, no resume.
    let mut f = h.filter();
    let mut host = json_signup(&h, "a@gmail.com");
    send(&mut f, &mut host);
    answer(&mut f, &mut host, lookup_response("gmail.com", "safe", &["free_provider"]));
    let mut f = h.filter();
    let mut host = json_signup(&h, "c@gmail.com");
    assert_eq!(send(&mut f, &mut host), (Action::Pause, Action::Continue));
    assert_eq!((host.dispatched.len(), host.resumed), (0, 0));
    assert_eq!(host.header("x-email-flags").as_deref(), Some("free_provider"));
}

#[test]
fn cache_expiry_and_disabled_cache_ask_again() {
    let h = Harness::new(json!({ "cache": { "ttl_seconds": 10 } }));
    let mut f = h.filter();
    let mut host = json_signup(&h, "a@mailinator.com");
    send(&mut f, &mut host);
    answer(&mut f, &mut host, lookup_response("mailinator.com", "disposable", &[]));
    let mut later = json_signup(&h, "a@mailinator.com");
    later.now_ms += 10_000;
    send(&mut h.filter(), &mut later);
    assert_eq!(later.dispatched.len(), 1);

    let h = Harness::new(json!({ "cache": { "ttl_seconds": 0 } }));
    for _ in 0..2 {
        let mut f = h.filter();
        let mut host = json_signup(&h, "a@mailinator.com");
        send(&mut f, &mut host);
        assert_eq!(host.dispatched.len(), 1);
        answer(&mut f, &mut host, lookup_response("mailinator.com", "disposable", &[]));
    }
    assert!(h.store.borrow().is_empty());
}

#[test]
fn a_cache_write_race_is_ignored() {
    let h = Harness::new(json!({ "cache": { "max_entries": 1 } }));
    let decide = |email: &str, domain: &str, verdict: &str| {
        let mut f = h.filter();
        let mut host = json_signup(&h, email);
        send(&mut f, &mut host);
        answer(&mut f, &mut host, lookup_response(domain, verdict, &[]));
        host
    };
    decide("a@example.org", "example.org", "safe"); // fills the only slot
    let mut f = h.filter();
    let mut host = json_signup(&h, "a@mailinator.com");
    send(&mut f, &mut host);
    // Another worker replaces the slot while this callout is in flight.
    decide("a@gmail.com", "gmail.com", "safe");
    answer(&mut f, &mut host, lookup_response("mailinator.com", "disposable", &[]));
    assert_eq!(only_sent(&host).status, 403);
    assert!(host.logs.borrow().iter().all(|(level, _)| *level < LogLevel::Warn), "{:?}", host.logs);
    let mut again = json_signup(&h, "z@gmail.com");
    send(&mut h.filter(), &mut again);
    assert!(again.dispatched.is_empty(), "the other worker's write stands");
}

#[test]
fn sidecar_failures_follow_failure_mode() {
    let timeout = crate::host::CalloutResponse::plain(Some(504), b"upstream request timeout".to_vec());
    let refused = crate::host::CalloutResponse::plain(Some(503), b"upstream connect error".to_vec());
    let garbage = crate::host::CalloutResponse::plain(Some(200), b"<html>".to_vec());
    let cases = [
        (timeout, "sidecar_timeout"),
        (refused, "sidecar_error"),
        (error_response(401, "api_key_invalid"), "sidecar_rejected"),
        (error_response(402, "quota_exceeded"), "sidecar_rejected"),
        (error_response(429, "rate_limit_exceeded"), "sidecar_rejected"),
        (error_response(500, "internal_error"), "sidecar_error"),
        (garbage, "sidecar_error"),
    ];
    for (response, bypass) in &cases {
        // allow (the default): through, with the bypass header.
        let h = Harness::new(json!({}));
        let mut f = h.filter();
        let mut host = json_signup(&h, "a@unlisted.example");
        send(&mut f, &mut host);
        answer(&mut f, &mut host, response.clone());
        assert!(host.sent.is_empty(), "{bypass}");
        assert_eq!(host.resumed, 1);
        assert_eq!(host.header("x-email-verdict-bypass").as_deref(), Some(*bypass), "{response:?}");
        assert_no_flag_headers_but(&host, &["x-email-verdict-bypass"]);
        assert_eq!((host.count(Counter::Bypassed), host.count(Counter::Checked)), (1, 0));
        assert!(h.store.borrow().is_empty(), "failures are never cached");
        // deny: failure_status with verdict_unavailable.
        let h = Harness::new(json!({ "failure_mode": "deny", "failure_status": 502 }));
        let mut f = h.filter();
        let mut host = json_signup(&h, "a@unlisted.example");
        send(&mut f, &mut host);
        answer(&mut f, &mut host, response.clone());
        let sent = only_sent(&host);
        assert_eq!((sent.status, sent.json()["error"].clone()), (502, json!("verdict_unavailable")), "{bypass}");
        assert_eq!((host.resumed, host.count(Counter::DeniedOnError)), (0, 1));
        assert_no_flag_headers_but(&host, &[]);
    }
}

/// Issue 23: with the sidecar's decisions stored, `local_fallback` blocks what a reviewer or the
/// operator blocked (a fresh subdomain too), and never blocks a name a decision allows, even a
/// strong-listed one.
#[test]
fn local_fallback_applies_the_stored_decisions() {
    let h = Harness::new(json!({}));
    let body = br#"{"reviewer":{"block":["decided.example"],"allow":["mailinator.com"]},"operator":{"block":[],"allow":[]},"complete":true}"#;
    let mut writer = MockHost::new(Rc::clone(&h.store));
    crate::decided::store_answer(&mut writer, "\"v1\"", body).unwrap();
    let refused = crate::host::CalloutResponse::plain(Some(503), b"upstream connect error".to_vec());
    for (email, blocked) in [("a@fresh-1.decided.example", true), ("b@mailinator.com", false), ("c@yopmail.com", true)]
    {
        let mut f = h.filter();
        let mut host = json_signup(&h, email);
        send(&mut f, &mut host);
        answer(&mut f, &mut host, refused.clone());
        assert_eq!(host.sent.first().map(|s| s.status), blocked.then_some(403), "{email}");
        assert_eq!(host.count(Counter::LocalDecisions), u64::from(blocked), "{email}");
    }
}

/// Issue 23: the operator chooses per reason, e.g. deny on a timeout (which an attacker can
/// provoke with slow DNS) but allow when the sidecar is down.
#[test]
fn failure_mode_can_differ_per_reason() {
    let timeout = crate::host::CalloutResponse::plain(Some(504), b"upstream request timeout".to_vec());
    let refused = crate::host::CalloutResponse::plain(Some(503), b"upstream connect error".to_vec());
    let config = json!({ "failure_mode": { "sidecar_timeout": "deny", "sidecar_rejected": "deny" } });
    let cases = [
        (timeout, Some(503)),
        (error_response(429, "rate_limit_exceeded"), Some(503)),
        (refused, None),
        (error_response(500, "internal_error"), None),
    ];
    for (response, denied) in cases {
        let h = Harness::new(config.clone());
        let mut f = h.filter();
        let mut host = json_signup(&h, "a@unlisted.example");
        send(&mut f, &mut host);
        answer(&mut f, &mut host, response.clone());
        assert_eq!(host.sent.first().map(|s| s.status), denied, "{response:?}");
        assert_eq!(host.resumed, u32::from(denied.is_none()), "{response:?}");
    }
}

#[test]
fn a_failed_dispatch_takes_the_failure_path_at_once() {
    for (mode, expected) in [("allow", None), ("deny", Some(503))] {
        let h = Harness::new(json!({ "failure_mode": mode }));
        let mut f = h.filter();
        let mut host = json_signup(&h, "a@unlisted.example");
        host.fail.dispatch = true;
        let (_, body) = send(&mut f, &mut host);
        assert_eq!(host.sent.first().map(|s| s.status), expected);
        if expected.is_none() {
            assert_eq!(body, Action::Continue);
            assert_eq!(host.header("x-email-verdict-bypass").as_deref(), Some("sidecar_error"));
        } else {
            assert_eq!(body, Action::Pause);
        }
        assert_eq!(host.count(Counter::Callouts), 0);
        assert!(host.logs.borrow().iter().any(|(l, m)| *l == LogLevel::Warn && m.contains("proxy_http_call")));
    }
}

/// Issue 13 item 4: a sidecar that gives no verdict (the gateway key's burst or quota spent, an
/// error, a timeout, a failed dispatch) no longer lets a name on the strong lists through.
#[test]
fn without_a_verdict_strong_listed_names_are_decided_locally() {
    let failures = [
        error_response(429, "rate_limit_exceeded"),
        error_response(402, "quota_exceeded"),
        error_response(401, "api_key_invalid"),
        error_response(500, "internal_error"),
        crate::host::CalloutResponse::plain(Some(504), Vec::new()),
    ];
    for response in &failures {
        for failure_mode in ["allow", "deny"] {
            // block mode: refused as disposable (also under failure_mode deny: a better answer).
            let h = Harness::new(json!({ "failure_mode": failure_mode }));
            let mut f = h.filter();
            let mut host = json_signup(&h, "a@sub.Mailinator.com");
            send(&mut f, &mut host);
            answer(&mut f, &mut host, response.clone());
            let sent = only_sent(&host);
            assert_eq!(sent.status, 403, "{response:?} {failure_mode}");
            let counts =
                (host.count(Counter::LocalDecisions), host.count(Counter::Blocked), host.count(Counter::Bypassed));
            assert_eq!(counts, (1, 1, 0));
            assert_eq!(host.count(Counter::DisposableByLocalFallback), 1, "counted by its source");
            assert!(h.store.borrow().is_empty(), "a local decision is never cached");
        }
        // flag mode: through, flagged disposable, marked as the filter's own decision.
        let h = Harness::new(json!({ "mode": "flag" }));
        let mut f = h.filter();
        let mut host = json_signup(&h, "a@mailinator.com");
        send(&mut f, &mut host);
        answer(&mut f, &mut host, response.clone());
        assert_eq!(host.resumed, 1);
        assert_eq!(host.header("x-email-verdict").as_deref(), Some("disposable"));
        assert_eq!(host.header("x-email-domain").as_deref(), Some("mailinator.com"));
        assert_eq!(host.header("x-email-flags").as_deref(), Some("local_fallback"));
        assert_no_flag_headers_but(&host, &WITH_A_VERDICT);
    }
    // A failed dispatch too.
    let h = Harness::new(json!({}));
    let mut host = json_signup(&h, "a@mailinator.com");
    host.fail.dispatch = true;
    send(&mut h.filter(), &mut host);
    assert_eq!(only_sent(&host).status, 403);
    // Switched off: failure_mode as before.
    let h = Harness::new(json!({ "local_fallback": false }));
    assert!(h.config.local_lists.is_none());
    let mut f = h.filter();
    let mut host = json_signup(&h, "a@mailinator.com");
    send(&mut f, &mut host);
    answer(&mut f, &mut host, error_response(429, "rate_limit_exceeded"));
    assert_eq!(host.header("x-email-verdict-bypass").as_deref(), Some("sidecar_rejected"));
    assert_eq!(host.count(Counter::LocalDecisions), 0);
}

#[test]
fn a_failed_header_write_takes_the_failure_path() {
    // The headers are gone (Envoy without allow_on_headers_stop_iteration): BadArgument, no panic.
    for (mode, sent) in [("allow", 0), ("deny", 1)] {
        let h = Harness::new(json!({ "failure_mode": mode }));
        let mut f = h.filter();
        let mut host = json_signup(&h, "a@gmail.com");
        send(&mut f, &mut host);
        host.fail.set_header = true;
        answer(&mut f, &mut host, lookup_response("gmail.com", "safe", &[]));
        assert_eq!(host.sent.len(), sent, "{mode}");
        assert_eq!(host.resumed, 1 - sent as u32);
        assert_eq!(host.count(Counter::Flagged), 0);
        assert!(host.logs.borrow().iter().any(|(l, _)| *l == LogLevel::Error));
    }
}

#[test]
fn failed_host_calls_never_hang_or_panic() {
    let h = Harness::new(json!({}));
    // Stripping a forged header fails on a signup: failure_mode allow.
    let mut host = json_signup(&h, "a@gmail.com");
    host.headers.push(("x-email-verdict".into(), b"safe".to_vec()));
    host.fail.remove_header = true;
    assert_eq!(h.filter().on_request_headers(&mut host, false), Action::Continue);
    assert_eq!(host.header("x-email-verdict-bypass").as_deref(), Some("sidecar_error"));
    // The headers cannot be read: let through, but with every flag header removed.
    let mut host = json_signup(&h, "a@gmail.com");
    host.headers.push(("x-email-verdict".into(), b"safe".to_vec()));
    host.fail.read_header = true;
    assert_eq!(h.filter().on_request_headers(&mut host, false), Action::Continue);
    assert_eq!(host.header_removals, FLAG_HEADERS.len() as u32);
    assert_no_flag_headers_but(&host, &[]);
    assert!(host.dispatched.is_empty());
    // Reading the body fails.
    let mut host = json_signup(&h, "a@gmail.com");
    host.fail.body = true;
    assert_eq!(send(&mut h.filter(), &mut host), (Action::Pause, Action::Continue));
    assert_eq!(host.count(Counter::Bypassed), 1);
    // The local response cannot be sent: let through rather than hang.
    let mut host = json_signup(&h, "not an email");
    host.fail.local_response = true;
    assert_eq!(send(&mut h.filter(), &mut host), (Action::Pause, Action::Continue));
    // Shared data unavailable: ask the sidecar anyway.
    let mut host = json_signup(&h, "a@gmail.com");
    host.fail.shared_data = true;
    let mut f = h.filter();
    send(&mut f, &mut host);
    assert_eq!(host.dispatched.len(), 1);
    answer(&mut f, &mut host, lookup_response("gmail.com", "safe", &[]));
    assert_eq!(host.resumed, 1);
    // Resuming fails: logged.
    let mut host = json_signup(&h, "a@example.org");
    let mut f = h.filter();
    send(&mut f, &mut host);
    host.fail.resume = true;
    answer(&mut f, &mut host, lookup_response("example.org", "safe", &[]));
    assert!(host.logs.borrow().iter().any(|(_, m)| m.contains("resume")));
}

#[test]
fn bodies_over_the_limit_get_413() {
    let h = Harness::new(json!({ "max_body_bytes": 64 }));
    let too_large = |host: &MockHost| {
        let sent = only_sent(host);
        assert_eq!((sent.status, sent.json()["error"].clone()), (413, json!("body_too_large")));
        assert_eq!(host.count(Counter::BodyTooLarge), 1);
        assert!(host.dispatched.is_empty());
    };
    // While buffering, before the end of the body.
    let body = json!({ "email": "a@gmail.com", "pad": "x".repeat(100) }).to_string();
    let mut host = h.host("POST", "/signup", &[("content-type", "application/json")], body.as_bytes());
    let mut f = h.filter();
    assert_eq!(f.on_request_headers(&mut host, false), Action::Pause);
    assert_eq!(f.on_request_body(&mut host, 65, false), Action::Pause);
    too_large(&host);
    // Announced by content-length: refused in the headers phase.
    let mut host = h.host("POST", "/signup", &[("content-type", "application/json"), ("content-length", "65")], b"{}");
    assert_eq!(h.filter().on_request_headers(&mut host, false), Action::Pause);
    too_large(&host);
    // Exactly the limit is fine.
    let prefix = r#"{"email":"a@gmail.com","p":""#;
    let body = format!(r#"{prefix}{}"}}"#, "x".repeat(64 - prefix.len() - 2));
    assert_eq!(body.len(), 64);
    let mut host = h.host("POST", "/signup", &[("content-type", "application/json")], body.as_bytes());
    send(&mut h.filter(), &mut host);
    assert_eq!(host.dispatched.len(), 1);
}

#[test]
fn trailers_end_the_body() {
    let h = Harness::new(json!({}));
    let mut host = json_signup(&h, "a@mailinator.com");
    let mut f = h.filter();
    assert_eq!(f.on_request_headers(&mut host, false), Action::Pause);
    let size = host.body.len();
    assert_eq!(f.on_request_body(&mut host, size, false), Action::Pause);
    assert_eq!(f.on_request_trailers(&mut host), Action::Pause);
    assert_eq!(host.dispatched.len(), 1);
    answer(&mut f, &mut host, lookup_response("mailinator.com", "disposable", &[]));
    assert_eq!(only_sent(&host).status, 403);
}

#[test]
fn answers_to_unknown_callouts_are_ignored() {
    let h = Harness::new(json!({}));
    let mut f = h.filter();
    let mut host = json_signup(&h, "a@mailinator.com");
    send(&mut f, &mut host);
    f.on_callout_response(&mut host, 999, &lookup_response("mailinator.com", "disposable", &[]));
    assert!(host.sent.is_empty() && host.resumed == 0);
    answer(&mut f, &mut host, lookup_response("mailinator.com", "disposable", &[]));
    answer(&mut f, &mut host, lookup_response("mailinator.com", "disposable", &[]));
    assert_eq!(host.sent.len(), 1, "a second answer changes nothing");
}

#[test]
fn international_domains_are_normalized_before_the_callout() {
    let h = Harness::new(json!({}));
    let mut f = h.filter();
    let mut host = json_signup(&h, "José@Bücher.Example");
    send(&mut f, &mut host);
    assert_eq!(host.dispatched[0].header(":path"), Some("/api/v1/domain/xn--bcher-kva.example"));
    answer(&mut f, &mut host, lookup_response("xn--bcher-kva.example", "safe", &[]));
    assert_eq!(host.header("x-email-domain").as_deref(), Some("xn--bcher-kva.example"));
}

mod decisions;
mod details;
mod email;
mod flights;
mod header_hold;
mod no_mx;
mod protocols;
mod shadow;
mod trace;
mod velocity;

/// The dynamic module's panic path: an internal error answers as `failure_mode` says for a
/// sidecar error (deny: the failure reply; allow: on, with the bypass header), and a request
/// already answered stays answered.
#[test]
fn an_internal_error_follows_failure_mode() {
    let h = Harness::new(json!({ "failure_mode": "deny", "failure_status": 502 }));
    let mut f = h.filter();
    let mut host = json_signup(&h, "a@unlisted.example");
    send(&mut f, &mut host);
    assert_eq!(f.on_internal_error(&mut host), Action::Pause);
    let sent = only_sent(&host);
    assert_eq!((sent.status, sent.json()["error"].clone()), (502, json!("verdict_unavailable")));
    assert_eq!(host.count(Counter::DeniedOnError), 1);
    assert_eq!(f.on_internal_error(&mut host), Action::Pause, "answered once");
    assert_eq!(host.sent.len(), 1);

    let h = Harness::new(json!({}));
    let mut f = h.filter();
    let mut host = json_signup(&h, "a@unlisted.example");
    send(&mut f, &mut host);
    assert_eq!(f.on_internal_error(&mut host), Action::Continue);
    assert!(host.sent.is_empty());
    assert_eq!(host.header("x-email-verdict-bypass").as_deref(), Some("sidecar_error"));
    assert_eq!(host.count(Counter::Bypassed), 1);
}
