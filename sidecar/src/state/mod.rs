//! The state store: API keys now; usage counters and review decisions build on it.
//!
//! One interface, chosen by `--state URL`. Every operation is one atomic step in the backend,
//! so the CLI and any number of servers can share a store.

mod redis;
mod sqlite;

use std::sync::Arc;

use async_trait::async_trait;
use ipnet::IpNet;

use crate::keys::KeyHash;
use crate::plans::Plan;

pub use redis::RedisStore;
pub use sqlite::SqliteStore;

/// A stored API key (the key itself is never stored, only its hash).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyRecord {
    pub id: String,
    pub name: String,
    pub plan: Plan,
    /// Networks the key may be used from; empty means anywhere.
    pub allow_ips: Vec<IpNet>,
    /// Unix seconds.
    pub created_at: i64,
    pub revoked: bool,
}

/// A key record with today's usage, for listings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyListing {
    pub key: KeyRecord,
    pub used_today: u64,
}

#[derive(Debug, thiserror::Error)]
pub enum StateError {
    /// The store cannot be reached or answered with an error: retrying may succeed.
    #[error("state store unavailable: {0}")]
    Unavailable(String),
    /// The store holds something this version cannot read.
    #[error("state store holds invalid data: {0}")]
    Invalid(String),
}

/// A change to a key's settings; `None` leaves a field as it is.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KeyChange {
    pub name: Option<String>,
    pub plan: Option<Plan>,
    pub allow_ips: Option<Vec<IpNet>>,
}

/// The outcome of [`StateStore::admit`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admission {
    /// Counted: `used` lookups today, this one included.
    Admitted { used: u64 },
    /// Today's quota is spent; nothing was counted.
    QuotaExceeded { used: u64 },
    /// The plan's per-second burst is spent; the oldest request in the window leaves it in
    /// `retry_after_ms`. Nothing was counted.
    RateLimited { retry_after_ms: u64 },
}

#[async_trait]
pub trait StateStore: Send + Sync + 'static {
    /// Stores a new key under its hash; the record's id must be unique.
    async fn insert_key(&self, key: KeyRecord, hash: KeyHash) -> Result<(), StateError>;
    async fn key_by_hash(&self, hash: &KeyHash) -> Result<Option<KeyRecord>, StateError>;
    async fn key_by_id(&self, id: &str) -> Result<Option<KeyRecord>, StateError>;
    /// Every key, oldest first, with its usage on `day` (`YYYY-MM-DD`, UTC).
    async fn list_keys(&self, day: &str) -> Result<Vec<KeyListing>, StateError>;
    /// Marks a key revoked; `false` when no key has that id.
    async fn revoke_key(&self, id: &str) -> Result<bool, StateError>;
    /// Applies `change`; the updated record, or `None` when no key has that id.
    async fn update_key(&self, id: &str, change: KeyChange) -> Result<Option<KeyRecord>, StateError>;

    /// One atomic step: if `key_id` has quota left on the UTC day of `now_ms` and fewer than
    /// `burst` requests admitted in the second before `now_ms`, count this one in both.
    async fn admit(&self, key_id: &str, limits: Limits, now_ms: i64) -> Result<Admission, StateError>;
    /// Gives back one lookup admitted on `day` that was not answered (a failure on our side).
    async fn refund(&self, key_id: &str, day: &str) -> Result<(), StateError>;
    /// Lookups counted for `key_id` on each of `days`.
    async fn usage(&self, key_id: &str, days: &[String]) -> Result<Vec<u64>, StateError>;
}

/// What [`StateStore::admit`] enforces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    pub daily_quota: u64,
    pub burst_per_second: u64,
}

impl From<Plan> for Limits {
    fn from(plan: Plan) -> Self {
        Limits { daily_quota: plan.daily_quota(), burst_per_second: plan.burst_per_second() }
    }
}

/// The burst window: requests admitted in the last this-many milliseconds are counted.
pub const BURST_WINDOW_MS: i64 = 1_000;

/// Why a `--state` value cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum StateUrlError {
    #[error("--state {0:?}: expected sqlite:PATH or redis://HOST:PORT[/DB]")]
    Malformed(String),
}

/// Opens the store a `--state` URL names.
pub fn open(url: &str) -> anyhow::Result<Arc<dyn StateStore>> {
    if let Some(path) = url.strip_prefix("sqlite://").or_else(|| url.strip_prefix("sqlite:")) {
        if path.is_empty() {
            return Err(StateUrlError::Malformed(url.to_owned()).into());
        }
        return Ok(Arc::new(SqliteStore::open(path)?));
    }
    if url.starts_with("redis://") {
        return Ok(Arc::new(RedisStore::open(url).map_err(|_| StateUrlError::Malformed(url.to_owned()))?));
    }
    Err(StateUrlError::Malformed(url.to_owned()).into())
}
