//! SQLite side of [`ReviewStore`]: the queue, the decision history, the infrastructure index.

use async_trait::async_trait;
use email_verdict_core::Decision;
use rusqlite::{OptionalExtension, params};

use super::{SqliteStore, unavailable};
use crate::state::{
    DecisionRecord, InfraCount, ReviewItem, ReviewReason, ReviewStore, StateError, decision_str, parse_decision,
};

/// The latest decision row per domain: its current decision (`withdrawn` counts as none).
const CURRENT: &str = "SELECT decision FROM review_decisions WHERE domain = ?1 ORDER BY seq DESC LIMIT 1";

#[async_trait]
impl ReviewStore for SqliteStore {
    async fn note_for_review(&self, domain: &str, reason: ReviewReason, now: i64) -> Result<(), StateError> {
        let domain = domain.to_owned();
        self.in_group(move |c| {
            c.prepare_cached(
                "INSERT INTO review_items (domain, reason, first_seen, last_seen, lookups) VALUES (?1, ?2, ?3, ?3, 1)
                 ON CONFLICT (domain) DO UPDATE SET reason = ?2, last_seen = MAX(last_seen, ?3), lookups = lookups + 1",
            )
            .and_then(|mut stmt| stmt.execute(params![domain, reason.as_str(), now]))
            .map_err(unavailable)?;
            Ok(())
        })
        .await
    }

    async fn review_queue(&self) -> Result<Vec<ReviewItem>, StateError> {
        self.with_conn(|c| {
            let mut stmt = c
                .prepare(&format!(
                    "SELECT domain, reason, first_seen, last_seen, lookups FROM review_items i
                     WHERE COALESCE(({}), 'withdrawn') = 'withdrawn' ORDER BY first_seen, domain",
                    CURRENT.replace("?1", "i.domain")
                ))
                .map_err(unavailable)?;
            let rows = stmt
                .query_map([], |r| {
                    Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?, r.get(2)?, r.get(3)?, r.get::<_, i64>(4)?))
                })
                .map_err(unavailable)?;
            rows.map(|row| {
                let (domain, reason, first_seen, last_seen, lookups) = row.map_err(unavailable)?;
                let reason =
                    ReviewReason::parse(&reason).ok_or_else(|| StateError::Invalid(format!("reason {reason:?}")))?;
                Ok(ReviewItem { domain, reason, first_seen, last_seen, lookups: lookups.max(0) as u64 })
            })
            .collect()
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

    async fn decision(&self, domain: &str) -> Result<Option<Decision>, StateError> {
        let domain = domain.to_owned();
        self.in_group(move |c| {
            let mut stmt = c.prepare_cached(CURRENT).map_err(unavailable)?;
            let current: Option<String> = stmt.query_row([domain], |r| r.get(0)).optional().map_err(unavailable)?;
            Ok(current.and_then(|d| parse_decision(&d)).flatten())
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
}

fn infra_entries(hosts: &[String], ips: &[String]) -> Vec<(&'static str, String)> {
    hosts.iter().map(|h| ("host", h.clone())).chain(ips.iter().map(|ip| ("ip", ip.clone()))).collect()
}
