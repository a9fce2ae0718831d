//! `GET /admin/v1/explain?q=DOMAIN|ADDRESS`: why the verdict is what it is, the JSON that
//! `email-verdict explain --format json` prints (`explain.rs`; fields in docs/operator-guide.md).
//! Only the address's domain is looked at; nothing is learned from it and nothing logged of it.
//! `400 invalid_request` when `q` is missing or neither a domain nor an address.

use http::{Method, StatusCode};

use super::{Admin, AdminError, AdminResult, Json};
use crate::auth::query_param;
use crate::explain::{ExplainError, Explainer};

pub async fn route(admin: &Admin, method: &Method, query: &str) -> AdminResult {
    if method != Method::GET {
        return Err(AdminError::not_found("no such endpoint or method"));
    }
    let q = query_param(query, "q").filter(|q| !q.trim().is_empty());
    let q = q.ok_or_else(|| AdminError::bad_request("q: give a domain or an email address"))?;
    let explainer = Explainer {
        verdicts: &admin.verdicts,
        store: &*admin.store,
        lists: &admin.catalog,
        limits: admin.velocity.as_ref(),
        now: admin.clock.now_ms().div_euclid(1000),
    };
    match explainer.explain(&q).await {
        Ok(explained) => {
            let body = serde_json::to_value(&explained)
                .map_err(|e| AdminError::bad_request(format!("cannot encode the explanation: {e}")))?;
            Ok(Json(StatusCode::OK, body))
        }
        Err(e @ ExplainError::BadInput(_)) => Err(AdminError::bad_request(format!("q: {e}"))),
        Err(ExplainError::Store(e)) => Err(e.into()),
    }
}
