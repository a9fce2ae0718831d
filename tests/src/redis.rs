//! A real `redis-server` on a free loopback port, persisting to its own directory (so a restart
//! keeps keys and counters), killed on `Drop`.

use std::net::{SocketAddr, TcpStream};
use std::process::Command;
use std::time::Duration;

use crate::process::{ChildProcess, free_port, wait_for};
use crate::tempdir::TestDir;

pub struct Redis {
    process: Option<ChildProcess>,
    port: u16,
    dir: TestDir,
}

impl Redis {
    pub fn start() -> Redis {
        let mut redis = Redis { process: None, port: free_port(), dir: TestDir::new("redis") };
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
        let mut cmd = Command::new("redis-server");
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
        self.process = Some(ChildProcess::spawn("redis-server", cmd, self.dir.path()));
        let addr = SocketAddr::from(([127, 0, 0, 1], self.port));
        wait_for("redis-server to accept connections", Duration::from_secs(10), || {
            TcpStream::connect_timeout(&addr, Duration::from_millis(200)).ok()
        });
    }
}
