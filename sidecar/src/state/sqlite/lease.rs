//! Leases of quota units and burst places (`KeyStore::lease`, issue 46) on SQLite.

use rusqlite::{Connection, params};

use super::used_on;
use crate::clock::utc_day;
use crate::state::{BURST_WINDOW_MS, Closing, LeaseAsk, Leased, Limits, places_granted, units_granted};

/// The lease step (see [`KeyStore::lease`]). It runs inside the group transaction (`BEGIN
/// IMMEDIATE` took the write lock, so leases from any process are serialized).
pub(super) fn lease(
    c: &Connection,
    key_id: &str,
    limits: Limits,
    ask: &LeaseAsk,
    now_ms: i64,
) -> rusqlite::Result<Leased> {
    if let Some(close) = &ask.close {
        close_block(c, key_id, close)?;
    }
    let day = utc_day(now_ms.div_euclid(1000));
    let used = used_on(c, key_id, &day)?;
    if used.saturating_add(ask.units_min) > limits.daily_quota {
        return Ok(Leased::QuotaExceeded { used });
    }
    let mut places = 0;
    // An unlimited burst keeps no window (it would only grow with the load).
    if limits.burst_per_second != Limits::UNLIMITED && ask.places_want > 0 {
        c.prepare_cached("DELETE FROM burst WHERE key_id = ?1 AND at_ms <= ?2")?
            .execute(params![key_id, now_ms - BURST_WINDOW_MS])?;
        let (taken, oldest): (i64, Option<i64>) = c
            .prepare_cached("SELECT COALESCE(SUM(places), 0), MIN(at_ms) FROM burst WHERE key_id = ?1")?
            .query_row([key_id], |r| Ok((r.get(0)?, r.get(1)?)))?;
        let free = limits.burst_per_second.saturating_sub(taken.max(0) as u64);
        if free < ask.places_min {
            let retry_after_ms = (oldest.unwrap_or(now_ms) + BURST_WINDOW_MS - now_ms).max(1) as u64;
            return Ok(Leased::RateLimited { retry_after_ms });
        }
        places = places_granted(ask, free);
    }
    let units = units_granted(ask, limits.daily_quota.saturating_sub(used));
    let used = if units > 0 {
        let used: i64 = c
            .prepare_cached(
                "INSERT INTO usage (key_id, day, count) VALUES (?1, ?2, ?3)
                 ON CONFLICT (key_id, day) DO UPDATE SET count = count + ?3 RETURNING count",
            )?
            .query_row(params![key_id, day, i64::try_from(units).unwrap_or(i64::MAX)], |r| r.get(0))?;
        used.max(0) as u64
    } else {
        used
    };
    let mut block = String::new();
    if places > 0 {
        c.prepare_cached("INSERT INTO burst (key_id, at_ms, places) VALUES (?1, ?2, ?3)")?.execute(params![
            key_id,
            // A lone place the asker needs is spent at once: it ends now (no hold to outlive a crash).
            now_ms.saturating_add(if places <= ask.places_min { 0 } else { ask.hold_ms.max(0) }),
            i64::try_from(places).unwrap_or(i64::MAX)
        ])?;
        block = c.last_insert_rowid().to_string();
    }
    Ok(Leased::Granted { units, places, block, used })
}

/// Closes a place block: its unspent places leave the window, its spent ones stay as taken at
/// the last of them.
fn close_block(c: &Connection, key_id: &str, close: &Closing) -> rusqlite::Result<()> {
    let Ok(row) = close.block.parse::<i64>() else { return Ok(()) };
    if close.spent == 0 {
        c.prepare_cached("DELETE FROM burst WHERE rowid = ?1 AND key_id = ?2")?.execute(params![row, key_id])?;
    } else {
        let spent = i64::try_from(close.spent).unwrap_or(i64::MAX);
        c.prepare_cached(
            "UPDATE burst SET places = MIN(places, ?3), at_ms = MIN(at_ms, ?4) WHERE rowid = ?1 AND key_id = ?2",
        )?
        .execute(params![row, key_id, spent, close.last_ms])?;
    }
    Ok(())
}

/// Gives back `units` unspent on `day` (never below zero) and closes `close`.
pub(super) fn give_back(
    c: &Connection,
    key_id: &str,
    day: &str,
    units: u64,
    close: Option<&Closing>,
) -> rusqlite::Result<()> {
    if let Some(close) = close {
        close_block(c, key_id, close)?;
    }
    if units > 0 {
        c.prepare_cached("UPDATE usage SET count = MAX(count - ?3, 0) WHERE key_id = ?1 AND day = ?2")?
            .execute(params![key_id, day, i64::try_from(units).unwrap_or(i64::MAX)])?;
    }
    Ok(())
}
