//! Every reply in every protocol, through the filter and through ext_authz.

use serde_json::{Value, json};

use super::*;

const DEFAULT_BLOCK: &[u8] =
    br#"{"error":"disposable_email","message":"Please sign up with a permanent email address."}"#;
const TOO_MANY: &[u8] =
    br#"{"error":"too_many_signups","message":"Too many signups like this one lately; try again later.","retry_after":60,"scope":"client"}"#;

/// Every reply an enforcement point sends, with its gRPC code.
fn every_reply() -> Vec<(LocalReply<'static>, Code)> {
    vec![
        (LocalReply::MISSING_EMAIL, Code::InvalidArgument),
        (LocalReply::INVALID_EMAIL, Code::InvalidArgument),
        (LocalReply::CONFLICTING_EMAILS, Code::InvalidArgument),
        (LocalReply::UNREADABLE_BODY, Code::InvalidArgument),
        (LocalReply::TOO_MANY_ADDRESSES, Code::InvalidArgument),
        (LocalReply::SUBADDRESSED, Code::InvalidArgument),
        (LocalReply::BODY_TOO_LARGE, Code::ResourceExhausted),
        (LocalReply::unavailable(503), Code::Unavailable),
        (LocalReply::unavailable(500), Code::Unavailable),
        (LocalReply::blocked(403, DEFAULT_BLOCK), Code::PermissionDenied),
        (LocalReply::too_many_signups(TOO_MANY), Code::ResourceExhausted),
    ]
}

fn message_of(reply: &LocalReply<'_>) -> String {
    let body: Value = serde_json::from_slice(reply.body).unwrap();
    body["message"].as_str().unwrap().to_owned()
}

fn error_of(reply: &LocalReply<'_>) -> String {
    let body: Value = serde_json::from_slice(reply.body).unwrap();
    body["error"].as_str().unwrap().to_owned()
}

fn header<'a>(rendered: &'a Rendered, name: &str) -> Option<&'a str> {
    rendered.headers.iter().find(|(n, _)| *n == name).map(|(_, v)| v.as_str())
}

fn web(text: bool) -> Protocol {
    let content_type = if text { "application/grpc-web-text+proto" } else { "application/grpc-web+proto" };
    Protocol::GrpcWeb { content_type: content_type.to_owned(), text }
}

fn streaming(codec: &str) -> Protocol {
    Protocol::ConnectStreaming { content_type: format!("application/connect+{codec}") }
}

fn all_protocols() -> Vec<Protocol> {
    vec![
        Protocol::Rest,
        Protocol::Grpc,
        web(false),
        web(true),
        Protocol::ConnectUnary,
        streaming("json"),
        streaming("proto"),
        Protocol::GraphQl { response_type: false },
        Protocol::GraphQl { response_type: true },
    ]
}

/// The frame's flags and payload, checking its length prefix.
fn unframe(body: &[u8]) -> (u8, &[u8]) {
    assert!(body.len() >= 5, "{body:?}");
    let length = u32::from_be_bytes([body[1], body[2], body[3], body[4]]) as usize;
    assert_eq!(length, body.len() - 5, "one frame, the whole body");
    (body[0], &body[5..])
}

#[test]
fn each_reply_has_its_code() {
    for (reply, code) in every_reply() {
        assert_eq!(reply.code(), code, "{}", reply.details);
    }
    assert_eq!(LocalReply::invalid(None).code(), Code::InvalidArgument);
}

#[test]
fn an_operators_block_status_maps_as_documented() {
    let check = |status: u16, code: Code| assert_eq!(LocalReply::blocked(status, b"{}").code(), code, "{status}");
    check(403, Code::PermissionDenied);
    check(401, Code::Unauthenticated);
    check(404, Code::Unimplemented);
    for status in [429, 502, 503, 504] {
        check(status, Code::Unavailable);
    }
    for status in [400, 409, 410, 422, 451, 500] {
        check(status, Code::PermissionDenied);
    }
}

#[test]
fn rest_replies_are_unchanged_byte_for_byte() {
    for via in [Via::LocalReply, Via::ExtAuthz] {
        for (reply, _) in every_reply() {
            let r = reply.render(&Protocol::Rest, via, None);
            assert_eq!((r.status, r.details, r.body.as_slice()), (reply.status, reply.details, reply.body));
            assert_eq!(r.headers, vec![("content-type", "application/json".to_owned())]);
            assert_eq!(r.grpc_status, None);
            // With a request id: echoed as a header and in the body.
            let r = reply.render(&Protocol::Rest, via, Some("req-1"));
            assert_eq!(header(&r, "x-request-id"), Some("req-1"));
            let body: Value = serde_json::from_slice(&r.body).unwrap();
            assert_eq!(body["request_id"], "req-1", "{}", reply.details);
            assert_eq!(body["error"], error_of(&reply));
        }
    }
}

#[test]
fn grpc_refusals_are_trailers_only_with_the_code_and_message() {
    for (reply, code) in every_reply() {
        let r = reply.render(&Protocol::Grpc, Via::LocalReply, Some("req-1"));
        assert_eq!(r.status, 200, "{}", reply.details);
        assert_eq!(header(&r, "content-type"), Some("application/grpc"));
        assert_eq!(header(&r, "grpc-status"), Some(code.number().to_string().as_str()));
        assert_eq!(header(&r, "grpc-message"), Some(grpc_message(&message_of(&reply)).as_str()));
        assert_eq!(header(&r, "x-request-id"), Some("req-1"));
        assert!(r.body.is_empty(), "nothing in the body: Envoy would make it the grpc-message");
        assert_eq!(r.grpc_status, Some(code.number()));
        // Through ext_authz: the same headers, Connect's status for the code (never 200).
        let e = reply.render(&Protocol::Grpc, Via::ExtAuthz, None);
        assert_eq!(e.status, code.http_status());
        assert_eq!(header(&e, "grpc-status"), header(&r, "grpc-status"));
        assert_eq!(header(&e, "grpc-message"), header(&r, "grpc-message"));
        assert!(e.body.is_empty());
    }
    let blocked = LocalReply::blocked(403, DEFAULT_BLOCK).render(&Protocol::Grpc, Via::LocalReply, None);
    assert_eq!(header(&blocked, "grpc-status"), Some("7"));
    assert_eq!(header(&blocked, "grpc-message"), Some("Please sign up with a permanent email address."));
}

#[test]
fn grpc_web_refusals_end_with_a_trailer_frame() {
    for (reply, code) in every_reply() {
        let expected =
            format!("grpc-status:{}\r\ngrpc-message:{}\r\n", code.number(), grpc_message(&message_of(&reply)));
        let r = reply.render(&web(false), Via::LocalReply, None);
        assert_eq!(r.status, 200);
        assert_eq!(header(&r, "content-type"), Some("application/grpc-web+proto"));
        assert_eq!(header(&r, "grpc-status"), None, "the trailers once, in the body");
        assert_eq!(unframe(&r.body), (0x80, expected.as_bytes()));
        let text = reply.render(&web(true), Via::LocalReply, None);
        assert_eq!(header(&text, "content-type"), Some("application/grpc-web-text+proto"));
        assert_eq!(text.body, base64(&r.body).into_bytes());
        // Through ext_authz: the HTTP status and the trailers as headers, no body.
        let e = reply.render(&web(false), Via::ExtAuthz, None);
        assert_eq!(e.status, code.http_status());
        assert_eq!(header(&e, "grpc-status"), Some(code.number().to_string().as_str()));
        assert!(e.body.is_empty());
    }
}

#[test]
fn connect_refusals_are_connect_errors() {
    for (reply, code) in every_reply() {
        let error = json!({ "code": code.connect_name(), "message": message_of(&reply) });
        for via in [Via::LocalReply, Via::ExtAuthz] {
            let r = reply.render(&Protocol::ConnectUnary, via, Some("req-1"));
            assert_eq!((r.status, header(&r, "content-type")), (code.http_status(), Some("application/json")));
            assert_eq!(serde_json::from_slice::<Value>(&r.body).unwrap(), error, "{}", reply.details);
        }
        // Streaming: 200 and an end-stream message, JSON whatever the codec.
        for codec in ["json", "proto"] {
            let r = reply.render(&streaming(codec), Via::LocalReply, None);
            assert_eq!(r.status, 200);
            assert_eq!(header(&r, "content-type"), Some(format!("application/connect+{codec}").as_str()));
            let (flags, payload) = unframe(&r.body);
            assert_eq!(flags, 0x02);
            assert_eq!(serde_json::from_slice::<Value>(payload).unwrap(), json!({ "error": error }));
            // Through ext_authz: the unary error with its status.
            let e = reply.render(&streaming(codec), Via::ExtAuthz, None);
            assert_eq!((e.status, header(&e, "content-type")), (code.http_status(), Some("application/json")));
            assert_eq!(serde_json::from_slice::<Value>(&e.body).unwrap(), error);
        }
    }
}

#[test]
fn graphql_refusals_are_graphql_responses() {
    for (reply, _) in every_reply() {
        for (response_type, content_type) in [(false, "application/json"), (true, "application/graphql-response+json")]
        {
            for via in [Via::LocalReply, Via::ExtAuthz] {
                let r = reply.render(&Protocol::GraphQl { response_type }, via, Some("req-1"));
                assert_eq!((r.status, header(&r, "content-type")), (reply.status, Some(content_type)));
                let expected = json!({ "errors": [{
                    "message": message_of(&reply),
                    "extensions": { "code": error_of(&reply), "request_id": "req-1" },
                }]});
                assert_eq!(serde_json::from_slice::<Value>(&r.body).unwrap(), expected, "{}", reply.details);
            }
        }
    }
}

#[test]
fn no_refusal_through_ext_authz_is_a_200() {
    for protocol in all_protocols() {
        for (reply, _) in every_reply() {
            let status = reply.render(&protocol, Via::ExtAuthz, None).status;
            assert!((400..=599).contains(&status), "{protocol:?} {}: {status}", reply.details);
        }
    }
}

#[test]
fn every_rendered_header_is_a_valid_value() {
    let odd = LocalReply::blocked(403, "{\"message\":\"Nope, 100% — «non» \\n\"}".as_bytes());
    for protocol in all_protocols() {
        for via in [Via::LocalReply, Via::ExtAuthz] {
            for (reply, _) in every_reply().into_iter().chain([(odd.clone(), Code::PermissionDenied)]) {
                for (name, value) in reply.render(&protocol, via, Some("r")).headers {
                    assert_eq!(crate::signup::header_value(&value), Some(value.as_str()), "{name}: {value:?}");
                }
            }
        }
    }
}

#[test]
fn an_operators_block_body_without_a_message_gets_general_words() {
    for operator in [&b"\"go away\""[..], b"[]", b"not json", br#"{"error":7}"#] {
        let reply = LocalReply::blocked(403, operator);
        let r = reply.render(&Protocol::Grpc, Via::LocalReply, None);
        assert_eq!(header(&r, "grpc-message"), Some("This signup was refused."));
        let g = reply.render(&Protocol::GraphQl { response_type: false }, Via::LocalReply, None);
        let body: Value = serde_json::from_slice(&g.body).unwrap();
        assert_eq!(body["errors"][0]["extensions"]["code"], "disposable");
        // REST still sends the operator's body as it is.
        assert_eq!(reply.render(&Protocol::Rest, Via::LocalReply, None).body, operator);
    }
}

#[test]
fn grpc_messages_are_percent_encoded() {
    assert_eq!(grpc_message("plain text, ok?"), "plain text, ok?");
    assert_eq!(grpc_message("100% é\n"), "100%25 %C3%A9%0A");
    assert_eq!(grpc_message("~\x7f"), "~%7F");
}

#[test]
fn base64_matches_rfc_4648_vectors() {
    for (input, expected) in [
        ("", ""),
        ("f", "Zg=="),
        ("fo", "Zm8="),
        ("foo", "Zm9v"),
        ("foob", "Zm9vYg=="),
        ("fooba", "Zm9vYmE="),
        ("foobar", "Zm9vYmFy"),
    ] {
        assert_eq!(base64(input.as_bytes()), expected, "{input}");
    }
    assert_eq!(base64(&[0xfb, 0xff]), "+/8=");
}

#[test]
fn json_strings_are_escaped() {
    for text in ["plain", "a \"quoted\" \\ back", "tab\tnew\nline\u{1}", "é «non» 😀"] {
        assert_eq!(serde_json::from_str::<String>(&quoted(text)).unwrap(), text, "{text:?}");
    }
}
