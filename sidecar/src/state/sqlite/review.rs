//! SQLite side of [`ReviewStore`]: the queue, the decision history, the warm-up's progress.

use async_trait::async_trait;
use email_verdict_core::Decision;
use rusqlite::{Connection, OptionalExtension, params};

use super::{SqliteStore, unavailable};
use crate::state::queue;
use crate::state::{
    AppliedDecision, DecisionRecord, ReviewCause, ReviewItem, ReviewReason, ReviewStore, StateError, WarmupProgress,
    covering_names, decision_str, parse_decision,
};

/// The latest decision row per domain: its current decision (`withdrawn` counts as none).
const CURRENT: &str = "SELECT decision FROM review_decisions WHERE domain = ?1 ORDER BY seq DESC LIMIT 1";

#[async_trait]
impl ReviewStore for SqliteStore {
    fn queue_capacity(&self) -> usize {
        self.queue_capacity
    }

    async fn note_for_review(&self, domain: &str, cause: &ReviewCause, now: i64) -> Result<(), StateError> {
        let (domain, reason, sources, listed_as) =
            (domain.to_owned(), cause.reason.as_str(), cause.sources_text(), cause.listed_as.clone());
        let (likelihood, servers, capacity) = (cause.likelihood, cause.servers_text(), self.queue_capacity);
        self.in_group(move |c| {
            let lookups: i64 = c
                .prepare_cached(
                    "INSERT INTO review_items
                         (domain, reason, sources, listed_as, first_seen, last_seen, lookups, likelihood, servers)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?5, 1, ?6, ?7)
                     ON CONFLICT (domain) DO UPDATE SET reason = ?2, sources = ?3, listed_as = ?4,
                         last_seen = MAX(last_seen, ?5), lookups = lookups + 1, likelihood = ?6, servers = ?7
                     RETURNING lookups",
                )
                .and_then(|mut stmt| {
                    stmt.query_row(params![domain, reason, sources, listed_as, now, likelihood, servers], |r| r.get(0))
                })
                .map_err(unavailable)?;
            let priority = queue::priority(likelihood, lookups.max(0) as u64);
            c.prepare_cached("UPDATE review_items SET priority = ?2 WHERE domain = ?1")
                .and_then(|mut stmt| stmt.execute(params![domain, int(priority)]))
                .map_err(unavailable)?;
            // A new entry may be covered by a decision already (made on a parent), and only a
            // new entry can take the queue past its bound.
            if lookups == 1 {
                settle(c, std::slice::from_ref(&domain))?;
                bound(c, capacity)?;
            }
            Ok(())
        })
        .await
    }

    async fn review_queue_len(&self) -> Result<usize, StateError> {
        self.with_conn(|c| {
            let n: i64 = c
                .prepare_cached("SELECT n FROM review_size WHERE id = 1")
                .and_then(|mut stmt| stmt.query_row([], |r| r.get(0)))
                .map_err(unavailable)?;
            Ok(usize::try_from(n).unwrap_or(0))
        })
        .await
    }

    async fn review_queue(&self) -> Result<Vec<ReviewItem>, StateError> {
        self.with_conn(|c| {
            let mut stmt = c
                .prepare(
                    "SELECT domain, reason, sources, listed_as, servers, first_seen, last_seen, lookups, likelihood
                     FROM review_items WHERE decided = 0 ORDER BY first_seen, domain",
                )
                .map_err(unavailable)?;
            let rows = stmt
                .query_map([], |r| {
                    let texts: [String; 5] = [r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?];
                    Ok((texts, [r.get::<_, i64>(5)?, r.get(6)?, r.get(7)?, r.get(8)?]))
                })
                .map_err(unavailable)?;
            let mut items = Vec::new();
            for row in rows {
                let ([domain, reason, sources, listed_as, servers], [first_seen, last_seen, lookups, likelihood]) =
                    row.map_err(unavailable)?;
                let reason =
                    ReviewReason::parse(&reason).ok_or_else(|| StateError::Invalid(format!("reason {reason:?}")))?;
                items.push(ReviewItem {
                    domain,
                    reason,
                    sources: ReviewCause::parse_sources(&sources),
                    listed_as,
                    first_seen,
                    last_seen,
                    lookups: lookups.max(0) as u64,
                    likelihood: u32::try_from(likelihood).unwrap_or(0),
                    servers: ReviewCause::parse_sources(&servers),
                });
            }
            Ok(items)
        })
        .await
    }

    async fn review_dropped(&self) -> Result<Vec<(ReviewReason, u64)>, StateError> {
        self.with_conn(|c| {
            let mut stmt =
                c.prepare("SELECT reason, count FROM review_dropped ORDER BY reason").map_err(unavailable)?;
            let rows =
                stmt.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?))).map_err(unavailable)?;
            rows.map(|row| {
                let (reason, count) = row.map_err(unavailable)?;
                let reason =
                    ReviewReason::parse(&reason).ok_or_else(|| StateError::Invalid(format!("reason {reason:?}")))?;
                Ok((reason, count.max(0) as u64))
            })
            .collect()
        })
        .await
    }

    async fn dismiss(&self, domains: &[String]) -> Result<(), StateError> {
        let domains = domains.to_vec();
        self.with_conn(move |c| {
            let tx = c.unchecked_transaction().map_err(unavailable)?;
            for domain in &domains {
                tx.execute("DELETE FROM review_items WHERE domain = ?1", [domain]).map_err(unavailable)?;
            }
            tx.commit().map_err(unavailable)
        })
        .await
    }

    async fn decide(&self, record: DecisionRecord) -> Result<(), StateError> {
        self.with_conn(move |c| {
            let tx = c.unchecked_transaction().map_err(unavailable)?;
            tx.execute(
                "INSERT INTO review_decisions (domain, decision, reviewer, note, at) VALUES (?1, ?2, ?3, ?4, ?5)",
                params![record.domain, decision_str(record.decision), record.reviewer, record.note, record.at],
            )
            .map_err(unavailable)?;
            // The queued entries it may cover: the name and its subdomains.
            let covered: Vec<String> = {
                let mut stmt = tx
                    .prepare("SELECT domain FROM review_items WHERE domain = ?1 OR domain LIKE '%.' || ?1")
                    .map_err(unavailable)?;
                let rows = stmt.query_map([&record.domain], |r| r.get(0)).map_err(unavailable)?;
                rows.collect::<Result<_, _>>().map_err(unavailable)?
            };
            settle(&tx, &covered)?;
            tx.commit().map_err(unavailable)?;
            Ok(())
        })
        .await?;
        self.decisions.invalidate();
        Ok(())
    }

    async fn decision(&self, names: &[String]) -> Result<Option<AppliedDecision>, StateError> {
        let read = async || {
            let names = names.to_vec();
            self.in_group(move |c| applied(c, &names)).await
        };
        self.decisions.get(names, async || self.decisions_version().await, read).await
    }

    async fn decisions_version(&self) -> Result<u64, StateError> {
        // The history is append-only: its last row moves with every decision of any process.
        self.with_conn(|c| {
            c.prepare_cached("SELECT COALESCE(MAX(seq), 0) FROM review_decisions")
                .and_then(|mut s| s.query_row([], |r| r.get::<_, i64>(0)))
                .map(|v| v.max(0) as u64)
                .map_err(unavailable)
        })
        .await
    }

    async fn decision_history(&self, domain: &str) -> Result<Vec<DecisionRecord>, StateError> {
        let domain = domain.to_owned();
        self.with_conn(move |c| {
            let mut stmt = c
                .prepare("SELECT decision, reviewer, note, at FROM review_decisions WHERE domain = ?1 ORDER BY seq")
                .map_err(unavailable)?;
            let rows = stmt
                .query_map([&domain], |r| Ok((r.get::<_, String>(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
                .map_err(unavailable)?;
            rows.map(|row| {
                let (decision, reviewer, note, at) = row.map_err(unavailable)?;
                let decision =
                    parse_decision(&decision).ok_or_else(|| StateError::Invalid(format!("decision {decision:?}")))?;
                Ok(DecisionRecord { domain: domain.clone(), decision, reviewer, note, at })
            })
            .collect()
        })
        .await
    }

    async fn decisions_in_force(&self, limit: usize) -> Result<Vec<(String, Decision)>, StateError> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        self.with_conn(move |c| {
            // The latest decision of each name (the history is append-only, `seq` orders it).
            let mut stmt = c
                .prepare(
                    "SELECT d.domain, d.decision FROM review_decisions d
                     JOIN (SELECT domain, MAX(seq) AS seq FROM review_decisions GROUP BY domain) l
                       ON d.domain = l.domain AND d.seq = l.seq
                     WHERE d.decision <> 'withdrawn' ORDER BY d.domain LIMIT ?1",
                )
                .map_err(unavailable)?;
            let rows = stmt
                .query_map([limit], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?)))
                .map_err(unavailable)?;
            rows.map(|row| {
                let (domain, decision) = row.map_err(unavailable)?;
                match parse_decision(&decision) {
                    Some(Some(d)) => Ok((domain, d)),
                    _ => Err(StateError::Invalid(format!("decision {decision:?}"))),
                }
            })
            .collect()
        })
        .await
    }

    async fn queued_server(&self, domain: &str) -> Result<Option<String>, StateError> {
        let domain = domain.to_owned();
        self.with_conn(move |c| {
            let servers: Option<String> = c
                .prepare_cached("SELECT servers FROM review_items WHERE domain = ?1 AND decided = 0")
                .and_then(|mut stmt| stmt.query_row([&domain], |r| r.get(0)).optional())
                .map_err(unavailable)?;
            Ok(servers.and_then(|s| ReviewCause::parse_sources(&s).into_iter().next()))
        })
        .await
    }

    async fn warmup_progress(&self) -> Result<WarmupProgress, StateError> {
        self.with_conn(|c| {
            let row = c
                .query_row("SELECT cursor, resolved, learned, failed, updated_at FROM warmup WHERE id = 1", [], |r| {
                    Ok(WarmupProgress {
                        cursor: r.get(0)?,
                        resolved: r.get::<_, i64>(1)?.max(0) as u64,
                        learned: r.get::<_, i64>(2)?.max(0) as u64,
                        failed: r.get::<_, i64>(3)?.max(0) as u64,
                        updated_at: r.get(4)?,
                    })
                })
                .optional()
                .map_err(unavailable)?;
            Ok(row.unwrap_or_default())
        })
        .await
    }

    async fn save_warmup_progress(&self, p: &WarmupProgress) -> Result<(), StateError> {
        let p = p.clone();
        self.with_conn(move |c| {
            c.execute(
                "INSERT INTO warmup (id, cursor, resolved, learned, failed, updated_at) VALUES (1, ?1, ?2, ?3, ?4, ?5)
                 ON CONFLICT (id) DO UPDATE SET cursor = ?1, resolved = ?2, learned = ?3, failed = ?4, updated_at = ?5",
                params![p.cursor, int(p.resolved), int(p.learned), int(p.failed), p.updated_at],
            )
            .map_err(unavailable)?;
            Ok(())
        })
        .await
    }
}

/// A count as SQLite stores it (INTEGER is i64).
fn int(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// Drops entries past `capacity`: decided ones first, then the lowest priority (the oldest
/// among equals); the undecided ones dropped are counted by reason. O(log n) per entry dropped:
/// the size is kept (`review_size`, by triggers) and the order is an index
/// (`review_items_by_eviction`), so the lookup path never scans or sorts the queue.
fn bound(c: &Connection, capacity: usize) -> Result<(), StateError> {
    let count: i64 = c
        .prepare_cached("SELECT n FROM review_size WHERE id = 1")
        .and_then(|mut stmt| stmt.query_row([], |r| r.get(0)))
        .map_err(unavailable)?;
    let over = count - i64::try_from(capacity).unwrap_or(i64::MAX);
    if over <= 0 {
        return Ok(());
    }
    let victims: Vec<(String, String, bool)> = {
        let mut stmt = c
            .prepare_cached(
                "SELECT domain, reason, decided FROM review_items INDEXED BY review_items_by_eviction
                 ORDER BY decided DESC, priority, last_seen, domain LIMIT ?1",
            )
            .map_err(unavailable)?;
        let rows = stmt.query_map([over], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?))).map_err(unavailable)?;
        rows.collect::<Result<_, _>>().map_err(unavailable)?
    };
    for (domain, reason, decided) in victims {
        c.prepare_cached("DELETE FROM review_items WHERE domain = ?1")
            .and_then(|mut stmt| stmt.execute([&domain]))
            .map_err(unavailable)?;
        if !decided {
            c.prepare_cached(
                "INSERT INTO review_dropped (reason, count) VALUES (?1, 1)
                 ON CONFLICT (reason) DO UPDATE SET count = count + 1",
            )
            .and_then(|mut stmt| stmt.execute([&reason]))
            .map_err(unavailable)?;
        }
    }
    Ok(())
}

/// Sets `decided` on each of the queued `domains` from the decisions in force.
fn settle(c: &Connection, domains: &[String]) -> Result<(), StateError> {
    for domain in domains {
        let decided = applied(c, &covering_names(domain))?.is_some();
        c.execute("UPDATE review_items SET decided = ?2 WHERE domain = ?1", params![domain, decided])
            .map_err(unavailable)?;
    }
    Ok(())
}

/// For a file from before the `decided` column: sets it on every entry a decision covers.
pub(super) fn mark_decided_entries(c: &Connection) -> rusqlite::Result<()> {
    let domains: Vec<String> = {
        let mut stmt = c.prepare("SELECT domain FROM review_items")?;
        let rows = stmt.query_map([], |r| r.get(0))?;
        rows.collect::<Result<_, _>>()?
    };
    settle(c, &domains).map_err(|e| rusqlite::Error::ToSqlConversionFailure(Box::new(e)))
}

/// The decision in force for the first of `names` that has one.
fn applied(c: &rusqlite::Connection, names: &[String]) -> Result<Option<AppliedDecision>, StateError> {
    let mut stmt = c.prepare_cached(CURRENT).map_err(unavailable)?;
    for name in names {
        let current: Option<String> = stmt.query_row([name], |r| r.get(0)).optional().map_err(unavailable)?;
        if let Some(decision) = current.and_then(|d| parse_decision(&d)).flatten() {
            return Ok(Some(AppliedDecision { decision, on: name.clone() }));
        }
    }
    Ok(None)
}
