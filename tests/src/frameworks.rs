//! The web frameworks' own parsers as readers of what the app behind the gateway received
//! (`tests/frameworks/README.md`): one long-running adapter process per language (Node: Express,
//! multer, busboy, formidable; Python: Django, Starlette, FastAPI, Flask; Rack; PHP; Go's
//! `net/http`), each an HTTP server on loopback that answers what each of its readers read.
//!
//! [`Frameworks::read_all`] replays a [`Recorded`] request byte for byte (method, target, the
//! recorded headers, the body; only the framing headers are rewritten) to every adapter.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use serde_json::Value;

use crate::{ChildProcess, Recorded, Request, TestDir, free_port, wait_for};

/// What one reader read: the string values it exposes (query and body, any depth), or why it
/// refused the request. A reader that reports an error but still exposes values (Go's
/// `r.ParseForm` fills `r.Form` and `r.FormValue` ignores the error) counts as having read them.
pub type Reading = (String, Result<Vec<String>, String>);

const INSTALL: &str = "run scripts/install-frameworks.sh (scripts/install-deps.sh runs it)";

/// Headers that frame the body on the recorded hop; the replay sends its own.
const FRAMING: [&str; 4] = ["host", "content-length", "transfer-encoding", "connection"];

struct Adapter {
    name: &'static str,
    addr: SocketAddr,
    process: ChildProcess,
}

/// Every adapter, running; stopped on drop.
pub struct Frameworks {
    adapters: Vec<Adapter>,
    _dir: TestDir,
}

fn frameworks_dir() -> PathBuf {
    crate::workspace_root().join("tests/frameworks")
}

fn require(path: &Path, what: &str) {
    assert!(path.exists(), "{what} is missing ({}): {INSTALL}", path.display());
}

fn command(program: impl AsRef<std::ffi::OsStr>, args: &[&str], dir: &TestDir) -> Command {
    let mut cmd = Command::new(program);
    cmd.args(args).current_dir(frameworks_dir()).env("TMPDIR", dir.path());
    cmd
}

const ADAPTERS: [&str; 5] = ["node", "python", "ruby", "php", "go"];

fn adapter_command(name: &str, port: &str, dir: &TestDir, go: &Path) -> Command {
    let tmp = dir.path().display().to_string();
    match name {
        "node" => command("node", &["node/readers.js", port, &tmp], dir),
        "python" => command(crate::werkzeug::python(), &["python/readers.py", port], dir),
        "ruby" => command("ruby", &["ruby/readers.rb", port], dir),
        // One process (no PHP_CLI_SERVER_WORKERS: forked workers would outlive a kill).
        "php" => {
            let (listen, uploads) = (format!("127.0.0.1:{port}"), format!("upload_tmp_dir={tmp}"));
            command("php", &["-S", &listen, "-q", "-d", &uploads, "php/router.php"], dir)
        }
        _ => command(go, &[port], dir),
    }
}

impl Frameworks {
    /// Starts every adapter and waits until each answers; panics with the install command when
    /// a framework is missing.
    pub fn start() -> Frameworks {
        let dir = TestDir::new("frameworks");
        let root = crate::workspace_root();
        let node_modules = frameworks_dir().join("node/node_modules/.installed-from-lock");
        require(&node_modules, "the Node frameworks");
        let go = root.join("target/frameworks/go-readers");
        require(&go, "the Go readers' binary");
        for program in ["node", "ruby", "php"] {
            let found = Command::new(program).arg("--version").output().is_ok_and(|o| o.status.success());
            assert!(found, "{program} is missing: {INSTALL}");
        }
        let mut adapters: Vec<Adapter> = ADAPTERS
            .iter()
            .map(|&name| {
                let addr = SocketAddr::from(([127, 0, 0, 1], free_port()));
                let cmd = adapter_command(name, &addr.port().to_string(), &dir, &go);
                let process = ChildProcess::spawn(name, cmd, dir.path());
                Adapter { name, addr, process }
            })
            .collect();
        for a in &mut adapters {
            let probe = Request::get("/ready").timeout(Duration::from_secs(2));
            wait_for(&format!("the {} framework adapter", a.name), Duration::from_secs(30), || {
                if let Some(status) = a.process.try_wait() {
                    panic!("the {} adapter exited ({status}): {INSTALL}\n{}", a.name, a.process.dump());
                }
                probe.try_send(a.addr).ok().filter(|r| r.status == 200)
            });
        }
        Frameworks { adapters, _dir: dir }
    }

    /// What every reader of every adapter reads from this request, in a stable order.
    pub fn read_all(&self, recorded: &Recorded) -> Vec<Reading> {
        let req = replay(recorded);
        std::thread::scope(|s| {
            let handles: Vec<_> = self.adapters.iter().map(|a| s.spawn(|| read_one(a, &req))).collect();
            handles.into_iter().flat_map(|h| h.join().expect("an adapter thread panicked")).collect()
        })
    }
}

fn read_one(a: &Adapter, req: &Request) -> Vec<Reading> {
    match answer(a, req) {
        Ok(json) => readings_of(&json),
        // The framework's HTTP server itself refused the request: no handler ran.
        Err(status) => vec![(format!("{}.server", a.name), Err(format!("HTTP {status}")))],
    }
}

/// What one email validator would store: (validator, the value it got, what it returns), for
/// every value (and JSON object key, form or query name) a reader of its language exposed.
pub type Stored = (String, String, String);

/// The header that asks an adapter to run its language's email validators too.
const VALIDATORS: &str = "x-validators";

impl Frameworks {
    /// [`Frameworks::read_all`] and what every email validator of every adapter would store from
    /// the values its readers exposed (`tests/frameworks/*/validators.*`).
    pub fn validate_all(&self, recorded: &Recorded) -> (Vec<Reading>, Vec<Stored>) {
        let mut r = recorded.clone();
        r.headers.push((VALIDATORS.into(), "1".into()));
        let req = replay(&r);
        let answers: Vec<Value> = std::thread::scope(|s| {
            let handles: Vec<_> = self.adapters.iter().map(|a| s.spawn(|| answer(a, &req))).collect();
            handles.into_iter().filter_map(|h| h.join().expect("an adapter thread panicked").ok()).collect()
        });
        let mut readings = Vec::new();
        let mut stored = Vec::new();
        for json in &answers {
            readings.extend(readings_of(json));
            for (name, pairs) in json["validators"].as_object().into_iter().flatten() {
                for p in pairs.as_array().into_iter().flatten() {
                    let (Some(v), Some(s)) = (p[0].as_str(), p[1].as_str()) else { continue };
                    stored.push((name.clone(), v.to_owned(), s.to_owned()));
                }
            }
        }
        (readings, stored)
    }

    /// Where mail to each address would go: the domains Python's mail stack (its IDNA 2003
    /// codec), UTS-46 (transitional and not) and the raw text give, lower-cased, without
    /// trailing dots (`tests/frameworks/python/validators.py`, `delivery`).
    pub fn delivery(&self, addresses: &[String]) -> Vec<Vec<String>> {
        let python = self.adapters.iter().find(|a| a.name == "python").expect("the python adapter");
        let body = serde_json::to_vec(addresses).expect("json");
        let req = Request::new("POST", "/delivery")
            .header("x-delivery", "1")
            .header("content-type", "application/json")
            .timeout(Duration::from_secs(60))
            .body(&body);
        let resp = req.try_send(python.addr).unwrap_or_else(|e| panic!("the python adapter did not answer: {e}"));
        assert_eq!(resp.status, 200, "the python adapter's delivery failed:\n{resp}");
        let json = resp.json();
        let lists = json["delivery"].as_array().expect("delivery");
        lists
            .iter()
            .map(|l| l.as_array().into_iter().flatten().filter_map(Value::as_str).map(str::to_owned).collect())
            .collect()
    }
}

/// The recorded request as the adapters get it (framing headers are the replay's own).
fn replay(recorded: &Recorded) -> Request {
    let mut req = Request::new(&recorded.method, &recorded.target).timeout(Duration::from_secs(30));
    for (n, v) in &recorded.headers {
        if !FRAMING.contains(&n.as_str()) {
            req = req.header(n, v);
        }
    }
    req.body(&recorded.body)
}

/// One adapter's answer, or the status with which its HTTP server itself refused the request.
fn answer(a: &Adapter, req: &Request) -> Result<Value, u16> {
    match req.try_send(a.addr) {
        Ok(r) if r.status == 200 => Ok(r.json()),
        Ok(r) if (400..500).contains(&r.status) => Err(r.status),
        Ok(r) => panic!("the {} adapter failed (a bug of the adapter):\n{r}", a.name),
        Err(e) => panic!("the {} adapter did not answer {:?}: {e}", a.name, req),
    }
}

fn readings_of(json: &Value) -> Vec<Reading> {
    let Some(readers) = json["readers"].as_object() else { panic!("no readers in {json}") };
    let mut out: Vec<Reading> = readers
        .iter()
        .map(|(name, r)| {
            let values: Vec<String> =
                r["values"].as_array().into_iter().flatten().filter_map(Value::as_str).map(str::to_owned).collect();
            match r["error"].as_str() {
                Some(e) if values.is_empty() => (name.clone(), Err(e.to_owned())),
                _ => (name.clone(), Ok(values)),
            }
        })
        .collect();
    out.sort_by(|x, y| x.0.cmp(&y.0));
    out
}
