//! `GET /api/v1/domain/:input`: key, admission, input, verdict — in that order.

use email_verdict_core::{ErrorCode, LookupInput, LookupResponse};
use percent_encoding::percent_decode_str;

use super::{Api, ApiError, LogFields, Reply, Request};
use crate::auth::AuthError;
use crate::limits::store_error;
use crate::verdicts::LookupError;

/// How long a client should wait before retrying after a DNS failure, in seconds.
const DNS_RETRY_AFTER: u64 = 5;

pub async fn handle(api: &Api, request: &Request, segment: &str, log: &mut LogFields) -> Reply {
    let key = match api.auth.authenticate(request.key.as_deref(), request.client).await {
        Ok(key) => key,
        Err(e) => return auth_error(e).into(),
    };
    log.key_id = Some(key.id.clone());
    let mut grant = match api.limiter.admit(&key).await {
        Ok(grant) => grant,
        Err(e) => return e.into(),
    };
    match answer(api, request, segment, log).await {
        Ok(body) => Reply::Lookup(Box::new(body), grant.headers()),
        Err(mut e) => {
            api.limiter.refund(&mut grant).await;
            e.headers.extend(grant.headers());
            e.into()
        }
    }
}

async fn answer(api: &Api, request: &Request, segment: &str, log: &mut LogFields) -> Result<LookupResponse, ApiError> {
    let raw = percent_decode_str(segment)
        .decode_utf8()
        .map_err(|_| ApiError::new(ErrorCode::InvalidInput, "input is not valid UTF-8 after percent-decoding"))?;
    let input = LookupInput::parse(&raw).map_err(|e| ApiError::new(ErrorCode::InvalidInput, e.to_string()))?;
    log.domain = Some(input.domain().to_string());
    let result = api.verdicts.verdict(&input).await.map_err(|e| match e {
        LookupError::Dns(e) => {
            tracing::warn!(domain = %input.domain(), error = %e, "lookup failed");
            ApiError::new(ErrorCode::InternalError, "the domain could not be looked up right now; retry later")
                .with_retry_after(DNS_RETRY_AFTER)
        }
        LookupError::Store(e) => store_error(e),
    })?;
    log.cached = Some(result.cached);
    Ok(LookupResponse {
        request_id: request.id.clone(),
        input: raw.into_owned(),
        input_type: input.input_type(),
        email: input.email_string(),
        domain: input.domain().to_string(),
        result,
    })
}

fn auth_error(e: AuthError) -> ApiError {
    match e {
        AuthError::Missing => ApiError::new(ErrorCode::MissingApiKey, e.to_string()),
        AuthError::Invalid => ApiError::new(ErrorCode::ApiKeyInvalid, e.to_string()),
        AuthError::Store(e) => store_error(e),
    }
}
