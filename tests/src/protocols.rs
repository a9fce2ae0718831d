//! The protocol matrix's real apps and clients (`tests/frameworks/README.md`, "Protocols"): one
//! long-running process per language, each serving apps behind the gateway and running its
//! language's real clients on command.
//!
//! - Node (`node/protocols.js`): on one port, HTTP/1.1 and HTTP/2 cleartext, connect-node's
//!   `acme.v1.Accounts` (Connect, gRPC, gRPC-Web), Express 5 `/signup` (`express.json()`, which
//!   inflates gzip, deflate and br) and graphql-yoga `/graphql`; clients: connect-node's Connect
//!   (binary, JSON), gRPC and gRPC-Web transports, and `fetch` (GraphQL-over-HTTP, compressed
//!   JSON).
//! - Python (`python/protocols.py`): a grpcio server of `acme.v1.Accounts`; client: grpcio's.
//!
//! Every handler records every text it received under the request's `x-protocols-case` header:
//! [`Protocols::seen`] tells whether an address reached a handler.

use std::net::SocketAddr;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use serde_json::Value;

use crate::{ChildProcess, Request, TestDir, free_port, wait_for};

const INSTALL: &str = "run scripts/install-frameworks.sh (scripts/install-deps.sh runs it)";

/// The header (gRPC metadata) that ties what a handler received to a case.
pub const CASE_HEADER: &str = "x-protocols-case";

/// Which language's process runs a client.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Runner {
    Node,
    Python,
}

struct Process {
    name: &'static str,
    /// The app's port (Node: HTTP/1.1 and HTTP/2; Python: gRPC over HTTP/2).
    app: SocketAddr,
    control: SocketAddr,
    process: ChildProcess,
}

/// Both processes, running; stopped on drop.
pub struct Protocols {
    node: Process,
    python: Process,
    _dir: TestDir,
}

/// What one handler received for a case: (handler, every text it read).
pub type Seen = (String, Vec<String>);

fn loopback() -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], free_port()))
}

impl Protocols {
    /// Starts both processes and waits until each answers; panics with the install command when
    /// something is missing.
    pub fn start() -> Protocols {
        let dir = TestDir::new("protocols");
        let root = crate::workspace_root();
        let frameworks = root.join("tests/frameworks");
        let descriptors = root.join("target/frameworks/acme.binpb");
        for (path, what) in [
            (frameworks.join("node/node_modules/@connectrpc/connect-node"), "connect-node"),
            (frameworks.join("node/node_modules/graphql-yoga"), "graphql-yoga"),
            (descriptors.clone(), "the descriptor set of tests/frameworks/proto"),
        ] {
            assert!(path.exists(), "{what} is missing ({}): {INSTALL}", path.display());
        }
        let spawn = |name: &'static str, program: &Path, args: &[String]| {
            let (app, control) = (loopback(), loopback());
            let mut cmd = Command::new(program);
            cmd.args(args).arg(app.port().to_string()).arg(control.port().to_string());
            cmd.current_dir(&frameworks).env("TMPDIR", dir.path());
            if name == "node" {
                cmd.arg(&descriptors);
            }
            let process = ChildProcess::spawn(name, cmd, dir.path());
            Process { name, app, control, process }
        };
        let mut node = spawn("node", Path::new("node"), &["node/protocols.js".into()]);
        let mut python = spawn("python", &crate::werkzeug::python(), &["python/protocols.py".into()]);
        for p in [&mut node, &mut python] {
            let probe = Request::get("/ready").timeout(Duration::from_secs(2));
            wait_for(&format!("the {} protocol apps", p.name), Duration::from_secs(60), || {
                if let Some(status) = p.process.try_wait() {
                    panic!("the {} protocol apps exited ({status}): {INSTALL}\n{}", p.name, p.process.dump());
                }
                probe.try_send(p.control).ok().filter(|r| r.status == 200)
            });
        }
        Protocols { node, python, _dir: dir }
    }

    /// Node's app port: Express, graphql-yoga and connect-node (HTTP/1.1 and HTTP/2).
    pub fn node_app(&self) -> SocketAddr {
        self.node.app
    }

    /// Python's grpcio server.
    pub fn python_app(&self) -> SocketAddr {
        self.python.app
    }

    fn process(&self, runner: Runner) -> &Process {
        match runner {
            Runner::Node => &self.node,
            Runner::Python => &self.python,
        }
    }

    /// Runs one client command in that language's process; what the client reported.
    pub fn run(&self, runner: Runner, command: &Value) -> Value {
        let p = self.process(runner);
        let body = serde_json::to_vec(command).expect("json");
        let req = Request::new("POST", "/run")
            .header("content-type", "application/json")
            .timeout(Duration::from_secs(60))
            .body(&body);
        match req.try_send(p.control) {
            Ok(r) if r.status == 200 => r.json(),
            Ok(r) => panic!("the {} client runner failed (a bug of the runner):\n{r}\n{}", p.name, p.process.dump()),
            Err(e) => panic!("the {} client runner did not answer: {e}\n{}", p.name, p.process.dump()),
        }
    }

    /// What every handler of both processes received for `case`.
    pub fn seen(&self, case: &str) -> Vec<Seen> {
        let mut out = Vec::new();
        for p in [&self.node, &self.python] {
            let r = Request::get(&format!("/seen?case={case}")).timeout(Duration::from_secs(10)).send(p.control);
            assert_eq!(r.status, 200, "GET /seen of the {} protocol apps\n{r}", p.name);
            for s in r.json()["seen"].as_array().into_iter().flatten() {
                let handler = s["handler"].as_str().unwrap_or("?").to_owned();
                let values = s["values"].as_array().into_iter().flatten().filter_map(Value::as_str);
                out.push((handler, values.map(str::to_owned).collect()));
            }
        }
        out
    }
}
