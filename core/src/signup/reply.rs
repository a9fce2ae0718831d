//! A [`LocalReply`] in the words of the request's [`Protocol`], the same from the filter (Wasm
//! and dynamic module) and from ext_authz:
//!
//! | protocol | status | content-type | the refusal |
//! |---|---|---|---|
//! | REST | the reply's | `application/json` | the JSON body (with `request_id`) |
//! | gRPC | `200` | `application/grpc` | `grpc-status`, `grpc-message` headers; no body |
//! | gRPC-Web | `200` | the request's | a trailer frame (`0x80`) with both, base64 for `-text` |
//! | Connect unary | Connect's for the code | `application/json` | `{"code":..,"message":..}` |
//! | Connect streaming | `200` | the request's | an end-stream frame (`0x02`), `{"error":{..}}` |
//! | GraphQL | the reply's | per `accept` | `{"errors":[{"message":..,"extensions":{"code":..}}]}` |
//!
//! Through ext_authz ([`Via::ExtAuthz`]) no refusal may be a `200` (Envoy would allow the
//! request): gRPC, gRPC-Web and Connect streaming get Connect's HTTP status for their code,
//! with `grpc-status` and `grpc-message` headers and no body for the gRPC pair (Envoy turns a
//! gRPC request's local reply into `200` and keeps the `grpc-status` it is given) and Connect's
//! error JSON for Connect streaming. Why gRPC-Web carries its trailers in the body rather than
//! in the headers: Envoy drops the `content-type` of a local reply without a body, and
//! connect-es rejects a gRPC-Web answer without one before it looks at `grpc-status`; a
//! trailer frame is how every gRPC-Web response ends, so every client reads it.

use std::fmt::Write as _;

use crate::signup::outcome::{BLOCKED_DETAILS, LocalReply, TOO_MANY_SIGNUPS_DETAILS, UNAVAILABLE_DETAILS};
use crate::signup::protocol::Protocol;

/// How a rendered reply reaches the client.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Via {
    /// The filter's own local reply (Envoy's `sendLocalReply`): any status, `200` included.
    LocalReply,
    /// An HTTP ext_authz denial, which Envoy hands the client: never `200`.
    ExtAuthz,
}

/// The gRPC status codes refusals carry (and the sidecar's gRPC ext_authz service answers a
/// call it could not check with); Connect names the same codes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Code {
    InvalidArgument = 3,
    DeadlineExceeded = 4,
    PermissionDenied = 7,
    ResourceExhausted = 8,
    Unimplemented = 12,
    Internal = 13,
    Unavailable = 14,
    Unauthenticated = 16,
}

impl Code {
    /// The number `grpc-status` carries.
    pub fn number(self) -> u8 {
        self as u8
    }

    /// The code's name in Connect's error JSON.
    pub fn connect_name(self) -> &'static str {
        match self {
            Code::InvalidArgument => "invalid_argument",
            Code::DeadlineExceeded => "deadline_exceeded",
            Code::PermissionDenied => "permission_denied",
            Code::ResourceExhausted => "resource_exhausted",
            Code::Unimplemented => "unimplemented",
            Code::Internal => "internal",
            Code::Unavailable => "unavailable",
            Code::Unauthenticated => "unauthenticated",
        }
    }

    /// The HTTP status Connect's protocol gives the code.
    pub fn http_status(self) -> u16 {
        match self {
            Code::InvalidArgument => 400,
            Code::DeadlineExceeded => 504,
            Code::PermissionDenied => 403,
            Code::ResourceExhausted => 429,
            Code::Unimplemented => 501,
            Code::Internal => 500,
            Code::Unavailable => 503,
            Code::Unauthenticated => 401,
        }
    }

    /// The code of an operator's `block_response.status`: what gRPC's HTTP-to-status table
    /// says where it says something a client acts on (401, 404, 429, 502 to 504), else
    /// `PERMISSION_DENIED` (the table's `INTERNAL` for 400 and `UNKNOWN` for the rest would
    /// read as a server fault, and a block is a refusal whatever its status).
    pub fn of_block_status(status: u16) -> Self {
        match status {
            401 => Code::Unauthenticated,
            404 => Code::Unimplemented,
            429 | 502..=504 => Code::Unavailable,
            _ => Code::PermissionDenied,
        }
    }
}

/// A reply ready for the gateway: these headers in this order (the caller may add its own,
/// such as `retry-after`), this body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rendered {
    pub status: u16,
    /// Envoy's response code details, the reply's.
    pub details: &'static str,
    pub headers: Vec<(&'static str, String)>,
    pub body: Vec<u8>,
    /// The gRPC status of a gRPC answer, for a host whose local reply takes one (proxy-wasm's
    /// `grpc_status`); the `grpc-status` header says the same.
    pub grpc_status: Option<u8>,
}

impl LocalReply<'_> {
    /// The gRPC (and Connect) code of this refusal: the one place it is decided.
    pub fn code(&self) -> Code {
        match self.details {
            BLOCKED_DETAILS => Code::of_block_status(self.status),
            UNAVAILABLE_DETAILS => Code::Unavailable,
            TOO_MANY_SIGNUPS_DETAILS => Code::ResourceExhausted,
            d if d == LocalReply::BODY_TOO_LARGE.details => Code::ResourceExhausted,
            // missing, invalid or conflicting email, unreadable body, too many addresses,
            // sub-addressed: the request itself is what is wrong.
            _ => Code::InvalidArgument,
        }
    }

    /// This reply as `protocol` says it, sent `via` the filter or ext_authz. `request_id`: the
    /// `x-request-id` to echo (a header always, and `request_id` in a REST or GraphQL body).
    pub fn render(&self, protocol: &Protocol, via: Via, request_id: Option<&str>) -> Rendered {
        let code = self.code();
        let said = Said::of(self);
        let local = via == Via::LocalReply;
        // Bodies are written as text, not built as `serde_json::Value`s: the Wasm filter's size
        // budget. `in_headers`: `grpc-status` and `grpc-message` go in the headers.
        let (status, content_type, body, in_headers) = match protocol {
            Protocol::Rest => {
                let body = request_id.map_or_else(|| self.body.to_vec(), |id| with_request_id(self.body, id));
                (self.status, "application/json", body, false)
            }
            Protocol::Grpc => (if local { 200 } else { code.http_status() }, "application/grpc", vec![], true),
            Protocol::GrpcWeb { content_type, text } if local => {
                let frame = grpc_web_trailers(code, &said.message);
                let body = if *text { base64(&frame).into_bytes() } else { frame };
                (200, content_type.as_str(), body, false)
            }
            Protocol::GrpcWeb { content_type, .. } => (code.http_status(), content_type.as_str(), vec![], true),
            Protocol::ConnectStreaming { content_type } if local => {
                let end = [r#"{"error":"#, &connect_error(code, &said.message), "}"].concat();
                (200, content_type.as_str(), frame(0x02, end.as_bytes()), false)
            }
            Protocol::ConnectUnary | Protocol::ConnectStreaming { .. } => {
                (code.http_status(), "application/json", connect_error(code, &said.message).into_bytes(), false)
            }
            Protocol::GraphQl { response_type } => {
                let id = request_id.map(|id| [r#","request_id":"#, &quoted(id)].concat()).unwrap_or_default();
                let (message, error) = (quoted(&said.message), quoted(&said.error));
                let body = [r#"{"errors":[{"message":"#, &message, r#","extensions":{"code":"#, &error, &id, "}}]}"]
                    .concat()
                    .into_bytes();
                let content_type =
                    if *response_type { "application/graphql-response+json" } else { "application/json" };
                (self.status, content_type, body, false)
            }
        };
        let mut headers = vec![("content-type", content_type.to_owned())];
        headers.extend(request_id.map(|id| ("x-request-id", id.to_owned())));
        if in_headers {
            headers.push(("grpc-status", code.number().to_string()));
            headers.push(("grpc-message", grpc_message(&said.message)));
        }
        let grpc_status = in_headers.then_some(code.number());
        Rendered { status, details: self.details, headers, body, grpc_status }
    }
}

/// What a reply's JSON body says: its `message` for a person, its `error` code for programs.
struct Said {
    message: String,
    error: String,
}

impl Said {
    /// From the body (the operator's `block_response` may say anything, or be no object): what
    /// is missing is said in general words.
    fn of(reply: &LocalReply<'_>) -> Self {
        let body: Option<serde_json::Value> = serde_json::from_slice(reply.body).ok();
        let text = |key: &str| {
            let value = body.as_ref()?.get(key)?.as_str()?.trim();
            (!value.is_empty()).then(|| value.to_owned())
        };
        Self {
            message: text("message").unwrap_or_else(|| "This signup was refused.".to_owned()),
            error: text("error").unwrap_or_else(|| reply.details.trim_start_matches("email_verdict_").to_owned()),
        }
    }
}

/// Connect's error JSON.
fn connect_error(code: Code, message: &str) -> String {
    [r#"{"code":""#, code.connect_name(), r#"","message":"#, &quoted(message), "}"].concat()
}

/// `text` as a JSON string.
fn quoted(text: &str) -> String {
    serde_json::to_string(text).unwrap_or_default()
}

/// A JSON object body with `"request_id"` added (unless it has one); any other body unchanged.
pub fn with_request_id(body: &[u8], id: &str) -> Vec<u8> {
    match serde_json::from_slice::<serde_json::Value>(body) {
        Ok(serde_json::Value::Object(mut object)) if !object.contains_key("request_id") => {
            object.insert("request_id".to_owned(), id.into());
            serde_json::to_vec(&object).unwrap_or_else(|_| body.to_vec())
        }
        _ => body.to_vec(),
    }
}

/// gRPC's percent-encoding of `grpc-message`: every byte outside space..`~`, and `%`, as `%XX`.
pub fn grpc_message(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for b in text.bytes() {
        if (b' '..=b'~').contains(&b) && b != b'%' {
            out.push(char::from(b));
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
    out
}

/// A gRPC-Web trailer frame: `grpc-status` and `grpc-message` as HTTP/1 header lines.
fn grpc_web_trailers(code: Code, message: &str) -> Vec<u8> {
    let status = code.number().to_string();
    let block = ["grpc-status:", &status, "\r\ngrpc-message:", &grpc_message(message), "\r\n"].concat();
    frame(0x80, block.as_bytes())
}

/// A length-prefixed frame (gRPC, gRPC-Web, Connect): flags, 4-byte big-endian length, payload.
fn frame(flags: u8, payload: &[u8]) -> Vec<u8> {
    let length = u32::try_from(payload.len()).unwrap_or(u32::MAX);
    let mut out = Vec::with_capacity(5 + payload.len());
    out.push(flags);
    out.extend_from_slice(&length.to_be_bytes());
    out.extend_from_slice(payload);
    out
}

/// Standard base64 with padding (`grpc-web-text`).
fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let n = chunk.iter().enumerate().fold(0u32, |acc, (i, b)| acc | u32::from(*b) << (16 - 8 * i));
        for i in 0..4 {
            let sextet = (n >> (18 - 6 * i)) & 63;
            out.push(if i <= chunk.len() { char::from(ALPHABET[sextet as usize]) } else { '=' });
        }
    }
    out
}

#[cfg(test)]
mod tests;
