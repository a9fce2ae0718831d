//! The dashboard's pages: login, and the home page with keys and the review queue.

use http::{Response, StatusCode};
use serde::Serialize;

use super::session::{Flash, KeyDraft, Session};
use crate::admin::Admin;
use crate::clock::{rfc3339, utc_day};
use crate::pages::respond::{self, Headers, security_headers};
use crate::plans::Plans;
use crate::state::signups::Board;

#[derive(Serialize)]
struct LoginView<'a> {
    csrf: &'a str,
    error: Option<&'a str>,
}

pub fn login(admin: &Admin, sess: &Session, error: Option<&str>) -> Response<Vec<u8>> {
    let body = admin.dashboard.templates.render("dashboard/login.html", &LoginView { csrf: &sess.csrf, error });
    let status = if error.is_some() { StatusCode::UNAUTHORIZED } else { StatusCode::OK };
    html(status, body, Vec::new())
}

#[derive(Serialize)]
struct HomeView {
    csrf: String,
    open: bool,
    new_key: Option<NewKey>,
    info: Option<String>,
    error: Option<String>,
    /// The key creation form as typed, after it was refused.
    draft: Option<KeyDraft>,
    plans: Vec<PlanRow>,
    keys: Vec<KeyRow>,
    /// The first entries of the queue by priority ([`HOME_QUEUE`]), and how many wait.
    queue: Vec<ReviewRow>,
    queue_waiting: usize,
    lists: Vec<ListRow>,
    list_refresh: String,
    today: String,
    /// The busiest of the signups counted: waves (last hour), mailboxes, clients, servers (day).
    busiest: Vec<BusiestTable>,
    wave_threshold: u64,
}

/// One board of the busiest, as the home page shows it.
#[derive(Serialize)]
struct BusiestTable {
    board: &'static str,
    caption: &'static str,
    column: &'static str,
    count: &'static str,
    /// Its values are mail servers (each links to its page).
    servers: bool,
    rows: Vec<BusiestRow>,
}

#[derive(Serialize)]
struct BusiestRow {
    value: String,
    /// What the page prints: a mailbox hash shortened, else the value.
    shown: String,
    count: u64,
    at: String,
}

/// Entries per board on the home page.
const BUSIEST: usize = 10;
/// Hex digits of a mailbox hash the page prints.
const MAILBOX_SHOWN: usize = 12;

fn busiest_table(board: Board, values: Vec<crate::state::signups::Ranked>) -> BusiestTable {
    let (caption, column, count) = match board {
        Board::Waves => {
            ("Waves: never-seen domains signing up on one mail server, last hour", "Mail server", "New domains")
        }
        Board::Mailboxes => ("Busiest mailboxes, last day (keyed hash, shortened)", "Mailbox", "Signups"),
        Board::Clients => ("Busiest clients, last day (IPv4 address or IPv6 /64)", "Client", "Signups"),
        Board::Servers => ("Busiest mail servers, last day", "Mail server", "Signups"),
    };
    let rows = values
        .into_iter()
        .map(|r| BusiestRow {
            shown: match board {
                Board::Mailboxes => format!("{}…", r.value.chars().take(MAILBOX_SHOWN).collect::<String>()),
                _ => r.value.clone(),
            },
            value: r.value,
            count: r.count,
            at: rfc3339(r.at),
        })
        .collect();
    let servers = matches!(board, Board::Servers | Board::Waves);
    BusiestTable { board: board.as_str(), caption, column, count, servers, rows }
}

/// Every board's first [`BUSIEST`] (a store failure leaves that board empty, not the page).
async fn busiest(admin: &Admin) -> Vec<BusiestTable> {
    let now = admin.clock.now_ms().div_euclid(1000);
    let mut tables = Vec::new();
    for board in [Board::Waves, Board::Mailboxes, Board::Clients, Board::Servers] {
        let values = admin.store.busiest(board, now, BUSIEST).await.unwrap_or_else(|e| {
            tracing::error!(error = %e, "state store failed (dashboard busiest)");
            Vec::new()
        });
        tables.push(busiest_table(board, values));
    }
    tables
}

#[derive(Serialize)]
struct NewKey {
    id: String,
    secret: String,
}

#[derive(Serialize)]
struct PlanRow {
    name: String,
    daily_quota: String,
    burst_per_second: String,
    builtin: bool,
}

#[derive(Serialize)]
struct KeyRow {
    id: String,
    name: String,
    plan: String,
    revoked: bool,
    allow_ips: String,
    used_today: u64,
    /// The figure, "unlimited", or "plan not defined" (the key is refused).
    daily_quota: String,
    created: String,
    /// The last 30 UTC days, oldest first, as bars of a small server-rendered SVG chart.
    usage: UsageChart,
}

/// Bar heights (0 to [`CHART_HEIGHT`]) and their labels; only numbers and dates reach the SVG.
/// A baseline spans the 30 days, so that one day's bar reads as one day of a month, and a
/// line of text says what the bars show (readable with one day of data, or none).
#[derive(Serialize)]
struct UsageChart {
    bars: Vec<Bar>,
    peak: u64,
    total: u64,
    /// `CHART_DAYS` bars wide, and the baseline's height.
    width: usize,
    height: u64,
    bar_width: usize,
    summary: String,
}

#[derive(Serialize)]
struct Bar {
    x: usize,
    y: u64,
    height: u64,
    label: String,
}

const CHART_DAYS: i64 = 30;
const CHART_HEIGHT: u64 = 24;
/// A day's slot: its bar and a gap of one.
const BAR_WIDTH: usize = 5;

/// `days` (oldest first) with each one's count, drawn against the busiest day.
fn usage_chart(days: &[String], counts: &[u64]) -> UsageChart {
    let peak = counts.iter().copied().max().unwrap_or(0);
    let total = counts.iter().sum();
    let bars = days
        .iter()
        .zip(counts)
        .enumerate()
        .map(|(i, (day, &n))| {
            let height = if peak == 0 { 0 } else { (n * CHART_HEIGHT).div_ceil(peak) };
            Bar { x: i * BAR_WIDTH, y: CHART_HEIGHT - height, height, label: format!("{day}: {n}") }
        })
        .collect();
    let used: Vec<(&String, u64)> = days.iter().zip(counts.iter().copied()).filter(|(_, n)| *n > 0).collect();
    let busiest = used.iter().max_by_key(|(_, n)| *n).map(|(day, _)| day.as_str()).unwrap_or_default();
    let lookups = if total == 1 { "lookup" } else { "lookups" };
    let summary = match used.len() {
        0 => "not used".to_owned(),
        1 => format!("{total} {lookups} on {busiest} only"),
        n => format!("{total} {lookups} on {n} days; most {peak} on {busiest}"),
    };
    UsageChart {
        bars,
        peak,
        total,
        width: days.len() * BAR_WIDTH,
        height: CHART_HEIGHT,
        bar_width: BAR_WIDTH - 1,
        summary,
    }
}

#[derive(Serialize)]
struct ReviewRow {
    domain: String,
    why: String,
    first_seen: String,
    last_seen: String,
    lookups: u64,
}

/// A list as `GET /admin/v1/lists` shows it; shipped lists without an index.
#[derive(Serialize)]
struct ListRow {
    index: Option<usize>,
    kind: &'static str,
    source: String,
    tier: &'static str,
    entries: usize,
    last_success: String,
    last_error: Option<String>,
}

fn list_rows(live: &crate::lists::LiveCatalog) -> Vec<ListRow> {
    let operator = live.lists().into_iter().map(|l| ListRow {
        index: Some(l.index),
        kind: l.kind,
        source: l.source,
        tier: l.tier.unwrap_or(""),
        entries: l.entries,
        last_success: match l.last_success {
            Some(t) if l.from_kept_copy => format!("{} (kept copy)", rfc3339(t)),
            Some(t) => rfc3339(t),
            None => "never".to_owned(),
        },
        last_error: l.last_error.map(|(message, at)| format!("{}: {message}", rfc3339(at))),
    });
    let shipped = live.shipped().iter().map(|s| ListRow {
        index: None,
        kind: s.kind,
        source: s.source.to_owned(),
        tier: s.tier.unwrap_or(""),
        entries: s.entries,
        last_success: "built in".to_owned(),
        last_error: None,
    });
    operator.chain(shipped).collect()
}

/// The queue reason in words, with the sources or the listed parent behind it.
pub(super) fn why_queued(item: &crate::state::ReviewItem) -> String {
    use crate::state::ReviewReason;
    match item.reason {
        ReviewReason::NoMx => "no MX".to_owned(),
        ReviewReason::Ambiguous => "nothing marks it".to_owned(),
        ReviewReason::WeakListing => format!("listed only by the unreviewed source: {}", item.sources.join(", ")),
        ReviewReason::ParentListing => format!("its parent {} is listed, its mail goes elsewhere", item.listed_as),
    }
}

/// Queue entries on the home page; the whole queue is a page of its own (`reviews.rs`).
const HOME_QUEUE: usize = 10;

pub async fn home(admin: &Admin, sess: &Session) -> Response<Vec<u8>> {
    let today = utc_day(admin.clock.now_ms().div_euclid(1000));
    let (keys, mut queue) = match (admin.store.list_keys(&today).await, admin.store.review_queue().await) {
        (Ok(k), Ok(q)) => (k, q),
        (Err(e), _) | (_, Err(e)) => {
            tracing::error!(error = %e, "state store failed (dashboard)");
            return plain(StatusCode::SERVICE_UNAVAILABLE, "the state store failed; retry later");
        }
    };
    let queue_waiting = queue.len();
    crate::state::queue::order(&mut queue, crate::state::queue::Sort::Priority);
    queue.truncate(HOME_QUEUE);
    let mut view = HomeView {
        csrf: sess.csrf.clone(),
        open: admin.token_hash.is_none(),
        new_key: None,
        info: None,
        error: None,
        draft: None,
        plans: admin
            .plans
            .current()
            .iter()
            .map(|p| PlanRow {
                name: p.name.to_string(),
                daily_quota: p.daily_quota.to_string(),
                burst_per_second: p.burst_per_second.to_string(),
                builtin: p.builtin,
            })
            .collect(),
        keys: key_rows(admin, &keys).await,
        queue: queue
            .iter()
            .map(|i| ReviewRow {
                domain: i.domain.clone(),
                why: why_queued(i),
                first_seen: rfc3339(i.first_seen),
                last_seen: rfc3339(i.last_seen),
                lookups: i.lookups,
            })
            .collect(),
        queue_waiting,
        lists: list_rows(&admin.catalog),
        list_refresh: match admin.catalog.settings().refresh_secs {
            0 => "on SIGHUP only".to_owned(),
            secs => format!("every {secs} s"),
        },
        today,
        busiest: busiest(admin).await,
        wave_threshold: crate::state::queue::WAVE_THRESHOLD,
    };
    match admin.dashboard.sessions.take_flash(&sess.id) {
        Some(Flash::NewKey { id, secret }) => view.new_key = Some(NewKey { id, secret }),
        Some(Flash::Info(m)) => view.info = Some(m),
        Some(Flash::Error(m)) => view.error = Some(m),
        Some(Flash::KeyRefused { error, draft }) => (view.error, view.draft) = (Some(error), Some(draft)),
        None => {}
    }
    html(StatusCode::OK, admin.dashboard.templates.render("dashboard/home.html", &view), Vec::new())
}

#[derive(Serialize)]
struct ConfirmRevokeView {
    csrf: String,
    key: KeyRow,
}

/// The page that asks before a key is revoked (the revoke button's first step).
pub async fn confirm_revoke(admin: &Admin, sess: &Session, id: &str) -> Response<Vec<u8>> {
    let today = utc_day(admin.clock.now_ms().div_euclid(1000));
    let keys = match admin.store.list_keys(&today).await {
        Ok(keys) => keys,
        Err(e) => {
            tracing::error!(error = %e, "state store failed (dashboard)");
            return plain(StatusCode::SERVICE_UNAVAILABLE, "the state store failed; retry later");
        }
    };
    let Some(listing) = keys.iter().find(|l| l.key.id == id) else {
        return plain(StatusCode::NOT_FOUND, &format!("No key with id {id}."));
    };
    if listing.key.revoked {
        return see_other("/dashboard", None);
    }
    let key = key_row(&admin.plans.current(), listing, usage_chart(&[], &[]));
    let view = ConfirmRevokeView { csrf: sess.csrf.clone(), key };
    html(StatusCode::OK, admin.dashboard.templates.render("dashboard/revoke.html", &view), Vec::new())
}

/// Every key's row with its usage over the last [`CHART_DAYS`] days (a store failure there
/// leaves the chart empty, not the page).
async fn key_rows(admin: &Admin, keys: &[crate::state::KeyListing]) -> Vec<KeyRow> {
    let today = admin.clock.now_ms().div_euclid(1000);
    let days: Vec<String> = (0..CHART_DAYS).rev().map(|back| utc_day(today - back * 86_400)).collect();
    let mut rows = Vec::with_capacity(keys.len());
    for listing in keys {
        let counts = admin.store.usage(&listing.key.id, &days).await.unwrap_or_else(|e| {
            tracing::error!(error = %e, "state store failed (dashboard usage)");
            vec![0; days.len()]
        });
        rows.push(key_row(&admin.plans.current(), listing, usage_chart(&days, &counts)));
    }
    rows
}

fn key_row(plans: &Plans, l: &crate::state::KeyListing, usage: UsageChart) -> KeyRow {
    let k = &l.key;
    let quota = plans.get(&k.plan).map_or_else(|| "plan not defined".to_owned(), |p| p.daily_quota.to_string());
    KeyRow {
        id: k.id.clone(),
        name: k.name.clone(),
        plan: k.plan.to_string(),
        revoked: k.revoked,
        allow_ips: k.allow_ips.iter().map(ToString::to_string).collect::<Vec<_>>().join(", "),
        used_today: l.used_today,
        daily_quota: quota,
        created: rfc3339(k.created_at),
        usage,
    }
}

/// POST-redirect-GET: after a change, the browser loads the page anew.
pub fn see_other(location: &str, cookie: Option<String>) -> Response<Vec<u8>> {
    let headers: Headers = cookie.into_iter().map(|c| ("Set-Cookie", c)).collect();
    respond::redirect(StatusCode::SEE_OTHER, location, "no-store", headers)
}

/// An error page of the dashboard.
pub fn plain(status: StatusCode, message: &str) -> Response<Vec<u8>> {
    // Rendered without the templates' state: these answers must work whatever else failed.
    let escaped = message.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;");
    let body = format!(
        "<!doctype html><html lang=\"en\"><meta charset=\"utf-8\"><title>{}</title>\
         <link rel=\"stylesheet\" href=\"/dashboard/site.css\"><main><h1>{}</h1><p>{escaped}</p>\
         <p><a href=\"/dashboard\">Back to the dashboard</a></p></main></html>",
        status.as_u16(),
        status.canonical_reason().unwrap_or("Error"),
    );
    html(status, body, Vec::new())
}

pub(super) fn html(status: StatusCode, body: String, extra: Headers) -> Response<Vec<u8>> {
    let mut headers = security_headers();
    // The dashboard's own Origin/Referer check needs the referrer on same-origin requests.
    headers.retain(|(name, _)| *name != "Referrer-Policy");
    headers.push(("Referrer-Policy", "same-origin".into()));
    headers.push(("Content-Type", "text/html; charset=utf-8".into()));
    headers.push(("Cache-Control", "no-store".into()));
    headers.extend(extra);
    respond::build(status, headers, body.into_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mailboxes_are_shown_as_a_short_hash() {
        let r = |value: &str| crate::state::signups::Ranked { value: value.into(), count: 3, at: 0 };
        let mailboxes = busiest_table(Board::Mailboxes, vec![r(&"ab".repeat(32))]);
        assert_eq!((mailboxes.rows[0].shown.as_str(), mailboxes.servers), ("abababababab…", false));
        let servers = busiest_table(Board::Waves, vec![r("mx.wave.example")]);
        assert_eq!((servers.rows[0].shown.as_str(), servers.servers), ("mx.wave.example", true));
    }

    #[test]
    fn usage_bars_scale_to_the_busiest_day() {
        let days: Vec<String> = ["2026-11-23", "2026-11-24", "2026-11-25"].map(String::from).to_vec();
        let chart = usage_chart(&days, &[0, 5, 10]);
        let heights: Vec<u64> = chart.bars.iter().map(|b| b.height).collect();
        assert_eq!((heights, chart.peak, chart.total), (vec![0, 12, 24], 10, 15));
        assert_eq!(chart.bars[2].y, 0);
        assert_eq!(chart.bars[1].label, "2026-11-24: 5");
        assert!(usage_chart(&days, &[0, 0, 0]).bars.iter().all(|b| b.height == 0));
    }

    #[test]
    fn the_chart_says_what_it_shows_even_with_one_day_of_data() {
        let days: Vec<String> = ["2026-11-23", "2026-11-24", "2026-11-25"].map(String::from).to_vec();
        let one = usage_chart(&days, &[0, 0, 7]);
        assert_eq!((one.summary.as_str(), one.width, one.bar_width), ("7 lookups on 2026-11-25 only", 15, 4));
        assert_eq!(usage_chart(&days, &[0, 0, 0]).summary, "not used");
        assert_eq!(usage_chart(&days, &[0, 1, 0]).summary, "1 lookup on 2026-11-24 only");
        assert_eq!(usage_chart(&days, &[3, 9, 9]).summary, "21 lookups on 3 days; most 9 on 2026-11-25");
    }
}
