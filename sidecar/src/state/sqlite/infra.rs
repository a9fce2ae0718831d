//! SQLite side of [`InfraStore`]: `infra_facts` (one row per server, teaching domain and owner
//! of the host it came through) and `infra_marks` (reviewers' marks, append-only).

use async_trait::async_trait;
use email_verdict_core::Decision;
use rusqlite::{Connection, OptionalExtension, params};

use super::{SqliteStore, unavailable};
use crate::state::infra::{mark_in_force, mark_str};
use crate::state::{
    InfraStore, LearnedServer, MailServer, ServerEvidence, ServerFact, ServerKind, ServerMark, ServerPage, StateError,
    Teacher,
};

/// The mark in force on a server (`withdrawn` counts as none).
const CURRENT_MARK: &str = "SELECT decision FROM infra_marks WHERE kind = ?1 AND value = ?2 ORDER BY seq DESC LIMIT 1";

fn current_mark(c: &Connection, server: &MailServer) -> Result<Option<Decision>, StateError> {
    let mut stmt = c.prepare_cached(CURRENT_MARK).map_err(unavailable)?;
    let text: Option<String> =
        stmt.query_row(params![server.kind.as_str(), server.value], |r| r.get(0)).optional().map_err(unavailable)?;
    Ok(mark_in_force(text.as_deref()))
}

#[async_trait]
impl InfraStore for SqliteStore {
    async fn learn_infra(
        &self,
        domain: &str,
        disposable: bool,
        facts: &[ServerFact],
        now: i64,
    ) -> Result<(), StateError> {
        let (domain, facts) = (domain.to_owned(), facts.to_vec());
        // Grouped: the call's savepoint makes the replacement all or nothing.
        self.in_group(move |c| {
            c.prepare_cached("DELETE FROM infra_facts WHERE domain = ?1")
                .and_then(|mut stmt| stmt.execute([&domain]))
                .map_err(unavailable)?;
            let mut insert = c
                .prepare_cached(
                    "INSERT OR REPLACE INTO infra_facts (kind, value, domain, via, disposable, seen)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                )
                .map_err(unavailable)?;
            for f in &facts {
                insert
                    .execute(params![f.server.kind.as_str(), f.server.value, domain, f.via, disposable, now])
                    .map_err(unavailable)?;
            }
            Ok(())
        })
        .await
    }

    async fn infra_evidence(
        &self,
        judged: &str,
        servers: &[MailServer],
        fresh_since: i64,
    ) -> Result<Vec<ServerEvidence>, StateError> {
        let (judged, servers) = (judged.to_owned(), servers.to_vec());
        self.in_group(move |c| {
            // Disposable: the distinct domains, less those taught through a host `judged` owns
            // (the same subtraction the Redis side makes).
            let mut stmt = c
                .prepare_cached(
                    "SELECT COUNT(DISTINCT CASE WHEN disposable = 1 AND domain <> ?3 THEN domain END)
                          - COUNT(DISTINCT CASE WHEN disposable = 1 AND domain <> ?3 AND via = ?3 THEN domain END),
                            COUNT(DISTINCT CASE WHEN disposable = 0 AND domain <> ?3 THEN domain END)
                     FROM infra_facts WHERE kind = ?1 AND value = ?2 AND seen >= ?4",
                )
                .map_err(unavailable)?;
            let mut out = Vec::with_capacity(servers.len());
            for s in &servers {
                let (disposable, legitimate): (i64, i64) = stmt
                    .query_row(params![s.kind.as_str(), s.value, judged, fresh_since], |r| Ok((r.get(0)?, r.get(1)?)))
                    .map_err(unavailable)?;
                let mark = current_mark(c, s)?;
                out.push(ServerEvidence {
                    disposable: disposable.max(0) as u64,
                    legitimate: legitimate.max(0) as u64,
                    mark,
                });
            }
            Ok(out)
        })
        .await
    }

    async fn mark_server(&self, mark: ServerMark) -> Result<(), StateError> {
        self.with_conn(move |c| {
            c.execute(
                "INSERT INTO infra_marks (kind, value, decision, reviewer, note, at) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                params![
                    mark.server.kind.as_str(),
                    mark.server.value,
                    mark_str(mark.decision),
                    mark.reviewer,
                    mark.note,
                    mark.at
                ],
            )
            .map_err(unavailable)?;
            Ok(())
        })
        .await
    }

    async fn server_marks(&self, server: &MailServer) -> Result<Vec<ServerMark>, StateError> {
        let server = server.clone();
        self.with_conn(move |c| {
            let mut stmt = c
                .prepare(
                    "SELECT decision, reviewer, note, at FROM infra_marks WHERE kind = ?1 AND value = ?2 ORDER BY seq",
                )
                .map_err(unavailable)?;
            let rows = stmt
                .query_map(params![server.kind.as_str(), server.value], |r| {
                    Ok((r.get::<_, String>(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
                })
                .map_err(unavailable)?;
            rows.map(|row| {
                let (decision, reviewer, note, at) = row.map_err(unavailable)?;
                ServerMark::stored(server.clone(), &decision, reviewer, note, at)
            })
            .collect()
        })
        .await
    }

    async fn learned_servers(&self, fresh_since: i64, offset: usize, limit: usize) -> Result<ServerPage, StateError> {
        let (offset, limit) = (i64::try_from(offset).unwrap_or(i64::MAX), i64::try_from(limit).unwrap_or(i64::MAX));
        self.with_conn(move |c| {
            // Every server with a fresh fact or a mark, with its counts; marked ones without
            // facts count 0.
            let servers = "SELECT kind, value FROM infra_facts WHERE seen >= ?1
                           UNION SELECT kind, value FROM infra_marks";
            let total: i64 = c
                .query_row(&format!("SELECT COUNT(*) FROM ({servers})"), [fresh_since], |r| r.get(0))
                .map_err(unavailable)?;
            let sql = format!(
                "SELECT s.kind, s.value,
                        COUNT(DISTINCT CASE WHEN f.disposable = 1 THEN f.domain END) AS d,
                        COUNT(DISTINCT CASE WHEN f.disposable = 0 THEN f.domain END),
                        COALESCE(MAX(f.seen), 0)
                 FROM ({servers}) s
                 LEFT JOIN infra_facts f ON f.kind = s.kind AND f.value = s.value AND f.seen >= ?1
                 GROUP BY s.kind, s.value ORDER BY d DESC, s.kind, s.value LIMIT ?2 OFFSET ?3"
            );
            let mut stmt = c.prepare(&sql).map_err(unavailable)?;
            let rows = stmt
                .query_map(params![fresh_since, limit, offset], |r| {
                    Ok((
                        r.get::<_, String>(0)?,
                        r.get::<_, String>(1)?,
                        r.get::<_, i64>(2)?,
                        r.get::<_, i64>(3)?,
                        r.get(4)?,
                    ))
                })
                .map_err(unavailable)?;
            let mut page = Vec::new();
            for row in rows {
                let (k, value, disposable, legitimate, last_seen) = row.map_err(unavailable)?;
                let server = MailServer { kind: ServerKind::stored(&k)?, value };
                let mark = current_mark(c, &server)?;
                page.push(LearnedServer {
                    server,
                    disposable: disposable.max(0) as u64,
                    legitimate: legitimate.max(0) as u64,
                    last_seen,
                    mark,
                });
            }
            Ok(ServerPage { servers: page, total: total.max(0) as u64 })
        })
        .await
    }

    async fn server_teachers(
        &self,
        server: &MailServer,
        fresh_since: i64,
        limit: usize,
    ) -> Result<Vec<Teacher>, StateError> {
        let server = server.clone();
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        self.with_conn(move |c| {
            let mut stmt = c
                .prepare(
                    "SELECT domain, MAX(disposable), group_concat(via, ','), MAX(seen) FROM infra_facts
                     WHERE kind = ?1 AND value = ?2 AND seen >= ?3
                     GROUP BY domain ORDER BY MAX(seen) DESC, domain LIMIT ?4",
                )
                .map_err(unavailable)?;
            let rows = stmt
                .query_map(params![server.kind.as_str(), server.value, fresh_since, limit], |r| {
                    Ok((r.get::<_, String>(0)?, r.get::<_, bool>(1)?, r.get::<_, String>(2)?, r.get::<_, i64>(3)?))
                })
                .map_err(unavailable)?;
            rows.map(|row| {
                let (domain, disposable, via, seen) = row.map_err(unavailable)?;
                Ok(Teacher::stored(domain, disposable, &via, seen))
            })
            .collect()
        })
        .await
    }
}
