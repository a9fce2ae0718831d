//! The messages of `envoy.service.auth.v3.Authorization/Check` this listener reads and writes,
//! declared by hand with field numbers as in Envoy's `api/envoy/service/auth/v3/*.proto`,
//! `api/envoy/config/core/v3/{address,base}.proto`, `api/envoy/type/v3/http_status.proto` and
//! `google/rpc/status.proto`. Fields left out are skipped when decoding (protobuf's rule for
//! unknown fields), so a newer Envoy's additions change nothing here.

use std::collections::HashMap;

#[derive(Clone, PartialEq, prost::Message)]
pub struct CheckRequest {
    #[prost(message, optional, tag = "1")]
    pub attributes: Option<AttributeContext>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct AttributeContext {
    #[prost(message, optional, tag = "1")]
    pub source: Option<Peer>,
    #[prost(message, optional, tag = "4")]
    pub request: Option<Request>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct Peer {
    #[prost(message, optional, tag = "1")]
    pub address: Option<Address>,
}

/// `config.core.v3.Address`: only its `socket_address` (field 1 of the `address` oneof).
#[derive(Clone, PartialEq, prost::Message)]
pub struct Address {
    #[prost(message, optional, tag = "1")]
    pub socket_address: Option<SocketAddress>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct SocketAddress {
    #[prost(string, tag = "2")]
    pub address: String,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct Request {
    #[prost(message, optional, tag = "2")]
    pub http: Option<HttpRequest>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct HttpRequest {
    #[prost(string, tag = "2")]
    pub method: String,
    /// Lower-case names; Envoy joins the values of a repeated header with `,`.
    #[prost(map = "string, string", tag = "3")]
    pub headers: HashMap<String, String>,
    /// The request's `:path`: path and query.
    #[prost(string, tag = "4")]
    pub path: String,
    /// The body when `pack_as_bytes` is off: Envoy replaces bytes that are not UTF-8.
    #[prost(string, tag = "11")]
    pub body: String,
    /// The body as it came (`with_request_body.pack_as_bytes: true`).
    #[prost(bytes = "vec", tag = "12")]
    pub raw_body: Vec<u8>,
    /// The headers one by one (`encode_raw_headers: true`), in place of `headers`.
    #[prost(message, optional, tag = "13")]
    pub header_map: Option<HeaderMap>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct HeaderMap {
    #[prost(message, repeated, tag = "1")]
    pub headers: Vec<HeaderValue>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct HeaderValue {
    #[prost(string, tag = "1")]
    pub key: String,
    #[prost(string, tag = "2")]
    pub value: String,
    #[prost(bytes = "vec", tag = "3")]
    pub raw_value: Vec<u8>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct HeaderValueOption {
    #[prost(message, optional, tag = "1")]
    pub header: Option<HeaderValue>,
    /// `HeaderAppendAction`; [`OVERWRITE_IF_EXISTS_OR_ADD`] here.
    #[prost(int32, tag = "3")]
    pub append_action: i32,
    #[prost(bool, tag = "4")]
    pub keep_empty_value: bool,
}

/// `HeaderValueOption.HeaderAppendAction.OVERWRITE_IF_EXISTS_OR_ADD`.
pub const OVERWRITE_IF_EXISTS_OR_ADD: i32 = 2;

#[derive(Clone, PartialEq, prost::Message)]
pub struct CheckResponse {
    #[prost(message, optional, tag = "1")]
    pub status: Option<Status>,
    #[prost(message, optional, tag = "2")]
    pub denied_response: Option<DeniedHttpResponse>,
    #[prost(message, optional, tag = "3")]
    pub ok_response: Option<OkHttpResponse>,
}

/// `google.rpc.Status` without its details.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Status {
    #[prost(int32, tag = "1")]
    pub code: i32,
    #[prost(string, tag = "2")]
    pub message: String,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct DeniedHttpResponse {
    #[prost(message, optional, tag = "1")]
    pub status: Option<HttpStatus>,
    #[prost(message, repeated, tag = "2")]
    pub headers: Vec<HeaderValueOption>,
    #[prost(string, tag = "3")]
    pub body: String,
}

/// `type.v3.HttpStatus`: its `code` enum's values are the HTTP statuses.
#[derive(Clone, PartialEq, prost::Message)]
pub struct HttpStatus {
    #[prost(int32, tag = "1")]
    pub code: i32,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct OkHttpResponse {
    #[prost(message, repeated, tag = "2")]
    pub headers: Vec<HeaderValueOption>,
    #[prost(string, repeated, tag = "5")]
    pub headers_to_remove: Vec<String>,
}
