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

/// `GET /api/v1/domain/:input` → 200: the request id and the record. `R`: what `result` is held
/// as (the sidecar answers with one encoded once and shared: the same JSON).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LookupResponse<R = VerdictResult> {
    pub request_id: String,
    #[serde(flatten)]
    pub record: LookupRecord<R>,
}

/// What one input came to: the single lookup's answer without `request_id`, and an item of a
/// batch (`POST /api/v1/domains`) or a line of `email-verdict check`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LookupRecord<R = VerdictResult> {
    pub input: String,
    pub input_type: InputType,
    pub email: String,
    pub domain: String,
    /// Beyond the spec: the corrected email (an email input: same local part) or domain when
    /// the domain is very probably a typo of a popular mail provider ([`crate::suggest`]);
    /// `null` otherwise. Absent in an answer of an older sidecar, read as `null`.
    #[serde(default)]
    pub did_you_mean: Option<String>,
    /// Beyond the spec: `true` when the domain's MX data could not be had in time (DNS failing
    /// or slower than the lookup's deadline) and the verdict is what is known without it (a
    /// decision, a list: [`crate::verdict::decide_without_mx`]); `result` then carries no MX
    /// data. Absent in an answer of an older sidecar, read as `false`.
    #[serde(default)]
    pub mx_unavailable: bool,
    pub result: R,
    /// Beyond the spec, beside `result` (which it never changes): what a signup form needs next
    /// ([`crate::details`]). Absent in an answer of an older sidecar, read as the default.
    #[serde(default)]
    pub details: Details,
}

impl<R> LookupRecord<R> {
    /// The same record with `result` held as `f` makes it.
    pub fn map_result<S>(self, f: impl FnOnce(R) -> S) -> LookupRecord<S> {
        let Self { input, input_type, email, domain, did_you_mean, mx_unavailable, result, details } = self;
        LookupRecord { input, input_type, email, domain, did_you_mean, mx_unavailable, result: f(result), details }
    }
}

/// The `details` object of a lookup record ([`crate::details::details`] builds it).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Details {
    /// The address the provider delivers to, by its documented rules; an unknown domain keeps
    /// the local part as given. Empty for a bare domain input.
    pub normalized_email: String,
    /// The provider's rule took a sub-address out of the local part (a `+tag`, Yahoo's
    /// `-keyword`, Gmail's dots, Proton's `.` `_` `-`, Fastmail's subdomain form); `false` where
    /// no rule applies, for case or `googlemail.com` alone, and for a bare domain input.
    pub subaddressed: bool,
    /// The local part (before any `+tag`, case-insensitive) is a role (`data/roles.txt`).
    pub role_account: bool,
    /// The domain is a privacy relay / alias service (`data/relay.txt`).
    pub relay: bool,
    /// The mail provider's name, as the public page shows it; `null` when unknown.
    pub provider: Option<String>,
    /// Whole days since the registrable domain was registered (its RDAP registration event),
    /// when the sidecar knows it (`serve --rdap`); absent otherwise. Never changes `result`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub domain_age_days: Option<u32>,
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
    /// The key is valid but not for this endpoint (our addition).
    Forbidden,
}

impl ErrorCode {
    pub fn status(self) -> u16 {
        match self {
            Self::InvalidInput => 400,
            Self::MissingApiKey | Self::ApiKeyInvalid => 401,
            Self::QuotaExceeded => 402,
            Self::Forbidden => 403,
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
            Self::Forbidden => "forbidden",
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
    use crate::verdict::{MxInfo, Signals, decide};

    fn response(did_you_mean: Option<&str>) -> LookupResponse {
        let record = LookupRecord {
            input: "ann@gmial.com".into(),
            input_type: InputType::Email,
            email: "ann@gmial.com".into(),
            domain: "gmial.com".into(),
            did_you_mean: did_you_mean.map(str::to_owned),
            mx_unavailable: false,
            result: decide(&Signals::default(), &MxInfo::NoDomain, false),
            details: Details::default(),
        };
        LookupResponse { request_id: "r1".into(), record }
    }

    #[test]
    fn the_record_is_flat_with_did_you_mean_beside_the_spec_fields() {
        let text = serde_json::to_string(&response(Some("ann@gmail.com"))).unwrap();
        let keys = [
            "request_id",
            "input",
            "input_type",
            "email",
            "domain",
            "did_you_mean",
            "mx_unavailable",
            "result",
            "details",
        ];
        let at: Vec<usize> = keys.iter().map(|k| text.find(&format!("\"{k}\":")).unwrap()).collect();
        assert!(at.windows(2).all(|w| w[0] < w[1]), "{text}");
        let json: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(json["did_you_mean"], "ann@gmail.com");
        let none = serde_json::to_value(response(None)).unwrap();
        assert!(none["did_you_mean"].is_null(), "null, not absent");
        assert_eq!(none["mx_unavailable"], false, "false, not absent");
        // An older sidecar's answer, without the field, still reads.
        let mut old = none.clone();
        old.as_object_mut().unwrap().remove("did_you_mean");
        old.as_object_mut().unwrap().remove("mx_unavailable");
        let read: LookupResponse = serde_json::from_value(old).unwrap();
        assert_eq!(read, response(None));
        let round: LookupResponse = serde_json::from_value(json).unwrap();
        assert_eq!(round, response(Some("ann@gmail.com")));
    }

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
