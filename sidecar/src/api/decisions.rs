//! `GET /api/v1/decisions` (our addition): the decisions in force (reviewers' and the
//! operator's lists) as one [`DecisionList`], for the filter's `local_fallback`, which must
//! know them when the sidecar gives no verdict. Only for a key on the `gateway` plan (the
//! list says which customers a reviewer vouched for). `ETag` / `If-None-Match`: a gateway polling
//! an unchanged list gets `304` and no body. Spends no quota.

use email_verdict_core::ErrorCode;
use http::{Method, StatusCode};
use pingora::protocols::http::ServerSession;
use sha2::{Digest, Sha256};

use super::lookup::auth_error;
use super::{Api, ApiError, LogFields, Reply, Request};
use crate::plans::GATEWAY_PLAN;

pub const PATH: &str = "/api/v1/decisions";

pub async fn handle(api: &Api, session: &ServerSession, request: &Request, log: &mut LogFields) -> Reply {
    if request.method != Method::GET {
        return ApiError::new(ErrorCode::MethodNotAllowed, "only GET is allowed here")
            .with_header("Allow", "GET")
            .into();
    }
    let key = match request.authenticate(api).await {
        Ok(key) => key,
        Err(e) => return auth_error(api, e).into(),
    };
    log.key_id = Some(key.id.clone());
    if key.plan.as_str() != GATEWAY_PLAN {
        let message = "this endpoint is for the gateway's key: a key on the gateway plan";
        return ApiError::new(ErrorCode::Forbidden, message).into();
    }
    let list = match api.verdicts.decision_list().await {
        Ok(list) => list,
        Err(e) => {
            tracing::warn!(error = %e, "could not read the decisions in force");
            let message = "the decisions could not be read right now; retry later";
            return ApiError::new(ErrorCode::InternalError, message).with_retry_after(5).into();
        }
    };
    log.items = Some(
        list.reviewer.block.len() + list.reviewer.allow.len() + list.operator.block.len() + list.operator.allow.len(),
    );
    let body = serde_json::to_vec(&list).unwrap_or_default();
    let etag = format!("\"{}\"", hex::encode(&Sha256::digest(&body)[..16]));
    let unchanged = session
        .req_header()
        .headers
        .get_all(http::header::IF_NONE_MATCH)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|tag| tag.trim() == etag || tag.trim() == "*");
    let headers = vec![("ETag", etag)];
    if unchanged {
        Reply::Encoded(StatusCode::NOT_MODIFIED, Vec::new(), headers)
    } else {
        Reply::Encoded(StatusCode::OK, body, headers)
    }
}
