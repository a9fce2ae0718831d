//! Reading the email: missing, invalid, several sources, unreadable bodies.

use super::*;

#[test]
fn missing_email_follows_on_missing_email() {
    /// (path, headers, body, paused in the headers phase)
    type Case<'a> = (&'a str, &'a [(&'a str, &'a str)], &'a [u8], bool);
    let cases: &[Case<'_>] = &[
        ("/signup", &[("content-type", "application/json")], br#"{"name":"Ann"}"#, true),
        ("/signup", &[("content-type", "application/json")], br#"{"email":null}"#, true),
        ("/signup", &[("content-type", "application/x-www-form-urlencoded")], b"name=Ann", true),
        // No body: decided without buffering.
        ("/signup", &[], b"", false),
        ("/signup", &[("content-type", "text/plain"), ("content-length", "0")], b"", false),
    ];
    for (policy, status) in [("allow", None), ("deny", Some(400))] {
        let h = Harness::new(json!({ "on_missing_email": policy }));
        for (path, headers, body, paused) in cases {
            let mut host = h.host("POST", path, headers, body);
            let mut f = h.filter();
            let first = f.on_request_headers(&mut host, body.is_empty());
            if *paused {
                assert_eq!(first, Action::Pause);
                f.on_request_body(&mut host, body.len(), true);
            } else {
                assert_eq!(first, if status.is_some() { Action::Pause } else { Action::Continue }, "{headers:?}");
            }
            assert_eq!(host.count(Counter::NoEmail), 1);
            assert!(host.dispatched.is_empty());
            match status {
                None => assert_eq!(host.header("x-email-verdict-bypass").as_deref(), Some("no_email")),
                Some(s) => {
                    let sent = only_sent(&host);
                    assert_eq!((sent.status, sent.json()["error"].clone()), (s, json!("missing_email")));
                }
            }
        }
    }
}

#[test]
fn invalid_emails_follow_on_invalid_email() {
    let h = Harness::new(json!({}));
    let deny = |host: &MockHost| {
        let sent = only_sent(host);
        assert_eq!((sent.status, sent.json()["error"].clone()), (400, json!("invalid_email")));
        assert_eq!(host.count(Counter::InvalidEmail), 1);
    };
    // Locally: no callout at all.
    for bad in ["not an email", "a@localhost", "a@192.0.2.1", "a@exa_mple.com", "@mailinator.com"] {
        let mut host = json_signup(&h, bad);
        send(&mut h.filter(), &mut host);
        deny(&host);
        assert!(host.dispatched.is_empty(), "{bad}");
    }
    // A JSON value that is not a string; two different values of one form field.
    let mut host = h.host("POST", "/signup", &[("content-type", "application/json")], br#"{"email":["a@b.example"]}"#);
    send(&mut h.filter(), &mut host);
    deny(&host);
    let form = b"email=a%40gmail.com&email=b%40mailinator.com";
    let mut host = h.host("POST", "/signup", &[("content-type", "application/x-www-form-urlencoded")], form);
    send(&mut h.filter(), &mut host);
    deny(&host);
    // From the sidecar.
    let mut f = h.filter();
    let mut host = json_signup(&h, "a@mailinator.com");
    send(&mut f, &mut host);
    answer(&mut f, &mut host, error_response(400, "invalid_input"));
    deny(&host);

    let h = Harness::new(json!({ "on_invalid_email": "allow" }));
    let mut host = json_signup(&h, "nope");
    assert_eq!(send(&mut h.filter(), &mut host), (Action::Pause, Action::Continue));
    assert_eq!(host.header("x-email-verdict-bypass").as_deref(), Some("invalid_email"));
    let mut f = h.filter();
    let mut host = json_signup(&h, "a@mailinator.com");
    send(&mut f, &mut host);
    answer(&mut f, &mut host, error_response(400, "invalid_input"));
    assert_eq!((host.resumed, host.count(Counter::InvalidEmail)), (1, 1));
    assert_eq!(host.header("x-email-verdict-bypass").as_deref(), Some("invalid_email"));
}

#[test]
fn email_in_a_header_or_query_is_checked_in_the_headers_phase() {
    let h = Harness::new(json!({
        "email": { "headers": ["X-Signup-Email"], "query_params": ["email"] },
        "cache": { "ttl_seconds": 0 }
    }));
    let requests = [
        h.host("POST", "/signup", &[("x-signup-email", "a@mailinator.com")], b"{}"),
        h.host("POST", "/signup?email=a%40mailinator.com", &[], b"{}"),
        h.host("POST", "/api/register/v2?email=a%40mailinator.com", &[], b""),
    ];
    for mut host in requests {
        let mut f = h.filter();
        let eos = host.body.is_empty();
        assert_eq!(f.on_request_headers(&mut host, eos), Action::Pause);
        assert_eq!(host.dispatched.len(), 1);
        // Body chunks that arrive meanwhile are held, not released.
        assert_eq!(f.on_request_body(&mut host, 2, true), Action::Pause);
        answer(&mut f, &mut host, lookup_response("mailinator.com", "safe", &[]));
        assert_eq!(host.resumed, 1);
        assert_eq!(host.header("x-email-domain").as_deref(), Some("mailinator.com"));
    }
    // Two different header values are refused at once.
    let mut host = h.host(
        "POST",
        "/signup",
        &[
            ("x-signup-email", "a@gmail.com"),
            ("x-signup-email", "b@mailinator.com"),
            ("content-type", "application/json"),
        ],
        br#"{"email":"c@gmail.com"}"#,
    );
    assert_eq!(h.filter().on_request_headers(&mut host, false), Action::Pause);
    assert_eq!(only_sent(&host).status, 400);
}

/// Every configured source is read: an email in a header and another in the body is invalid.
#[test]
fn a_header_and_a_body_must_agree() {
    let h = Harness::new(json!({ "email": { "headers": ["x-signup-email"] }, "cache": { "ttl_seconds": 0 } }));
    let json = [("x-signup-email", "a@gmail.com"), ("content-type", "application/json")];
    let mut host = h.host("POST", "/signup", &json, br#"{"email":"b@mailinator.com"}"#);
    assert_eq!(send(&mut h.filter(), &mut host), (Action::Pause, Action::Pause));
    let sent = only_sent(&host);
    assert_eq!((sent.status, sent.json()["error"].clone()), (400, json!("invalid_email")));
    let message = sent.json()["message"].as_str().unwrap_or_default().to_owned();
    assert!(message.contains("two different email addresses"), "the 400 says why: {message}");
    let mut host = h.host("POST", "/signup", &json, br#"{"email":" a@gmail.com ","name":"x"}"#);
    send(&mut h.filter(), &mut host);
    assert_eq!(host.dispatched.len(), 1, "the same address twice is one email");
}

/// Issue 13 item 2: a body that cannot be read in full is not a missing email.
#[test]
fn unreadable_bodies_follow_on_unreadable_body() {
    let multipart = "multipart/form-data; boundary=B";
    let no_close = "--B\r\nContent-Disposition: form-data; name=email\r\n\r\na@mailinator.com\r\n";
    type Headers<'a> = &'a [(&'a str, &'a str)];
    let cases: &[(Headers<'_>, &[u8])] = &[
        (&[("content-type", "application/json")], br#"{"email":"a@mailinator.com","n":NaN}"#),
        (&[("content-type", "application/json")], b"not json"),
        (&[("content-type", "application/json"), ("content-encoding", "gzip")], br#"{"email":"a@mailinator.com"}"#),
        (&[("content-type", "text/plain")], br#"{"email":"a@mailinator.com"}"#),
        (&[], br#"{"email":"a@mailinator.com"}"#),
        (&[("content-type", "application/x-www-form-urlencoded")], br#"{"email":"a@mailinator.com"}"#),
        (&[("content-type", multipart)], no_close.as_bytes()),
        (&[("content-type", "multipart/form-data")], no_close.as_bytes()),
        (&[("content-type", "application/json"), ("content-type", "text/plain")], br#"{"email":"a@mailinator.com"}"#),
    ];
    for (policy, status) in [("deny", Some(400)), ("allow", None)] {
        let h = Harness::new(json!({ "on_unreadable_body": policy, "on_missing_email": "allow" }));
        for (headers, body) in cases {
            let mut host = h.host("POST", "/signup", headers, body);
            let (first, second) = send(&mut h.filter(), &mut host);
            assert_eq!(first, Action::Pause, "{headers:?}: the body is buffered");
            assert_eq!((host.count(Counter::UnreadableBody), host.count(Counter::NoEmail)), (1, 0), "{headers:?}");
            assert!(host.dispatched.is_empty());
            match status {
                Some(s) => {
                    assert_eq!(second, Action::Pause);
                    let sent = only_sent(&host);
                    assert_eq!((sent.status, sent.json()["error"].clone()), (s, json!("unreadable_body")));
                }
                None => {
                    assert_eq!(second, Action::Continue);
                    assert_eq!(host.header("x-email-verdict-bypass").as_deref(), Some("unreadable_body"));
                }
            }
        }
    }
}
