//! Refusals in the request's protocol (core's `LocalReply::render`): what reaches the host.

use super::*;

/// A signup whose address comes in a header, so that it needs no body reader; `content_type`
/// says the protocol.
fn signup(h: &Harness, content_type: &str, email: &str) -> MockHost {
    let headers =
        [("content-type", content_type), ("x-signup-email", email), ("x-request-id", "req-7"), ("te", "trailers")];
    h.host("POST", "/signup", &headers, b"")
}

fn harness(overrides: Value) -> Harness {
    let mut doc = json!({ "email": { "headers": ["x-signup-email"] }, "cache": { "ttl_seconds": 0 } });
    if let (Some(doc), Value::Object(overrides)) = (doc.as_object_mut(), overrides) {
        doc.extend(overrides);
    }
    Harness::new(doc)
}

/// The refusal of a disposable address, asked of the sidecar.
fn blocked(h: &Harness, content_type: &str) -> Sent {
    let mut f = h.filter();
    let mut host = signup(h, content_type, "ann@mailinator.com");
    assert_eq!(send(&mut f, &mut host).0, Action::Pause);
    answer(&mut f, &mut host, lookup_response("mailinator.com", "disposable", &[]));
    only_sent(&host).clone()
}

/// Issue 43: through the module a refused gRPC call read as OK (`grpc-status: 0`); every host
/// now gets the code as a header (and proxy-wasm's `grpc_status` too), with no body.
#[test]
fn a_grpc_refusal_carries_permission_denied_and_the_message() {
    let h = harness(json!({}));
    for content_type in ["application/grpc", "application/grpc+proto"] {
        let sent = blocked(&h, content_type);
        assert_eq!((sent.status, sent.details.as_str()), (200, "email_verdict_disposable"));
        assert_eq!(sent.header("content-type"), Some("application/grpc"));
        assert_eq!(sent.header("grpc-status"), Some("7"));
        assert_eq!(sent.header("grpc-message"), Some("Please sign up with a permanent email address."));
        assert_eq!(sent.header("x-request-id"), Some("req-7"));
        assert_eq!(sent.grpc_status, Some(7));
        assert!(sent.body.is_empty(), "Envoy would put a body in grpc-message");
    }
}

#[test]
fn grpc_refusals_of_the_request_itself_are_invalid_argument() {
    let h = harness(json!({}));
    let mut f = h.filter();
    let mut host = signup(&h, "application/grpc", "not an address");
    assert_eq!(send(&mut f, &mut host).0, Action::Pause);
    let sent = only_sent(&host);
    assert_eq!((sent.header("grpc-status"), sent.grpc_status), (Some("3"), Some(3)));
    assert_eq!(sent.header("grpc-message"), Some("The email address is not valid."));

    // Too large, by its declared length: RESOURCE_EXHAUSTED.
    let mut f = h.filter();
    let mut host =
        h.host("POST", "/signup", &[("content-type", "application/grpc"), ("content-length", "99999999")], b"");
    assert_eq!(f.on_request_headers(&mut host, false), Action::Pause);
    let sent = only_sent(&host);
    assert_eq!((sent.status, sent.header("grpc-status")), (200, Some("8")));
    assert_eq!(sent.header("grpc-message"), Some("The request body is too large."));
}

#[test]
fn a_grpc_signup_without_a_verdict_under_failure_mode_deny_is_unavailable() {
    let h = harness(json!({ "failure_mode": "deny", "failure_status": 503 }));
    let mut f = h.filter();
    let mut host = signup(&h, "application/grpc", "ann@unlisted.example");
    assert_eq!(send(&mut f, &mut host).0, Action::Pause);
    answer(&mut f, &mut host, error_response(500, "internal"));
    let sent = only_sent(&host);
    assert_eq!((sent.status, sent.header("grpc-status"), sent.grpc_status), (200, Some("14"), Some(14)));
    // The module's panic path too.
    let mut f = h.filter();
    let mut host = signup(&h, "application/grpc-web+proto", "ann@unlisted.example");
    send(&mut f, &mut host);
    assert_eq!(f.on_internal_error(&mut host), Action::Pause);
    assert!(only_sent(&host).body.ends_with(
        b"grpc-status:14\r\ngrpc-message:The email address could not be checked right now; try again shortly.\r\n"
    ));
}

#[test]
fn a_grpc_web_refusal_ends_with_its_trailer_frame() {
    let h = harness(json!({}));
    let sent = blocked(&h, "application/grpc-web+proto");
    assert_eq!((sent.status, sent.header("content-type")), (200, Some("application/grpc-web+proto")));
    let trailers = b"grpc-status:7\r\ngrpc-message:Please sign up with a permanent email address.\r\n";
    assert_eq!(sent.body[0], 0x80);
    assert_eq!(u32::from_be_bytes(sent.body[1..5].try_into().unwrap()) as usize, trailers.len());
    assert_eq!(&sent.body[5..], trailers);
    assert_eq!(sent.grpc_status, None, "not a gRPC request to Envoy");
    let text = blocked(&h, "application/grpc-web-text");
    assert_eq!(text.header("content-type"), Some("application/grpc-web-text"));
    assert!(text.body.starts_with(b"gAAAAE"), "base64 of the same frame");
}

#[test]
fn connect_and_rest_refusals() {
    let h = harness(json!({}));
    let connect = blocked(&h, "application/proto");
    assert_eq!((connect.status, connect.header("content-type")), (403, Some("application/json")));
    assert_eq!(
        connect.json(),
        json!({ "code": "permission_denied", "message": "Please sign up with a permanent email address." })
    );
    let streaming = blocked(&h, "application/connect+proto");
    assert_eq!((streaming.status, streaming.body[0]), (200, 0x02));
    let end: Value = serde_json::from_slice(&streaming.body[5..]).unwrap();
    assert_eq!(end["error"]["code"], "permission_denied");
    // REST: as before, the request id in the body.
    let rest = blocked(&h, "application/json");
    assert_eq!((rest.status, rest.header("content-type")), (403, Some("application/json")));
    assert_eq!(rest.json()["request_id"], "req-7");
    assert_eq!(rest.header("grpc-status"), None);
}

/// Flag mode: the verdict and detail headers are request headers, which reach a gRPC app as
/// its call's metadata (none of their names is one gRPC reserves).
#[test]
fn flag_mode_headers_reach_a_grpc_app_as_metadata() {
    let h = harness(json!({ "mode": "flag" }));
    let mut f = h.filter();
    let mut host = signup(&h, "application/grpc", "ann@mailinator.com");
    assert_eq!(send(&mut f, &mut host).0, Action::Pause);
    answer(&mut f, &mut host, lookup_response("mailinator.com", "disposable", &[]));
    assert!(host.sent.is_empty());
    assert_eq!(host.resumed, 1);
    for name in WITH_A_VERDICT {
        assert!(host.header(name).is_some(), "{name}");
        assert!(!name.starts_with("grpc-") && !name.starts_with(':'), "{name}");
    }
    assert_eq!(host.header("x-email-verdict").as_deref(), Some("disposable"));
}

/// A GraphQL route (`graphql.paths`): a GraphQL response with the refusal's 4xx, its type as
/// `accept` asks.
#[test]
fn a_graphql_refusal_is_a_graphql_response() {
    let h = harness(json!({ "graphql": { "paths": ["/graphql"], "operations": ["signUp"] } }));
    let query = json!({ "query": "mutation { signUp(email: \"ann@mailinator.com\") { id } }" }).to_string();
    for (accept, content_type) in [
        ("application/graphql-response+json, application/json;q=0.9", "application/graphql-response+json"),
        ("application/json", "application/json"),
    ] {
        let mut f = h.filter();
        let headers = [("content-type", "application/json"), ("accept", accept), ("x-request-id", "req-7")];
        let mut host = h.host("POST", "/graphql", &headers, query.as_bytes());
        assert_eq!(send(&mut f, &mut host).1, Action::Pause);
        answer(&mut f, &mut host, lookup_response("mailinator.com", "disposable", &[]));
        let sent = only_sent(&host);
        assert_eq!((sent.status, sent.header("content-type")), (403, Some(content_type)));
        let expected = json!({ "errors": [{
            "message": "Please sign up with a permanent email address.",
            "extensions": { "code": "disposable_email", "request_id": "req-7" },
        }]});
        assert_eq!(sent.json(), expected);
    }
}
