//! `GET /admin/v1/warmup`: how far the infrastructure warm-up has gone (`warmup.rs`), from the
//! progress in the state store, so any replica answers for all of them.
//!
//! `{"total", "done", "remaining", "cursor", "resolved", "learned", "failed", "updated_at"}`:
//! `total` strong-listed domains to resolve, `done` of them behind the cursor (the last name
//! done, `""` before the first), `resolved` with an answer (`learned`: whose own mail servers
//! were recorded), `failed` skipped on a DNS failure; `updated_at` RFC 3339, `null` before the
//! first. The rate and the off switch are `--warmup-rate` (see the server's log line).

use http::{Method, StatusCode};
use serde_json::json;

use super::{Admin, AdminError, AdminResult, Json};
use crate::clock::rfc3339;
use crate::warmup::{candidates, remaining};

pub async fn route(admin: &Admin, method: &Method, rest: &[&str]) -> AdminResult {
    if !(method == Method::GET && matches!(rest, [] | [""])) {
        return Err(AdminError::not_found("no such endpoint or method"));
    }
    let progress = admin.store.warmup_progress().await?;
    let catalog = admin.catalog.current();
    let names = candidates(&catalog);
    let left = remaining(&names, &progress.cursor);
    let updated_at = (progress.updated_at > 0).then(|| rfc3339(progress.updated_at));
    Ok(Json(
        StatusCode::OK,
        json!({
            "total": names.len(),
            "done": names.len() - left,
            "remaining": left,
            "cursor": progress.cursor,
            "resolved": progress.resolved,
            "learned": progress.learned,
            "failed": progress.failed,
            "updated_at": updated_at,
        }),
    ))
}
