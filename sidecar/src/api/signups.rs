//! `POST /api/v1/signups`: one signup counted in every scope (issue 32), answered with its
//! counts ([`SignupCounts`]). The filter calls it once per judged signup (its verdict may come
//! from its cache; its count cannot).
//!
//! Only for a key on the `gateway` plan (others: `403 forbidden`): the counts it writes are
//! enforced by every gateway and shown on the operator's boards. Same limits as a lookup: one unit of daily quota and a place in the burst window per
//! signup (the `gateway` plan is unlimited). Order: key, body (bounded, read only for an
//! accepted key), event checked, admission, count. An invalid event still answers whatever the
//! admission says first, and costs nothing; a count the store fails gives its unit back.

use email_verdict_core::ErrorCode;
use email_verdict_core::signup::velocity::{SignupCounts, SignupEvent};
use http::StatusCode;
use pingora::protocols::http::ServerSession;

use super::body::read_body;
use super::lookup::{post_with_key, refused_after_admission};
use super::response::store_error;
use super::{Api, ApiError, LogFields, Reply, Request};
use crate::plans::GATEWAY_PLAN;
use crate::signups::Signup;

pub const PATH: &str = "/api/v1/signups";
/// The 403 of a key on another plan.
pub const FOR_GATEWAYS_ONLY: &str =
    "signup counts are written by gateways only: this endpoint takes a key on the gateway plan";
/// A domain of at most 253 octets, a 64-digit hash and a /64: far within.
const MAX_BODY_BYTES: usize = 4096;

pub async fn handle(api: &Api, session: &mut ServerSession, request: &Request, log: &mut LogFields) -> Reply {
    let key = match post_with_key(api, session, request, log).await {
        Ok(key) => key,
        Err(reply) => return reply,
    };
    // Every gateway enforces these counts and the boards show them: a customer's key writing
    // here could flag any client or mailbox, or fill the boards with invented ones.
    if key.plan.as_str() != GATEWAY_PLAN {
        session.set_keepalive(None); // the body is left unread
        return ApiError::new(ErrorCode::Forbidden, FOR_GATEWAYS_ONLY).into();
    }
    let signup = match event(session).await {
        Ok(signup) => signup,
        Err(e) => return refused_after_admission(api, &key, e).await.into(),
    };
    log.domain = Some(signup.domain.to_string());
    // The key's admission and the count at once when the plan can refuse nothing (the shipped
    // `gateway` plan): one store round trip's time per signup instead of two. A plan with
    // figures is admitted first, so a refused signup is never counted.
    let (admitted, counted) = if api.limiter.unlimited(&key) {
        let (admitted, counted) = tokio::join!(api.limiter.admit(&key, 1), api.signups.count(&api.verdicts, &signup));
        (admitted, Some(counted))
    } else {
        (api.limiter.admit(&key, 1).await, None)
    };
    let mut grant = match admitted {
        Ok(grant) => grant,
        Err(e) => return ApiError::from(e).into(),
    };
    let counted = match counted {
        Some(counted) => counted,
        None => api.signups.count(&api.verdicts, &signup).await,
    };
    match counted {
        Ok(counts) => {
            let body = SignupCounts { request_id: request.id.clone(), counts };
            let body = serde_json::to_vec(&body).unwrap_or_default();
            Reply::Encoded(StatusCode::OK, body, grant.headers())
        }
        Err(e) => {
            api.metrics.store_error();
            api.limiter.refund(&mut grant, 1).await;
            let mut e = store_error(e);
            e.headers.extend(grant.headers());
            e.into()
        }
    }
}

/// The body: a [`SignupEvent`], checked.
async fn event(session: &mut ServerSession) -> Result<Signup, ApiError> {
    let invalid = |message: String| ApiError::new(ErrorCode::InvalidInput, message);
    let body = read_body(session, MAX_BODY_BYTES).await.map_err(|e| invalid(e.message(MAX_BODY_BYTES)))?;
    parse(&body).map_err(invalid)
}

const SHAPE: &str = r#"{"domain": "example.com", "mailbox": "<64 hex digits>", "client": "<IP address or IPv6 /64>"}"#;

fn parse(body: &[u8]) -> Result<Signup, String> {
    let shaped = |why: String| format!("{why}; the body is {SHAPE}");
    let value: serde_json::Value =
        serde_json::from_slice(body).map_err(|_| shaped("the body is not JSON".to_owned()))?;
    let Some(object) = value.as_object() else {
        return Err(shaped("the body is not a JSON object".to_owned())); // serde would take an array
    };
    if let Some((field, _)) = object.iter().find(|(_, v)| v.is_null()) {
        return Err(format!("{field}: must be a string; leave it out when unknown")); // serde: absent
    }
    let event: SignupEvent = serde_json::from_value(value).map_err(|e| shaped(e.to_string()))?;
    Signup::parse(&event)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_bodies_are_named() {
        let check = |body: &str, expected: &str| {
            let got = parse(body.as_bytes()).unwrap_err();
            assert!(got.starts_with(expected), "{body}: {got}");
        };
        check("nope", "the body is not JSON");
        check("", "the body is not JSON");
        check(r#"["a.example"]"#, "the body is not a JSON object");
        check(r#"{"domain": "a.example", "client": null}"#, "client: must be a string");
        check(r#"{"mailbox": "x"}"#, "missing field `domain`");
        check(r#"{"domain": "a.example", "email": "a@a.example"}"#, "unknown field `email`");
        check(r#"{"domain": "a.example", "client": "10.0.0.0/8"}"#, "client: must be");
        assert_eq!(parse(br#"{"domain": "A.example"}"#).unwrap().domain.as_str(), "a.example");
    }
}
