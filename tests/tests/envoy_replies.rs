//! Issue 43: refusals in the request's protocol through a real Envoy, on both builds of the
//! filter and through `/ext_authz` (filter/CONFIG.md, "Refusals by protocol"). The address
//! comes in `?email=` (the shipped settings read it), so no body reader is involved. The full
//! matrix with real gRPC, Connect and GraphQL clients is `protocol_matrix`'s.

use email_verdict_tests::envoy::{Gateway, each_build, gateway_on, gateway_with};
use email_verdict_tests::{Request, Response};
use serde_json::json;

const BLOCKED: &str = "Please sign up with a permanent email address.";

fn call(g: &Gateway, content_type: &str, email: &str) -> Response {
    let req = Request::new("POST", &format!("/signup?email={email}"))
        .header("content-type", content_type)
        .header("te", "trailers");
    g.envoy.send(&req)
}

/// A gRPC call whose message (field 1, a string) holds the address, read by core's protobuf
/// reader.
fn call_with_message(g: &Gateway, email: &str) -> Response {
    let message = [&[0x0a, email.len() as u8][..], email.as_bytes()].concat();
    let frame = [&[0, 0, 0, 0, message.len() as u8][..], &message].concat();
    let req = Request::new("POST", "/signup")
        .header("content-type", "application/grpc")
        .header("te", "trailers")
        .body(&frame);
    g.envoy.send(&req)
}

fn grpc_status(resp: &Response) -> (u16, Option<&str>, Option<&str>) {
    (resp.status, resp.header("grpc-status"), resp.header("grpc-message"))
}

/// The module's refusal reached grpcio as `200` with `grpc-status: 0` (Envoy's ABI passes OK as
/// the gRPC status of every module reply); the Wasm filter's as `INTERNAL`.
#[test]
fn a_grpc_client_reads_permission_denied_from_both_builds() {
    each_build(|build| {
        let g = gateway_on(build, |b| b);
        let resp = call(&g, "application/grpc", "q@mailinator.com");
        assert_eq!(grpc_status(&resp), (200, Some("7"), Some(BLOCKED)), "{build:?}\n{resp}");
        assert_eq!(resp.header("content-type"), Some("application/grpc"), "{resp}");
        assert!(resp.body.is_empty(), "{resp}");
        let resp = call_with_message(&g, "bob@mailinator.com");
        assert_eq!(grpc_status(&resp), (200, Some("7"), Some(BLOCKED)), "{build:?}\n{resp}");
        let resp = call(&g, "application/grpc+proto", "not-an-address");
        assert_eq!(grpc_status(&resp), (200, Some("3"), Some("The email address is not valid.")), "{resp}");
        // gRPC-Web: the trailers in a frame of the body, the content-type kept.
        let resp = call(&g, "application/grpc-web+proto", "q@mailinator.com");
        assert_eq!((resp.status, resp.header("content-type")), (200, Some("application/grpc-web+proto")), "{resp}");
        let trailers = format!("grpc-status:7\r\ngrpc-message:{BLOCKED}\r\n");
        assert_eq!(resp.body.first(), Some(&0x80), "{resp}");
        assert!(resp.body.ends_with(trailers.as_bytes()), "{resp}");
        // Connect unary: its error JSON with Connect's status.
        let resp = call(&g, "application/proto", "q@mailinator.com");
        assert_eq!(resp.status, 403, "{resp}");
        assert_eq!(resp.json(), json!({ "code": "permission_denied", "message": BLOCKED }));
        assert_eq!(g.app.count(), 0, "no refused call reaches the app");
    });
}

#[test]
fn ext_authz_refusals_speak_the_same_words() {
    let config = email_verdict_tests::workspace_root().join("envoy/ext-authz-config.json").display().to_string();
    let g = gateway_with(|s| s.args(&["--ext-authz-config", &config]), |e| e.ext_authz());
    // Envoy turns a gRPC request's denial into 200, keeping the check's grpc-status.
    let resp = call(&g, "application/grpc", "q@mailinator.com");
    assert_eq!(grpc_status(&resp), (200, Some("7"), Some(BLOCKED)), "{resp}");
    let resp = call(&g, "application/grpc", "not-an-address");
    assert_eq!(grpc_status(&resp), (200, Some("3"), Some("The email address is not valid.")), "{resp}");
    let resp = call_with_message(&g, "bob@mailinator.com");
    assert_eq!(grpc_status(&resp), (200, Some("7"), Some(BLOCKED)), "{resp}");
    // gRPC-Web: the HTTP status its clients map (403 → PERMISSION_DENIED) and the headers.
    let resp = call(&g, "application/grpc-web+proto", "q@mailinator.com");
    assert_eq!(grpc_status(&resp), (403, Some("7"), Some(BLOCKED)), "{resp}");
    let resp = call(&g, "application/proto", "q@mailinator.com");
    assert_eq!(resp.status, 403, "{resp}");
    assert_eq!(resp.json(), json!({ "code": "permission_denied", "message": BLOCKED }));
    // REST as ever.
    let resp = call(&g, "application/json", "q@mailinator.com");
    assert_eq!((resp.status, resp.json()["error"].clone()), (403, json!("disposable_email")), "{resp}");
    assert_eq!(g.app.count(), 0, "no refused call reaches the app");
}
