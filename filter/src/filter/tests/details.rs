//! The detail headers (`CONFIG.md`, "Detail headers"): the normalized address, role account and
//! relay, computed in the proxy from the whole address (the callout carries the domain only),
//! added with every verdict (the sidecar's, a cached one, a local one), switched off per header,
//! and client copies removed on every path whether they are sent or not.

use super::*;

const DETAIL_HEADERS: [&str; 3] = ["x-email-normalized", "x-email-role", "x-email-relay"];

/// What a client forges: the address of someone else, a role and a relay it does not have.
const FORGED: [(&str, &str); 3] =
    [("x-email-normalized", "victim@gmail.com"), ("x-email-role", "true"), ("x-email-relay", "true")];

/// The three detail headers' values as the app would see them.
type Seen = [Option<String>; 3];

fn details_seen(host: &MockHost) -> Seen {
    DETAIL_HEADERS.map(|name| host.header(name))
}

fn expect(normalized: Option<&str>, role: Option<&str>, relay: Option<&str>) -> Seen {
    [normalized, role, relay].map(|v| v.map(str::to_owned))
}

/// A JSON signup with the forged detail headers.
fn forged_signup(h: &Harness, email: &str) -> MockHost {
    let body = json!({ "email": email }).to_string();
    let headers: Vec<(&str, &str)> = [("content-type", "application/json")].into_iter().chain(FORGED).collect();
    h.host("POST", "/signup", &headers, body.as_bytes())
}

#[test]
fn details_are_those_of_the_whole_address_and_only_the_domain_leaves() {
    let h = Harness::new(json!({}));
    let mut f = h.filter();
    let mut host = json_signup(&h, "J.o.h.n+x@gmail.com");
    send(&mut f, &mut host);
    let callout = &host.dispatched[0];
    assert_eq!(callout.header(":path"), Some("/api/v1/domain/gmail.com"));
    assert!(
        callout.headers.iter().all(|(_, v)| !v.to_ascii_lowercase().contains("j.o.h.n") && !v.contains("john")),
        "the local part left the proxy: {:?}",
        callout.headers
    );
    answer(&mut f, &mut host, lookup_response("gmail.com", "safe", &["free_provider"]));
    assert_eq!(details_seen(&host), expect(Some("john@gmail.com"), Some("false"), Some("false")));
    assert_eq!(host.header("x-email-domain").as_deref(), Some("gmail.com"), "the domain header is unchanged");

    // From the cache (no callout): the details of this signup's own address.
    let mut host = json_signup(&h, "Postmaster+x@GoogleMail.com");
    let mut f = h.filter();
    send(&mut f, &mut host);
    answer(&mut f, &mut host, lookup_response("googlemail.com", "safe", &["free_provider"]));
    assert_eq!(details_seen(&host), expect(Some("postmaster@gmail.com"), Some("true"), Some("false")));
    let mut host = json_signup(&h, "postmaster@gmail.com");
    assert_eq!(send(&mut h.filter(), &mut host), (Action::Pause, Action::Continue));
    assert!(host.dispatched.is_empty(), "a cache hit");
    assert_eq!(details_seen(&host), expect(Some("postmaster@gmail.com"), Some("true"), Some("false")));

    // Relay services (data/relay.txt, embedded), a subdomain of one too; the local part kept as given.
    for (email, domain) in [
        ("Abc.123@duck.com", "duck.com"),
        ("x7@privaterelay.appleid.com", "privaterelay.appleid.com"),
        ("y@sub.mozmail.com", "sub.mozmail.com"),
    ] {
        let mut f = h.filter();
        let mut host = json_signup(&h, email);
        send(&mut f, &mut host);
        answer(&mut f, &mut host, lookup_response(domain, "safe", &["has_mx"]));
        // No provider rule for these domains: the address as given.
        assert_eq!(details_seen(&host), expect(Some(email), Some("false"), Some("true")), "{email}");
    }
}

#[test]
fn forged_detail_headers_never_survive_on_any_path() {
    let refused = crate::host::CalloutResponse::plain(Some(503), b"upstream connect error".to_vec());
    let safe = lookup_response("gmail.com", "safe", &["free_provider"]);
    let disposable = lookup_response("mailinator.com", "disposable", &[]);
    let real = expect(Some("ann@gmail.com"), Some("false"), Some("false"));
    let none = expect(None, None, None);
    // (what, config, email, sidecar answer or none, the details the app sees)
    let cases: Vec<(&str, Value, &str, Option<&crate::host::CalloutResponse>, Seen)> = vec![
        ("a safe verdict", json!({}), "Ann+x@gmail.com", Some(&safe), real.clone()),
        ("blocked", json!({}), "temp@mailinator.com", Some(&disposable), none.clone()),
        (
            "flagged disposable",
            json!({ "mode": "flag" }),
            "temp@mailinator.com",
            Some(&disposable),
            expect(Some("temp@mailinator.com"), Some("false"), Some("false")),
        ),
        ("sidecar failure, allowed", json!({}), "ann@unlisted.example", Some(&refused), none.clone()),
        (
            "sidecar failure, denied",
            json!({ "failure_mode": "deny" }),
            "ann@unlisted.example",
            Some(&refused),
            none.clone(),
        ),
        (
            "local fallback, flagged",
            json!({ "mode": "flag" }),
            "Info@mailinator.com",
            Some(&refused),
            expect(Some("Info@mailinator.com"), Some("true"), Some("false")),
        ),
        ("local fallback, blocked", json!({}), "info@mailinator.com", Some(&refused), none.clone()),
        ("invalid, allowed", json!({ "on_invalid_email": "allow" }), "not an email", None, none.clone()),
        ("invalid, denied", json!({}), "not an email", None, none.clone()),
        (
            "switched off",
            json!({ "detail_headers": { "normalized_email": false, "role_account": false, "relay": false } }),
            "ann@gmail.com",
            Some(&safe),
            none.clone(),
        ),
    ];
    for (what, config, email, response, expected) in cases {
        let h = Harness::new(config);
        let mut f = h.filter();
        let mut host = forged_signup(&h, email);
        send(&mut f, &mut host);
        if let Some(response) = response
            && !host.dispatched.is_empty()
        {
            answer(&mut f, &mut host, response.clone());
        }
        assert_eq!(details_seen(&host), expected, "{what}: {:?}", host.headers);
    }
    // No email at all (on_missing_email allow), a route that is not a signup, and the block-only
    // filter (the headers go upstream in the headers phase, stripped there).
    let h = Harness::new(json!({}));
    let forged: Vec<(&str, &str)> = [("content-type", "application/json")].into_iter().chain(FORGED).collect();
    let mut host = h.host("POST", "/signup", &forged, br#"{"name":"Ann"}"#);
    send(&mut h.filter(), &mut host);
    assert_eq!(host.header("x-email-verdict-bypass").as_deref(), Some("no_email"));
    assert_eq!(details_seen(&host), none);
    let mut host = h.host("GET", "/home", &FORGED, b"");
    h.filter().on_request_headers(&mut host, true);
    assert_eq!(details_seen(&host), none);
    let h = Harness::new(json!({ "hold_headers": false }));
    let mut host = forged_signup(&h, "ann@gmail.com");
    let mut f = h.filter();
    f.on_request_headers(&mut host, false);
    assert_eq!(details_seen(&host), none, "stripped before the headers go upstream");
}

#[test]
fn each_detail_header_can_be_switched_off_or_renamed() {
    let h = Harness::new(json!({
        "detail_headers": { "role_account": false },
        "flag_headers": { "normalized_email": "X-Canonical-Email" }
    }));
    let mut f = h.filter();
    let mut host = forged_signup(&h, "postmaster@duck.com");
    host.headers.push(("x-canonical-email".into(), b"forged@example.com".to_vec()));
    send(&mut f, &mut host);
    answer(&mut f, &mut host, lookup_response("duck.com", "safe", &[]));
    assert_eq!(host.header("x-canonical-email").as_deref(), Some("postmaster@duck.com"));
    assert_eq!(host.header("x-email-role"), None, "switched off, and the client's copy removed");
    assert_eq!(host.header("x-email-relay").as_deref(), Some("true"));
    // The default name is no verdict header any more here: a client's copy is the app's business.
    assert_eq!(host.header("x-email-normalized").as_deref(), Some("victim@gmail.com"));
}

#[test]
fn an_address_that_is_no_header_value_gets_no_normalized_header() {
    let h = Harness::new(json!({}));
    let mut f = h.filter();
    let mut host = forged_signup(&h, "josé@gmail.com");
    send(&mut f, &mut host);
    answer(&mut f, &mut host, lookup_response("gmail.com", "safe", &["free_provider"]));
    assert_eq!(host.header("x-email-verdict").as_deref(), Some("safe"));
    assert_eq!(details_seen(&host), expect(None, Some("false"), Some("false")));
    // An internationalized domain is in its A-label form.
    let mut f = h.filter();
    let mut host = json_signup(&h, "ann@Bücher.example");
    send(&mut f, &mut host);
    answer(&mut f, &mut host, lookup_response("xn--bcher-kva.example", "safe", &[]));
    assert_eq!(host.header("x-email-normalized").as_deref(), Some("ann@xn--bcher-kva.example"));
}

#[test]
fn no_log_line_holds_the_local_part() {
    let refused = crate::host::CalloutResponse::plain(Some(503), b"upstream connect error".to_vec());
    let mut logs = Vec::new();
    for (config, email) in [
        (json!({}), "Secret.Person+tag@unlisted.example"),
        (json!({ "mode": "flag" }), "Secret.Person+tag@mailinator.com"),
        (json!({}), "Secret.Person+tag@mailinator.com"),
    ] {
        let h = Harness::new(config);
        let mut f = h.filter();
        let mut host = json_signup(&h, email);
        host.fail.dispatch = email.ends_with("mailinator.com");
        send(&mut f, &mut host);
        if !host.dispatched.is_empty() {
            answer(&mut f, &mut host, refused.clone());
        }
        logs.extend(host.logs.borrow().iter().map(|(_, m)| m.clone()));
    }
    assert!(!logs.is_empty(), "the failures are logged");
    for line in &logs {
        let lower = line.to_ascii_lowercase();
        assert!(!lower.contains("secret") && !lower.contains("person"), "{line}");
    }
}

/// Issue 32: `on_subaddressed` flags or refuses a `+tag` or provider dots; a plain address passes.
#[test]
fn subaddressed_signups_are_flagged_or_refused() {
    let h = Harness::new(json!({ "on_subaddressed": "flag", "cache": { "ttl_seconds": 0 } }));
    let mut f = h.filter();
    let mut host = json_signup(&h, "j.o.h.n+1@gmail.com");
    send(&mut f, &mut host);
    answer(&mut f, &mut host, lookup_response("gmail.com", "safe", &["free_provider"]));
    assert_eq!(host.header("x-email-flags").as_deref(), Some("free_provider,subaddressed"));
    let mut f = h.filter();
    let mut host = json_signup(&h, "john@gmail.com");
    send(&mut f, &mut host);
    answer(&mut f, &mut host, lookup_response("gmail.com", "safe", &["free_provider"]));
    assert_eq!(host.header("x-email-flags").as_deref(), Some("free_provider"));

    let h = Harness::new(json!({ "on_subaddressed": "deny" }));
    let mut host = json_signup(&h, "john+promo@gmail.com");
    send(&mut h.filter(), &mut host);
    assert!(host.dispatched.is_empty());
    let sent = only_sent(&host);
    assert_eq!((sent.status, sent.json()["error"].as_str()), (400, Some("subaddressed_email")));
}
