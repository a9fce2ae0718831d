//! One suite, run against every state backend: SQLite on a temp file, a real `redis-server`, a
//! real Redis Cluster (three primaries, three replicas), and both again on Valkey, started here.
//! Time is injected (`now_ms`), so day boundaries and one-second windows are exact and nothing
//! sleeps on the wall clock, except the Redis outage test. This file holds the harness; the cases
//! are in the files beside it, by concern.

use std::sync::Arc;
use std::time::{Duration, Instant};

use email_verdict::keys::ApiKey;
use email_verdict::plans::{PlanName, Plans};
use email_verdict::state::{
    Admission, AppliedDecision, Closing, DecisionRecord, KeyChange, KeyRecord, KeyStore, LeaseAsk, Leased, Limits,
    MailServer, RedisStore, ReviewCause, ReviewReason, ServerFact, ServerMark, SqliteStore, StateError, StateStore,
    WarmupProgress, covering_names,
};
use email_verdict_core::Decision;
use email_verdict_tests::{Redis, RedisCluster, Server};

/// 2026-11-22T00:00:00Z in ms.
const DAY_START: i64 = 1_795_305_600_000;

fn temp_db(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("ev-backends-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("state.db");
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
    }
    path
}

/// Runs `$check` against a fresh store of each backend; `$open` makes a second handle on the
/// same state (another process's view). Valkey as a cluster only where `valkey_cluster` is
/// named: every case runs on Valkey alone and on Redis Cluster (the same slot routing), and a
/// cluster takes seconds to form, one at a time; the cases that name it are the ones where
/// atomicity across nodes matters (admission, concurrency, decisions, counts, the index).
macro_rules! with_all_backends {
    ($name:ident, $check:ident, valkey_cluster) => {
        with_all_backends!($name, $check, {
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn valkey_cluster() {
                on_cluster(Server::Valkey, $check).await;
            }
        });
    };
    ($name:ident, $check:ident) => {
        with_all_backends!($name, $check, {});
    };
    ($name:ident, $check:ident, { $($extra:tt)* }) => {
        mod $name {
            use super::*;

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn sqlite() {
                let path = temp_db(stringify!($name));
                let dir = path.parent().map(std::path::Path::to_path_buf);
                let open = move || -> Arc<dyn StateStore> { Arc::new(SqliteStore::open(&path).unwrap()) };
                $check(open).await;
                dir.map(std::fs::remove_dir_all); // passed: nothing left in /tmp
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn redis() {
                on_single(Server::Redis, $check).await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn redis_cluster() {
                on_cluster(Server::Redis, $check).await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn valkey() {
                on_single(Server::Valkey, $check).await;
            }

            $($extra)*
        }
    };
}

/// Like the above, with a review queue bounded at `$cap` entries.
macro_rules! with_all_backends_bounded {
    ($name:ident, $check:ident, $cap:expr) => {
        mod $name {
            use super::*;

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn sqlite() {
                let path = temp_db(stringify!($name));
                let dir = path.parent().map(std::path::Path::to_path_buf);
                let open = move || -> Arc<dyn StateStore> {
                    Arc::new(SqliteStore::open(&path).unwrap().with_queue_capacity($cap))
                };
                $check(open).await;
                dir.map(std::fs::remove_dir_all); // passed: nothing left in /tmp
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn redis() {
                let single = Redis::start_on(Server::Redis);
                $check(bounded_opener(single.url(), $cap)).await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn redis_cluster() {
                let _one_at_a_time = CLUSTERS.lock().await;
                let cluster = RedisCluster::start_on(Server::Redis, 3);
                $check(bounded_opener(cluster.url(), $cap)).await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn valkey() {
                let single = Redis::start_on(Server::Valkey);
                $check(bounded_opener(single.url(), $cap)).await;
            }
        }
    };
}

fn bounded_opener(url: String, capacity: usize) -> Opener {
    Box::new(move || -> Arc<dyn StateStore> { Arc::new(RedisStore::open(&url).unwrap().with_queue_capacity(capacity)) })
}

/// A store handle maker on `url` (Redis, Valkey, alone or as a cluster).
type Opener = Box<dyn Fn() -> Arc<dyn StateStore> + Send + Sync>;

fn opener(url: String) -> Opener {
    Box::new(move || -> Arc<dyn StateStore> { Arc::new(RedisStore::open(&url).unwrap()) })
}

/// Runs `check` against a fresh single `server`.
async fn on_single<F, Fut>(server: Server, check: F)
where
    F: FnOnce(Opener) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let single = Redis::start_on(server);
    check(opener(single.url())).await;
}

/// Runs `check` against a fresh three-primary cluster of `server`. One cluster (six processes)
/// at a time: forming many at once on a small machine makes their nodes time out and fail over.
async fn on_cluster<F, Fut>(server: Server, check: F)
where
    F: FnOnce(Opener) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let _one_at_a_time = CLUSTERS.lock().await;
    let cluster = RedisCluster::start_on(server, 3);
    check(opener(cluster.url())).await;
}

static CLUSTERS: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// A built-in plan's name.
fn plan(name: &str) -> PlanName {
    name.parse().unwrap()
}

/// A built-in plan's limits.
fn limits(name: &str) -> Limits {
    Limits::from(Plans::builtin().resolve(name).unwrap())
}

async fn new_key(store: &dyn StateStore, plan: PlanName) -> (KeyRecord, ApiKey) {
    let secret = ApiKey::generate().unwrap();
    let id = email_verdict::keys::new_key_id().unwrap();
    let key = KeyRecord { id, name: "t".into(), plan, allow_ips: vec![], created_at: 1, revoked: false };
    store.insert_key(key.clone(), secret.hash()).await.unwrap();
    (key, secret)
}

fn admitted(a: &Admission) -> bool {
    matches!(a, Admission::Admitted { .. })
}

mod infra;
mod keys;
mod review;
mod signups;
