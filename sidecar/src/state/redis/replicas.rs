//! Waiting for a replica (issue 31). Redis acknowledges a write before any replica has it, so a
//! primary killed right after takes the write along and a failover promotes a replica without
//! it: a created key answers 401. The writes someone acts on at once (keys, plan changes,
//! reviewers' and operators' decisions) therefore wait, bounded by [`REPLICA_WAIT`], until one
//! replica of the node that holds them has them (`WAIT 1 500`, sent to the node that owns the
//! key's slot on a cluster). A node without connected replicas is not waited on. Counters and
//! the review queue do not wait: a lookup must not pay for it, and losing the last moment's
//! counts in a failover is what `docs/configuration.md` already says.

use std::time::Duration;

use redis::cluster_routing::{Route, RoutingInfo, SingleNodeRoutingInfo, SlotAddr};
use redis::{Cmd, FromRedisValue, RedisResult};

use super::{Conn, RedisStore};
use crate::state::Replication;

/// How long an acknowledged write waits for one replica before it is answered as not yet on one.
pub const REPLICA_WAIT: Duration = Duration::from_millis(500);

impl RedisStore {
    /// Waits until a replica of each node holding one of `keys` has what this store wrote there
    /// (on one server, the keys only name the write). `what` names the write in the warning.
    pub(super) async fn replicate(&self, what: &'static str, keys: &[String]) -> Replication {
        let waits = keys.iter().map(|key| self.replicate_one(key));
        let outcome =
            futures::future::join_all(waits).await.into_iter().fold(Replication::NoReplicas, Replication::and);
        if outcome == Replication::Pending {
            tracing::warn!(
                write = what,
                wait_ms = REPLICA_WAIT.as_millis() as u64,
                "state store: an acknowledged write is not yet on a replica; a failover now could lose it"
            );
        }
        outcome
    }

    async fn replicate_one(&self, key: &str) -> Replication {
        let waited = self
            .call(async |c| {
                let info: String = on_owner(c, redis::cmd("INFO").arg("replication"), key).await?;
                if connected_replicas(&info) == 0 {
                    return Ok(Replication::NoReplicas);
                }
                let wait_ms = REPLICA_WAIT.as_millis() as u64;
                let acked: i64 = on_owner(c, redis::cmd("WAIT").arg(1).arg(wait_ms), key).await?;
                Ok(if acked >= 1 { Replication::Replicated } else { Replication::Pending })
            })
            .await;
        // The write itself succeeded; a wait that failed leaves it as unsure as one that timed out.
        waited.unwrap_or(Replication::Pending)
    }
}

/// Runs `cmd` on the primary that owns `key`'s slot (on one server: that server).
async fn on_owner<T: FromRedisValue>(c: &mut Conn, cmd: &Cmd, key: &str) -> RedisResult<T> {
    match c {
        Conn::Single(conn) => cmd.query_async(conn).await,
        Conn::Cluster(conn) => {
            let route = Route::with_key(key, SlotAddr::Master);
            let value = conn
                .route_command(cmd.clone(), RoutingInfo::SingleNode(SingleNodeRoutingInfo::SpecificNode(route)))
                .await?;
            Ok(redis::from_redis_value(value)?)
        }
    }
}

/// `connected_slaves:N` of `INFO replication` (0 when absent).
fn connected_replicas(info: &str) -> u64 {
    info.lines().find_map(|l| l.trim().strip_prefix("connected_slaves:")).and_then(|n| n.parse().ok()).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::connected_replicas;

    #[test]
    fn connected_replicas_reads_info_replication() {
        assert_eq!(connected_replicas("# Replication\r\nrole:master\r\nconnected_slaves:2\r\n"), 2);
        assert_eq!(connected_replicas("role:master\r\nconnected_slaves:0\r\n"), 0);
        assert_eq!(connected_replicas("role:slave\r\n"), 0);
    }
}
