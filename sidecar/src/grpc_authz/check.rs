//! One `Check` call: the `CheckRequest` read as the HTTP check's [`Signup`], decided by the same
//! code (`api::ext_authz::decide`), and its HTTP-shaped answer put the way Envoy's gRPC client
//! reads it:
//! - `200` (allow): `status.code` 0 and `ok_response` with the flag headers (overwriting the
//!   request's) and `headers_to_remove` (what the HTTP answer names in
//!   `x-envoy-auth-headers-to-remove`, and the key header);
//! - another status below 500 (a refusal): `status.code` 7 (`PERMISSION_DENIED`; Envoy denies on
//!   any code but 0) and `denied_response` with that status, headers and body, so the client
//!   gets exactly the HTTP check's refusal;
//! - `5xx` (our own failure): no `CheckResponse` but the call's own status, `UNAVAILABLE` (or
//!   `INTERNAL` for a 500), which Envoy treats as a failed check: `failure_mode_allow` and
//!   `status_on_error` decide, as they do for the HTTP check's 5xx.

use std::net::IpAddr;

use http::Response;

use super::proto::{
    CheckRequest, CheckResponse, DeniedHttpResponse, HeaderValue, HeaderValueOption, HttpRequest, HttpStatus,
    OVERWRITE_IF_EXISTS_OR_ADD, OkHttpResponse, Status,
};
use super::{Code, Failure};
use crate::api::ext_authz::{self, Checked, KEY_HEADER, Signup, Unread};
use crate::api::velocity::CLIENT_HEADER;
use crate::api::{Api, LogFields, Request};

/// `PERMISSION_DENIED`: a refused signup.
const DENIED: i32 = 7;
/// Envoy's list of request headers to strip, in the HTTP form of the answer.
const HEADERS_TO_REMOVE: &str = "x-envoy-auth-headers-to-remove";

/// The parts of a `CheckRequest` the check reads.
pub struct Call {
    pub method: http::Method,
    pub target: String,
    /// (lower-case name, value), a repeated header once per value when Envoy sent `header_map`.
    pub headers: Vec<(String, Vec<u8>)>,
    pub body: Vec<u8>,
    /// `attributes.source`: the downstream connection's peer as Envoy saw it.
    pub source: Option<IpAddr>,
}

impl Call {
    /// The signup of a `CheckRequest`; `None` when it describes no HTTP request.
    pub fn of(request: CheckRequest) -> Option<Call> {
        let attributes = request.attributes?;
        let source = attributes.source.and_then(|p| p.address).and_then(|a| a.socket_address);
        let source = source.and_then(|s| s.address.parse().ok());
        let http = attributes.request?.http?;
        let HttpRequest { method, headers, path, body, raw_body, header_map } = http;
        let method = http::Method::from_bytes(method.as_bytes()).ok()?;
        let headers: Vec<(String, Vec<u8>)> = match header_map {
            Some(map) if !map.headers.is_empty() => map
                .headers
                .into_iter()
                .map(|h| {
                    let value = if h.raw_value.is_empty() { h.value.into_bytes() } else { h.raw_value };
                    (h.key.to_ascii_lowercase(), value)
                })
                .collect(),
            _ => headers.into_iter().map(|(k, v)| (k.to_ascii_lowercase(), v.into_bytes())).collect(),
        };
        // `raw_body` with `pack_as_bytes`, else the string form (never both).
        let body = if raw_body.is_empty() { body.into_bytes() } else { raw_body };
        Some(Call { method, target: path, headers, body, source })
    }

    pub fn values(&self, name: &str) -> Vec<Vec<u8>> {
        self.headers.iter().filter(|(n, _)| n == name).map(|(_, v)| v.clone()).collect()
    }

    fn header(&self, name: &str) -> Option<&str> {
        let value = self.headers.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_slice())?;
        std::str::from_utf8(value).ok().map(str::trim)
    }
}

/// What Envoy adds to the call itself (`grpc_service.initial_metadata`), the HTTP check's
/// `headers_to_add`: the gateway's key and the signup's client.
pub struct Metadata<'a> {
    pub key: Option<&'a str>,
    pub client: Option<IpAddr>,
}

impl Metadata<'_> {
    pub fn of(headers: &http::HeaderMap) -> Metadata<'_> {
        let value = |name: &str| headers.get(name).and_then(|v| v.to_str().ok()).map(str::trim);
        Metadata { key: value(KEY_HEADER), client: value(CLIENT_HEADER).and_then(|v| v.parse().ok()) }
    }
}

/// The check of `call`. The key from the call's metadata, else from the signup's headers (a
/// gateway that sets `x-email-verdict-key` on the request itself, replacing any client copy);
/// the client from the metadata, else the check's `source` (the downstream connection's peer).
pub async fn check(api: &Api, call: &Call, metadata: &Metadata<'_>, request: &Request, log: &mut LogFields) -> Checked {
    let client = metadata.client.or(call.source);
    let checked = check_enforced(api, call, metadata, request, log).await;
    ext_authz::rollout(api, client, checked, log)
}

/// The check as block or flag mode answers it.
async fn check_enforced(
    api: &Api,
    call: &Call,
    metadata: &Metadata<'_>,
    request: &Request,
    log: &mut LogFields,
) -> Checked {
    let key = metadata.key.or_else(|| call.header(KEY_HEADER));
    if let Some(refused) = ext_authz::key_refused(api, key, request, log).await {
        return refused;
    }
    if call.body.len() > ext_authz::MAX_BODY_BYTES {
        return ext_authz::not_read(api, Unread::TooLarge);
    }
    let values = |name: &str| call.values(name);
    let partial = call.header("x-envoy-auth-partial-body").is_some_and(|v| v.eq_ignore_ascii_case("true"));
    let client = metadata.client.or(call.source);
    let signup = Signup { key, target: &call.target, headers: &values, body: &call.body, partial, client };
    ext_authz::decide(api, &signup, request, log).await
}

/// The HTTP-shaped answer as a `CheckResponse`, or the call's failure.
pub fn to_grpc(response: &Response<Vec<u8>>) -> Result<CheckResponse, Failure> {
    let status = response.status();
    if status.is_server_error() {
        let code = if status == http::StatusCode::INTERNAL_SERVER_ERROR { Code::Internal } else { Code::Unavailable };
        let cause = std::str::from_utf8(response.body()).unwrap_or_default();
        return Err(Failure::new(code, cause));
    }
    let headers = |skip: &[&str]| -> Vec<HeaderValueOption> {
        let kept = response.headers().iter().filter(|(name, _)| !skip.contains(&name.as_str()));
        kept.map(|(name, value)| overwrite(name.as_str(), value.as_bytes())).collect()
    };
    if status == http::StatusCode::OK {
        let removed = response.headers().get(HEADERS_TO_REMOVE).map(|v| v.as_bytes()).unwrap_or_default();
        let removed = String::from_utf8_lossy(removed);
        let ok = OkHttpResponse {
            headers: headers(&[HEADERS_TO_REMOVE, "content-length"]),
            headers_to_remove: removed.split(',').map(str::trim).filter(|n| !n.is_empty()).map(str::to_owned).collect(),
        };
        // A key a gateway set on the signup itself never goes on to the app.
        let mut ok = ok;
        ok.headers_to_remove.push(KEY_HEADER.to_owned());
        return Ok(CheckResponse { status: Some(Status::default()), denied_response: None, ok_response: Some(ok) });
    }
    let denied = DeniedHttpResponse {
        status: Some(HttpStatus { code: i32::from(status.as_u16()) }),
        headers: headers(&["content-length"]),
        body: String::from_utf8_lossy(response.body()).into_owned(),
    };
    let status = Status { code: DENIED, message: status.canonical_reason().unwrap_or_default().to_owned() };
    Ok(CheckResponse { status: Some(status), denied_response: Some(denied), ok_response: None })
}

/// A header set on the request (or the denial), replacing any copy the client sent; kept when
/// empty, as the HTTP check's header is.
fn overwrite(name: &str, value: &[u8]) -> HeaderValueOption {
    let header =
        HeaderValue { key: name.to_owned(), value: String::from_utf8_lossy(value).into_owned(), raw_value: Vec::new() };
    HeaderValueOption { header: Some(header), append_action: OVERWRITE_IF_EXISTS_OR_ADD, keep_empty_value: true }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::grpc_authz::proto::{Address, AttributeContext, HeaderMap, Peer, SocketAddress};

    fn answer(status: u16, headers: &[(&str, &str)], body: &str) -> Response<Vec<u8>> {
        let mut b = Response::builder().status(status).header("content-length", body.len());
        for (n, v) in headers {
            b = b.header(*n, *v);
        }
        b.body(body.as_bytes().to_vec()).unwrap()
    }

    #[test]
    fn an_allow_sets_the_flag_headers_and_removes_the_rest() {
        let r = answer(200, &[("x-email-verdict", "safe"), ("x-email-flags", ""), (HEADERS_TO_REMOVE, "a,b")], "");
        let c = to_grpc(&r).unwrap();
        assert_eq!(c.status.unwrap().code, 0);
        let ok = c.ok_response.unwrap();
        let names: Vec<_> = ok.headers.iter().map(|h| h.header.as_ref().unwrap().key.as_str()).collect();
        assert_eq!(names, ["x-email-verdict", "x-email-flags"]);
        assert!(ok.headers.iter().all(|h| h.append_action == OVERWRITE_IF_EXISTS_OR_ADD && h.keep_empty_value));
        assert_eq!(ok.headers_to_remove, ["a", "b", KEY_HEADER]);
        assert!(c.denied_response.is_none());
    }

    #[test]
    fn a_refusal_is_permission_denied_with_the_http_checks_answer() {
        let body = r#"{"error":"disposable_email"}"#;
        let c = to_grpc(&answer(403, &[("content-type", "application/json")], body)).unwrap();
        assert_eq!(c.status.unwrap().code, DENIED);
        let denied = c.denied_response.unwrap();
        assert_eq!(denied.status.unwrap().code, 403);
        assert_eq!(denied.body, body);
        assert_eq!(denied.headers.len(), 1, "content-length is Envoy's to set");
        assert_eq!(to_grpc(&answer(429, &[], "x")).unwrap().denied_response.unwrap().status.unwrap().code, 429);
    }

    #[test]
    fn our_failure_is_the_calls_own_status() {
        assert_eq!(to_grpc(&answer(503, &[], "{}")).unwrap_err().code, Code::Unavailable);
        assert_eq!(to_grpc(&answer(500, &[], "{}")).unwrap_err().code, Code::Internal);
        assert_eq!(to_grpc(&answer(502, &[], "{}")).unwrap_err().code, Code::Unavailable);
    }

    fn request(http: HttpRequest) -> CheckRequest {
        let address = Address { socket_address: Some(SocketAddress { address: "192.0.2.7".into() }) };
        let source = Peer { address: Some(address) };
        let request = crate::grpc_authz::proto::Request { http: Some(http) };
        CheckRequest { attributes: Some(AttributeContext { source: Some(source), request: Some(request) }) }
    }

    #[test]
    fn a_check_request_is_read_raw_body_first() {
        let mut http = HttpRequest { method: "POST".into(), path: "/signup?x=1".into(), ..Default::default() };
        http.headers.insert("Content-Type".into(), "application/json".into());
        http.body = "string".into();
        http.raw_body = b"\xffraw".to_vec();
        let call = Call::of(request(http.clone())).unwrap();
        assert_eq!((call.method.as_str(), call.target.as_str()), ("POST", "/signup?x=1"));
        assert_eq!(call.body, b"\xffraw");
        assert_eq!(call.values("content-type"), [b"application/json".to_vec()]);
        assert_eq!(call.source, Some("192.0.2.7".parse().unwrap()));
        http.raw_body.clear();
        assert_eq!(Call::of(request(http.clone())).unwrap().body, b"string");
        // `header_map` (encode_raw_headers) in place of the map: each value apart.
        let raw = |k: &str, v: &[u8]| HeaderValue { key: k.into(), value: String::new(), raw_value: v.to_vec() };
        http.header_map = Some(HeaderMap { headers: vec![raw("x-a", b"1"), raw("x-a", b"2")] });
        assert_eq!(Call::of(request(http)).unwrap().values("x-a"), [b"1".to_vec(), b"2".to_vec()]);
        assert!(Call::of(CheckRequest::default()).is_none(), "no HTTP request");
    }
}
