//! SQLite side of [`RecheckStore`]: one row per domain with the time of its last re-check.

use async_trait::async_trait;
use rusqlite::{OptionalExtension, params};

use super::{SqliteStore, unavailable};
use crate::state::{Recheck, RecheckStore, StateError};

#[async_trait]
impl RecheckStore for SqliteStore {
    async fn try_recheck(&self, domain: &str, now: i64, interval: i64) -> Result<Recheck, StateError> {
        let domain = domain.to_owned();
        self.with_conn(move |c| {
            // One statement: the upsert only writes when the last re-check is old enough, so
            // of concurrent callers (any process) exactly one gets a row back.
            let taken: Option<i64> = c
                .query_row(
                    "INSERT INTO rechecks (domain, last_at) VALUES (?1, ?2)
                     ON CONFLICT (domain) DO UPDATE SET last_at = ?2 WHERE last_at <= ?2 - ?3
                     RETURNING last_at",
                    params![domain, now, interval],
                    |r| r.get(0),
                )
                .optional()
                .map_err(unavailable)?;
            if taken.is_some() {
                return Ok(Recheck::Allowed);
            }
            let last: i64 = c
                .query_row("SELECT last_at FROM rechecks WHERE domain = ?1", [&domain], |r| r.get(0))
                .map_err(unavailable)?;
            Ok(Recheck::Refused { next_at: last + interval })
        })
        .await
    }

    async fn give_back_recheck(&self, domain: &str, at: i64) -> Result<(), StateError> {
        let domain = domain.to_owned();
        self.with_conn(move |c| {
            // The slot before it was older than an interval (it was allowed): no row is as good.
            c.execute("DELETE FROM rechecks WHERE domain = ?1 AND last_at = ?2", params![domain, at])
                .map(drop)
                .map_err(unavailable)
        })
        .await
    }
}
