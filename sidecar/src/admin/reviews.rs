//! `/admin/v1/reviews`: the review queue and decisions.
//!
//! | method | path | body | answer |
//! |---|---|---|---|
//! | GET | `/admin/v1/reviews` | | `{"queue": [{"domain", "reason", "first_seen", "last_seen", "lookups"}]}`, oldest first |
//! | PUT or POST | `/admin/v1/reviews/{domain}` | `{"decision": "disposable"\|"safe", "note"?, "reviewer"?}` | the domain's decision state |
//! | DELETE | `/admin/v1/reviews/{domain}` | | the decision withdrawn; the domain's decision state |
//! | GET | `/admin/v1/reviews/{domain}` | | `{"domain", "decision", "history": [...]}` |
//!
//! A `disposable` decision on free webmail is refused with 409 `free_provider` (rule 2).

use http::{Method, StatusCode};
use serde::Deserialize;
use serde_json::{Value, json};

use super::{Admin, AdminError, AdminResult, Json};
use crate::clock::rfc3339;
use crate::review::{ReviewError, parse_verdict, set_decision};
use crate::state::decision_str;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct DecisionBody {
    decision: String,
    #[serde(default)]
    note: String,
    #[serde(default = "default_reviewer")]
    reviewer: String,
}

fn default_reviewer() -> String {
    "admin-api".into()
}

pub async fn route(admin: &Admin, method: &Method, rest: &[&str], body: &[u8]) -> AdminResult {
    match (method, rest) {
        (&Method::GET, [] | [""]) => queue(admin).await,
        (&Method::GET, [domain]) => state(admin, domain).await,
        (&Method::PUT | &Method::POST, [domain]) => {
            let body: DecisionBody =
                serde_json::from_slice(body).map_err(|e| AdminError::bad_request(format!("invalid JSON body: {e}")))?;
            let decision = parse_verdict(&body.decision)
                .ok_or_else(|| AdminError::bad_request("\"decision\" must be \"disposable\" or \"safe\""))?;
            decide(admin, domain, Some(decision), &body.reviewer, &body.note).await
        }
        (&Method::DELETE, [domain]) => decide(admin, domain, None, "admin-api", "").await,
        _ => Err(AdminError::not_found("no such endpoint or method")),
    }
}

async fn queue(admin: &Admin) -> AdminResult {
    let items: Vec<Value> = admin
        .store
        .review_queue()
        .await?
        .iter()
        .map(|i| {
            json!({
                "domain": i.domain,
                "reason": i.reason.as_str(),
                "first_seen": rfc3339(i.first_seen),
                "last_seen": rfc3339(i.last_seen),
                "lookups": i.lookups,
            })
        })
        .collect();
    Ok(Json(StatusCode::OK, json!({ "queue": items })))
}

async fn decide(
    admin: &Admin,
    domain: &str,
    decision: Option<email_verdict_core::Decision>,
    reviewer: &str,
    note: &str,
) -> AdminResult {
    let now = admin.clock.now_ms().div_euclid(1000);
    let domain = set_decision(&*admin.store, &admin.catalog, domain, decision, reviewer, note, now).await.map_err(
        |e| match e {
            ReviewError::BadDomain(..) => AdminError::bad_request(e.to_string()),
            ReviewError::FreeProvider(_) => AdminError::conflict("free_provider", e.to_string()),
            ReviewError::Store(e) => e.into(),
        },
    )?;
    state(admin, &domain).await
}

async fn state(admin: &Admin, domain: &str) -> AdminResult {
    let domain = email_verdict_core::Domain::parse(domain).map_err(|e| AdminError::bad_request(e.to_string()))?;
    let decision = admin.store.decision(domain.as_str()).await?;
    let history: Vec<Value> = admin
        .store
        .decision_history(domain.as_str())
        .await?
        .iter()
        .map(|r| json!({ "decision": decision_str(r.decision), "reviewer": r.reviewer, "note": r.note, "at": rfc3339(r.at) }))
        .collect();
    let current = decision.map(|d| decision_str(Some(d)));
    Ok(Json(StatusCode::OK, json!({ "domain": domain.as_str(), "decision": current, "history": history })))
}
