//! `/admin/v1/reviews`: the review queue, decisions, and marks on mail servers.
//!
//! | method | path | body | answer |
//! |---|---|---|---|
//! | GET | `/admin/v1/reviews?reason=&server=&q=&sort=priority\|oldest&limit=50&offset=0` | | one page of the queue (below) |
//! | GET | `/admin/v1/reviews/servers?limit=50&offset=0` | | the queue grouped by mail server, waves first |
//! | GET | `/admin/v1/reviews/learned?limit=50&offset=0` | | the servers the index knows |
//! | GET | `/admin/v1/reviews/servers/{host or address}` | | one server: who taught it, its mark, the queued domains on it |
//! | PUT or POST | `/admin/v1/reviews/servers/{host or address}` | `{"decision": "disposable"\|"safe", "note"?, "reviewer"?}` | the server, and `effect` |
//! | DELETE | `/admin/v1/reviews/servers/{host or address}` | | the mark withdrawn |
//! | PUT or POST | `/admin/v1/reviews/{domain}` | `{"decision": "disposable"\|"safe", "note"?, "reviewer"?}` | the domain's decision state |
//! | DELETE | `/admin/v1/reviews/{domain}` | | the decision withdrawn; the domain's decision state |
//! | GET | `/admin/v1/reviews/{domain}` | | `{"domain", "decision", "applied", "history": [...]}` |
//!
//! A queue page: `{"queue": [item], "matching", "waiting", "offset", "limit", "capacity",
//! "dropped": {reason: n}}`; an item: `{"domain", "reason", "sources", "listed_as", "first_seen",
//! "last_seen", "lookups", "likelihood", "priority", "server", "servers"}`, highest priority
//! first (likelihood per mille × use; `state/queue.rs`). `reason` is `ambiguous`, `no_mx`,
//! `weak_listing` (weak sources only) or `parent_listing` (listed through a parent whose mail it
//! does not share); `sources` names the disposable sources behind it and `listed_as` the entry
//! they list (the domain or a parent), `""` when none. `decision` is the one made on the domain
//! itself (`null` when none); `applied` the one in force, made on the domain or on a parent up to
//! its registrable domain (`{"decision", "on"}`, or `null`).
//!
//! The grouped queue: `{"servers": [group], "total", "offset", "limit", "wave_threshold"}`; a
//! group: `{"server", "domains", "lookups", "priority", "reasons", "sample",
//! "new_domains_last_hour", "wave"}`. A server with at least `wave_threshold` distinct never-seen
//! domains signed up on it in the last hour (`wave: true`) comes first, the biggest first; then
//! the groups by priority (`state/queue.rs`).
//!
//! A `disposable` decision on free webmail is refused with 409 `free_provider` (rule 2); a
//! `disposable` mark on shared infrastructure with 409 `shared_mx` (rule 3).

use http::{Method, StatusCode};
use percent_encoding::percent_decode_str;
use serde::Deserialize;
use serde_json::{Value, json};

use super::{Admin, AdminError, AdminResult, Json};
use crate::auth::query_param;
use crate::clock::rfc3339;
use crate::review::servers::{self, ServerReport};
use crate::review::{ReviewError, parse_verdict, set_decision};
use crate::state::queue::{self, Query, Sort};
use crate::state::{MailServer, ReviewItem, ReviewReason, covering, decision_str, mark_str};
use crate::verdicts::FACT_LIFETIME_SECS;

/// Entries or groups on a page unless `limit` says otherwise, and the most it may say.
const PAGE: usize = 50;
const MAX_PAGE: usize = 1000;

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

fn decision_body(body: &[u8]) -> Result<(email_verdict_core::Decision, DecisionBody), AdminError> {
    let body: DecisionBody =
        serde_json::from_slice(body).map_err(|e| AdminError::bad_request(format!("invalid JSON body: {e}")))?;
    let decision = parse_verdict(&body.decision)
        .ok_or_else(|| AdminError::bad_request("\"decision\" must be \"disposable\" or \"safe\""))?;
    Ok((decision, body))
}

pub async fn route(admin: &Admin, method: &Method, rest: &[&str], body: &[u8], query: &str) -> AdminResult {
    match (method, rest) {
        (&Method::GET, [] | [""]) => queue_page(admin, query).await,
        (&Method::GET, ["servers"]) => server_groups(admin, query).await,
        (&Method::GET, ["learned"]) => learned(admin, query).await,
        (&Method::GET, ["servers", name]) => server(admin, &decode(name)).await,
        (&Method::PUT | &Method::POST, ["servers", server]) => {
            let (decision, body) = decision_body(body)?;
            mark(admin, &decode(server), Some(decision), &body.reviewer, &body.note).await
        }
        (&Method::DELETE, ["servers", server]) => mark(admin, &decode(server), None, "admin-api", "").await,
        (&Method::GET, [domain]) => state(admin, domain).await,
        (&Method::PUT | &Method::POST, [domain]) => {
            let (decision, body) = decision_body(body)?;
            decide(admin, domain, Some(decision), &body.reviewer, &body.note).await
        }
        (&Method::DELETE, [domain]) => decide(admin, domain, None, "admin-api", "").await,
        _ => Err(AdminError::not_found("no such endpoint or method")),
    }
}

fn decode(segment: &str) -> String {
    percent_decode_str(segment).decode_utf8_lossy().into_owned()
}

/// `offset` and `limit` (default [`PAGE`], at most [`MAX_PAGE`]) from the query string.
fn paging(query: &str) -> Result<(usize, usize), AdminError> {
    let number = |name: &str, default: usize| -> Result<usize, AdminError> {
        match query_param(query, name) {
            None => Ok(default),
            Some(v) => v.parse().map_err(|_| AdminError::bad_request(format!("{name}: expected a whole number"))),
        }
    };
    let limit = number("limit", PAGE)?;
    if limit == 0 || limit > MAX_PAGE {
        return Err(AdminError::bad_request(format!("limit: from 1 to {MAX_PAGE}")));
    }
    Ok((number("offset", 0)?, limit))
}

/// The queue query of a query string (the CLI takes the same as flags).
fn queue_query(query: &str) -> Result<Query, AdminError> {
    let (offset, limit) = paging(query)?;
    let reason =
        match query_param(query, "reason").filter(|r| !r.is_empty()) {
            None => None,
            Some(r) => Some(ReviewReason::parse(&r).ok_or_else(|| {
                AdminError::bad_request("reason: one of ambiguous, no_mx, weak_listing, parent_listing")
            })?),
        };
    let sort = match query_param(query, "sort").filter(|s| !s.is_empty()) {
        None => Sort::Priority,
        Some(s) => Sort::parse(&s).ok_or_else(|| AdminError::bad_request("sort: priority or oldest"))?,
    };
    let server = query_param(query, "server").filter(|s| !s.is_empty());
    let server = server.map(|s| MailServer::parse(&s).map_or(s, |m| m.value));
    let text = query_param(query, "q").filter(|s| !s.is_empty()).map(|t| t.to_ascii_lowercase());
    Ok(Query { reason, server, text, sort, offset, limit })
}

pub fn item_json(i: &ReviewItem) -> Value {
    json!({
        "domain": i.domain,
        "reason": i.reason.as_str(),
        "sources": i.sources,
        "listed_as": i.listed_as,
        "first_seen": rfc3339(i.first_seen),
        "last_seen": rfc3339(i.last_seen),
        "lookups": i.lookups,
        "likelihood": i.likelihood,
        "priority": i.priority(),
        "server": i.server(),
        "servers": i.servers,
    })
}

async fn queue_page(admin: &Admin, query: &str) -> AdminResult {
    let q = queue_query(query)?;
    let page = queue::page(admin.store.review_queue().await?, &q);
    let dropped: serde_json::Map<String, Value> =
        admin.store.review_dropped().await?.into_iter().map(|(r, n)| (r.as_str().to_owned(), json!(n))).collect();
    Ok(Json(
        StatusCode::OK,
        json!({
            "queue": page.items.iter().map(item_json).collect::<Vec<_>>(),
            "matching": page.matching,
            "waiting": page.waiting,
            "offset": q.offset,
            "limit": q.limit,
            "capacity": admin.store.queue_capacity(),
            "dropped": dropped,
        }),
    ))
}

async fn server_groups(admin: &Admin, query: &str) -> AdminResult {
    let (offset, limit) = paging(query)?;
    let now = admin.clock.now_ms().div_euclid(1000);
    let waves = servers::waves(&*admin.store, now).await?;
    let (groups, total) = queue::groups(admin.store.review_queue().await?, &waves, offset, limit, 5);
    let groups: Vec<Value> = groups
        .iter()
        .map(|g| {
            json!({
                "server": g.server,
                "domains": g.domains,
                "lookups": g.lookups,
                "priority": g.priority,
                "reasons": g.reasons,
                "sample": g.sample,
                "new_domains_last_hour": g.new_domains_last_hour,
                "wave": queue::is_wave(g.new_domains_last_hour),
            })
        })
        .collect();
    Ok(Json(
        StatusCode::OK,
        json!({
            "servers": groups,
            "total": total,
            "offset": offset,
            "limit": limit,
            "wave_threshold": queue::WAVE_THRESHOLD,
        }),
    ))
}

async fn learned(admin: &Admin, query: &str) -> AdminResult {
    let (offset, limit) = paging(query)?;
    let now = admin.clock.now_ms().div_euclid(1000);
    let page = admin.store.learned_servers(now - FACT_LIFETIME_SECS, offset, limit).await?;
    let servers: Vec<Value> = page
        .servers
        .iter()
        .map(|s| {
            json!({
                "server": s.server.value,
                "kind": s.server.kind.as_str(),
                "disposable": s.disposable,
                "legitimate": s.legitimate,
                "last_seen": (s.last_seen > 0).then(|| rfc3339(s.last_seen)),
                "mark": s.mark.map(|m| mark_str(Some(m))),
            })
        })
        .collect();
    Ok(Json(StatusCode::OK, json!({ "servers": servers, "total": page.total, "offset": offset, "limit": limit })))
}

pub fn report_json(r: &ServerReport) -> Value {
    json!({
        "server": r.server.value,
        "kind": r.server.kind.as_str(),
        "owner": r.owner,
        "shared": r.shared,
        "mark": r.mark.map(|m| mark_str(Some(m))),
        "marks": r.marks.iter().map(|m| json!({
            "decision": mark_str(m.decision), "reviewer": m.reviewer, "note": m.note, "at": rfc3339(m.at),
        })).collect::<Vec<_>>(),
        "disposable": r.disposable,
        "legitimate": r.legitimate,
        "taught_by": r.taught_by.iter().map(|t| json!({
            "domain": t.domain,
            "standing": if t.disposable { "disposable" } else { "legitimate" },
            "via": t.via,
            "seen": rfc3339(t.seen),
        })).collect::<Vec<_>>(),
        "queued": r.queued,
        "queued_sample": r.queued_sample,
        "effect": {
            "disposable": r.effect(Some(email_verdict_core::Decision::Block)),
            "safe": r.effect(Some(email_verdict_core::Decision::Allow)),
        },
    })
}

async fn server(admin: &Admin, text: &str) -> AdminResult {
    let server = MailServer::parse(text)
        .ok_or_else(|| AdminError::bad_request(format!("{text:?} is neither a host name nor an IP address")))?;
    let now = admin.clock.now_ms().div_euclid(1000);
    let report = servers::report(&*admin.store, &admin.catalog.current(), &server, now).await?;
    Ok(Json(StatusCode::OK, report_json(&report)))
}

async fn mark(
    admin: &Admin,
    text: &str,
    decision: Option<email_verdict_core::Decision>,
    reviewer: &str,
    note: &str,
) -> AdminResult {
    let now = admin.clock.now_ms().div_euclid(1000);
    let marked = servers::mark(&*admin.store, &admin.catalog.current(), text, decision, reviewer, note, now)
        .await
        .map_err(review_error)?;
    let mut body = report_json(&marked.report);
    body["effect"] = json!(marked.effect);
    Ok(Json(StatusCode::OK, body))
}

fn review_error(e: ReviewError) -> AdminError {
    match e {
        ReviewError::BadDomain(..) | ReviewError::BadServer(_) => AdminError::bad_request(e.to_string()),
        ReviewError::FreeProvider(_) => AdminError::conflict("free_provider", e.to_string()),
        ReviewError::SharedServer(..) => AdminError::conflict("shared_mx", e.to_string()),
        ReviewError::Store(e) => e.into(),
    }
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
        .map_err(review_error)?;
    state(admin, &domain).await
}

async fn state(admin: &Admin, domain: &str) -> AdminResult {
    let domain = email_verdict_core::Domain::parse(domain).map_err(|e| AdminError::bad_request(e.to_string()))?;
    let own = admin.store.decision(&[domain.to_string()]).await?;
    let applied = admin.store.decision(&covering(&domain)).await?;
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
