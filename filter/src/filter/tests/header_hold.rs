//! `hold_headers: false` (block only): the headers go upstream at once, the body is held until
//! the verdict, and nothing is written to the request headers after the headers phase (Envoy
//! answers `BadArgument` then, which the mock host reproduces).

use super::*;

fn block_only() -> Harness {
    Harness::new(json!({ "hold_headers": false }))
}

/// Headers (continued), then the body in two chunks; header writes fail from the body phase on.
fn send_chunked(filter: &mut RequestFilter, host: &mut MockHost) -> Vec<Action> {
    let half = host.body.len() / 2;
    let size = host.body.len();
    let headers = filter.on_request_headers(host, false);
    host.fail.set_header = true;
    host.fail.remove_header = true;
    host.fail.read_header = true;
    vec![headers, filter.on_request_body(host, half, false), filter.on_request_body(host, size, true)]
}

#[test]
fn headers_go_on_and_the_body_is_held_until_the_verdict() {
    let h = block_only();
    let mut f = h.filter();
    let mut host = json_signup(&h, "temp@mailinator.com");
    assert_eq!(send_chunked(&mut f, &mut host), [Action::Continue, Action::Pause, Action::Pause]);
    assert_eq!(host.dispatched.len(), 1, "the callout starts at the end of the body");
    answer(&mut f, &mut host, lookup_response("mailinator.com", "disposable", &["has_mx"]));
    assert_eq!(only_sent(&host).status, 403);
    assert_eq!(host.resumed, 0, "a blocked body is never released");
    assert_eq!(host.count(Counter::Blocked), 1);
}

#[test]
fn a_safe_signup_is_released_without_touching_the_headers() {
    let h = block_only();
    let mut f = h.filter();
    let mut host = json_signup(&h, "ann@gmail.com");
    send_chunked(&mut f, &mut host);
    answer(&mut f, &mut host, lookup_response("gmail.com", "safe", &["free_provider"]));
    assert!(host.sent.is_empty());
    assert_eq!(host.resumed, 1);
    assert_no_flag_headers_but(&host, &[]);
    assert!(host.logs.borrow().iter().all(|(level, _)| *level < LogLevel::Warn), "{:?}", host.logs);
}

#[test]
fn a_cached_verdict_blocks_from_the_body_phase() {
    let h = block_only();
    let mut first = json_signup(&h, "x@mailinator.com");
    let mut f = h.filter();
    send_chunked(&mut f, &mut first);
    answer(&mut f, &mut first, lookup_response("mailinator.com", "disposable", &[]));
    let mut host = json_signup(&h, "y@mailinator.com");
    let actions = send_chunked(&mut h.filter(), &mut host);
    assert_eq!(actions, [Action::Continue, Action::Pause, Action::Pause]);
    assert!(host.dispatched.is_empty(), "answered from the cache");
    assert_eq!(only_sent(&host).status, 403);
}

#[test]
fn bypasses_go_on_without_a_header_and_refusals_still_refuse() {
    let h = Harness::new(json!({ "hold_headers": false, "on_unreadable_body": "allow" }));
    let mut host = h.host("POST", "/signup", &[("content-type", "application/json")], b"{\"email\": NaN}");
    let actions = send_chunked(&mut h.filter(), &mut host);
    assert_eq!(actions, [Action::Continue, Action::Pause, Action::Continue]);
    assert!(host.sent.is_empty());
    assert_eq!(host.count(Counter::UnreadableBody), 1);
    let h = block_only();
    let mut host = h.host("POST", "/signup", &[("content-type", "application/json")], b"{\"email\": NaN}");
    send_chunked(&mut h.filter(), &mut host);
    assert_eq!(only_sent(&host).status, 400);
    // The sidecar down: the embedded strong lists still block; anything else goes on unmarked.
    for (email, blocked) in [("z@mailinator.com", true), ("z@unknown-domain.example", false)] {
        let mut f = h.filter();
        let mut host = json_signup(&h, email);
        send_chunked(&mut f, &mut host);
        answer(&mut f, &mut host, error_response(503, "internal_error"));
        assert_eq!(host.sent.len(), usize::from(blocked), "{email}");
        assert_eq!(host.resumed, u32::from(!blocked), "{email}");
    }
}

#[test]
fn forged_verdict_headers_are_still_stripped_in_the_headers_phase() {
    let h = block_only();
    let mut host = h.host(
        "POST",
        "/signup",
        &[("content-type", "application/json"), ("x-email-verdict", "safe")],
        br#"{"email":"ann@gmail.com"}"#,
    );
    send_chunked(&mut h.filter(), &mut host);
    assert_no_flag_headers_but(&host, &[]);
}

#[test]
fn a_request_without_body_is_held_in_the_headers_phase_as_usual() {
    let h = Harness::new(json!({ "hold_headers": false, "email": { "headers": ["x-email"] } }));
    let mut f = h.filter();
    let mut host = h.host("POST", "/signup", &[("x-email", "a@mailinator.com")], b"");
    assert_eq!(f.on_request_headers(&mut host, true), Action::Pause);
    answer(&mut f, &mut host, lookup_response("mailinator.com", "disposable", &[]));
    assert_eq!(only_sent(&host).status, 403);
}

#[test]
fn flag_mode_needs_the_header_hold() {
    let doc = json!({
        "sidecar": { "cluster": "c", "api_key": "k" },
        "signup_routes": [{ "method": "POST", "path": "/signup" }],
        "mode": "flag",
        "hold_headers": false
    });
    let err = FilterConfig::from_json(&serde_json::to_vec(&doc).unwrap(), &|_| Err(EnvError::NotSet)).unwrap_err();
    assert!(err.to_string().starts_with("hold_headers: false works only with mode \"block\""), "{err}");
}

/// Issue 30: an address in the query or a header is judged before the headers go upstream
/// (Node and Go handlers start before the body is complete); the body's addresses after it.
#[test]
fn addresses_before_the_body_are_judged_before_the_headers_go() {
    let h = Harness::new(json!({ "hold_headers": false, "email": { "query_params": ["email"] } }));
    let json = [("content-type", "application/json")];
    let mut f = h.filter();
    let mut host = h.host("POST", "/signup?email=x%40mailinator.com", &json, br#"{"name":"Ann"}"#);
    assert_eq!(f.on_request_headers(&mut host, false), Action::Pause, "held for the callout");
    assert_eq!(host.dispatched.len(), 1);
    answer(&mut f, &mut host, lookup_response("mailinator.com", "disposable", &[]));
    assert_eq!((only_sent(&host).status, host.resumed), (403, 0));

    // Safe: the headers go, then the body's own address is judged.
    let mut f = h.filter();
    let mut host = h.host("POST", "/signup?email=ann%40gmail.com", &json, br#"{"contact":"x@yopmail.com"}"#);
    assert_eq!(f.on_request_headers(&mut host, false), Action::Pause);
    answer(&mut f, &mut host, lookup_response("gmail.com", "safe", &[]));
    assert_eq!(host.resumed, 1, "the headers go upstream");
    let size = host.body.len();
    assert_eq!(f.on_request_body(&mut host, size, true), Action::Pause);
    assert_eq!(host.dispatched.len(), 2, "only the new domain");
    answer(&mut f, &mut host, lookup_response("yopmail.com", "disposable", &[]));
    assert_eq!(only_sent(&host).status, 403);

    // Nothing before the body: the headers go at once.
    let mut f = h.filter();
    let mut host = h.host("POST", "/signup", &json, br#"{"email":"ann@gmail.com"}"#);
    assert_eq!(f.on_request_headers(&mut host, false), Action::Continue);
    assert!(host.dispatched.is_empty());
}
