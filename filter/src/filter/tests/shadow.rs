//! `mode: shadow` and `enforce_percent`: a shadowed signup is judged as block mode would judge
//! it (the same reads, callouts and counts) and goes on untouched; what block mode would have
//! refused is counted by reason and logged with its domain. The body streams on: each chunk
//! continues (the mock host, like Envoy, hands over only the chunk at hand), the last is held
//! while the copy is judged.

use super::*;

fn shadow(extra: Value) -> Harness {
    let mut doc = json!({ "mode": "shadow" });
    if let (Some(doc), Value::Object(extra)) = (doc.as_object_mut(), extra) {
        doc.extend(extra);
    }
    Harness::new(doc)
}

/// Headers, then the body in two chunks, each the only one the host holds (it was continued).
fn stream(filter: &mut RequestFilter, host: &mut MockHost) -> Vec<Action> {
    let body = std::mem::take(&mut host.body);
    let (first, second) = body.split_at(body.len() / 2);
    let mut actions = vec![filter.on_request_headers(host, false)];
    for (chunk, last) in [(first, false), (second, true)] {
        host.body = chunk.to_vec();
        actions.push(filter.on_request_body(host, chunk.len(), last));
    }
    actions
}

fn would_block(host: &MockHost) -> Vec<(Reason, u64)> {
    Reason::ALL.into_iter().map(|r| (r, host.count(Counter::would_block(r)))).filter(|(_, n)| *n > 0).collect()
}

#[test]
fn a_disposable_signup_streams_on_and_is_counted_with_its_domain() {
    for hold_headers in [true, false] {
        let h = shadow(json!({ "hold_headers": hold_headers }));
        let mut f = h.filter();
        let mut host = json_signup(&h, "temp.person@mailinator.com");
        assert_eq!(stream(&mut f, &mut host), [Action::Continue, Action::Continue, Action::Pause]);
        assert_eq!(host.dispatched.len(), 1, "judged from the copy at the end of the body");
        answer(&mut f, &mut host, lookup_response("mailinator.com", "disposable", &["has_mx"]));
        assert!(host.sent.is_empty(), "nothing refused");
        assert_eq!(host.resumed, 1, "the held last chunk goes on");
        assert_no_flag_headers_but(&host, &[]);
        assert_eq!(would_block(&host), [(Reason::Disposable, 1)]);
        assert_eq!(
            [Counter::WouldBlock, Counter::Shadowed, Counter::Checked, Counter::Blocked, Counter::Flagged]
                .map(|c| host.count(c)),
            [1, 1, 1, 0, 0]
        );
        let logs = host.logs.borrow();
        let line = logs.iter().find(|(_, l)| l.contains("would block")).expect("one log line");
        assert_eq!(line.0, LogLevel::Info);
        assert!(line.1.contains("(mailinator.com): disposable"), "{}", line.1);
        assert!(logs.iter().all(|(_, l)| !l.contains("temp.person")), "{logs:?}");
    }
}

#[test]
fn a_safe_signup_gets_no_headers_and_a_cached_one_no_hold() {
    let h = shadow(json!({}));
    let mut f = h.filter();
    let mut host = json_signup(&h, "ann@gmail.com");
    stream(&mut f, &mut host);
    answer(&mut f, &mut host, lookup_response("gmail.com", "safe", &["free_provider"]));
    assert_no_flag_headers_but(&host, &[]);
    assert!(would_block(&host).is_empty() && host.sent.is_empty());
    let mut again = json_signup(&h, "bob@gmail.com");
    assert_eq!(stream(&mut h.filter(), &mut again), [Action::Continue; 3], "a cached verdict holds nothing");
    assert!(again.dispatched.is_empty());
}

#[test]
fn forged_flag_headers_are_still_stripped() {
    let h = shadow(json!({}));
    let mut host = h.host(
        "POST",
        "/signup",
        &[("content-type", "application/json"), ("x-email-verdict", "safe"), ("x-email-flags", "allowlisted")],
        br#"{"email":"ann@gmail.com"}"#,
    );
    stream(&mut h.filter(), &mut host);
    assert_no_flag_headers_but(&host, &[]);
}

type Headers<'a> = &'a [(&'a str, &'a str)];

#[test]
fn every_refusal_of_block_mode_is_a_reason() {
    let form = [("content-type", "application/x-www-form-urlencoded")];
    let json_type = [("content-type", "application/json")];
    let cases: [(Value, Headers, &[u8], Reason); 4] = [
        (json!({}), &json_type, b"{\"email\": NaN}", Reason::UnreadableBody),
        (json!({}), &form, b"email=not-an-address", Reason::InvalidEmail),
        (json!({ "on_missing_email": "deny" }), &form, b"name=ann", Reason::MissingEmail),
        (json!({ "on_subaddressed": "deny" }), &form, b"email=ann%2Bx%40gmail.com", Reason::Subaddressed),
    ];
    for (extra, headers, body, reason) in cases {
        let h = shadow(extra);
        let mut host = h.host("POST", "/signup", headers, body);
        let actions = stream(&mut h.filter(), &mut host);
        if reason == Reason::Subaddressed {
            assert!(host.dispatched.is_empty() && actions.iter().all(|a| *a == Action::Continue), "{actions:?}");
        }
        assert!(host.sent.is_empty(), "{reason:?}");
        assert_eq!(would_block(&host), [(reason, 1)], "{reason:?}");
    }
}

#[test]
fn a_body_over_the_limit_is_counted_and_the_rest_streams_on() {
    let h = shadow(json!({ "max_body_bytes": 64 }));
    let mut f = h.filter();
    let body = format!(r#"{{"email":"a@mailinator.com","pad":"{}"}}"#, "x".repeat(200));
    let mut host = h.host("POST", "/signup", &[("content-type", "application/json")], body.as_bytes());
    assert_eq!(stream(&mut f, &mut host), [Action::Continue; 3]);
    assert!(host.sent.is_empty() && host.dispatched.is_empty());
    assert_eq!(would_block(&host), [(Reason::BodyTooLarge, 1)]);
}

#[test]
fn no_verdict_under_failure_mode_deny_is_verdict_unavailable() {
    let h = shadow(json!({ "failure_mode": "deny", "local_fallback": false }));
    let mut f = h.filter();
    let mut host = json_signup(&h, "ann@unknown-domain.example");
    stream(&mut f, &mut host);
    answer(&mut f, &mut host, error_response(503, "internal_error"));
    assert!(host.sent.is_empty());
    assert_eq!(host.resumed, 1);
    assert_eq!(would_block(&host), [(Reason::VerdictUnavailable, 1)]);
    assert_eq!(host.count(Counter::DeniedOnError), 0, "nothing was denied");
}

/// 1,000 distinct clients at 30 %: refused in proportion (binomial: sd 14.5, bounds 5 sd), the
/// rest shadowed; each client's retry gets the same answer.
#[test]
fn a_share_of_clients_is_enforced_and_each_keeps_its_answer() {
    let h = Harness::new(json!({ "enforce_percent": 30 }));
    // The verdict cached first, so that every signup is answered at once.
    let mut first = json_signup(&h, "x@mailinator.com");
    first.client = Some("203.0.113.1".parse().unwrap());
    let mut f = h.filter();
    send(&mut f, &mut first);
    if !first.dispatched.is_empty() {
        answer(&mut f, &mut first, lookup_response("mailinator.com", "disposable", &[]));
    }
    let refused = |client: std::net::IpAddr| {
        let mut host = json_signup(&h, "y@mailinator.com");
        host.client = Some(client);
        send(&mut h.filter(), &mut host);
        assert!(host.dispatched.is_empty(), "cached");
        assert_eq!(host.sent.len() + would_block(&host).len(), 1, "refused or counted");
        !host.sent.is_empty()
    };
    let clients: Vec<std::net::IpAddr> =
        (0..1000u32).map(|i| std::net::IpAddr::from((0xc633_6400u32 + i * 257).to_be_bytes())).collect();
    let mut enforced = 0;
    for client in &clients {
        let once = refused(*client);
        assert_eq!(refused(*client), once, "{client}: a retry gets the same answer");
        enforced += usize::from(once);
    }
    assert!((228..=372).contains(&enforced), "{enforced} of 1,000 refused at 30 %");
}

/// An app answers once it has `content-length` bytes, before Envoy's end of stream: the chunk
/// that reaches the length is the one held while its verdict is asked for (else the stream can
/// end first and take the judgement with it).
#[test]
fn the_chunk_that_completes_the_declared_length_is_held() {
    let h = shadow(json!({}));
    let mut f = h.filter();
    let body = json!({ "email": "temp@mailinator.com" }).to_string();
    let length = body.len().to_string();
    let headers = [("content-type", "application/json"), ("content-length", length.as_str())];
    let mut host = h.host("POST", "/signup", &headers, body.as_bytes());
    assert_eq!(f.on_request_headers(&mut host, false), Action::Continue);
    assert_eq!(f.on_request_body(&mut host, body.len(), false), Action::Pause, "held: the body is complete");
    assert_eq!(host.dispatched.len(), 1);
    host.body.clear();
    assert_eq!(f.on_request_body(&mut host, 0, true), Action::Pause, "the end of stream waits too");
    answer(&mut f, &mut host, lookup_response("mailinator.com", "disposable", &[]));
    assert_eq!((host.resumed, host.count(Counter::WouldBlockDisposable)), (1, 1));
}
