//! `GET /admin/v1/signups?limit=10`: the busiest of the signups counted (issue 32), from the
//! store's boards, so any replica answers for all of them.
//!
//! `{"mailboxes": [entry], "clients": [entry], "servers": [entry], "waves": [entry],
//! "wave_threshold"}`, each list highest count first, at most `limit` (1 to `BOARD_KEPT`,
//! default 10); an entry: `{"value", "count", "at"}`. `mailboxes`: the gateway's keyed hash of
//! the canonical mailbox (never an address), `clients`: an IPv4 address or an IPv6 /64,
//! `servers`: a domain's own mail server; `count` their signups in the last day (as of `at`,
//! their last signup). `waves`: mail servers by the distinct never-seen domains signed up on
//! them in the last hour; a wave from `wave_threshold` on.

use http::{Method, StatusCode};
use serde_json::{Value, json};

use super::{Admin, AdminError, AdminResult, Json};
use crate::auth::query_param;
use crate::clock::rfc3339;
use crate::state::queue::WAVE_THRESHOLD;
use crate::state::signups::{BOARD_KEPT, Board, Ranked};

/// Entries per list unless `limit` says otherwise.
pub const SHOWN: usize = 10;

pub async fn route(admin: &Admin, method: &Method, rest: &[&str], query: &str) -> AdminResult {
    if !(method == Method::GET && matches!(rest, [] | [""])) {
        return Err(AdminError::not_found("no such endpoint or method"));
    }
    let limit = match query_param(query, "limit") {
        None => SHOWN,
        Some(v) => v
            .parse()
            .ok()
            .filter(|n| (1..=BOARD_KEPT).contains(n))
            .ok_or_else(|| AdminError::bad_request(format!("limit: from 1 to {BOARD_KEPT}")))?,
    };
    let now = admin.clock.now_ms().div_euclid(1000);
    let mut body = json!({ "wave_threshold": WAVE_THRESHOLD });
    for board in Board::ALL {
        let values = admin.store.busiest(board, now, limit).await?;
        body[board.as_str()] = Value::Array(values.iter().map(entry).collect());
    }
    Ok(Json(StatusCode::OK, body))
}

fn entry(r: &Ranked) -> Value {
    json!({ "value": r.value, "count": r.count, "at": rfc3339(r.at) })
}
