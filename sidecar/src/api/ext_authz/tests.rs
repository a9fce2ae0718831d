//! The check's answers, without a server.

use super::*;

#[test]
fn original_paths() {
    assert_eq!(original_path("/ext_authz/signup"), Some("/signup"));
    assert_eq!(original_path("/ext_authz"), Some(""));
    assert_eq!(original_path("/ext_authz//signup"), Some("//signup"));
    assert_eq!(original_path("/ext_authzx/signup"), None);
    assert_eq!(original_path("/api/v1/domain/x"), None);
}

#[test]
fn allow_sets_and_removes() {
    let r = allow(&[("x-email-verdict", "safe")], &["x-email-verdict-bypass", "x-other"]);
    assert_eq!(r.status(), 200);
    assert_eq!(header(&r, "x-email-verdict"), Some("safe"));
    assert_eq!(header(&r, HEADERS_TO_REMOVE), Some("x-email-verdict-bypass,x-other"));
}

fn config(doc: &str) -> Enforcement {
    email_verdict_core::signup::EnforcementConfig::from_json(doc.as_bytes()).unwrap()
}

fn safe(config: &Enforcement, email: &str, relay: bool) -> Response<Vec<u8>> {
    let email = EmailAddress::parse(email).unwrap();
    let details = AddressDetails::of(&email, relay);
    let verdict = AddressVerdict {
        domain: email.domain().clone(),
        disposable: false,
        flags: "free_provider".to_owned(),
        suggestion: None,
        source: None,
        undeliverable: false,
    };
    ready(verdict_answer(config, &verdict, Some(&details), &[], CheckOutcome::Judged))
}

fn ready(checked: Checked) -> Response<Vec<u8>> {
    match checked.response {
        Answer::Ready(response) => response,
        Answer::Refusal(refusal) => panic!("a refusal: {}", refusal.details),
    }
}

fn refusal(checked: Checked) -> Refusal {
    match checked.response {
        Answer::Refusal(refusal) => refusal,
        Answer::Ready(response) => panic!("not a refusal: {}", response.status()),
    }
}

fn blocked(config: &Enforcement) -> Refusal {
    let verdict = AddressVerdict {
        domain: Domain::parse("mailinator.com").unwrap(),
        disposable: true,
        flags: String::new(),
        suggestion: None,
        source: None,
        undeliverable: false,
    };
    refusal(verdict_answer(config, &verdict, None, &[], CheckOutcome::Judged))
}

#[test]
fn a_rest_refusal_is_the_block_response_as_configured() {
    let r = blocked(&config("{}")).render(&Protocol::Rest);
    assert_eq!((r.status().as_u16(), header(&r, "content-type")), (403, Some("application/json")));
    let expected = br#"{"error":"disposable_email","message":"Please sign up with a permanent email address."}"#;
    assert_eq!(r.body(), expected);
    let custom = config(r#"{"block_response":{"status":451,"body":{"error":"nope"}}}"#);
    let r = blocked(&custom).render(&Protocol::Rest);
    assert_eq!((r.status().as_u16(), r.body().as_slice()), (451, &br#"{"error":"nope"}"#[..]));
}

/// Issue 43: a gRPC client read the filter's `400` as `INTERNAL`; Envoy keeps the check's
/// `grpc-status` when it turns a gRPC request's denial into its `200`.
#[test]
fn a_grpc_refusal_carries_its_code_never_a_200() {
    let r = blocked(&config("{}")).render(&Protocol::Grpc);
    assert_eq!((r.status().as_u16(), header(&r, "grpc-status")), (403, Some("7")));
    assert_eq!(header(&r, "grpc-message"), Some("Please sign up with a permanent email address."));
    assert!(r.body().is_empty());
    let r = refusal(refused(&LocalReply::UNREADABLE_BODY)).render(&Protocol::Grpc);
    assert_eq!((r.status().as_u16(), header(&r, "grpc-status")), (400, Some("3")));
    let web = Protocol::GrpcWeb { content_type: "application/grpc-web+proto".into(), text: false };
    let streaming = Protocol::ConnectStreaming { content_type: "application/connect+json".into() };
    for protocol in [Protocol::Rest, Protocol::Grpc, web, Protocol::ConnectUnary, streaming] {
        for checked in [refused(&LocalReply::MISSING_EMAIL), refused(&LocalReply::BODY_TOO_LARGE)] {
            let status = refusal(checked).render(&protocol).status();
            assert!(status.is_client_error(), "{protocol:?}: {status}");
        }
    }
}

#[test]
fn too_many_signups_keeps_its_retry_after_in_every_protocol() {
    let body = br#"{"error":"too_many_signups","message":"Later.","request_id":"r1"}"#.to_vec();
    let r = refusal(too_many_signups(body.clone(), 60)).render(&Protocol::Rest);
    assert_eq!((r.status().as_u16(), header(&r, "retry-after")), (429, Some("60")));
    assert_eq!(r.body(), &body);
    let r = refusal(too_many_signups(body, 60)).render(&Protocol::Grpc);
    assert_eq!(
        (r.status().as_u16(), header(&r, "grpc-status"), header(&r, "retry-after")),
        (429, Some("8"), Some("60"))
    );
    assert_eq!(header(&r, "grpc-message"), Some("Later."));
}

const COUNTS: [&str; 3] = ["x-email-mailbox-signups", "x-email-client-signups", "x-email-velocity"];

fn removed(r: &Response<Vec<u8>>) -> Vec<&str> {
    header(r, HEADERS_TO_REMOVE).unwrap_or_default().split(',').filter(|s| !s.is_empty()).collect()
}

#[test]
fn an_allowed_signup_gets_the_detail_headers_and_the_rest_are_removed() {
    let r = safe(&config("{}"), "J.o.h.n+x@gmail.com", false);
    assert_eq!(r.status().as_u16(), 200);
    assert_eq!(header(&r, "x-email-normalized"), Some("john@gmail.com"));
    assert_eq!(header(&r, "x-email-role"), Some("false"));
    assert_eq!(header(&r, "x-email-relay"), Some("false"));
    assert_eq!(removed(&r), ["x-email-verdict-bypass", COUNTS[0], COUNTS[1], COUNTS[2], "x-email-suggestion"]);
    let r = safe(&config("{}"), "postmaster@duck.com", true);
    assert_eq!((header(&r, "x-email-role"), header(&r, "x-email-relay")), (Some("true"), Some("true")));
    // Without a header value (a non-ASCII local part), or switched off: removed, never left
    // to the client's copy.
    let r = safe(&config("{}"), "josé@gmail.com", false);
    assert_eq!(header(&r, "x-email-normalized"), None);
    let expected =
        ["x-email-verdict-bypass", COUNTS[0], COUNTS[1], COUNTS[2], "x-email-suggestion", "x-email-normalized"];
    assert_eq!(removed(&r), expected);
    let off = config(r#"{"detail_headers":{"normalized_email":false,"role_account":false,"relay":false}}"#);
    let r = safe(&off, "ann@gmail.com", false);
    for name in ["x-email-normalized", "x-email-role", "x-email-relay"] {
        assert_eq!(header(&r, name), None, "{name}");
    }
    assert_eq!(removed(&r).len(), 8, "{:?}", removed(&r));
    assert_eq!(header(&r, "x-email-verdict"), Some("safe"));
    // Renamed.
    let renamed = config(r#"{"flag_headers":{"role_account":"X-Role"}}"#);
    assert_eq!(header(&safe(&renamed, "info@gmail.com", false), "x-role"), Some("true"));
}

#[test]
fn a_bypass_removes_every_other_flag_header() {
    let r = bypassed(&config("{}"), Bypass::NoEmail);
    assert_eq!(header(&r, "x-email-verdict-bypass"), Some("no_email"));
    let expected = [
        "x-email-verdict",
        "x-email-domain",
        "x-email-flags",
        "x-email-suggestion",
        "x-email-normalized",
        "x-email-role",
        "x-email-relay",
        COUNTS[0],
        COUNTS[1],
        COUNTS[2],
    ];
    assert_eq!(removed(&r), expected);
}

#[test]
fn a_header_that_cannot_be_sent_is_a_500_never_a_bare_200() {
    let r = allow(&[("x-email-normalized", "a\r\nx-email-verdict: safe")], &["x-email-verdict-bypass"]);
    assert_eq!(r.status().as_u16(), 500);
    assert!(r.headers().get("x-email-verdict").is_none() && header(&r, HEADERS_TO_REMOVE).is_none());
}

#[test]
fn a_failure_is_always_a_5xx() {
    let mut log = LogFields::default();
    for code in [
        email_verdict_core::ErrorCode::QuotaExceeded,
        email_verdict_core::ErrorCode::RateLimitExceeded,
        email_verdict_core::ErrorCode::ApiKeyInvalid,
        email_verdict_core::ErrorCode::InternalError,
    ] {
        let checked = failed(ApiError::new(code, "x"), &mut log);
        assert!(ready(checked).status().is_server_error(), "{code:?}");
    }
}
