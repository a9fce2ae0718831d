//! Signup counts (`velocity`): one count per judged signup beside the verdicts, the count
//! headers, flag and block limits, a failed count by `failure_mode`.

use super::*;
use email_verdict_core::signup::velocity::SignupEvent;

const SECRET: &str = "0123456789abcdef0123456789abcdef";

fn harness(extra: Value) -> Harness {
    let mut config = json!({
        "velocity": {
            "mailbox": { "per_day": 2, "action": "flag" },
            "client": { "per_hour": 5, "action": "block" }
        },
        "mailbox_secret": SECRET,
        "cache": { "ttl_seconds": 300 }
    });
    if let (Some(c), Value::Object(extra)) = (config.as_object_mut(), extra) {
        c.extend(extra);
    }
    Harness::new(config)
}

fn counts(mailbox_day: u64, client_hour: u64) -> crate::host::CalloutResponse {
    let body = json!({
        "request_id": "r2",
        "counts": {
            "mailbox": { "hour": 1, "day": mailbox_day },
            "client": { "hour": client_hour, "day": client_hour },
            "domain": { "hour": 1, "day": 1 }
        }
    });
    crate::host::CalloutResponse::plain(Some(200), body.to_string().into_bytes())
}

/// The signup's callouts: (the verdict's token, the count's token).
fn tokens(host: &MockHost) -> (Option<u32>, u32) {
    let is_count = |d: &&crate::mock_host::Dispatched| d.header(":path") == Some("/api/v1/signups");
    let count = host.dispatched.iter().find(is_count).expect("a count callout").token;
    let verdict = host.dispatched.iter().find(|d| !is_count(d)).map(|d| d.token);
    (verdict, count)
}

fn signup(h: &Harness, email: &str) -> (RequestFilter, MockHost) {
    let mut host = json_signup(h, email);
    host.client = Some("2001:db8:1:2::7".parse().unwrap());
    let mut f = h.filter();
    send(&mut f, &mut host);
    (f, host)
}

#[test]
fn a_judged_signup_is_counted_and_the_app_sees_the_counts() {
    let h = harness(json!({}));
    let (mut f, mut host) = signup(&h, "J.o.h.n+1@gmail.com");
    let (verdict, count) = tokens(&host);
    let sent = host.dispatched.iter().find(|d| d.token == count).unwrap();
    assert_eq!(sent.header(":method"), Some("POST"));
    let event: SignupEvent = serde_json::from_slice(sent.body.as_deref().unwrap()).unwrap();
    assert_eq!((event.domain.as_str(), event.client.as_deref()), ("gmail.com", Some("2001:db8:1:2::/64")));
    assert!(!String::from_utf8_lossy(sent.body.as_deref().unwrap()).to_lowercase().contains("john"));
    f.on_callout_response(&mut host, count, &counts(1, 1));
    assert_eq!(host.resumed, 0, "the verdict is still pending");
    f.on_callout_response(&mut host, verdict.unwrap(), &lookup_response("gmail.com", "safe", &["free_provider"]));
    assert_eq!(host.resumed, 1);
    assert_eq!(host.header("x-email-mailbox-signups").as_deref(), Some("1"));
    assert_eq!(host.header("x-email-client-signups").as_deref(), Some("1"));
    assert_eq!(host.header("x-email-velocity"), None);
    assert_eq!(host.count(Counter::Counted), 1);

    // Cached now: the verdict needs no callout, the count still does.
    let (mut f, mut host) = signup(&h, "JOHN@gmail.com");
    let (verdict, count) = tokens(&host);
    assert_eq!(verdict, None);
    f.on_callout_response(&mut host, count, &counts(3, 2));
    assert_eq!(host.header("x-email-mailbox-signups").as_deref(), Some("3"));
    assert_eq!(host.header("x-email-velocity").as_deref(), Some("mailbox"), "past the flag limit");
}

#[test]
fn a_block_limit_answers_429_with_retry_after() {
    let h = harness(json!({}));
    let (mut f, mut host) = signup(&h, "ann@gmail.com");
    let (verdict, count) = tokens(&host);
    f.on_callout_response(&mut host, verdict.unwrap(), &lookup_response("gmail.com", "safe", &[]));
    f.on_callout_response(&mut host, count, &counts(1, 6));
    let sent = only_sent(&host);
    assert_eq!(sent.status, 429);
    assert!(sent.headers.iter().any(|(n, v)| n == "retry-after" && v == "3600"), "{:?}", sent.headers);
    let body = sent.json();
    assert_eq!((body["error"].as_str(), body["scope"].as_str()), (Some("too_many_signups"), Some("client")));
    assert_eq!(host.count(Counter::TooManySignups), 1);
    // A disposable address is blocked as such, whatever the counts.
    let (mut f, mut host) = signup(&h, "x@mailinator.com");
    let (verdict, count) = tokens(&host);
    f.on_callout_response(&mut host, count, &counts(1, 6));
    f.on_callout_response(&mut host, verdict.unwrap(), &lookup_response("mailinator.com", "disposable", &[]));
    assert_eq!(only_sent(&host).status, 403);
}

#[test]
fn a_failed_count_follows_failure_mode() {
    let h = harness(json!({}));
    let (mut f, mut host) = signup(&h, "ann@gmail.com");
    let (verdict, count) = tokens(&host);
    f.on_callout_response(&mut host, count, &error_response(503, "internal_error"));
    f.on_callout_response(&mut host, verdict.unwrap(), &lookup_response("gmail.com", "safe", &[]));
    assert_eq!((host.resumed, host.header("x-email-verdict").as_deref()), (1, Some("safe")));
    assert_eq!(host.header("x-email-mailbox-signups"), None, "no counts");

    let h = harness(json!({ "failure_mode": "deny" }));
    let (mut f, mut host) = signup(&h, "ann@gmail.com");
    let (_, count) = tokens(&host);
    f.on_callout_response(&mut host, count, &error_response(504, "timeout"));
    assert_eq!(only_sent(&host).status, 503, "refused at once, the verdict not awaited");
}

#[test]
fn counts_switched_off_are_not_sent_and_a_signup_without_an_address_is_not_counted() {
    let h = harness(json!({ "detail_headers": { "mailbox_signups": false } }));
    let (mut f, mut host) = signup(&h, "ann@gmail.com");
    let (verdict, count) = tokens(&host);
    f.on_callout_response(&mut host, verdict.unwrap(), &lookup_response("gmail.com", "safe", &[]));
    f.on_callout_response(&mut host, count, &counts(1, 1));
    assert_eq!(host.header("x-email-mailbox-signups"), None);
    assert_eq!(host.header("x-email-client-signups").as_deref(), Some("1"));
    let mut host = h.host("POST", "/signup", &[("content-type", "application/json")], br#"{"name":"Ann"}"#);
    send(&mut h.filter(), &mut host);
    assert!(host.dispatched.is_empty());
}

#[test]
fn velocity_needs_a_secret() {
    let doc = json!({
        "sidecar": { "cluster": "c", "api_key": "k" },
        "signup_routes": [{ "method": "POST", "path": "/signup" }],
        "velocity": { "mailbox": { "per_day": 3, "action": "flag" } }
    });
    let err = FilterConfig::from_json(&serde_json::to_vec(&doc).unwrap(), &|_| Err(EnvError::NotSet)).unwrap_err();
    assert!(err.to_string().starts_with("mailbox_secret:"), "{err}");
    let mut doc = doc;
    doc["mailbox_secret_env"] = json!("MAILBOX_SECRET");
    let read = |name: &str| if name == "MAILBOX_SECRET" { Ok(SECRET.to_owned()) } else { Err(EnvError::NotSet) };
    assert!(FilterConfig::from_json(&serde_json::to_vec(&doc).unwrap(), &read).unwrap().mailbox_secret.is_some());
    let short = |_: &str| Ok("short".to_owned());
    let err = FilterConfig::from_json(&serde_json::to_vec(&doc).unwrap(), &short).unwrap_err();
    assert!(err.to_string().starts_with("mailbox_secret_env:"), "{err}");
}
