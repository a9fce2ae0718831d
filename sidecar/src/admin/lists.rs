//! `GET /admin/v1/lists`: every operator list as its last load left it, and the shipped ones.
//!
//! `{"refresh_seconds", "max_shrink", "cache_dir", "lists": [LIST, ...], "shipped": [...]}`;
//! a LIST is `{"index", "kind", "source", "location", "tier", "entries", "from_kept_copy",
//! "last_success": {"unix", "at"} | null, "last_error": {"message", "unix", "at"} | null}`:
//! `source` is the path or the URL with its user-info and query values redacted, `tier` is
//! `null` for lists other than disposable ones, `last_error` is the last attempt's failure
//! (cleared by the next success), `at` is RFC 3339.

use http::{Method, StatusCode};
use serde_json::{Value, json};

use super::{Admin, AdminError, AdminResult, Json};
use crate::clock::rfc3339;
use crate::lists::{ListStatus, LiveCatalog};

pub fn route(admin: &Admin, method: &Method, rest: &[&str]) -> AdminResult {
    if !(method == Method::GET && matches!(rest, [] | [""])) {
        return Err(AdminError::not_found("no such endpoint or method"));
    }
    Ok(Json(StatusCode::OK, lists_json(&admin.catalog)))
}

pub fn lists_json(live: &LiveCatalog) -> Value {
    let settings = live.settings();
    let shipped: Vec<Value> = live
        .shipped()
        .iter()
        .map(|s| json!({"kind": s.kind, "source": s.source, "tier": s.tier, "entries": s.entries}))
        .collect();
    json!({
        "refresh_seconds": settings.refresh_secs,
        "max_shrink": settings.max_shrink,
        "cache_dir": settings.kept_dir,
        "lists": live.lists().iter().map(list_json).collect::<Vec<_>>(),
        "shipped": shipped,
    })
}

fn list_json(s: &ListStatus) -> Value {
    json!({
        "index": s.index,
        "kind": s.kind,
        "source": s.source,
        "location": s.location,
        "tier": s.tier,
        "entries": s.entries,
        "from_kept_copy": s.from_kept_copy,
        "last_success": s.last_success.map(|t| json!({"unix": t, "at": rfc3339(t)})),
        "last_error": s.last_error.as_ref().map(|(m, t)| json!({"message": m, "unix": t, "at": rfc3339(*t)})),
    })
}
