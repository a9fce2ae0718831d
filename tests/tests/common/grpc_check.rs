//! A gRPC client for the sidecar's ext_authz listener, as Envoy calls it: one unary call on a
//! fresh HTTP/2 connection (shared by the tests that call the listener directly).

use bytes::Bytes;
use email_verdict::grpc_authz::proto::CheckResponse;
use prost::Message;
use std::net::SocketAddr;

pub const CHECK: &str = "/envoy.service.auth.v3.Authorization/Check";

/// What a call came to: the response message, or the call's own `grpc-status` and message.
#[derive(Debug)]
pub enum Answer {
    Message(CheckResponse),
    Status(u32, String),
}

/// One unary call on a fresh HTTP/2 connection: `metadata` as request headers, `body` as the
/// request's DATA (framed by the caller).
pub async fn call(addr: SocketAddr, path: &str, metadata: &[(&str, &str)], body: Vec<u8>) -> Answer {
    let tcp = tokio::net::TcpStream::connect(addr).await.expect("connect");
    let (client, connection) = h2::client::handshake(tcp).await.expect("HTTP/2 handshake");
    tokio::spawn(connection);
    let mut client = client.ready().await.expect("ready");
    let mut request = http::Request::builder()
        .method("POST")
        .uri(format!("http://sidecar{path}"))
        .header("content-type", "application/grpc")
        .header("te", "trailers");
    for (name, value) in metadata {
        request = request.header(*name, *value);
    }
    let (response, mut send) = client.send_request(request.body(()).unwrap(), false).expect("send");
    send.reserve_capacity(body.len());
    send.send_data(Bytes::from(body), true).expect("send data");
    let response = response.await.expect("a response");
    let (parts, mut body) = response.into_parts();
    let status_of = |headers: &http::HeaderMap| {
        headers.get("grpc-status").map(|s| {
            let message = headers.get("grpc-message").map(|m| m.to_str().unwrap().to_owned()).unwrap_or_default();
            Answer::Status(s.to_str().unwrap().parse().unwrap(), message)
        })
    };
    if let Some(status) = status_of(&parts.headers) {
        return status; // trailers-only
    }
    let mut data = Vec::new();
    while let Some(chunk) = body.data().await {
        let chunk = chunk.expect("data");
        body.flow_control().release_capacity(chunk.len()).unwrap();
        data.extend_from_slice(&chunk);
    }
    let trailers = body.trailers().await.expect("trailers").expect("trailers present");
    match status_of(&trailers) {
        Some(Answer::Status(0, _)) => {
            assert_eq!(data[0], 0, "not compressed");
            let length = u32::from_be_bytes(data[1..5].try_into().unwrap()) as usize;
            assert_eq!(length, data.len() - 5, "one message");
            Answer::Message(CheckResponse::decode(&data[5..]).expect("a CheckResponse"))
        }
        Some(other) => other,
        None => panic!("no grpc-status"),
    }
}

pub fn framed(message: &impl Message) -> Vec<u8> {
    let encoded = message.encode_to_vec();
    let mut out = vec![0];
    out.extend_from_slice(&(encoded.len() as u32).to_be_bytes());
    out.extend_from_slice(&encoded);
    out
}
