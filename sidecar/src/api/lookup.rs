//! `GET /api/v1/domain/:input`.

use email_verdict_core::{ErrorCode, LookupInput, LookupResponse};
use percent_encoding::percent_decode_str;

use super::{Api, ApiError, LogFields, Reply, Request};
use crate::auth::AuthError;

/// How long a client should wait before retrying after a DNS failure, in seconds.
const DNS_RETRY_AFTER: u64 = 5;

pub async fn handle(api: &Api, request: &Request, segment: &str, log: &mut LogFields) -> Result<Reply, ApiError> {
    let key = api.auth.authenticate(request.key.as_deref(), request.peer).await.map_err(auth_error)?;
    log.key_id = Some(key.id);
    let raw = percent_decode_str(segment)
        .decode_utf8()
        .map_err(|_| ApiError::new(ErrorCode::InvalidInput, "input is not valid UTF-8 after percent-decoding"))?;
    let input = LookupInput::parse(&raw).map_err(|e| ApiError::new(ErrorCode::InvalidInput, e.to_string()))?;
    log.domain = Some(input.domain().to_string());
    let result = api.verdicts.verdict(&input).await.map_err(|e| {
        tracing::warn!(domain = %input.domain(), error = %e, "lookup failed");
        ApiError::new(ErrorCode::InternalError, "the domain could not be looked up right now; retry later")
            .with_retry_after(DNS_RETRY_AFTER)
    })?;
    log.cached = Some(result.cached);
    Ok(Reply::Lookup(Box::new(LookupResponse {
        request_id: request.id.clone(),
        input: raw.into_owned(),
        input_type: input.input_type(),
        email: input.email_string(),
        domain: input.domain().to_string(),
        result,
    })))
}

fn auth_error(e: AuthError) -> ApiError {
    match e {
        AuthError::Missing => ApiError::new(ErrorCode::MissingApiKey, e.to_string()),
        AuthError::Invalid => ApiError::new(ErrorCode::ApiKeyInvalid, e.to_string()),
        AuthError::Store(e) => {
            tracing::error!(error = %e, "state store failed during authentication");
            ApiError::new(ErrorCode::InternalError, "internal error; retry later").with_retry_after(1)
        }
    }
}
