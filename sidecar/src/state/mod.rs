//! The state store: API keys now; usage counters and review decisions build on it.
//!
//! One interface, chosen by `--state URL`. Every operation is one atomic step in the backend,
//! so the CLI and any number of servers can share a store.

mod sqlite;

use std::sync::Arc;

use async_trait::async_trait;
use ipnet::IpNet;

use crate::keys::KeyHash;
use crate::plans::Plan;

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

#[async_trait]
pub trait StateStore: Send + Sync + 'static {
    /// Stores a new key under its hash; the record's id must be unique.
    async fn insert_key(&self, key: KeyRecord, hash: KeyHash) -> Result<(), StateError>;
    async fn key_by_hash(&self, hash: &KeyHash) -> Result<Option<KeyRecord>, StateError>;
    /// Every key, oldest first, with its usage on `day` (`YYYY-MM-DD`, UTC).
    async fn list_keys(&self, day: &str) -> Result<Vec<KeyListing>, StateError>;
    /// Marks a key revoked; `false` when no key has that id.
    async fn revoke_key(&self, id: &str) -> Result<bool, StateError>;
}

/// Why a `--state` value cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum StateUrlError {
    #[error("--state {0:?}: expected sqlite:PATH or redis://HOST:PORT[/DB]")]
    Malformed(String),
    #[error("--state {0:?}: the redis backend is not available in this version yet; use sqlite:PATH")]
    RedisNotYet(String),
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
        return Err(StateUrlError::RedisNotYet(url.to_owned()).into());
    }
    Err(StateUrlError::Malformed(url.to_owned()).into())
}
