//! SQLite side of [`ReviewStore`]: the queue, the decision history, the infrastructure index.

use async_trait::async_trait;
use email_verdict_core::Decision;
use rusqlite::{OptionalExtension, params};

use super::{SqliteStore, unavailable};
use crate::state::{
    AppliedDecision, DecisionRecord, InfraCount, ReviewCause, ReviewItem, ReviewReason, ReviewStore, StateError,
    WarmupProgress, covering_names, decision_str, parse_decision,
};

/// The latest decision row per domain: its current decision (`withdrawn` counts as none).
const CURRENT: &str = "SELECT decision FROM review_decisions WHERE domain = ?1 ORDER BY seq DESC LIMIT 1";

#[async_trait]
impl ReviewStore for SqliteStore {
    async fn note_for_review(&self, domain: &str, cause: &ReviewCause, now: i64) -> Result<(), StateError> {
        let (domain, reason, sources, listed_as) =
            (domain.to_owned(), cause.reason.as_str(), cause.sources_text(), cause.listed_as.clone());
        self.in_group(move |c| {
            c.prepare_cached(
                "INSERT INTO review_items (domain, reason, sources, listed_as, first_seen, last_seen, lookups)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?5, 1)
                 ON CONFLICT (domain) DO UPDATE SET reason = ?2, sources = ?3, listed_as = ?4,
                     last_seen = MAX(last_seen, ?5), lookups = lookups + 1",
            )
            .and_then(|mut stmt| stmt.execute(params![domain, reason, sources, listed_as, now]))
            .map_err(unavailable)?;
            Ok(())
        })
        .await
    }

    async fn review_queue(&self) -> Result<Vec<ReviewItem>, StateError> {
        self.with_conn(|c| {
            let mut stmt = c
                .prepare(
                    "SELECT domain, reason, sources, listed_as, first_seen, last_seen, lookups FROM review_items
                     ORDER BY first_seen, domain",
                )
                .map_err(unavailable)?;
            let rows = stmt
                .query_map([], |r| {
                    let texts: [String; 4] = [r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?];
                    Ok((texts, r.get::<_, i64>(4)?, r.get::<_, i64>(5)?, r.get::<_, i64>(6)?))
                })
                .map_err(unavailable)?;
            let mut items = Vec::new();
            for row in rows {
                let ([domain, reason, sources, listed_as], first_seen, last_seen, lookups) =
                    row.map_err(unavailable)?;
                let reason =
                    ReviewReason::parse(&reason).ok_or_else(|| StateError::Invalid(format!("reason {reason:?}")))?;
                if applied(c, &covering_names(&domain))?.is_none() {
                    let (sources, lookups) = (ReviewCause::parse_sources(&sources), lookups.max(0) as u64);
                    items.push(ReviewItem { domain, reason, sources, listed_as, first_seen, last_seen, lookups });
                }
            }
            Ok(items)
        })
        .await
    }

    async fn decide(&self, record: DecisionRecord) -> Result<(), StateError> {
        self.with_conn(move |c| {
            c.execute(
                "INSERT INTO review_decisions (domain, decision, reviewer, note, at) VALUES (?1, ?2, ?3, ?4, ?5)",
                params![record.domain, decision_str(record.decision), record.reviewer, record.note, record.at],
            )
            .map_err(unavailable)?;
            Ok(())
        })
        .await
    }

    async fn decision(&self, names: &[String]) -> Result<Option<AppliedDecision>, StateError> {
        let names = names.to_vec();
        self.in_group(move |c| applied(c, &names)).await
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

    async fn learn_infra(
        &self,
        domain: &str,
        disposable: bool,
        hosts: &[String],
        ips: &[String],
    ) -> Result<(), StateError> {
        let (domain, entries) = (domain.to_owned(), infra_entries(hosts, ips));
        // Grouped: the call's savepoint makes its inserts all or nothing.
        self.in_group(move |c| {
            let mut stmt = c
                .prepare_cached(
                    "INSERT INTO infra (kind, value, domain, disposable) VALUES (?1, ?2, ?3, ?4)
                     ON CONFLICT (kind, value, domain) DO UPDATE SET disposable = ?4",
                )
                .map_err(unavailable)?;
            for (kind, value) in &entries {
                stmt.execute(params![kind, value, domain, disposable]).map_err(unavailable)?;
            }
            Ok(())
        })
        .await
    }

    async fn infra_counts(&self, hosts: &[String], ips: &[String]) -> Result<Vec<InfraCount>, StateError> {
        let entries = infra_entries(hosts, ips);
        self.in_group(move |c| {
            let mut stmt = c
                .prepare_cached(
                    "SELECT COALESCE(SUM(disposable), 0), COUNT(*) FROM infra WHERE kind = ?1 AND value = ?2",
                )
                .map_err(unavailable)?;
            entries
                .iter()
                .map(|(kind, value)| {
                    let (disposable, all): (i64, i64) =
                        stmt.query_row(params![kind, value], |r| Ok((r.get(0)?, r.get(1)?))).map_err(unavailable)?;
                    Ok(InfraCount { disposable: disposable as u64, legitimate: (all - disposable) as u64 })
                })
                .collect()
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

fn infra_entries(hosts: &[String], ips: &[String]) -> Vec<(&'static str, String)> {
    hosts.iter().map(|h| ("host", h.clone())).chain(ips.iter().map(|ip| ("ip", ip.clone()))).collect()
}
