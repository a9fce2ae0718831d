//! The dashboard's review pages (issue 24): the queue a page at a time, highest priority first,
//! filtered (reason, mail server, text) or grouped by mail server; and one mail server with
//! the domains that taught the index about it, the queued domains on it, what marking it would
//! do, and the buttons to mark it once for all its domains. Same code as the admin API's
//! (`state::queue`, `review::servers`); only GET requests here, the marks are `actions.rs`.

use http::{Response, StatusCode};
use serde::Serialize;

use super::page::{html, plain, why_queued};
use super::session::{Flash, Session};
use crate::admin::Admin;
use crate::auth::query_param;
use crate::clock::rfc3339;
use crate::review::servers;
use crate::state::queue::{self, Query, Sort};
use crate::state::{MailServer, ReviewReason, mark_str};

/// Entries (or servers) on one page.
pub const PAGE: usize = 50;

#[derive(Serialize)]
struct QueueView {
    csrf: String,
    info: Option<String>,
    error: Option<String>,
    /// The filters as given, for the form and the links.
    reason: String,
    server: String,
    text: String,
    by_server: bool,
    rows: Vec<Row>,
    groups: Vec<GroupRow>,
    matching: usize,
    waiting: usize,
    first: usize,
    last: usize,
    capacity: usize,
    dropped: String,
    wave_threshold: u64,
    prev: Option<String>,
    next: Option<String>,
    /// This page's address, to come back to after a decision.
    here: String,
}

#[derive(Serialize)]
struct Row {
    domain: String,
    why: String,
    server: String,
    lookups: u64,
    likelihood: u32,
    priority: u64,
    first_seen: String,
    last_seen: String,
}

#[derive(Serialize)]
struct GroupRow {
    server: String,
    domains: usize,
    lookups: u64,
    priority: u64,
    reasons: String,
    /// Distinct never-seen domains signed up on it in the last hour; a wave past the threshold.
    new_domains_last_hour: u64,
    wave: bool,
    sample: Vec<String>,
}

/// The query string of the queue page with these filters and offset.
fn address(reason: &str, server: &str, text: &str, by_server: bool, offset: usize) -> String {
    let mut q = form_urlencoded::Serializer::new(String::new());
    for (k, v) in [("reason", reason), ("server", server), ("q", text)] {
        if !v.is_empty() {
            q.append_pair(k, v);
        }
    }
    if by_server {
        q.append_pair("view", "servers");
    }
    if offset > 0 {
        q.append_pair("offset", &offset.to_string());
    }
    let q = q.finish();
    if q.is_empty() { "/dashboard/reviews".to_owned() } else { format!("/dashboard/reviews?{q}") }
}

fn flash(admin: &Admin, sess: &Session) -> (Option<String>, Option<String>) {
    match admin.dashboard.sessions.take_flash(&sess.id) {
        Some(Flash::Info(m)) => (Some(m), None),
        Some(Flash::Error(m)) => (None, Some(m)),
        _ => (None, None),
    }
}

/// `GET /dashboard/reviews?reason=&server=&q=&view=servers&offset=`.
pub async fn queue_page(admin: &Admin, sess: &Session, query: &str) -> Response<Vec<u8>> {
    let param = |name: &str| query_param(query, name).unwrap_or_default().trim().to_owned();
    let (reason, server, text) = (param("reason"), param("server"), param("q").to_ascii_lowercase());
    let by_server = param("view") == "servers";
    let offset: usize = param("offset").parse().unwrap_or(0);
    let (items, dropped) = match (admin.store.review_queue().await, admin.store.review_dropped().await) {
        (Ok(i), Ok(d)) => (i, d),
        (Err(e), _) | (_, Err(e)) => {
            tracing::error!(error = %e, "state store failed (dashboard)");
            return plain(StatusCode::SERVICE_UNAVAILABLE, "the state store failed; retry later");
        }
    };
    let parsed_reason = ReviewReason::parse(&reason);
    let server_value = MailServer::parse(&server).map_or(server.clone(), |s| s.value);
    let waiting = items.len();
    let (rows, groups, matching) = if by_server {
        let mut items = items;
        items.retain(|i| parsed_reason.is_none_or(|r| i.reason == r));
        let now = admin.clock.now_ms().div_euclid(1000);
        let waves = match servers::waves(&*admin.store, now).await {
            Ok(w) => w,
            Err(e) => {
                tracing::error!(error = %e, "state store failed (dashboard)");
                return plain(StatusCode::SERVICE_UNAVAILABLE, "the state store failed; retry later");
            }
        };
        let (groups, total) = queue::groups(items, &waves, offset, PAGE, 5);
        let groups = groups
            .into_iter()
            .map(|g| GroupRow {
                reasons: g.reasons.iter().map(|(r, n)| format!("{r} {n}")).collect::<Vec<_>>().join(", "),
                server: g.server,
                domains: g.domains,
                lookups: g.lookups,
                priority: g.priority,
                wave: queue::is_wave(g.new_domains_last_hour),
                new_domains_last_hour: g.new_domains_last_hour,
                sample: g.sample,
            })
            .collect();
        (Vec::new(), groups, total)
    } else {
        let q = Query {
            reason: parsed_reason,
            server: (!server.is_empty()).then_some(server_value),
            text: (!text.is_empty()).then(|| text.clone()),
            sort: Sort::Priority,
            offset,
            limit: PAGE,
        };
        let page = queue::page(items, &q);
        let rows = page
            .items
            .iter()
            .map(|i| Row {
                domain: i.domain.clone(),
                why: why_queued(i),
                server: i.server().to_owned(),
                lookups: i.lookups,
                likelihood: i.likelihood,
                priority: i.priority(),
                first_seen: rfc3339(i.first_seen),
                last_seen: rfc3339(i.last_seen),
            })
            .collect();
        (rows, Vec::new(), page.matching)
    };
    let shown = rows.len().max(groups.len());
    let link = |o: usize| address(&reason, &server, &text, by_server, o);
    let (info, error) = flash(admin, sess);
    let dropped: Vec<String> = dropped.iter().map(|(r, n)| format!("{} {n}", r.as_str())).collect();
    let view = QueueView {
        csrf: sess.csrf.clone(),
        info,
        error,
        here: link(offset),
        prev: (offset > 0).then(|| link(offset.saturating_sub(PAGE))),
        next: (offset + PAGE < matching).then(|| link(offset + PAGE)),
        first: if shown == 0 { 0 } else { offset + 1 },
        last: offset + shown,
        reason,
        server,
        text,
        by_server,
        rows,
        groups,
        matching,
        waiting,
        capacity: admin.store.queue_capacity(),
        wave_threshold: queue::WAVE_THRESHOLD,
        dropped: if dropped.is_empty() { "none".to_owned() } else { dropped.join(", ") },
    };
    html(StatusCode::OK, admin.dashboard.templates.render("dashboard/reviews.html", &view), Vec::new())
}

#[derive(Serialize)]
struct ServerView {
    csrf: String,
    info: Option<String>,
    error: Option<String>,
    server: String,
    kind: &'static str,
    owner: Option<String>,
    shared: Option<String>,
    mark: Option<&'static str>,
    marks: Vec<MarkRow>,
    disposable: u64,
    legitimate: u64,
    taught_by: Vec<TeacherRow>,
    queued: usize,
    queued_sample: Vec<String>,
    effect_disposable: String,
    effect_safe: String,
}

#[derive(Serialize)]
struct MarkRow {
    at: String,
    decision: &'static str,
    reviewer: String,
    note: String,
}

#[derive(Serialize)]
struct TeacherRow {
    domain: String,
    standing: &'static str,
    via: String,
    seen: String,
}

/// `GET /dashboard/servers/{host or address}`.
pub async fn server_page(admin: &Admin, sess: &Session, text: &str) -> Response<Vec<u8>> {
    let Some(server) = MailServer::parse(text) else {
        return plain(StatusCode::BAD_REQUEST, &format!("{text:?} is neither a host name nor an IP address"));
    };
    let now = admin.clock.now_ms().div_euclid(1000);
    let report = match servers::report(&*admin.store, &admin.catalog.current(), &server, now).await {
        Ok(r) => r,
        Err(e) => {
            tracing::error!(error = %e, "state store failed (dashboard)");
            return plain(StatusCode::SERVICE_UNAVAILABLE, "the state store failed; retry later");
        }
    };
    let (info, error) = flash(admin, sess);
    let view = ServerView {
        csrf: sess.csrf.clone(),
        info,
        error,
        kind: if server.kind == crate::state::ServerKind::Host { "host name" } else { "address" },
        owner: report.owner.clone(),
        shared: report.shared.clone(),
        mark: report.mark.map(|m| mark_str(Some(m))),
        marks: report
            .marks
            .iter()
            .map(|m| MarkRow {
                at: rfc3339(m.at),
                decision: mark_str(m.decision),
                reviewer: m.reviewer.clone(),
                note: m.note.clone(),
            })
            .collect(),
        disposable: report.disposable,
        legitimate: report.legitimate,
        taught_by: report
            .taught_by
            .iter()
            .map(|t| TeacherRow {
                domain: t.domain.clone(),
                standing: if t.disposable { "disposable" } else { "legitimate" },
                via: t.via.join(", "),
                seen: rfc3339(t.seen),
            })
            .collect(),
        queued: report.queued,
        queued_sample: report.queued_sample.clone(),
        effect_disposable: report.effect(Some(email_verdict_core::Decision::Block)),
        effect_safe: report.effect(Some(email_verdict_core::Decision::Allow)),
        server: server.value,
    };
    html(StatusCode::OK, admin.dashboard.templates.render("dashboard/server.html", &view), Vec::new())
}

#[cfg(test)]
mod tests {
    use super::address;

    #[test]
    fn links_keep_the_filters() {
        assert_eq!(address("", "", "", false, 0), "/dashboard/reviews");
        assert_eq!(
            address("weak_listing", "mx.a b", "x", true, 50),
            "/dashboard/reviews?reason=weak_listing&server=mx.a+b&q=x&view=servers&offset=50"
        );
    }
}
