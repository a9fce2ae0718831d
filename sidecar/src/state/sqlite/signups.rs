//! SQLite side of [`SignupStore`]: `signup_buckets`, one row per counter and ring slot (at most
//! `SLOTS` per counter), in the lookup path's group commit. Each count also deletes up to
//! [`EXPIRED_PER_COUNT`] rows whose bucket has left its window (by the `expires` index): more
//! than a count can create, so the table holds the last day's counters and a bounded backlog.
//!
//! Waves: `signup_new_domains`, one row per server and new domain, at most `WAVE_DOMAINS_KEPT`
//! per server (its index by time gives the count and the oldest); each count also deletes a few
//! rows of any server that left the hour. Boards: `signup_board`, at most `BOARD_KEPT` rows per
//! board, so ranking reads and trims a bounded number of rows whatever else the store holds.

use std::sync::LazyLock;

use async_trait::async_trait;
use rusqlite::{Connection, params};

use super::{SqliteStore, unavailable};
use crate::state::StateError;
use crate::state::signups::{
    BOARD_KEPT, Board, Buckets, Counter, DAY_BUCKET, DAY_BUCKETS, Entry, HOUR_BUCKET, HOUR_BUCKETS, NewDomain, Ranked,
    SignupStore, WAVE_DOMAINS_KEPT, WAVE_WINDOW, Wave, live,
};
use email_verdict_core::signup::velocity::Window;

/// Expired rows deleted per count (a count writes at most 2 per counter, 4 counters).
const EXPIRED_PER_COUNT: i64 = 16;

// The statements of a count. A bound limit is written into the text instead: SQLite
// re-prepares a statement whose `LIMIT` is a parameter each time it comes out of the statement
// cache (its bindings cleared), which was a fifth of the store thread's time under counted
// signups (BENCHMARKS section 4, "Statements prepared once").
static DELETE_EXPIRED_BUCKETS: LazyLock<String> = LazyLock::new(|| {
    format!(
        "DELETE FROM signup_buckets WHERE rowid IN
         (SELECT rowid FROM signup_buckets WHERE expires <= ?1 ORDER BY expires LIMIT {EXPIRED_PER_COUNT})"
    )
});
static DELETE_EXPIRED_NEW_DOMAINS: LazyLock<String> = LazyLock::new(|| {
    format!(
        "DELETE FROM signup_new_domains WHERE rowid IN
         (SELECT rowid FROM signup_new_domains WHERE seen <= ?1 ORDER BY seen LIMIT {EXPIRED_PER_COUNT})"
    )
});
const BUMP: &str = "INSERT INTO signup_buckets (counter, slot, bucket, count, expires) VALUES (?1, ?2, ?3, 1, ?4)
     ON CONFLICT (counter, slot) DO UPDATE SET
         count = CASE WHEN bucket >= excluded.bucket THEN count + 1 ELSE 1 END,
         bucket = MAX(bucket, excluded.bucket),
         expires = MAX(expires, excluded.expires)";
const WINDOWS: &str = "SELECT COALESCE(SUM(CASE WHEN slot < ?2 AND bucket > ?3 THEN count END), 0),
        COALESCE(SUM(CASE WHEN slot >= ?2 AND bucket > ?4 THEN count END), 0)
     FROM signup_buckets WHERE counter = ?1";

#[async_trait]
impl SignupStore for SqliteStore {
    async fn count_signup(&self, counters: &[Counter], now: i64) -> Result<Vec<Window>, StateError> {
        let names: Vec<String> = counters.iter().map(Counter::name).collect();
        self.in_group(move |c| {
            let windows = names.iter().map(|name| count(c, name, now)).collect::<rusqlite::Result<Vec<_>>>();
            let windows = windows.map_err(unavailable)?;
            c.prepare_cached(&DELETE_EXPIRED_BUCKETS)
                .and_then(|mut stmt| stmt.execute(params![now]))
                .map_err(unavailable)?;
            Ok(windows)
        })
        .await
    }

    async fn count_new_domain(&self, new: &NewDomain, now: i64) -> Result<Wave, StateError> {
        let (set, member) = (new.set(), new.member().to_owned());
        self.in_group(move |c| new_domain(c, &set, &member, now).map_err(unavailable)).await
    }

    async fn rank(&self, entries: &[Entry], now: i64) -> Result<Vec<u64>, StateError> {
        let entries = entries.to_vec();
        self.in_group(move |c| {
            entries.iter().map(|e| rank(c, e, now)).collect::<rusqlite::Result<_>>().map_err(unavailable)
        })
        .await
    }

    async fn signup_counts(&self, counters: &[Counter], now: i64) -> Result<Vec<Window>, StateError> {
        let names: Vec<String> = counters.iter().map(Counter::name).collect();
        self.with_conn(move |c| {
            names.iter().map(|name| windows(c, name, now)).collect::<rusqlite::Result<_>>().map_err(unavailable)
        })
        .await
    }

    async fn busiest(&self, board: Board, now: i64, limit: usize) -> Result<Vec<Ranked>, StateError> {
        self.with_conn(move |c| {
            let mut stmt = c
                .prepare_cached("SELECT value, count, at FROM signup_board WHERE board = ?1 AND at > ?2")
                .map_err(unavailable)?;
            let rows = stmt
                .query_map(params![board.as_str(), now - board.lifetime()], |r| {
                    Ok(Ranked { value: r.get(0)?, count: r.get::<_, i64>(1)?.max(0) as u64, at: r.get(2)? })
                })
                .and_then(Iterator::collect::<rusqlite::Result<Vec<_>>>)
                .map_err(unavailable)?;
            Ok(live(board, rows, now, limit))
        })
        .await
    }
}

/// A new domain on a server: the server's rows that left the hour go, the domain is added (or
/// seen again), the oldest past the bound go; then a few rows of other servers that left it.
fn new_domain(c: &Connection, set: &str, member: &str, now: i64) -> rusqlite::Result<Wave> {
    let since = now - WAVE_WINDOW;
    c.prepare_cached("DELETE FROM signup_new_domains WHERE server = ?1 AND seen <= ?2")?
        .execute(params![set, since])?;
    let added = c
        .prepare_cached("INSERT OR IGNORE INTO signup_new_domains (server, domain, seen) VALUES (?1, ?2, ?3)")?
        .execute(params![set, member, now])?
        == 1;
    if !added {
        c.prepare_cached("UPDATE signup_new_domains SET seen = MAX(seen, ?3) WHERE server = ?1 AND domain = ?2")?
            .execute(params![set, member, now])?;
    }
    let mut n: i64 = c
        .prepare_cached("SELECT COUNT(*) FROM signup_new_domains WHERE server = ?1")?
        .query_row(params![set], |r| r.get(0))?;
    let kept = WAVE_DOMAINS_KEPT as i64;
    if n > kept {
        c.prepare_cached(
            "DELETE FROM signup_new_domains WHERE rowid IN
             (SELECT rowid FROM signup_new_domains WHERE server = ?1 ORDER BY seen LIMIT ?2)",
        )?
        .execute(params![set, n - kept])?;
        n = kept;
    }
    c.prepare_cached(&DELETE_EXPIRED_NEW_DOMAINS)?.execute(params![since])?;
    Ok(Wave { new_domains: n.max(0) as u64, added })
}

/// One entry ranked on its board (see [`SignupStore::rank`]); the board's floor.
fn rank(c: &Connection, e: &Entry, now: i64) -> rusqlite::Result<u64> {
    let board = e.board.as_str();
    c.prepare_cached("DELETE FROM signup_board WHERE board = ?1 AND at <= ?2")?
        .execute(params![board, now - e.board.lifetime()])?;
    let count = i64::try_from(e.count).unwrap_or(i64::MAX);
    c.prepare_cached(
        "INSERT INTO signup_board (board, value, count, at) VALUES (?1, ?2, ?3, ?4)
         ON CONFLICT (board, value) DO UPDATE SET
             count = CASE WHEN at > ?4 - ?5 THEN MAX(count, excluded.count) ELSE excluded.count END,
             at = MAX(at, excluded.at)",
    )?
    .execute(params![board, e.value, count, now, e.board.bucket()])?;
    let n: i64 = c
        .prepare_cached("SELECT COUNT(*) FROM signup_board WHERE board = ?1")?
        .query_row(params![board], |r| r.get(0))?;
    let kept = BOARD_KEPT as i64;
    if n > kept {
        c.prepare_cached(
            "DELETE FROM signup_board WHERE rowid IN
             (SELECT rowid FROM signup_board WHERE board = ?1 ORDER BY count, at LIMIT ?2)",
        )?
        .execute(params![board, n - kept])?;
    }
    if n < kept {
        return Ok(0);
    }
    let floor: i64 = c
        .prepare_cached("SELECT MIN(count) FROM signup_board WHERE board = ?1")?
        .query_row(params![board], |r| r.get(0))?;
    Ok(floor.max(0) as u64)
}

/// One counter: the signup added to its hour and day buckets, then both windows read.
fn count(c: &Connection, name: &str, now: i64) -> rusqlite::Result<Window> {
    let at = Buckets::at(now);
    // A slot holding an older bucket starts over; one holding a newer bucket (a replica whose
    // clock is ahead) takes the signup too, so no signup goes uncounted.
    let mut bump = c.prepare_cached(BUMP)?;
    let hour_slot = at.hour.rem_euclid(HOUR_BUCKETS);
    bump.execute(params![name, hour_slot, at.hour, (at.hour + HOUR_BUCKETS) * HOUR_BUCKET])?;
    let day_slot = HOUR_BUCKETS + at.day.rem_euclid(DAY_BUCKETS);
    bump.execute(params![name, day_slot, at.day, (at.day + DAY_BUCKETS) * DAY_BUCKET])?;
    windows(c, name, now)
}

/// One counter's hour and day windows at `now`, as its buckets hold them.
fn windows(c: &Connection, name: &str, now: i64) -> rusqlite::Result<Window> {
    let at = Buckets::at(now);
    let (hour, day): (i64, i64) = c
        .prepare_cached(WINDOWS)?
        .query_row(params![name, HOUR_BUCKETS, at.hour - HOUR_BUCKETS, at.day - DAY_BUCKETS], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })?;
    Ok(Window { hour: hour.max(0) as u64, day: day.max(0) as u64 })
}
