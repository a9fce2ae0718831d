//! `/admin/v1/reviews`: the review queue and decisions.
//!
//! | method | path | body | answer |
//! |---|---|---|---|
//! | GET | `/admin/v1/reviews` | | `{"queue": [{"domain", "reason", "sources", "listed_as", "first_seen", "last_seen", "lookups"}]}`, oldest first |
//! | PUT or POST | `/admin/v1/reviews/{domain}` | `{"decision": "disposable"\|"safe", "note"?, "reviewer"?}` | the domain's decision state |
//! | DELETE | `/admin/v1/reviews/{domain}` | | the decision withdrawn; the domain's decision state |
//! | GET | `/admin/v1/reviews/{domain}` | | `{"domain", "decision", "applied", "history": [...]}` |
//!
//! `reason` is `ambiguous`, `no_mx`, `weak_listing` (weak sources only) or `parent_listing` (listed
//! through a parent whose mail it does not share); `sources` names the disposable sources behind
//! it and `listed_as` the entry they list (the domain or a parent), `""` when none. `decision` is
//! the one made on the domain itself (`null` when none); `applied` the one in force, made on the
//! domain or on a parent up to its registrable domain (`{"decision", "on"}`, or `null`).
//!
//! A `disposable` decision on free webmail is refused with 409 `free_provider` (rule 2).

use http::{Method, StatusCode};
use serde::Deserialize;
use serde_json::{Value, json};

use super::{Admin, AdminError, AdminResult, Json};
use crate::clock::rfc3339;
use crate::review::{ReviewError, parse_verdict, set_decision};
use crate::state::{covering_names, decision_str};

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
                "sources": i.sources,
                "listed_as": i.listed_as,
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
    let domain = set_decision(&*admin.store, &admin.catalog.current(), domain, decision, reviewer, note, now)
        .await
        .map_err(|e| match e {
            ReviewError::BadDomain(..) => AdminError::bad_request(e.to_string()),
            ReviewError::FreeProvider(_) => AdminError::conflict("free_provider", e.to_string()),
            ReviewError::Store(e) => e.into(),
        })?;
    state(admin, &domain).await
}

async fn state(admin: &Admin, domain: &str) -> AdminResult {
    let domain = email_verdict_core::Domain::parse(domain).map_err(|e| AdminError::bad_request(e.to_string()))?;
    let own = admin.store.decision(&[domain.to_string()]).await?;
    let applied = admin.store.decision(&covering_names(domain.as_str())).await?;
    let history: Vec<Value> = admin
        .store
        .decision_history(domain.as_str())
        .await?
        .iter()
        .map(|r| json!({ "decision": decision_str(r.decision), "reviewer": r.reviewer, "note": r.note, "at": rfc3339(r.at) }))
        .collect();
    let current = own.map(|a| decision_str(Some(a.decision)));
    let applied = applied.map(|a| json!({ "decision": decision_str(Some(a.decision)), "on": a.on }));
    Ok(Json(
        StatusCode::OK,
        json!({ "domain": domain.as_str(), "decision": current, "applied": applied, "history": history }),
    ))
}
