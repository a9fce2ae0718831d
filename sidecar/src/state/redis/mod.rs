//! `redis://HOST:PORT[/DB]` (one server) or `redis+cluster://HOST:PORT[,HOST:PORT...]` (a Redis
//! or Valkey Cluster, through the `redis` crate's cluster client: slot map, MOVED/ASK,
//! reconnects): state shared by many replicas.
//!
//! Layout (prefix `ev:`): `ev:keyhash:<sha256>` → key id; `ev:keys` (zset by creation time) of
//! ids; per key, all under the hash tag `{<id>}` so its scripts run in one Redis Cluster slot:
//! `ev:{<id>}:key` (hash of the record), `ev:{<id>}:used:<day>` (counter, kept 40 days),
//! `ev:{<id>}:refunded:<day>` (units given back that day, kept as long),
//! `ev:{<id>}:burst` (zset of burst place blocks `<seq>:<places>` scored by their end, ms; a
//! member without `:` is one place), `ev:{<id>}:seq`.
//! Leases and refunds are Lua scripts: atomic without MULTI/WATCH retries. Every step that
//! must be atomic touches one slot; the few that span slots (creating a key: record, index,
//! hash) are ordered so that a step cut short fails closed (see [`RedisStore::insert_key`]).
//! Requests that read or write several slots at once go out together ([`RedisStore::each`]).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use redis::aio::{ConnectionLike, ConnectionManager, ConnectionManagerConfig};
use redis::cluster::{ClusterClient, ClusterConfig};
use redis::cluster_async::ClusterConnection;
use redis::{Client, Cmd, FromRedisValue, Pipeline, RedisFuture, Script, Value};

use super::{
    BURST_WINDOW_MS, Closing, GiveBack, KeyChange, KeyListing, KeyRecord, KeyStore, LeaseAsk, Leased, Limits,
    PLACES_SHARE, Replication, StateError, UNITS_SHARE,
};
use crate::clock::utc_day;
use crate::keys::KeyHash;

/// Every store call gives up after this, so a dead Redis costs a bounded wait.
const CALL_TIMEOUT: Duration = Duration::from_millis(1000);
const USAGE_TTL_SECS: u64 = 40 * 86_400;
/// How long a lease's and a give-back's records last: a retry of either, and the settling of a
/// lease whose answer was lost, come within it (a replica retries every sweep); a lease settled
/// later than this gives nothing back (its units stay counted: refused early, never over).
const LEASE_RECORD_TTL_MS: u64 = 10 * 60 * 1000;

mod infra;
mod recheck;
mod replicas;
mod review;
mod signups;

pub struct RedisStore {
    target: Target,
    /// One multiplexed connection per tokio runtime that uses the store (see [`RedisStore::conn`]).
    conns: Mutex<HashMap<tokio::runtime::Id, Conn>>,
    /// When a stuck cluster connection was last dropped ([`RedisStore::drop_stuck`]).
    dropped: Mutex<Option<std::time::Instant>>,
    lease: Script,
    give_back: Script,
    refund: Script,
    update: Script,
    /// Entries the review queue keeps ([`super::queue::QUEUE_CAPACITY`] unless told otherwise).
    queue_capacity: usize,
    decisions: super::versioned_cache::DecisionCache,
    keys: super::versioned_cache::KeyCache,
}

enum Target {
    Single(Client),
    Cluster(Box<ClusterClient>),
}

/// A multiplexed connection to one server or to a cluster; both reconnect by themselves.
#[derive(Clone)]
pub(super) enum Conn {
    Single(ConnectionManager),
    Cluster(ClusterConnection),
}

impl ConnectionLike for Conn {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        match self {
            Conn::Single(c) => c.req_packed_command(cmd),
            Conn::Cluster(c) => c.req_packed_command(cmd),
        }
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        match self {
            Conn::Single(c) => c.req_packed_commands(pipeline, offset, count),
            Conn::Cluster(c) => c.req_packed_commands(pipeline, offset, count),
        }
    }

    fn get_db(&self) -> i64 {
        match self {
            Conn::Single(c) => c.get_db(),
            Conn::Cluster(c) => c.get_db(),
        }
    }
}

/// The seed nodes of a `redis+cluster://HOST:PORT[,HOST:PORT...]` URL, as `redis://` URLs.
fn cluster_nodes(url: &str) -> Option<Vec<String>> {
    let list = url.strip_prefix("redis+cluster://")?.trim_end_matches('/');
    let nodes: Vec<String> = list.split(',').map(|n| format!("redis://{}", n.trim())).collect();
    (!list.is_empty() && nodes.iter().all(|n| n.len() > "redis://".len())).then_some(nodes)
}

/// The place block a script closes: its name ("": none), places spent and last spent (ms).
fn close_args(close: Option<&Closing>) -> (&str, u64, i64) {
    close.map_or(("", 0, 0), |c| (c.block.as_str(), c.spent, c.last_ms))
}

fn tag(id: &str) -> String {
    format!("ev:{{{id}}}")
}

fn unavailable(e: impl std::fmt::Display) -> StateError {
    StateError::Unavailable(format!("redis: {e}"))
}

/// Moved after every change of a key (`versioned_cache.rs`); its own slot, so a separate step.
const KEYS_VERSION: &str = "ev:keys:version";

impl RedisStore {
    /// Tells every replica's key cache that a key changed. When this fails the change is made
    /// but the caller gets the error: replicas may use the old record for up to
    /// `KEY_KEEP_MS`, and running the change again moves the version.
    async fn keys_changed(&self) -> Result<(), StateError> {
        self.keys.invalidate();
        self.call(async |c| redis::cmd("INCR").arg(KEYS_VERSION).exec_async(c).await).await
    }

    async fn keys_version(&self) -> Result<u64, StateError> {
        let v: Option<u64> = self.call(async |c| redis::cmd("GET").arg(KEYS_VERSION).query_async(c).await).await?;
        Ok(v.unwrap_or(0))
    }

    /// A store on `redis://...` or `redis+cluster://...`; nothing is connected yet.
    pub fn open(url: &str) -> Result<Self, StateError> {
        let target = match cluster_nodes(url) {
            Some(nodes) => Target::Cluster(Box::new(
                ClusterClient::builder(nodes)
                    // Bounded by CALL_TIMEOUT anyway; a failover takes a few seconds to settle.
                    .retries(2)
                    .build()
                    .map_err(unavailable)?,
            )),
            None if url.starts_with("redis+cluster://") => return Err(unavailable("no seed node in the URL")),
            None => Target::Single(Client::open(url).map_err(unavailable)?),
        };
        Ok(Self {
            target,
            conns: Mutex::default(),
            dropped: Mutex::default(),
            lease: Script::new(concat!(include_str!("close.lua"), include_str!("lease.lua"))),
            give_back: Script::new(concat!(include_str!("close.lua"), include_str!("give_back.lua"))),
            // Never below zero, never more than ARGV[2] a day (KEYS[2]: what the day gave back).
            refund: Script::new(include_str!("refund.lua")),
            // Sets fields of an existing key record only; returns 0 when there is none.
            update: Script::new(
                "if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
                 for i = 1, #ARGV, 2 do redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1]) end
                 return 1",
            ),
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

    /// The calling runtime's connection, made on its first use there; it reconnects by itself
    /// after Redis comes back. A connection's I/O is driven by a task on the runtime that made
    /// it: one shared by all would put every lookup's Redis traffic on whichever runtime came
    /// first (the admin listener's single thread, when a key was created first), with a
    /// cross-runtime wake-up per call.
    fn conn(&self) -> Result<Conn, StateError> {
        let runtime = tokio::runtime::Handle::try_current().map_err(unavailable)?.id();
        let mut conns = self.conns.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(conn) = conns.get(&runtime) {
            return Ok(conn.clone());
        }
        let connect_timeout = Duration::from_millis(500);
        let conn = match &self.target {
            Target::Single(client) => {
                let config = ConnectionManagerConfig::new()
                    .set_connection_timeout(Some(connect_timeout))
                    .set_response_timeout(Some(CALL_TIMEOUT))
                    .set_number_of_retries(1);
                Conn::Single(ConnectionManager::new_lazy_with_config(client.clone(), config).map_err(unavailable)?)
            }
            Target::Cluster(client) => {
                let config =
                    ClusterConfig::new().set_connection_timeout(connect_timeout).set_response_timeout(CALL_TIMEOUT);
                Conn::Cluster(client.get_pending_async_connection_with_config(config))
            }
        };
        conns.insert(runtime, conn.clone());
        Ok(conn)
    }

    /// Runs one Redis interaction with the call timeout.
    async fn call<T>(&self, f: impl AsyncFnOnce(&mut Conn) -> redis::RedisResult<T>) -> Result<T, StateError> {
        let mut conn = self.conn()?;
        match tokio::time::timeout(CALL_TIMEOUT, f(&mut conn)).await {
            Ok(Err(e)) if e.kind() == redis::ErrorKind::ClusterConnectionNotFound => {
                self.drop_stuck(&conn);
                Err(unavailable(e))
            }
            Ok(result) => result.map_err(unavailable),
            Err(_) => Err(unavailable("timed out")),
        }
    }

    /// Forgets this runtime's cluster connection when it knows no node: the cluster client
    /// (redis 1.8) then only retries its slot refresh over the nodes it has, none, in a loop
    /// that never reconnects (seen after a whole cluster restart). The next call makes a new
    /// connection from the seed nodes; the old one's task ends with its last in-flight call.
    /// Once a second at most: while the cluster is down, calls fail this way too, and each
    /// new connection dials every seed node.
    fn drop_stuck(&self, conn: &Conn) {
        let Conn::Cluster(_) = conn else { return };
        let Ok(runtime) = tokio::runtime::Handle::try_current().map(|h| h.id()) else { return };
        {
            let mut dropped = self.dropped.lock().unwrap_or_else(|p| p.into_inner());
            if dropped.is_some_and(|at| at.elapsed() < Duration::from_secs(1)) {
                return;
            }
            *dropped = Some(std::time::Instant::now());
        }
        if self.conns.lock().unwrap_or_else(|p| p.into_inner()).remove(&runtime).is_some() {
            tracing::warn!("redis cluster: no node connected; reconnecting from the seed nodes");
        }
    }

    /// Runs `pipes` at once, each as one request (a pipeline must stay in one cluster slot; on one
    /// server the multiplexed connection sends them together anyway): the results in order.
    async fn each<T: FromRedisValue>(&self, pipes: Vec<Pipeline>) -> Result<Vec<T>, StateError> {
        self.call(async |c| {
            let requests = pipes.iter().map(|pipe| {
                let mut c = c.clone();
                async move { pipe.query_async::<T>(&mut c).await }
            });
            futures::future::try_join_all(requests).await
        })
        .await
    }

    /// The lease script (`lease.lua`, after `close.lua`) on `day`'s counter.
    async fn run_lease(
        &self,
        key_id: &str,
        day: &str,
        limits: Limits,
        ask: &LeaseAsk,
        now_ms: i64,
    ) -> Result<Vec<Value>, StateError> {
        let t = tag(key_id);
        let (block, spent, last) = close_args(ask.close.as_ref());
        self.call(async |c| {
            let mut invocation = self.lease.key(format!("{t}:used:{day}"));
            invocation.key(format!("{t}:burst")).key(format!("{t}:seq")).key(format!("{t}:lease:{}", ask.id));
            for ended in &ask.ended {
                invocation.key(format!("{t}:lease:{ended}"));
            }
            invocation
                .arg(limits.daily_quota)
                // 0: unlimited, the script keeps no window.
                .arg(if limits.burst_per_second == Limits::UNLIMITED { 0 } else { limits.burst_per_second })
                .arg(now_ms)
                .arg(BURST_WINDOW_MS)
                .arg(USAGE_TTL_SECS)
                .arg(ask.units_min)
                .arg(ask.units_want)
                .arg(ask.places_min)
                .arg(ask.places_want)
                .arg(ask.hold_ms.max(0))
                .arg(block)
                .arg(spent)
                .arg(last)
                .arg(UNITS_SHARE)
                .arg(PLACES_SHARE)
                .arg(if ask.id.is_empty() { 0 } else { LEASE_RECORD_TTL_MS })
                .arg(u8::from(ask.renew))
                .invoke_async(c)
                .await
        })
        .await
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
    /// Three keys in three slots, so three steps, ordered to fail closed: the record, then the
    /// listing, then the hash that makes the key usable. Cut short before the last step, the key
    /// is listed (and can be revoked) but never authenticates. Then it waits for a replica of
    /// each of the three (see `replicas`).
    async fn insert_key(&self, key: KeyRecord, hash: KeyHash) -> Result<Replication, StateError> {
        let record = format!("{}:key", tag(&key.id));
        self.call(async |c| {
            redis::cmd("HSET")
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
                .exec_async(c)
                .await
        })
        .await?;
        self.call(async |c| redis::cmd("ZADD").arg("ev:keys").arg(key.created_at).arg(&key.id).exec_async(c).await)
            .await?;
        let by_hash = format!("ev:keyhash:{}", hash.hex());
        let claimed: bool =
            self.call(async |c| redis::cmd("SET").arg(&by_hash).arg(&key.id).arg("NX").query_async(c).await).await?;
        if !claimed {
            // Another key has this hash (160 random bits: never in practice): this one never works.
            self.revoke_key(&key.id).await?;
            return Err(StateError::Invalid("a key with this hash exists".into()));
        }
        // The key is made: a failed version bump must not hide its secret from whoever created
        // it. Only a replica that was shown this very key before it existed would miss it.
        if let Err(e) = self.keys_changed().await {
            tracing::warn!(error = %e, "a key was created but the key version was not moved: replicas that cached its hash as unknown keep that for up to 10 s");
        }
        Ok(self.replicate("key created", &[record, "ev:keys".to_owned(), by_hash]).await)
    }

    async fn key_by_hash(&self, hash: &KeyHash) -> Result<Option<Arc<KeyRecord>>, StateError> {
        let read = async || {
            let id: Option<String> = self
                .call(async |c| redis::cmd("GET").arg(format!("ev:keyhash:{}", hash.hex())).query_async(c).await)
                .await?;
            match id {
                Some(id) => Ok(self.record(&id).await?.map(Arc::new)),
                None => Ok(None),
            }
        };
        self.keys.get(hash, async || self.keys_version().await, read).await
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
        if done == 1 {
            self.keys_changed().await?;
            self.replicate("key revoked", &[record]).await;
        }
        Ok(done == 1)
    }

    async fn update_key(&self, id: &str, change: KeyChange) -> Result<Option<KeyRecord>, StateError> {
        let mut fields: Vec<(&str, String)> = Vec::new();
        if let Some(name) = change.name {
            fields.push(("name", name));
        }
        if let Some(plan) = change.plan {
            fields.push(("plan", plan.to_string()));
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
        if done != 1 {
            return Ok(None);
        }
        self.keys_changed().await?;
        self.replicate("key changed", std::slice::from_ref(&record)).await;
        self.record(id).await
    }

    async fn lease(&self, key_id: &str, limits: Limits, ask: &LeaseAsk, now_ms: i64) -> Result<Leased, StateError> {
        let day = utc_day(now_ms.div_euclid(1000));
        let reply = self.run_lease(key_id, &day, limits, ask, now_ms).await?;
        let int = |i: usize| match reply.get(i) {
            Some(Value::Int(n)) => Ok((*n).max(0) as u64),
            _ => Err(StateError::Invalid("redis: unexpected lease reply".into())),
        };
        Ok(match int(0)? {
            0 => {
                let block = match reply.get(4) {
                    Some(Value::BulkString(b)) => String::from_utf8_lossy(b).into_owned(),
                    Some(Value::SimpleString(b)) => b.clone(),
                    _ => String::new(),
                };
                Leased::Granted { units: int(1)?, used: int(2)?, places: int(3)?, block }
            }
            1 => Leased::QuotaExceeded { used: int(2)? },
            _ => Leased::RateLimited { retry_after_ms: int(1)? },
        })
    }

    async fn give_back(&self, key_id: &str, back: &GiveBack) -> Result<(), StateError> {
        let t = tag(key_id);
        let (block, spent, last) = close_args(back.close.as_ref());
        let _: i64 = self
            .call(async |c| {
                let mut invocation = self.give_back.key(format!("{t}:used:{}", back.day));
                invocation.key(format!("{t}:burst")).key(format!("{t}:seq")).key(format!("{t}:back:{}", back.id));
                for id in back.lost.iter().chain(&back.ended) {
                    invocation.key(format!("{t}:lease:{id}"));
                }
                invocation
                    .arg(back.units)
                    .arg(back.lost.len())
                    .arg(block)
                    .arg(spent)
                    .arg(last)
                    .arg(LEASE_RECORD_TTL_MS)
                    .invoke_async(c)
                    .await
            })
            .await?;
        Ok(())
    }

    async fn refund(&self, key_id: &str, day: &str, units: u64, cap: Option<u64>) -> Result<u64, StateError> {
        // No cap: given back without counting (the script's cap -1).
        let cap = cap.map_or(-1, |c| i64::try_from(c).unwrap_or(i64::MAX));
        let t = tag(key_id);
        let (counter, given) = (format!("{t}:used:{day}"), format!("{t}:refunded:{day}"));
        let n: i64 = self
            .call(async |c| {
                self.refund.key(&counter).key(&given).arg(units).arg(cap).arg(USAGE_TTL_SECS).invoke_async(c).await
            })
            .await?;
        Ok(n.max(0) as u64)
    }

    /// One round trip, one slot: the day's counter and the burst window's blocks that end after
    /// `now - window` (their places summed).
    async fn would_admit(&self, key_id: &str, limits: Limits, now_ms: i64) -> Result<bool, StateError> {
        let day = utc_day(now_ms.div_euclid(1000));
        let t = tag(key_id);
        let since = format!("({}", now_ms - BURST_WINDOW_MS);
        let (used, blocks): (Option<i64>, Vec<String>) = self
            .call(async |c| {
                redis::pipe()
                    .get(format!("{t}:used:{day}"))
                    .zrangebyscore(format!("{t}:burst"), since.as_str(), "+inf")
                    .query_async(c)
                    .await
            })
            .await?;
        let taken: u64 = blocks.iter().map(|b| b.split_once(':').map_or(1, |(_, n)| n.parse().unwrap_or(1))).sum();
        let quota_left = (used.unwrap_or(0).max(0) as u64) < limits.daily_quota;
        let burst_left = limits.burst_per_second == Limits::UNLIMITED || taken < limits.burst_per_second;
        Ok(quota_left && burst_left)
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
