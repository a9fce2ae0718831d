//! `sqlite:PATH`: the embedded single-node store (WAL mode, so the CLI and the server can use
//! one file at once).
//!
//! One thread owns the connection and runs the store's calls, fed by a channel: under load this
//! beats a blocking-pool task per call contending for a mutex (a convoy of threads handing the
//! connection over, measured in BENCHMARKS.md). The lookup path's calls are committed in groups
//! (`worker.rs`); its statements are prepared once and cached.

use std::path::{Path, PathBuf};
use std::sync::{Arc, mpsc};

use async_trait::async_trait;
use rusqlite::{Connection, OptionalExtension, params};

use super::{
    BURST_WINDOW_MS, GiveBack, KeyChange, KeyListing, KeyRecord, KeyStore, LeaseAsk, Leased, Limits, Replication,
    StateError,
};
use crate::clock::utc_day;
use crate::keys::KeyHash;

/// The migration that added `review_items.decided`: opening an older file sets it afterwards.
const DECIDED_MIGRATION: usize = 8;

mod infra;
mod lease;
mod recheck;
mod review;
mod schema;
mod signups;
#[cfg(test)]
mod statements;
mod worker;

use schema::MIGRATIONS;
use worker::{Job, Pending, guarded};

/// Statements kept prepared (the lookup path uses a handful; the rest are admin calls).
const STATEMENT_CACHE: usize = 64;

pub struct SqliteStore {
    jobs: mpsc::Sender<Job>,
    /// The database file and its identity when opened, to notice it deleted or replaced.
    file: (PathBuf, Option<FileId>),
    /// Entries the review queue keeps ([`super::queue::QUEUE_CAPACITY`] unless told otherwise).
    queue_capacity: usize,
    decisions: super::versioned_cache::DecisionCache,
    keys: super::versioned_cache::KeyCache,
}

/// Device and inode: what a path names, independent of its name.
type FileId = (u64, u64);

fn file_id(path: &Path) -> std::io::Result<FileId> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(path).map(|m| (m.dev(), m.ino()))
}

/// SQLite maps `-shm` into memory and writes `-wal`: one it cannot write is refused up front,
/// naming the file, instead of failing later in a way that names neither.
fn check_writable(path: &Path) -> Result<(), StateError> {
    for suffix in ["", "-wal", "-shm"] {
        let file = PathBuf::from(format!("{}{suffix}", path.display()));
        match std::fs::OpenOptions::new().write(true).open(&file) {
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => {
                return Err(unavailable(format!("{}: cannot be written ({e}): fix its owner or mode", file.display())));
            }
        }
    }
    Ok(())
}

impl SqliteStore {
    pub fn open(path: impl AsRef<Path>) -> Result<Self, StateError> {
        let path = path.as_ref();
        check_writable(path)?;
        let conn = Connection::open(path).map_err(|e| unavailable(format!("{}: {e}", path.display())))?;
        conn.busy_timeout(std::time::Duration::from_secs(5)).map_err(unavailable)?;
        conn.set_prepared_statement_cache_capacity(STATEMENT_CACHE);
        prepare(&conn)?;
        let (jobs, queue) = mpsc::channel::<Job>();
        // The thread ends, closing the connection, when the store (the last sender) is dropped.
        std::thread::Builder::new()
            .name("sqlite-state".into())
            .spawn(move || worker::serve(&conn, &queue))
            .map_err(unavailable)?;
        Ok(Self {
            jobs,
            file: (path.to_path_buf(), file_id(path).ok()),
            queue_capacity: super::queue::QUEUE_CAPACITY,
            decisions: super::versioned_cache::DecisionCache::for_decisions(),
            keys: super::versioned_cache::KeyCache::for_keys(),
        })
    }

    /// The same store with a review queue bounded at `capacity` entries (tests use a few).
    pub fn with_queue_capacity(mut self, capacity: usize) -> Self {
        self.queue_capacity = capacity.max(1);
        self
    }

    /// Runs `f` with the connection on its thread, on its own (see [`worker`]).
    pub(super) async fn with_conn<T, F>(&self, f: F) -> Result<T, StateError>
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> Result<T, StateError> + Send + 'static,
    {
        let (reply, answer) = tokio::sync::oneshot::channel();
        let job = Job::Alone(Box::new(move |conn| {
            let _ = reply.send(guarded(|| f(conn)));
        }));
        self.send(job, answer).await
    }

    /// Runs `f` inside the group transaction of the calls waiting with it (see [`worker`]);
    /// answered after that transaction commits. `f` must not open a transaction itself.
    pub(super) async fn in_group<T, F>(&self, f: F) -> Result<T, StateError>
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> Result<T, StateError> + Send + 'static,
    {
        let (reply, answer) = tokio::sync::oneshot::channel();
        self.send(Job::Grouped(Box::new(Pending::new(f, reply))), answer).await
    }

    async fn send<T>(
        &self,
        job: Job,
        answer: tokio::sync::oneshot::Receiver<Result<T, StateError>>,
    ) -> Result<T, StateError> {
        self.jobs.send(job).map_err(|_| unavailable("the state store's thread has stopped"))?;
        answer.await.map_err(|_| unavailable("the state store's thread has stopped"))?
    }
}

/// WAL mode and the schema, tried again while another process holds the file: switching a new
/// file to WAL can answer "database is locked" at once, without waiting out the busy timeout,
/// when two processes open it together (two `keys create` on a new file).
fn prepare(conn: &Connection) -> Result<(), StateError> {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let attempt = conn
            .pragma_update(None, "journal_mode", "WAL")
            .and_then(|()| conn.pragma_update(None, "synchronous", "NORMAL"))
            .and_then(|()| migrate(conn));
        match attempt {
            Ok(schema) => return schema,
            Err(e) if is_busy(&e) && std::time::Instant::now() < deadline => {
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            Err(e) => return Err(unavailable(e)),
        }
    }
}

fn is_busy(e: &rusqlite::Error) -> bool {
    matches!(e.sqlite_error_code(), Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked))
}

/// Applies the migrations not yet applied, all in one `BEGIN IMMEDIATE` transaction that reads
/// `user_version` first: two processes opening a new file at once take turns, and the second
/// finds the schema done instead of creating it again. The outer error is SQLite's (retried
/// when busy), the inner one a schema newer than this binary.
fn migrate(conn: &Connection) -> rusqlite::Result<Result<(), StateError>> {
    let tx = rusqlite::Transaction::new_unchecked(conn, rusqlite::TransactionBehavior::Immediate)?;
    let version: i64 = tx.pragma_query_value(None, "user_version", |r| r.get(0))?;
    let version = usize::try_from(version).unwrap_or(usize::MAX);
    if version > MIGRATIONS.len() {
        return Ok(Err(StateError::Invalid(format!("schema version {version} is newer than this binary"))));
    }
    if version < MIGRATIONS.len() {
        for sql in &MIGRATIONS[version..] {
            tx.execute_batch(sql)?;
        }
        if version < DECIDED_MIGRATION {
            review::mark_decided_entries(&tx)?;
        }
        tx.pragma_update(None, "user_version", MIGRATIONS.len() as i64)?;
        tx.commit()?;
    }
    Ok(Ok(()))
}

pub(super) fn unavailable(e: impl std::fmt::Display) -> StateError {
    StateError::Unavailable(e.to_string())
}

const KEY_COLUMNS: &str = "id, name, plan, allow_ips, created_at, revoked_at IS NOT NULL";

/// A key row as SQLite returns it, before its text columns are parsed.
struct KeyRow {
    id: String,
    name: String,
    plan: String,
    allow_ips: String,
    created_at: i64,
    revoked: bool,
}

impl KeyRow {
    fn read(row: &rusqlite::Row<'_>) -> rusqlite::Result<Self> {
        Ok(Self {
            id: row.get(0)?,
            name: row.get(1)?,
            plan: row.get(2)?,
            allow_ips: row.get(3)?,
            created_at: row.get(4)?,
            revoked: row.get(5)?,
        })
    }

    fn parse(self) -> Result<KeyRecord, StateError> {
        let invalid = |what: &str| StateError::Invalid(format!("key {}: bad {what}", self.id));
        let plan = self.plan.parse().map_err(|_| invalid("plan"))?;
        let allow_ips = self
            .allow_ips
            .split(',')
            .filter(|s| !s.is_empty())
            .map(|s| s.parse().map_err(|_| invalid("network")))
            .collect::<Result<_, _>>()?;
        Ok(KeyRecord {
            id: self.id,
            name: self.name,
            plan,
            allow_ips,
            created_at: self.created_at,
            revoked: self.revoked,
        })
    }
}

fn join_networks(nets: &[ipnet::IpNet]) -> String {
    nets.iter().map(ToString::to_string).collect::<Vec<_>>().join(",")
}

fn read_key(c: &Connection, id: &str) -> Result<Option<KeyRecord>, StateError> {
    let sql = format!("SELECT {KEY_COLUMNS} FROM api_keys WHERE id = ?1");
    let row = c.query_row(&sql, [id], KeyRow::read).optional().map_err(unavailable)?;
    row.map(KeyRow::parse).transpose()
}

/// The units `key_id` used on `day` (`YYYY-MM-DD`, UTC).
pub(super) fn used_on(c: &Connection, key_id: &str, day: &str) -> rusqlite::Result<u64> {
    let used: Option<i64> = c
        .prepare_cached("SELECT count FROM usage WHERE key_id = ?1 AND day = ?2")?
        .query_row(params![key_id, day], |r| r.get(0))
        .optional()?;
    Ok(used.unwrap_or(0).max(0) as u64)
}

/// [`admit`]'s two tests, without counting.
fn would_admit(c: &Connection, key_id: &str, limits: Limits, now_ms: i64) -> rusqlite::Result<bool> {
    if used_on(c, key_id, &utc_day(now_ms.div_euclid(1000)))? >= limits.daily_quota {
        return Ok(false);
    }
    if limits.burst_per_second == Limits::UNLIMITED {
        return Ok(true);
    }
    let in_window: i64 = c
        .prepare_cached("SELECT COALESCE(SUM(places), 0) FROM burst WHERE key_id = ?1 AND at_ms > ?2")?
        .query_row(params![key_id, now_ms - BURST_WINDOW_MS], |r| r.get(0))?;
    Ok((in_window.max(0) as u64) < limits.burst_per_second)
}

#[async_trait]
impl KeyStore for SqliteStore {
    fn lease_journal_dir(&self) -> Option<PathBuf> {
        Some(PathBuf::from(format!("{}-leases", self.file.0.display())))
    }

    fn problem(&self) -> Option<String> {
        let (path, opened) = &self.file;
        let now = file_id(path).ok();
        (opened.is_some() && now != *opened).then(|| {
            let what = if now.is_none() { "deleted" } else { "replaced" };
            format!(
                "state file {} was {what} while serving: what is written now is lost at exit; restart",
                path.display()
            )
        })
    }

    async fn insert_key(&self, key: KeyRecord, hash: KeyHash) -> Result<Replication, StateError> {
        self.with_conn(move |c| {
            c.execute(
                "INSERT INTO api_keys (id, key_hash, name, plan, allow_ips, created_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                params![key.id, hash.hex(), key.name, key.plan.as_str(), join_networks(&key.allow_ips), key.created_at],
            )
            .map_err(unavailable)
        })
        .await?;
        self.keys.invalidate();
        Ok(Replication::NoReplicas)
    }

    async fn key_by_hash(&self, hash: &KeyHash) -> Result<Option<Arc<KeyRecord>>, StateError> {
        let read = async || {
            let hash = hash.hex();
            self.in_group(move |c| {
                let sql = format!("SELECT {KEY_COLUMNS} FROM api_keys WHERE key_hash = ?1");
                let mut stmt = c.prepare_cached(&sql).map_err(unavailable)?;
                let row = stmt.query_row([hash], KeyRow::read).optional().map_err(unavailable)?;
                Ok(row.map(KeyRow::parse).transpose()?.map(Arc::new))
            })
            .await
        };
        self.keys.get(hash, async || self.keys_version().await, read).await
    }

    async fn list_keys(&self, day: &str) -> Result<Vec<KeyListing>, StateError> {
        let day = day.to_owned();
        self.with_conn(move |c| {
            let sql = format!(
                "SELECT {KEY_COLUMNS}, COALESCE(u.count, 0) FROM api_keys k
                 LEFT JOIN usage u ON u.key_id = k.id AND u.day = ?1 ORDER BY k.created_at, k.id"
            );
            let mut stmt = c.prepare(&sql).map_err(unavailable)?;
            let rows =
                stmt.query_map([day], |row| Ok((KeyRow::read(row)?, row.get::<_, i64>(6)?))).map_err(unavailable)?;
            rows.map(|r| {
                let (key, used) = r.map_err(unavailable)?;
                Ok(KeyListing { key: key.parse()?, used_today: used.max(0) as u64 })
            })
            .collect()
        })
        .await
    }

    async fn key_by_id(&self, id: &str) -> Result<Option<KeyRecord>, StateError> {
        let id = id.to_owned();
        self.with_conn(move |c| read_key(c, &id)).await
    }

    async fn update_key(&self, id: &str, change: KeyChange) -> Result<Option<KeyRecord>, StateError> {
        let id = id.to_owned();
        let changed = self
            .with_conn(move |c| {
                let tx = c.unchecked_transaction().map_err(unavailable)?;
                let Some(mut key) = read_key(&tx, &id)? else { return Ok(None) };
                key.name = change.name.unwrap_or(key.name);
                key.plan = change.plan.unwrap_or(key.plan);
                key.allow_ips = change.allow_ips.unwrap_or(key.allow_ips);
                tx.execute(
                    "UPDATE api_keys SET name = ?2, plan = ?3, allow_ips = ?4 WHERE id = ?1",
                    params![id, key.name, key.plan.as_str(), join_networks(&key.allow_ips)],
                )
                .map_err(unavailable)?;
                tx.commit().map_err(unavailable)?;
                Ok(Some(key))
            })
            .await;
        self.keys.invalidate();
        changed
    }

    async fn lease(&self, key_id: &str, limits: Limits, ask: &LeaseAsk, now_ms: i64) -> Result<Leased, StateError> {
        let (key_id, ask) = (key_id.to_owned(), ask.clone());
        self.in_group(move |c| lease::lease(c, &key_id, limits, &ask, now_ms).map_err(unavailable)).await
    }

    async fn give_back(&self, key_id: &str, back: &GiveBack) -> Result<(), StateError> {
        let (key_id, back) = (key_id.to_owned(), back.clone());
        self.in_group(move |c| lease::give_back(c, &key_id, &back).map_err(unavailable)).await
    }

    async fn would_admit(&self, key_id: &str, limits: Limits, now_ms: i64) -> Result<bool, StateError> {
        let key_id = key_id.to_owned();
        self.in_group(move |c| would_admit(c, &key_id, limits, now_ms).map_err(unavailable)).await
    }

    async fn refund(&self, key_id: &str, day: &str, units: u64, cap: Option<u64>) -> Result<u64, StateError> {
        let (key_id, day) = (key_id.to_owned(), day.to_owned());
        let units = i64::try_from(units).unwrap_or(i64::MAX);
        let (cap, counted) = (cap.map_or(i64::MAX, |c| i64::try_from(c).unwrap_or(i64::MAX)), i64::from(cap.is_some()));
        self.in_group(move |c| {
            // Inside the group transaction: read and write are one step.
            let row: Option<(i64, i64)> = c
                .prepare_cached("SELECT count, refunded FROM usage WHERE key_id = ?1 AND day = ?2")
                .and_then(|mut stmt| stmt.query_row(params![key_id, day], |r| Ok((r.get(0)?, r.get(1)?))).optional())
                .map_err(unavailable)?;
            let Some((count, refunded)) = row else { return Ok(0) };
            let given = units.min(cap.saturating_sub(refunded * counted)).min(count).max(0);
            if given > 0 {
                c.prepare_cached(
                    "UPDATE usage SET count = count - ?3, refunded = refunded + ?3 * ?4 WHERE key_id = ?1 AND day = ?2",
                )
                .and_then(|mut stmt| stmt.execute(params![key_id, day, given, counted]))
                .map_err(unavailable)?;
            }
            Ok(given as u64)
        })
        .await
    }

    async fn usage(&self, key_id: &str, days: &[String]) -> Result<Vec<u64>, StateError> {
        let (key_id, days) = (key_id.to_owned(), days.to_vec());
        self.in_group(move |c| days.iter().map(|day| used_on(c, &key_id, day).map_err(unavailable)).collect()).await
    }

    async fn revoke_key(&self, id: &str) -> Result<bool, StateError> {
        let id = id.to_owned();
        let revoked = self
            .with_conn(move |c| {
                let now = crate::clock::unix_now();
                let n = c
                    .execute(
                        "UPDATE api_keys SET revoked_at = COALESCE(revoked_at, ?2) WHERE id = ?1",
                        params![id, now],
                    )
                    .map_err(unavailable)?;
                Ok(n > 0)
            })
            .await;
        self.keys.invalidate();
        revoked
    }
}

impl SqliteStore {
    /// Moved by every change of a key, by any process (`key_changes`, kept by triggers).
    async fn keys_version(&self) -> Result<u64, StateError> {
        self.with_conn(|c| {
            c.prepare_cached("SELECT version FROM key_changes")
                .and_then(|mut s| s.query_row([], |r| r.get::<_, i64>(0)))
                .map(|v| v.max(0) as u64)
                .map_err(unavailable)
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keys::ApiKey;
    use crate::state::Admission;
    fn record(id: &str) -> KeyRecord {
        KeyRecord {
            id: id.into(),
            name: "test".into(),
            plan: "basic".parse().unwrap(),
            allow_ips: vec!["192.0.2.0/24".parse().unwrap(), "2001:db8::/32".parse().unwrap()],
            created_at: 1_700_000_000,
            revoked: false,
        }
    }

    fn fresh(name: &str) -> (std::path::PathBuf, SqliteStore) {
        let dir = std::env::temp_dir().join(format!("ev-sqlite-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("state.db");
        let _ = std::fs::remove_file(&path);
        let store = SqliteStore::open(&path).unwrap();
        (dir, store)
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn concurrent_admissions_in_groups_stay_exact() {
        let (dir, store) = fresh("groups");
        let store = std::sync::Arc::new(store);
        let limits = Limits { daily_quota: 30, burst_per_second: 1_000 };
        let now_ms = 1_700_000_000_000;
        let calls = (0..100).map(|_| {
            let store = std::sync::Arc::clone(&store);
            tokio::spawn(async move { store.admit("key_1", limits, 1, now_ms).await.unwrap() })
        });
        let outcomes = futures::future::join_all(calls).await;
        let admitted = outcomes.iter().filter(|o| matches!(o, Ok(Admission::Admitted { .. }))).count();
        assert_eq!(admitted, 30);
        assert_eq!(store.usage("key_1", &[utc_day(now_ms / 1000)]).await.unwrap(), vec![30]);
        std::fs::remove_dir_all(&dir).ok();
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_failing_or_panicking_grouped_call_is_undone_alone() {
        let (dir, store) = fresh("undo");
        let limits = Limits { daily_quota: 10, burst_per_second: 10 };
        let failing = store.in_group(|c| {
            c.execute("INSERT INTO usage (key_id, day, count) VALUES ('ghost', '2026-01-01', 5)", [])
                .map_err(unavailable)?;
            Err::<(), _>(unavailable("fails after writing"))
        });
        let panicking = store.in_group(|c| -> Result<(), StateError> {
            c.execute("INSERT INTO usage (key_id, day, count) VALUES ('ghost', '2026-01-02', 5)", [])
                .map_err(unavailable)?;
            panic!("a bug in a store call")
        });
        let admitted = store.admit("key_1", limits, 1, 1_700_000_000_000);
        let (failing, panicking, admitted) = tokio::join!(failing, panicking, admitted);
        assert!(failing.is_err() && panicking.is_err());
        assert_eq!(admitted.unwrap(), Admission::Admitted { used: 1 });
        let days = ["2026-01-01".to_owned(), "2026-01-02".to_owned()];
        assert_eq!(store.usage("ghost", &days).await.unwrap(), vec![0, 0]);
        std::fs::remove_dir_all(&dir).ok();
    }

    #[tokio::test]
    async fn keys_round_trip_and_survive_reopen() {
        let dir = std::env::temp_dir().join(format!("ev-sqlite-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("state.db");
        let _ = std::fs::remove_file(&path);
        let key = ApiKey::generate().unwrap();
        {
            let store = SqliteStore::open(&path).unwrap();
            store.insert_key(record("key_1"), key.hash()).await.unwrap();
            assert_eq!(store.key_by_hash(&key.hash()).await.unwrap(), Some(Arc::new(record("key_1"))));
            assert!(store.insert_key(record("key_1"), ApiKey::generate().unwrap().hash()).await.is_err());
        }
        let store = SqliteStore::open(&path).unwrap();
        assert!(store.revoke_key("key_1").await.unwrap());
        assert!(!store.revoke_key("key_nope").await.unwrap());
        let listed = store.list_keys("2026-01-01").await.unwrap();
        assert_eq!(listed.len(), 1);
        assert!(listed[0].key.revoked);
        assert_eq!(listed[0].used_today, 0);
        let db = std::fs::read(&path).unwrap();
        assert!(!db.windows(key.expose().len()).any(|w| w == key.expose().as_bytes()));
        std::fs::remove_dir_all(&dir).ok();
    }
}
