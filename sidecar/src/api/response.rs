//! Turning handler results into HTTP responses: JSON bodies, `X-Request-ID`, error statuses.

use email_verdict_core::{BatchResponse, ErrorBody, ErrorCode, LookupResponse};

use crate::verdicts::SharedResult;
use http::header::{self, HeaderMap, HeaderName, HeaderValue};
use http::{Response, StatusCode};
use serde::Serialize;

use crate::limits::{Headers, Refused};
use crate::state::StateError;

/// A failed request: a stable code, a message for the caller, and extra headers.
#[derive(Debug)]
pub struct ApiError {
    pub code: ErrorCode,
    pub message: String,
    pub headers: Headers,
}

impl ApiError {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Self { code, message: message.into(), headers: Vec::new() }
    }

    pub fn with_header(mut self, name: &'static str, value: impl Into<String>) -> Self {
        self.headers.push((name, value.into()));
        self
    }

    pub fn with_retry_after(self, seconds: u64) -> Self {
        self.with_header("retry-after", seconds.to_string())
    }
}

impl From<Refused> for ApiError {
    fn from(refused: Refused) -> Self {
        match refused {
            Refused::PlanUndefined => ApiError::new(
                ErrorCode::InternalError,
                "the key's plan is not configured on this server; contact the operator",
            ),
            Refused::Store(e) => store_error(e),
            Refused::QuotaExceeded { message, retry_after, headers } => {
                let mut e = ApiError::new(ErrorCode::QuotaExceeded, message).with_retry_after(retry_after);
                e.headers.extend(headers);
                e
            }
            Refused::RateLimited { message, retry_after, headers } => {
                let mut e = ApiError::new(ErrorCode::RateLimitExceeded, message).with_retry_after(retry_after);
                e.headers.extend(headers);
                e
            }
        }
    }
}

/// A state store failure, as the API answers it (the cause goes to the log, not the caller).
pub fn store_error(e: StateError) -> ApiError {
    tracing::error!(error = %e, "state store failed");
    ApiError::new(ErrorCode::InternalError, "internal error; retry later").with_retry_after(1)
}

/// What a request is answered with.
pub enum Reply {
    Lookup(Box<LookupResponse<SharedResult>>, Headers),
    Batch(Box<BatchResponse>, Headers),
    /// A JSON body already encoded (or none, for `304`), with its status.
    Encoded(StatusCode, Vec<u8>, Headers),
    Error(ApiError),
}

impl From<ApiError> for Reply {
    fn from(e: ApiError) -> Self {
        Reply::Error(e)
    }
}

impl Reply {
    /// Status and error code, for the log line.
    pub fn status_and_code(&self) -> (u16, Option<&'static str>) {
        match self {
            Reply::Lookup(..) | Reply::Batch(..) => (200, None),
            Reply::Encoded(status, ..) => (status.as_u16(), None),
            Reply::Error(e) => (e.code.status(), Some(e.code.as_str())),
        }
    }

    pub fn into_response(self, request_id: &str) -> Response<Vec<u8>> {
        match self {
            Reply::Lookup(body, headers) => json_response(StatusCode::OK, request_id, &body, &headers),
            Reply::Batch(body, headers) => json_response(StatusCode::OK, request_id, &body, &headers),
            Reply::Encoded(status, body, headers) => encoded_response(status, request_id, body, &headers),
            Reply::Error(e) => {
                let status = StatusCode::from_u16(e.code.status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
                json_response(status, request_id, &ErrorBody::new(request_id, e.code, e.message), &e.headers)
            }
        }
    }
}

/// A JSON response with the headers every answer carries.
pub fn json_response(
    status: StatusCode,
    request_id: &str,
    body: &impl Serialize,
    extra: &[(&'static str, String)],
) -> Response<Vec<u8>> {
    // A lookup's body is about 600 bytes: room for it at once, where `to_vec` grows from 128.
    let mut encoded = Vec::with_capacity(1024);
    let body = match serde_json::to_writer(&mut encoded, body) {
        Ok(()) => encoded,
        Err(_) => b"{}".to_vec(),
    };
    encoded_response(status, request_id, body, extra)
}

/// [`json_response`] for a body already encoded. A header that is not valid is left out, not
/// the whole answer.
fn encoded_response(
    status: StatusCode,
    request_id: &str,
    body: Vec<u8>,
    extra: &[(&'static str, String)],
) -> Response<Vec<u8>> {
    let mut headers = HeaderMap::with_capacity(4 + extra.len());
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    headers.insert(header::CONTENT_LENGTH, HeaderValue::from(body.len()));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    if let Ok(id) = HeaderValue::from_str(request_id) {
        headers.insert(HeaderName::from_static("x-request-id"), id);
    }
    for (name, value) in extra {
        if let (Ok(name), Ok(value)) = (header_name(name), HeaderValue::from_str(value)) {
            headers.append(name, value);
        }
    }
    let mut response = Response::new(body);
    *response.status_mut() = status;
    *response.headers_mut() = headers;
    response
}

/// A header's name: one already in lowercase (as HTTP/1 writes every name here: the `http`
/// crate lowercases them) is taken as it is, without parsing and copying it on every answer.
fn header_name(name: &'static str) -> Result<HeaderName, http::header::InvalidHeaderName> {
    if name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-') && !name.is_empty() {
        Ok(HeaderName::from_static(name))
    } else {
        HeaderName::from_bytes(name.as_bytes())
    }
}
