//! A real OTLP trace receiver (`tests/otlp/receiver.py`, on PyPI's official `opentelemetry-proto`
//! and `grpcio`, run with the project's `.venv`): OTLP/HTTP protobuf on one port, OTLP/gRPC on
//! another, and every span received as JSON on `GET /spans`.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::{ChildProcess, Request, TestDir, free_port, wait_for};

/// `$OTLP_PYTHON`, else the project's `.venv` Python (`make install-deps` puts the packages there).
pub fn python() -> PathBuf {
    match std::env::var_os("OTLP_PYTHON") {
        Some(python) => PathBuf::from(python),
        None => crate::werkzeug::python(),
    }
}

/// One span as the receiver got it.
#[derive(Debug, Clone)]
pub struct Span {
    pub trace_id: String,
    pub span_id: String,
    /// Empty for a root span.
    pub parent_span_id: String,
    pub name: String,
    /// `SERVER`, `INTERNAL`, `CLIENT`...
    pub kind: String,
    pub service_name: String,
    /// The span's attributes, as JSON values.
    pub attributes: serde_json::Map<String, Value>,
}

impl Span {
    fn of(v: &Value) -> Span {
        let text = |k: &str| v[k].as_str().unwrap_or_default().to_owned();
        Span {
            trace_id: text("trace_id"),
            span_id: text("span_id"),
            parent_span_id: text("parent_span_id"),
            name: text("name"),
            kind: text("kind"),
            service_name: text("service.name"),
            attributes: v["attributes"].as_object().cloned().unwrap_or_default(),
        }
    }

    pub fn attribute(&self, key: &str) -> Option<&Value> {
        self.attributes.get(key)
    }
}

/// The receiver on 127.0.0.1, stopped on drop.
pub struct OtlpReceiver {
    http: SocketAddr,
    grpc: SocketAddr,
    _process: ChildProcess,
    _dir: TestDir,
}

impl OtlpReceiver {
    /// Starts the receiver on two free ports and waits until both listen.
    pub fn start() -> OtlpReceiver {
        let dir = TestDir::new("otlp");
        let http = SocketAddr::from(([127, 0, 0, 1], free_port()));
        let grpc = SocketAddr::from(([127, 0, 0, 1], free_port()));
        let script = crate::workspace_root().join("tests/otlp/receiver.py");
        let mut cmd = Command::new(python());
        cmd.arg(script).arg(http.port().to_string()).arg(grpc.port().to_string());
        let process = ChildProcess::spawn("otlp-receiver", cmd, dir.path());
        // The script opens the HTTP port only once the gRPC one listens.
        let ready = || Request::get("/healthz").timeout(Duration::from_millis(500)).try_send(http).ok();
        wait_for("the OTLP receiver", Duration::from_secs(20), || ready().filter(|r| r.status == 200));
        OtlpReceiver { http, grpc, _process: process, _dir: dir }
    }

    /// OTLP/HTTP protobuf (`POST /v1/traces`) and `GET /spans`.
    pub fn http_addr(&self) -> SocketAddr {
        self.http
    }

    /// OTLP/gRPC (`TraceService/Export`).
    pub fn grpc_addr(&self) -> SocketAddr {
        self.grpc
    }

    /// The base URL for `OTEL_EXPORTER_OTLP_ENDPOINT` (OTLP/HTTP).
    pub fn endpoint(&self) -> String {
        format!("http://{}", self.http)
    }

    /// Every span received so far.
    pub fn spans(&self) -> Vec<Span> {
        match Request::get("/spans").send(self.http).json() {
            Value::Array(spans) => spans.iter().map(Span::of).collect(),
            other => panic!("/spans: {other}"),
        }
    }

    /// The spans of `trace_id` once `done` holds for them, polling for at most `timeout`;
    /// panics with what was received otherwise.
    pub fn wait_for_trace(&self, trace_id: &str, timeout: Duration, done: impl Fn(&[Span]) -> bool) -> Vec<Span> {
        let deadline = Instant::now() + timeout;
        loop {
            let spans: Vec<Span> = self.spans().into_iter().filter(|s| s.trace_id == trace_id).collect();
            if done(&spans) {
                return spans;
            }
            if Instant::now() > deadline {
                panic!("trace {trace_id} incomplete after {timeout:?}: {spans:#?}\nall: {:#?}", self.spans());
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}
