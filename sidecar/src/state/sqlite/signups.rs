//! SQLite side of [`SignupStore`]: `signup_buckets`, one row per counter and ring slot (at most
//! `SLOTS` per counter), in the lookup path's group commit. Each count also deletes up to
//! [`EXPIRED_PER_COUNT`] rows whose bucket has left its window (by the `expires` index): more
//! than a count can create, so the table holds the last day's counters and a bounded backlog.

use async_trait::async_trait;
use rusqlite::{Connection, params};

use super::{SqliteStore, unavailable};
use crate::state::StateError;
use crate::state::signups::{Buckets, Counter, DAY_BUCKET, DAY_BUCKETS, HOUR_BUCKET, HOUR_BUCKETS, SignupStore};
use email_verdict_core::signup::velocity::Window;

/// Expired rows deleted per count (a count writes at most 2 per counter, 4 counters).
const EXPIRED_PER_COUNT: i64 = 16;

#[async_trait]
impl SignupStore for SqliteStore {
    async fn count_signup(&self, counters: &[Counter], now: i64) -> Result<Vec<Window>, StateError> {
        let names: Vec<String> = counters.iter().map(Counter::name).collect();
        self.in_group(move |c| {
            let windows = names.iter().map(|name| count(c, name, now)).collect::<rusqlite::Result<Vec<_>>>();
            let windows = windows.map_err(unavailable)?;
            c.prepare_cached(
                "DELETE FROM signup_buckets WHERE rowid IN
                 (SELECT rowid FROM signup_buckets WHERE expires <= ?1 ORDER BY expires LIMIT ?2)",
            )
            .and_then(|mut stmt| stmt.execute(params![now, EXPIRED_PER_COUNT]))
            .map_err(unavailable)?;
            Ok(windows)
        })
        .await
    }
}

/// One counter: the signup added to its hour and day buckets, then both windows read.
fn count(c: &Connection, name: &str, now: i64) -> rusqlite::Result<Window> {
    let at = Buckets::at(now);
    // A slot holding an older bucket starts over; one holding a newer bucket (a replica whose
    // clock is ahead) takes the signup too, so no signup goes uncounted.
    let mut bump = c.prepare_cached(
        "INSERT INTO signup_buckets (counter, slot, bucket, count, expires) VALUES (?1, ?2, ?3, 1, ?4)
         ON CONFLICT (counter, slot) DO UPDATE SET
             count = CASE WHEN bucket >= excluded.bucket THEN count + 1 ELSE 1 END,
             bucket = MAX(bucket, excluded.bucket),
             expires = MAX(expires, excluded.expires)",
    )?;
    let hour_slot = at.hour.rem_euclid(HOUR_BUCKETS);
    bump.execute(params![name, hour_slot, at.hour, (at.hour + HOUR_BUCKETS) * HOUR_BUCKET])?;
    let day_slot = HOUR_BUCKETS + at.day.rem_euclid(DAY_BUCKETS);
    bump.execute(params![name, day_slot, at.day, (at.day + DAY_BUCKETS) * DAY_BUCKET])?;
    let (hour, day): (i64, i64) = c
        .prepare_cached(
            "SELECT COALESCE(SUM(CASE WHEN slot < ?2 AND bucket > ?3 THEN count END), 0),
                    COALESCE(SUM(CASE WHEN slot >= ?2 AND bucket > ?4 THEN count END), 0)
             FROM signup_buckets WHERE counter = ?1",
        )?
        .query_row(params![name, HOUR_BUCKETS, at.hour - HOUR_BUCKETS, at.day - DAY_BUCKETS], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })?;
    Ok(Window { hour: hour.max(0) as u64, day: day.max(0) as u64 })
}
