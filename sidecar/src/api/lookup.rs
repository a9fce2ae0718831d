//! `GET /api/v1/domain/:input`: key, admission, input, verdict — in that order. The input is
//! parsed (pure, cheap) before the admission so that the reviewer's decision for its domain can
//! be read from the store beside the admission rather than after it; an invalid input still
//! answers whatever the admission says first. [`judge`] is also ext_authz's verdict path.

use std::borrow::Cow;

use email_verdict_core::{ErrorCode, LookupInput, LookupResponse, Mail};
use http::Method;
use percent_encoding::percent_decode_str;
use pingora::protocols::http::ServerSession;

use super::response::store_error;
use super::{Api, ApiError, LogFields, Reply, Request};
use crate::auth::AuthError;
use crate::limits::Headers;
use crate::state::KeyRecord;
use crate::verdicts::{Judged, LookupError, record};

/// The response header naming the verdict's deciding source ([`email_verdict_core::VerdictSource`]).
pub const SOURCE_HEADER: &str = email_verdict_core::VerdictSource::HEADER;

/// How long a client should wait before retrying after a DNS failure, in seconds.
const DNS_RETRY_AFTER: u64 = 5;

pub async fn handle(api: &Api, request: &Request, segment: &str, log: &mut LogFields) -> Reply {
    let key = match request.authenticate(api).await {
        Ok(key) => key,
        Err(e) => return auth_error(api, e).into(),
    };
    log.key_id = Some(key.id.clone());
    let parsed = parse(segment).and_then(|(raw, input)| Ok((raw, input, learns(request.query.as_deref())?)));
    let (raw, input, learn) = match parsed {
        Ok(parsed) => parsed,
        Err(e) => return refused_after_admission(api, &key, e).await.into(),
    };
    log.domain = Some(input.domain().to_string());
    match judge(api, &key, &input, learn).await {
        Ok((judged, mut headers)) => {
            log.cached = Some(judged.result.cached);
            // What decided the verdict, for the gateway's logs and on-call; the body stays the spec's.
            headers.push((SOURCE_HEADER, judged.source.as_str().to_owned()));
            // Where its mail goes, for the gateway's `no_mx` (absent when DNS could not say).
            if let Some(mail) = judged.mail {
                headers.push((Mail::HEADER, mail.as_str().to_owned()));
            }
            let record = record(&raw, &input, judged);
            let body = LookupResponse { request_id: request.id.clone(), record };
            Reply::Lookup(Box::new(body), headers)
        }
        Err(e) => e.into(),
    }
}

/// `learn=false` in the query: the gateways' lookup of a name found in free text (a bio), which
/// nobody typed as their address, so it must not fill the review queue nor ask RDAP.
fn learns(query: Option<&str>) -> Result<bool, ApiError> {
    let values = form_urlencoded::parse(query.unwrap_or_default().as_bytes()).filter(|(k, _)| k == "learn");
    let mut learn = true;
    for (_, value) in values {
        learn &= match value.as_ref() {
            "true" => true,
            "false" => false,
            _ => return Err(ApiError::new(ErrorCode::InvalidInput, "learn must be true or false")),
        };
    }
    Ok(learn)
}

/// The verdict for `input` on `key`'s account: admission and the reviewer's decision read
/// together, then the verdict; a request that gets no verdict gives its quota unit back. The
/// one verdict path of the lookup API and ext_authz; `learn` false: [`crate::verdicts::Verdicts::verdict_learning`].
pub(super) async fn judge(
    api: &Api,
    key: &KeyRecord,
    input: &LookupInput,
    learn: bool,
) -> Result<(Judged, Headers), ApiError> {
    let admit =
        crate::telemetry::span("store.admission", api.limiter.admit(key, 1), |r| super::traced::admission(key, r));
    let (admission, decision) = tokio::join!(admit, api.verdicts.decision(input.domain()));
    let mut grant = admission.map_err(ApiError::from)?;
    let verdict = async {
        let decision = decision.map_err(|e| lookup_error(input, e))?;
        api.verdicts.verdict_learning(input, decision, learn).await.map_err(|e| lookup_error(input, e))
    };
    match verdict.await {
        Ok(result) => Ok((result, grant.headers())),
        Err(mut e) => {
            api.limiter.refund(&mut grant, 1).await;
            e.headers.extend(grant.headers());
            Err(e)
        }
    }
}

/// The verdict for `input` once admitted: the reviewer's decision, then the verdict (a batch's
/// items; the single lookup reads the decision beside its admission instead).
pub(super) async fn verdict_of(api: &Api, input: &LookupInput) -> Result<Judged, ApiError> {
    let decision = api.verdicts.decision(input.domain()).await.map_err(|e| lookup_error(input, e))?;
    api.verdicts.verdict(input, decision).await.map_err(|e| lookup_error(input, e))
}

/// An input refused as invalid still answers whatever the admission says first (402, 429).
pub(super) async fn refused_after_admission(api: &Api, key: &KeyRecord, mut e: ApiError) -> ApiError {
    match api.limiter.admit(key, 1).await {
        Ok(mut grant) => {
            api.limiter.refund_invalid(&mut grant).await;
            e.headers.extend(grant.headers());
            e
        }
        Err(refused) => refused.into(),
    }
}

pub(super) fn lookup_error(input: &LookupInput, e: LookupError) -> ApiError {
    match e {
        LookupError::Dns(e) => {
            tracing::warn!(domain = %input.domain(), error = %e, "lookup failed");
            ApiError::new(ErrorCode::InternalError, "the domain could not be looked up right now; retry later")
                .with_retry_after(DNS_RETRY_AFTER)
        }
        LookupError::Store(e) => store_error(e),
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

/// The prologue of the endpoints that take a body (`POST /api/v1/domains`, `/api/v1/signups`):
/// `POST` only, and the caller's key accepted before any byte of the body is read; otherwise
/// the answer, with the connection closed (the body, if any, was not read).
pub(super) async fn post_with_key(
    api: &Api,
    session: &mut ServerSession,
    request: &Request,
    log: &mut LogFields,
) -> Result<std::sync::Arc<KeyRecord>, Reply> {
    if request.method != Method::POST {
        session.set_keepalive(None);
        return Err(ApiError::new(ErrorCode::MethodNotAllowed, "only POST is allowed here")
            .with_header("Allow", "POST")
            .into());
    }
    match request.authenticate(api).await {
        Ok(key) => {
            log.key_id = Some(key.id.clone());
            Ok(key)
        }
        Err(e) => {
            session.set_keepalive(None);
            Err(auth_error(api, e).into())
        }
    }
}

pub(super) fn auth_error(api: &Api, e: AuthError) -> ApiError {
    if matches!(e, AuthError::Store(_)) {
        api.metrics.store_error();
    }
    match e {
        AuthError::Store(e) => store_error(e),
        e if e.is_missing() => ApiError::new(ErrorCode::MissingApiKey, e.to_string()),
        e => ApiError::new(ErrorCode::ApiKeyInvalid, e.to_string()),
    }
}
