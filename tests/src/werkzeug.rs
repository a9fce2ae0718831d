//! A real Werkzeug 3 app (`tests/fixtures/werkzeug_app.py`, run with the project's `.venv`):
//! the lenient reader behind the gateway in the parser-differential tests. It answers (and
//! records) what it read from each request: `request.form`, `request.get_json()`, the JSON
//! decoded with the declared charset (as Express and aiohttp do) and the multipart fields as
//! Python's `email` package reads them.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use serde_json::Value;

use crate::{ChildProcess, Request, TestDir, free_port, wait_for};

/// The project's virtualenv Python, where `make install-deps` puts schemathesis (and so Werkzeug).
pub fn python() -> PathBuf {
    let python = crate::workspace_root().join(".venv/bin/python");
    assert!(python.exists(), "{} is missing: run `make install-deps` first", python.display());
    python
}

fn script() -> PathBuf {
    crate::fixtures_dir().join("werkzeug_app.py")
}

/// The app on 127.0.0.1, stopped on drop.
pub struct WerkzeugApp {
    addr: SocketAddr,
    _process: ChildProcess,
    _dir: TestDir,
}

impl WerkzeugApp {
    /// Starts the app and waits until it answers.
    pub fn start() -> WerkzeugApp {
        let dir = TestDir::new("werkzeug");
        let addr = SocketAddr::from(([127, 0, 0, 1], free_port()));
        let mut cmd = Command::new(python());
        cmd.arg(script()).arg(addr.port().to_string());
        let process = ChildProcess::spawn("werkzeug", cmd, dir.path());
        let ready = || Request::get("/_seen").timeout(Duration::from_millis(500)).try_send(addr).ok();
        wait_for("the Werkzeug app", Duration::from_secs(20), || ready().filter(|r| r.status == 200));
        WerkzeugApp { addr, _process: process, _dir: dir }
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// What the app reads from this body sent straight to it (not recorded).
    pub fn read(&self, content_type: &str, body: &[u8]) -> Value {
        let req = Request::new("POST", "/_parse").header("Content-Type", content_type).body(body);
        let resp = req.send(self.addr);
        assert_eq!(resp.status, 200, "the Werkzeug app failed to read a body\n{resp}");
        resp.json()
    }

    /// Every request the app got (through the gateway), as it read them.
    pub fn seen(&self) -> Vec<Value> {
        match Request::get("/_seen").send(self.addr).json() {
            Value::Array(seen) => seen,
            other => panic!("/_seen: {other}"),
        }
    }
}

/// What Werkzeug reads from each `(content type, body)`, in one batch run of the app's script
/// (no server): one reading per body, in order.
pub fn read_batch(cases: &[(String, Vec<u8>)]) -> Vec<Value> {
    let dir = TestDir::new("werkzeug-batch");
    let input = dir.join("bodies.jsonl");
    let lines: Vec<String> = cases
        .iter()
        .map(|(ct, body)| serde_json::json!({ "content_type": ct, "body": base64(body) }).to_string())
        .collect();
    std::fs::write(&input, lines.join("\n") + "\n").expect("write the batch file");
    let out = Command::new(python()).arg(script()).arg("--batch").arg(&input).output().expect("run the batch");
    assert!(out.status.success(), "werkzeug_app.py --batch failed: {}", String::from_utf8_lossy(&out.stderr));
    let readings: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    assert_eq!(readings.len(), cases.len(), "one reading per body");
    readings
}

/// Standard base64 with padding (no dependency for this one use).
fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let n = chunk.iter().enumerate().fold(0u32, |n, (i, &b)| n | u32::from(b) << (16 - 8 * i));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ALPHABET[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// The values of `field` the app read, whatever way: `form` (Werkzeug), `python_email`
/// (Python's `email`), `json` and `charset_json` (a top-level string member).
pub fn read_values(reading: &Value, field: &str) -> Vec<String> {
    let forms =
        ["form", "python_email"].into_iter().flat_map(|k| reading[k][field].as_array().cloned().unwrap_or_default());
    let json = ["json", "charset_json"].into_iter().map(|k| reading[k][field].clone());
    forms.chain(json).filter_map(|v| v.as_str().map(|s| s.trim().to_owned())).collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn base64_matches_the_standard() {
        for (input, expected) in [("", ""), ("f", "Zg=="), ("fo", "Zm8="), ("foo", "Zm9v"), ("foobar", "Zm9vYmFy")] {
            assert_eq!(super::base64(input.as_bytes()), expected);
        }
    }
}
