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

/// With the header hold the whole signup is read first: an address in a header or the query is
/// judged with the body's (issue 30: a body the filter skipped was read by the app).
#[test]
fn email_in_a_header_or_query_is_judged_with_the_body() {
    let h = Harness::new(json!({
        "email": { "headers": ["X-Signup-Email"], "query_params": ["email"] },
        "cache": { "ttl_seconds": 0 }
    }));
    let json = ("content-type", "application/json");
    let requests = [
        h.host("POST", "/signup", &[("x-signup-email", "a@mailinator.com"), json], b"{}"),
        h.host("POST", "/signup?email=a%40mailinator.com", &[json], b"{}"),
        h.host("POST", "/api/register/v2?email=a%40mailinator.com", &[], b""),
    ];
    for mut host in requests {
        let mut f = h.filter();
        let eos = host.body.is_empty();
        let headers = f.on_request_headers(&mut host, eos);
        if !eos {
            assert_eq!((headers, host.dispatched.len()), (Action::Pause, 0), "the body first");
            assert_eq!(f.on_request_body(&mut host, 2, true), Action::Pause);
        }
        assert_eq!(host.dispatched.len(), 1);
        answer(&mut f, &mut host, lookup_response("mailinator.com", "safe", &[]));
        assert_eq!(host.resumed, 1);
        assert_eq!(host.header("x-email-domain").as_deref(), Some("mailinator.com"));
    }
    // Two different header values are refused.
    let mut host = h.host(
        "POST",
        "/signup",
        &[("x-signup-email", "a@gmail.com"), ("x-signup-email", "b@mailinator.com"), json],
        br#"{"email":"c@gmail.com"}"#,
    );
    send(&mut h.filter(), &mut host);
    assert_eq!(only_sent(&host).status, 400);
}

/// Issue 30: an address in the query does not make a body the filter cannot read readable
/// (UTF-16, gzip, JSON as `text/plain` or untyped: Express, Starlette, Flask and Django read them).
#[test]
fn a_body_that_cannot_be_read_is_refused_even_with_an_address_in_the_query() {
    let h = Harness::new(json!({ "email": { "query_params": ["email"] } }));
    let utf16: Vec<u8> = r#"{"email":"x@mailinator.com"}"#.encode_utf16().flat_map(u16::to_le_bytes).collect();
    type Headers<'a> = &'a [(&'a str, &'a str)];
    let cases: [(Headers, Vec<u8>); 4] = [
        (&[("content-type", "application/json")], utf16),
        (&[("content-type", "application/json"), ("content-encoding", "gzip")], b"\x1f\x8b\x08\x00".to_vec()),
        (&[("content-type", "text/plain")], br#"{"email":"x@mailinator.com"}"#.to_vec()),
        (&[], br#"{"email":"x@mailinator.com"}"#.to_vec()),
    ];
    for (headers, body) in cases {
        let mut host = h.host("POST", "/signup?email=ann%40gmail.com", headers, &body);
        send(&mut h.filter(), &mut host);
        assert!(host.dispatched.is_empty(), "{headers:?}");
        assert_eq!(only_sent(&host).json()["error"], json!("unreadable_body"), "{headers:?}");
    }
}

/// Issue 30: every address the signup carries is judged, whatever its name; the worst decides.
#[test]
fn every_address_is_judged_and_the_worst_decides() {
    let h = Harness::new(json!({ "email": { "query_params": ["email"] }, "cache": { "ttl_seconds": 0 } }));
    let form = [("content-type", "application/x-www-form-urlencoded")];
    for body in ["%5Bemail%5D=x%40mailinator.com", "user[email]=x@mailinator.com", "invitee_email=x@mailinator.com"] {
        let mut host = h.host("POST", "/signup?email=ann%40gmail.com", &form, body.as_bytes());
        let mut f = h.filter();
        assert_eq!(send(&mut f, &mut host), (Action::Pause, Action::Pause));
        let asked: Vec<&str> = host.dispatched.iter().filter_map(|d| d.header(":path")).collect();
        assert_eq!(asked, ["/api/v1/domain/gmail.com", "/api/v1/domain/mailinator.com"], "{body}");
        let tokens: Vec<u32> = host.dispatched.iter().map(|d| d.token).collect();
        f.on_callout_response(&mut host, tokens[1], &lookup_response("mailinator.com", "disposable", &[]));
        assert_eq!(only_sent(&host).status, 403, "blocked before the other answer: {body}");
        f.on_callout_response(&mut host, tokens[0], &lookup_response("gmail.com", "safe", &["free_provider"]));
        assert_eq!((host.sent.len(), host.resumed), (1, 0));
    }
    // All safe: the headers name the signup's own address, whichever answer came first.
    let body = br#"{"email":"ann@gmail.com","team":{"invitees":["bob@example.org"]}}"#;
    let mut host = h.host("POST", "/signup", &[("content-type", "application/json")], body);
    let mut f = h.filter();
    send(&mut f, &mut host);
    let tokens: Vec<u32> = host.dispatched.iter().map(|d| d.token).collect();
    f.on_callout_response(&mut host, tokens[1], &lookup_response("example.org", "safe", &[]));
    assert_eq!(host.resumed, 0, "still waiting");
    f.on_callout_response(&mut host, tokens[0], &lookup_response("gmail.com", "safe", &["free_provider"]));
    assert_eq!(host.resumed, 1);
    assert_eq!(host.header("x-email-domain").as_deref(), Some("gmail.com"));
    assert_eq!(host.header("x-email-normalized").as_deref(), Some("ann@gmail.com"));
    // No configured field: `on_missing_email` (allow here) with the other addresses judged.
    let mut host = h.host("POST", "/signup", &form, b"contact=x@mailinator.com");
    let mut f = h.filter();
    send(&mut f, &mut host);
    answer(&mut f, &mut host, lookup_response("mailinator.com", "disposable", &[]));
    assert_eq!(only_sent(&host).status, 403);
    let mut host = h.host("POST", "/signup", &form, b"contact=bob@example.org");
    let mut f = h.filter();
    send(&mut f, &mut host);
    answer(&mut f, &mut host, lookup_response("example.org", "safe", &[]));
    assert_eq!(host.header("x-email-verdict-bypass").as_deref(), Some("no_email"));
}

/// More distinct domains than `max_domains` in one signup are refused, whatever the policies;
/// as many are judged.
#[test]
fn too_many_domains_are_refused() {
    for max in [None, Some(3)] {
        let config =
            json!({ "on_invalid_email": "allow", "on_unreadable_body": "allow", "cache": { "ttl_seconds": 0 } });
        let mut config = config;
        if let Some(max) = max {
            config["max_domains"] = json!(max);
        }
        let h = Harness::new(config);
        let limit = max.unwrap_or(extract::DEFAULT_MAX_DOMAINS);
        let many: Vec<String> = (0..=limit).map(|i| format!("a{i}=x%40d{i}.example")).collect();
        let form = [("content-type", "application/x-www-form-urlencoded")];
        let mut host = h.host("POST", "/signup", &form, many.join("&").as_bytes());
        send(&mut h.filter(), &mut host);
        assert!(host.dispatched.is_empty());
        assert_eq!(only_sent(&host).json()["error"], json!("too_many_addresses"));
        let mut host = h.host("POST", "/signup", &form, many[..limit].join("&").as_bytes());
        send(&mut h.filter(), &mut host);
        assert_eq!(host.dispatched.len(), limit, "as many as max_domains are judged");
    }
}

/// A name found in free text is judged with `learn=false`; a value that is an address, even
/// wrapped, as an address; a password is never read.
#[test]
fn mentions_are_judged_without_teaching_the_sidecar() {
    let h = Harness::new(json!({ "cache": { "ttl_seconds": 0 } }));
    let json = [("content-type", "application/json")];
    let body = br#"{"email":"Ann <ann@gmail.com>","bio":"ask @the.coffee.shop","password":"P@ssw0rd.shop"}"#;
    let mut host = h.host("POST", "/signup", &json, body);
    send(&mut h.filter(), &mut host);
    let paths: Vec<&str> = host.dispatched.iter().map(|d| d.header(":path").unwrap_or_default()).collect();
    assert_eq!(paths, ["/api/v1/domain/gmail.com", "/api/v1/domain/the.coffee.shop?learn=false"]);
}

/// The names behind a label no registry hands out were typed by nobody (and one may be a public
/// suffix): judged, without teaching the sidecar.
#[test]
fn a_refused_labels_parents_are_judged_without_teaching_the_sidecar() {
    let h = Harness::new(json!({ "cache": { "ttl_seconds": 0 }, "on_invalid_email": "allow" }));
    let json = [("content-type", "application/json")];
    let mut host = h.host("POST", "/signup", &json, br#"{"email":"bob@x_y.shop.co.uk"}"#);
    send(&mut h.filter(), &mut host);
    let paths: Vec<&str> = host.dispatched.iter().map(|d| d.header(":path").unwrap_or_default()).collect();
    assert_eq!(paths, ["/api/v1/domain/shop.co.uk?learn=false", "/api/v1/domain/co.uk?learn=false"]);
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
