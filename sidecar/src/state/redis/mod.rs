//! `redis://HOST:PORT[/DB]`: state shared by many replicas.
//!
//! Layout (prefix `ev:`): `ev:keyhash:<sha256>` → key id; `ev:keys` (zset by creation time) of
//! ids; per key, all under the hash tag `{<id>}` so its scripts run in one Redis Cluster slot:
//! `ev:{<id>}:key` (hash of the record), `ev:{<id>}:used:<day>` (counter, kept 40 days),
//! `ev:{<id>}:burst` (zset of admission times, ms), `ev:{<id>}:seq`.
//! Admission and refund are Lua scripts: atomic without MULTI/WATCH retries.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use async_trait::async_trait;
use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::{Client, Script};

use super::{Admission, BURST_WINDOW_MS, KeyChange, KeyListing, KeyRecord, KeyStore, Limits, StateError};
use crate::clock::utc_day;
use crate::keys::KeyHash;

/// Every store call gives up after this, so a dead Redis costs a bounded wait.
const CALL_TIMEOUT: Duration = Duration::from_millis(1000);
const USAGE_TTL_SECS: u64 = 40 * 86_400;

mod recheck;
mod review;

pub struct RedisStore {
    client: Client,
    /// One multiplexed connection per tokio runtime that uses the store (see [`RedisStore::conn`]).
    conns: Mutex<HashMap<tokio::runtime::Id, ConnectionManager>>,
    admit: Script,
    refund: Script,
    update: Script,
}

fn tag(id: &str) -> String {
    format!("ev:{{{id}}}")
}

fn unavailable(e: impl std::fmt::Display) -> StateError {
    StateError::Unavailable(format!("redis: {e}"))
}

impl RedisStore {
    pub fn open(url: &str) -> Result<Self, StateError> {
        let client = Client::open(url).map_err(unavailable)?;
        Ok(Self {
            client,
            conns: Mutex::default(),
            admit: Script::new(include_str!("admit.lua")),
            refund: Script::new(
                "if tonumber(redis.call('GET', KEYS[1]) or '0') > 0 then redis.call('DECR', KEYS[1]) end return 0",
            ),
            // Sets fields of an existing key record only; returns 0 when there is none.
            update: Script::new(
                "if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
                 for i = 1, #ARGV, 2 do redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1]) end
                 return 1",
            ),
        })
    }

    /// The calling runtime's connection, made on its first use there; it reconnects by itself
    /// after Redis comes back. A connection's I/O is driven by a task on the runtime that made
    /// it: one shared by all would put every lookup's Redis traffic on whichever runtime came
    /// first (the admin listener's single thread, when a key was created first), with a
    /// cross-runtime wake-up per call.
    fn conn(&self) -> Result<ConnectionManager, StateError> {
        let runtime = tokio::runtime::Handle::try_current().map_err(unavailable)?.id();
        let mut conns = self.conns.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(conn) = conns.get(&runtime) {
            return Ok(conn.clone());
        }
        let config = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(Duration::from_millis(500)))
            .set_response_timeout(Some(CALL_TIMEOUT))
            .set_number_of_retries(1);
        let conn = ConnectionManager::new_lazy_with_config(self.client.clone(), config).map_err(unavailable)?;
        conns.insert(runtime, conn.clone());
        Ok(conn)
    }

    /// Runs one Redis interaction with the call timeout.
    async fn call<T>(
        &self,
        f: impl AsyncFnOnce(&mut ConnectionManager) -> redis::RedisResult<T>,
    ) -> Result<T, StateError> {
        let mut conn = self.conn()?;
        match tokio::time::timeout(CALL_TIMEOUT, f(&mut conn)).await {
            Ok(result) => result.map_err(unavailable),
            Err(_) => Err(unavailable("timed out")),
        }
    }

    async fn record(&self, id: &str) -> Result<Option<KeyRecord>, StateError> {
        let fields: HashMap<String, String> =
            self.call(async |c| redis::cmd("HGETALL").arg(format!("{}:key", tag(id))).query_async(c).await).await?;
        if fields.is_empty() { Ok(None) } else { from_fields(id, &fields).map(Some) }
    }
}

fn from_fields(id: &str, f: &HashMap<String, String>) -> Result<KeyRecord, StateError> {
    let invalid = |what: &str| StateError::Invalid(format!("key {id}: bad {what}"));
    let get = |name: &str| f.get(name).map(String::as_str).unwrap_or_default();
    Ok(KeyRecord {
        id: id.to_owned(),
        name: get("name").to_owned(),
        plan: get("plan").parse().map_err(|_| invalid("plan"))?,
        allow_ips: get("allow_ips")
            .split(',')
            .filter(|s| !s.is_empty())
            .map(|s| s.parse().map_err(|_| invalid("network")))
            .collect::<Result<_, _>>()?,
        created_at: get("created_at").parse().map_err(|_| invalid("created_at"))?,
        revoked: get("revoked") == "1",
    })
}

fn networks(key: &[ipnet::IpNet]) -> String {
    key.iter().map(ToString::to_string).collect::<Vec<_>>().join(",")
}

#[async_trait]
impl KeyStore for RedisStore {
    async fn insert_key(&self, key: KeyRecord, hash: KeyHash) -> Result<(), StateError> {
        let record = format!("{}:key", tag(&key.id));
        let claimed: bool = self
            .call(async |c| {
                redis::cmd("SET").arg(format!("ev:keyhash:{}", hash.0)).arg(&key.id).arg("NX").query_async(c).await
            })
            .await?;
        if !claimed {
            return Err(StateError::Invalid("a key with this hash exists".into()));
        }
        self.call(async |c| {
            redis::pipe()
                .atomic()
                .cmd("HSET")
                .arg(&record)
                .arg("name")
                .arg(&key.name)
                .arg("plan")
                .arg(key.plan.as_str())
                .arg("allow_ips")
                .arg(networks(&key.allow_ips))
                .arg("created_at")
                .arg(key.created_at)
                .arg("revoked")
                .arg("0")
                .ignore()
                .cmd("ZADD")
                .arg("ev:keys")
                .arg(key.created_at)
                .arg(&key.id)
                .ignore()
                .exec_async(c)
                .await
        })
        .await
    }

    async fn key_by_hash(&self, hash: &KeyHash) -> Result<Option<KeyRecord>, StateError> {
        let id: Option<String> =
            self.call(async |c| redis::cmd("GET").arg(format!("ev:keyhash:{}", hash.0)).query_async(c).await).await?;
        match id {
            Some(id) => self.record(&id).await,
            None => Ok(None),
        }
    }

    async fn key_by_id(&self, id: &str) -> Result<Option<KeyRecord>, StateError> {
        self.record(id).await
    }

    async fn list_keys(&self, day: &str) -> Result<Vec<KeyListing>, StateError> {
        let ids: Vec<String> =
            self.call(async |c| redis::cmd("ZRANGE").arg("ev:keys").arg(0).arg(-1).query_async(c).await).await?;
        let mut listings = Vec::with_capacity(ids.len());
        for id in ids {
            let Some(key) = self.record(&id).await? else { continue };
            let used = self.usage(&id, &[day.to_owned()]).await?.first().copied().unwrap_or(0);
            listings.push(KeyListing { key, used_today: used });
        }
        Ok(listings)
    }

    async fn revoke_key(&self, id: &str) -> Result<bool, StateError> {
        let record = format!("{}:key", tag(id));
        let done: i64 =
            self.call(async |c| self.update.key(&record).arg("revoked").arg("1").invoke_async(c).await).await?;
        Ok(done == 1)
    }

    async fn update_key(&self, id: &str, change: KeyChange) -> Result<Option<KeyRecord>, StateError> {
        let mut fields: Vec<(&str, String)> = Vec::new();
        if let Some(name) = change.name {
            fields.push(("name", name));
        }
        if let Some(plan) = change.plan {
            fields.push(("plan", plan.as_str().to_owned()));
        }
        if let Some(nets) = change.allow_ips {
            fields.push(("allow_ips", networks(&nets)));
        }
        let record = format!("{}:key", tag(id));
        let done: i64 = self
            .call(async |c| {
                let mut invocation = self.update.key(&record);
                for (name, value) in &fields {
                    invocation.arg(*name).arg(value);
                }
                invocation.invoke_async(c).await
            })
            .await?;
        if done == 1 { self.record(id).await } else { Ok(None) }
    }

    async fn admit(&self, key_id: &str, limits: Limits, now_ms: i64) -> Result<Admission, StateError> {
        let day = utc_day(now_ms.div_euclid(1000));
        let t = tag(key_id);
        let (code, value): (i64, i64) = self
            .call(async |c| {
                self.admit
                    .key(format!("{t}:used:{day}"))
                    .key(format!("{t}:burst"))
                    .key(format!("{t}:seq"))
                    .arg(limits.daily_quota)
                    // 0: unlimited, the script keeps no window.
                    .arg(if limits.burst_per_second == Limits::UNLIMITED { 0 } else { limits.burst_per_second })
                    .arg(now_ms)
                    .arg(BURST_WINDOW_MS)
                    .arg(USAGE_TTL_SECS)
                    .invoke_async(c)
                    .await
            })
            .await?;
        let value = value.max(0) as u64;
        Ok(match code {
            0 => Admission::Admitted { used: value },
            1 => Admission::QuotaExceeded { used: value },
            _ => Admission::RateLimited { retry_after_ms: value },
        })
    }

    async fn refund(&self, key_id: &str, day: &str) -> Result<(), StateError> {
        let counter = format!("{}:used:{day}", tag(key_id));
        let _: i64 = self.call(async |c| self.refund.key(&counter).invoke_async(c).await).await?;
        Ok(())
    }

    async fn usage(&self, key_id: &str, days: &[String]) -> Result<Vec<u64>, StateError> {
        if days.is_empty() {
            return Ok(Vec::new());
        }
        let t = tag(key_id);
        let counters: Vec<String> = days.iter().map(|d| format!("{t}:used:{d}")).collect();
        let values: Vec<Option<i64>> =
            self.call(async |c| redis::cmd("MGET").arg(&counters).query_async(c).await).await?;
        Ok(values.into_iter().map(|v| v.unwrap_or(0).max(0) as u64).collect())
    }
}
