//! The JSON types of `/api/v1`, field for field as the spec names them.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum InputType {
    Domain,
    Email,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    Disposable,
    Safe,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Level {
    Low,
    Critical,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Recommendation {
    Allow,
    Block,
}

/// `GET /api/v1/domain/:input` → 200: the request id and the record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LookupResponse {
    pub request_id: String,
    #[serde(flatten)]
    pub record: LookupRecord,
}

/// What one input came to: the single lookup's answer without `request_id`, and an item of a
/// batch (`POST /api/v1/domains`) or a line of `email-verdict check`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LookupRecord {
    pub input: String,
    pub input_type: InputType,
    pub email: String,
    pub domain: String,
    pub result: VerdictResult,
}

/// `POST /api/v1/domains`: 1 to [`BatchRequest::MAX_INPUTS`] domains or emails.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BatchRequest {
    pub inputs: Vec<String>,
}

impl BatchRequest {
    pub const MAX_INPUTS: usize = 1000;
}

/// `POST /api/v1/domains` → 200: one item per input, in input order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BatchResponse {
    pub request_id: String,
    pub results: Vec<BatchItem>,
}

/// A record, or why the input got none.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum BatchItem {
    Record(Box<LookupRecord>),
    Error { input: String, error: ErrorDetail },
}

impl BatchItem {
    pub fn error(input: impl Into<String>, code: ErrorCode, message: impl Into<String>) -> Self {
        Self::Error { input: input.into(), error: ErrorDetail { code, message: message.into() } }
    }
}

/// The `result` object. Build it with [`crate::verdict::decide`], which keeps the spec's
/// consistency rules; the mirrors (`temporary`, `safe`, `level`, ...) are never set by hand.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VerdictResult {
    pub verdict: Verdict,
    pub disposable: bool,
    pub temporary: bool,
    pub safe: bool,
    pub free_provider: bool,
    pub business_email: bool,
    pub shared_mx: bool,
    pub has_mx: bool,
    pub domain_exists: bool,
    pub mx_records: Vec<String>,
    pub mx_ip_address: Vec<String>,
    pub level: Level,
    pub recommendation: Recommendation,
    pub cached: bool,
    pub allowlisted: bool,
    pub blocked: bool,
    pub mx_ip_match: bool,
    pub review_required: bool,
}

/// The stable error codes of the API. Each has one HTTP status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorCode {
    InvalidInput,
    MissingApiKey,
    ApiKeyInvalid,
    QuotaExceeded,
    RateLimitExceeded,
    InternalError,
    NotFound,
    MethodNotAllowed,
}

impl ErrorCode {
    pub fn status(self) -> u16 {
        match self {
            Self::InvalidInput => 400,
            Self::MissingApiKey | Self::ApiKeyInvalid => 401,
            Self::QuotaExceeded => 402,
            Self::NotFound => 404,
            Self::MethodNotAllowed => 405,
            Self::RateLimitExceeded => 429,
            Self::InternalError => 500,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::InvalidInput => "invalid_input",
            Self::MissingApiKey => "missing_api_key",
            Self::ApiKeyInvalid => "api_key_invalid",
            Self::QuotaExceeded => "quota_exceeded",
            Self::RateLimitExceeded => "rate_limit_exceeded",
            Self::InternalError => "internal_error",
            Self::NotFound => "not_found",
            Self::MethodNotAllowed => "method_not_allowed",
        }
    }
}

/// Every non-2xx answer of the API: `{"request_id": "...", "error": {"code": "...", "message": "..."}}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorBody {
    pub request_id: String,
    pub error: ErrorDetail,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorDetail {
    pub code: ErrorCode,
    pub message: String,
}

impl ErrorBody {
    pub fn new(request_id: impl Into<String>, code: ErrorCode, message: impl Into<String>) -> Self {
        let error = ErrorDetail { code, message: message.into() };
        Self { request_id: request_id.into(), error }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_codes_serialize_as_their_names() {
        for code in [
            ErrorCode::InvalidInput,
            ErrorCode::MissingApiKey,
            ErrorCode::ApiKeyInvalid,
            ErrorCode::QuotaExceeded,
            ErrorCode::RateLimitExceeded,
            ErrorCode::InternalError,
            ErrorCode::NotFound,
            ErrorCode::MethodNotAllowed,
        ] {
            let json = serde_json::to_string(&code).unwrap();
            assert_eq!(json, format!("\"{}\"", code.as_str()));
        }
        let body = ErrorBody::new("r1", ErrorCode::QuotaExceeded, "daily quota reached");
        let json = serde_json::to_value(&body).unwrap();
        assert_eq!(json["error"]["code"], "quota_exceeded");
        assert_eq!(json["request_id"], "r1");
    }
}
