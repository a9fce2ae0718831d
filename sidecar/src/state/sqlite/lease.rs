//! Leases of quota units and burst places (`KeyStore::lease`, issue 46) on SQLite.

use rusqlite::{Connection, OptionalExtension, params};

use super::used_on;
use crate::clock::utc_day;
use crate::state::{BURST_WINDOW_MS, Closing, GiveBack, LeaseAsk, Leased, Limits, places_granted, spot, units_granted};

/// The lease step (see [`KeyStore::lease`]). It runs inside the group transaction (`BEGIN
/// IMMEDIATE` took the write lock, so leases from any process are serialized).
pub(super) fn lease(
    c: &Connection,
    key_id: &str,
    limits: Limits,
    ask: &LeaseAsk,
    now_ms: i64,
) -> rusqlite::Result<Leased> {
    // The block a renewal replaces, while the window still counts it; any other is closed now.
    let renewed = match &ask.close {
        Some(close) if ask.renew => counted_block(c, key_id, close, now_ms)?,
        Some(close) => {
            close_block(c, key_id, close)?;
            None
        }
        None => None,
    };
    // Refused: the block a renewal would have replaced is closed.
    let refuse = |leased: Leased| -> rusqlite::Result<Leased> {
        if let (Some(close), Some(_)) = (&ask.close, renewed) {
            close_block(c, key_id, close)?;
        }
        Ok(leased)
    };
    let day = utc_day(now_ms.div_euclid(1000));
    let used = used_on(c, key_id, &day)?;
    if used.saturating_add(ask.units_min) > limits.daily_quota {
        return refuse(Leased::QuotaExceeded { used });
    }
    let mut places = 0;
    // An unlimited burst keeps no window (it would only grow with the load).
    if limits.burst_per_second != Limits::UNLIMITED && ask.places_want > 0 {
        c.prepare_cached("DELETE FROM burst WHERE key_id = ?1 AND at_ms <= ?2")?
            .execute(params![key_id, now_ms - BURST_WINDOW_MS])?;
        let (taken, oldest): (i64, Option<i64>) = c
            .prepare_cached("SELECT COALESCE(SUM(places), 0), MIN(at_ms) FROM burst WHERE key_id = ?1")?
            .query_row([key_id], |r| Ok((r.get(0)?, r.get(1)?)))?;
        let taken = taken.saturating_sub(renewed.map_or(0, |(_, places)| places));
        let free = limits.burst_per_second.saturating_sub(taken.max(0) as u64);
        if free < ask.places_min {
            let retry_after_ms = (oldest.unwrap_or(now_ms) + BURST_WINDOW_MS - now_ms).max(1) as u64;
            return refuse(Leased::RateLimited { retry_after_ms });
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
    let block = match (places, &ask.close, renewed) {
        (0, Some(close), Some(_)) => {
            close_block(c, key_id, close)?;
            String::new()
        }
        (0, _, _) => String::new(),
        (_, Some(close), Some((row, _))) => {
            // Counted as the larger of its places and those spent before it until its end.
            c.prepare_cached("UPDATE burst SET places = ?2, at_ms = ?3 WHERE rowid = ?1")?.execute(params![
                row,
                sql_int(places.max(close.spent)),
                now_ms.saturating_add(ask.hold_ms.max(0))
            ])?;
            row.to_string()
        }
        _ => {
            let end = if spot(ask, places) { now_ms } else { now_ms.saturating_add(ask.hold_ms.max(0)) };
            c.prepare_cached("INSERT INTO burst (key_id, at_ms, places) VALUES (?1, ?2, ?3)")?.execute(params![
                key_id,
                end,
                sql_int(places)
            ])?;
            c.last_insert_rowid().to_string()
        }
    };
    Ok(Leased::Granted { units, places, block, used })
}

fn sql_int(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// The row of `close`'s block and its places, if the window still counts it at `now_ms`.
fn counted_block(c: &Connection, key_id: &str, close: &Closing, now_ms: i64) -> rusqlite::Result<Option<(i64, i64)>> {
    let Ok(row) = close.block.parse::<i64>() else { return Ok(None) };
    c.prepare_cached("SELECT places FROM burst WHERE rowid = ?1 AND key_id = ?2 AND at_ms > ?3")?
        .query_row(params![row, key_id, now_ms - BURST_WINDOW_MS], |r| r.get(0))
        .optional()
        .map(|places| places.map(|p| (row, p)))
}

/// Closes a place block: its unspent places leave the window, its spent ones stay as taken at
/// the last of them.
fn close_block(c: &Connection, key_id: &str, close: &Closing) -> rusqlite::Result<()> {
    let Ok(row) = close.block.parse::<i64>() else { return Ok(()) };
    if close.spent == 0 {
        c.prepare_cached("DELETE FROM burst WHERE rowid = ?1 AND key_id = ?2")?.execute(params![row, key_id])?;
    } else {
        let spent = sql_int(close.spent);
        c.prepare_cached(
            "UPDATE burst SET places = MIN(places, ?3), at_ms = MIN(at_ms, ?4) WHERE rowid = ?1 AND key_id = ?2",
        )?
        .execute(params![row, key_id, spent, close.last_ms])?;
    }
    Ok(())
}

/// Gives back `back.units` unspent on `back.day` (never below zero) and closes `back.close`.
/// Its `lost` leases granted nothing here: a lease call that fails rolled its transaction back,
/// and one that answered was committed (nothing is lost in between in one process), so the ids
/// and a repeated give-back need no record.
pub(super) fn give_back(c: &Connection, key_id: &str, back: &GiveBack) -> rusqlite::Result<()> {
    if let Some(close) = &back.close {
        close_block(c, key_id, close)?;
    }
    if back.units > 0 {
        c.prepare_cached("UPDATE usage SET count = MAX(count - ?3, 0) WHERE key_id = ?1 AND day = ?2")?
            .execute(params![key_id, back.day, i64::try_from(back.units).unwrap_or(i64::MAX)])?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::state::{Closing, GiveBack, KeyStore, LeaseAsk, Leased, Limits, SqliteStore};

    fn ask(units: u64, places: u64) -> LeaseAsk {
        LeaseAsk {
            units_min: 1,
            units_want: units,
            places_min: 1,
            places_want: places,
            hold_ms: 1_000,
            ..LeaseAsk::default()
        }
    }

    #[tokio::test]
    async fn a_lease_takes_a_share_of_what_is_left_and_the_window_counts_blocks() {
        let dir = std::env::temp_dir().join(format!("ev-sqlite-lease-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let store = SqliteStore::open(dir.join("state.db")).unwrap();
        let t = 1_700_000_000_000;
        // A free key's 3 a day go one at a time, whatever is asked.
        let free = Limits { daily_quota: 3, burst_per_second: 1 };
        let got = store.lease("free", free, &ask(10, 5), t).await.unwrap();
        assert!(matches!(got, Leased::Granted { units: 1, places: 1, used: 1, .. }), "{got:?}");
        // Quota 40, burst 20: a quarter of what is left, half of the free places.
        let tiny = Limits { daily_quota: 40, burst_per_second: 20 };
        let Leased::Granted { units: 10, places: 10, block, .. } =
            store.lease("k", tiny, &ask(100, 100), t).await.unwrap()
        else {
            panic!("first lease")
        };
        let second = store.lease("k", tiny, &ask(100, 100), t + 10).await.unwrap();
        assert!(matches!(second, Leased::Granted { units: 7, places: 5, used: 17, .. }), "{second:?}");
        // Closing the first block after 3 places frees its other 7: 20 - 3 - 5 = 12, half of them.
        let close = Closing { block, spent: 3, last_ms: t + 20 };
        let third = store.lease("k", tiny, &LeaseAsk { close: Some(close), ..ask(1, 100) }, t + 30).await.unwrap();
        assert!(matches!(third, Leased::Granted { places: 6, .. }), "{third:?}");
        // The rest (6 places) goes in halves, then the window is full until the blocks' end + 1 s.
        let mut rest = 0;
        for i in 0..10 {
            match store.lease("k", tiny, &ask(1, 100), t + 40 + i).await.unwrap() {
                Leased::Granted { places, .. } => rest += places,
                Leased::RateLimited { .. } => break,
                other => panic!("{other:?}"),
            }
        }
        assert_eq!(rest, 6, "20 places a second, 14 taken");
        assert!(matches!(store.lease("k", tiny, &ask(1, 1), t + 2_100).await.unwrap(), Leased::Granted { .. }));
        // Units given back leave the day's count.
        let day = crate::clock::utc_day(t / 1000);
        let before = store.usage("k", std::slice::from_ref(&day)).await.unwrap()[0];
        store.give_back("k", &GiveBack { day: day.clone(), units: 5, ..GiveBack::default() }).await.unwrap();
        assert_eq!(store.usage("k", &[day]).await.unwrap(), vec![before - 5]);
        std::fs::remove_dir_all(&dir).ok();
    }
}
