//! The signup's trace context goes with every callout: what the request carried (the Wasm
//! filter), or a span of the host's own under Envoy's (the dynamic module).

use super::*;

const PARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

fn traced_signup(h: &Harness, email: &str, span: Option<(&str, &str)>) -> MockHost {
    let body = json!({ "email": email }).to_string();
    let headers = [("content-type", "application/json"), ("traceparent", PARENT), ("tracestate", "k=v"), ("b3", "x")];
    let mut host = h.host("POST", "/signup", &headers, body.as_bytes());
    host.span = span.map(|(t, s)| (t.to_owned(), s.to_owned()));
    host
}

#[test]
fn the_verdict_and_count_callouts_carry_the_requests_trace_context() {
    let h = Harness::new(json!({
        "velocity": { "mailbox": { "per_day": 2, "action": "flag" } },
        "mailbox_secret": "0123456789abcdef0123456789abcdef"
    }));
    let mut f = h.filter();
    let mut host = traced_signup(&h, "ann@example.org", None);
    send(&mut f, &mut host);
    assert!(host.dispatched.len() >= 2, "a lookup and a count: {:?}", host.dispatched);
    for call in &host.dispatched {
        assert_eq!(call.header("traceparent"), Some(PARENT), "{:?}", call.headers);
        assert_eq!((call.header("tracestate"), call.header("b3")), (Some("k=v"), Some("x")));
    }
}

#[test]
fn a_hosts_own_span_is_the_callouts_parent() {
    let h = Harness::new(json!({}));
    let mut f = h.filter();
    let mut host = traced_signup(&h, "ann@example.org", Some(("4bf92f3577b34da6a3ce929d0e0e4736", "b7ad6b7169203331")));
    send(&mut f, &mut host);
    let call = &host.dispatched[0];
    assert_eq!(call.header("traceparent"), Some("00-4bf92f3577b34da6a3ce929d0e0e4736-b7ad6b7169203331-01"));
    assert_eq!((call.header("tracestate"), call.header("b3")), (Some("k=v"), None));
}

#[test]
fn a_request_without_trace_context_sends_none() {
    let h = Harness::new(json!({}));
    let mut f = h.filter();
    let mut host = json_signup(&h, "ann@example.org");
    send(&mut f, &mut host);
    let names: Vec<&str> = host.dispatched[0].headers.iter().map(|(k, _)| k.as_str()).collect();
    assert!(!names.iter().any(|n| *n == "traceparent" || n.starts_with("x-b3") || *n == "b3"), "{names:?}");
}
