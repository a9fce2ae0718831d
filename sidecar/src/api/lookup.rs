//! `GET /api/v1/domain/:input`: key, admission, input, verdict — in that order. The input is
//! parsed (pure, cheap) before the admission so that the reviewer's decision for its domain can
//! be read from the store beside the admission rather than after it; an invalid input still
//! answers whatever the admission says first.

use std::borrow::Cow;

use email_verdict_core::{Decision, ErrorCode, LookupInput, LookupResponse};
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
        Err(e) => {
            if matches!(e, AuthError::Store(_)) {
                api.metrics.store_error();
            }
            return auth_error(e).into();
        }
    };
    log.key_id = Some(key.id.clone());
    let input = parse(segment);
    let decision = async {
        match &input {
            Ok((_, input)) => Some(api.verdicts.decision(input.domain()).await),
            Err(_) => None,
        }
    };
    let (admission, decision) = tokio::join!(api.limiter.admit(&key), decision);
    let mut grant = match admission {
        Ok(grant) => grant,
        Err(e) => return e.into(),
    };
    match answer(api, request, input, decision, log).await {
        Ok(body) => Reply::Lookup(Box::new(body), grant.headers()),
        Err(mut e) => {
            api.limiter.refund(&mut grant).await;
            e.headers.extend(grant.headers());
            e.into()
        }
    }
}

/// The raw input (percent-decoded) and what it parses to.
fn parse(segment: &str) -> Result<(Cow<'_, str>, LookupInput), ApiError> {
    let raw = percent_decode_str(segment)
        .decode_utf8()
        .map_err(|_| ApiError::new(ErrorCode::InvalidInput, "input is not valid UTF-8 after percent-decoding"))?;
    let input = LookupInput::parse(&raw).map_err(|e| ApiError::new(ErrorCode::InvalidInput, e.to_string()))?;
    Ok((raw, input))
}

async fn answer(
    api: &Api,
    request: &Request,
    input: Result<(Cow<'_, str>, LookupInput), ApiError>,
    decision: Option<Result<Option<Decision>, LookupError>>,
    log: &mut LogFields,
) -> Result<LookupResponse, ApiError> {
    let (raw, input) = input?;
    log.domain = Some(input.domain().to_string());
    let lookup_error = |e| match e {
        LookupError::Dns(e) => {
            tracing::warn!(domain = %input.domain(), error = %e, "lookup failed");
            ApiError::new(ErrorCode::InternalError, "the domain could not be looked up right now; retry later")
                .with_retry_after(DNS_RETRY_AFTER)
        }
        LookupError::Store(e) => store_error(e),
    };
    // Always Some for a parsed input (see `handle`).
    let decision = decision.transpose().map_err(lookup_error)?.flatten();
    let result = api.verdicts.verdict(&input, decision).await.map_err(lookup_error)?;
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
