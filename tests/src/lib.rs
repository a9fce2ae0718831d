//! End-to-end test harness for email-verdict: real processes on loopback.
//!
//! What it gives a test: a private [`TestDir`], [`free_port`]s from the OS, readiness by polling
//! with a deadline ([`wait_for`]), child processes that are killed on `Drop` and whose output is
//! captured to files and printed when the test fails ([`ChildProcess`]), a real authoritative DNS
//! server on the fixture zones ([`Nsd`]), a counting DNS forwarder ([`DnsCounter`]), the built
//! sidecar binary ([`Sidecar`], [`Cli`]), a raw HTTP/1.1 client ([`http`]) that sends the
//! request target byte for byte, so tests control percent-encoding exactly, and for the gateway:
//! a real Envoy with the built filter ([`envoy`]) in front of a recording app ([`UpstreamApp`]),
//! the web frameworks' own parsers reading what that app received ([`frameworks`]), real gRPC,
//! Connect, GraphQL and Express apps and clients ([`protocols`]),
//! client threads that keep requests going while a test breaks something ([`Load`]), and an
//! HTTP server of lists the test changes and breaks ([`ListServer`]).
//!
//! Invariants: every port comes from the OS; nothing is left running after a test (every child
//! is owned by a guard); a missing artifact fails with a "build first" message, never silently.

pub mod dns;
pub mod envoy;
pub mod frameworks;
pub mod http;
pub mod list_server;
pub mod load;
pub mod nsd;
pub mod otlp;
pub mod process;
pub mod protocols;
pub mod redis;
pub mod schema;
pub mod sidecar;
pub mod tempdir;
pub mod upstream;
pub mod verdict;
pub mod werkzeug;

/// The mailbox hash's secret every test gateway and sidecar gets (`EMAIL_VERDICT_MAILBOX_SECRET`),
/// as an operator sets one secret for both.
pub const TEST_MAILBOX_SECRET: &str = "the test gateway's mailbox secret, 32+ bytes";

/// The headers the filter and `/ext_authz` set for the app and strip from clients (the verdict's
/// five, the three detail headers and the three of the signup counts), written out here rather than read from core, so that a
/// change to core's defaults shows up as a failing test.
pub const VERDICT_HEADERS: [&str; 11] = [
    "x-email-verdict",
    "x-email-domain",
    "x-email-flags",
    "x-email-verdict-bypass",
    "x-email-suggestion",
    "x-email-normalized",
    "x-email-role",
    "x-email-relay",
    "x-email-mailbox-signups",
    "x-email-client-signups",
    "x-email-velocity",
];

pub use dns::DnsCounter;
pub use envoy::{Envoy, EnvoyBuilder, Gateway};
pub use http::{Request, Response};
pub use list_server::{ListServer, Served};
pub use load::{Load, Outcome, Shot};
pub use nsd::Nsd;
pub use process::{ChildProcess, free_port, wait_for};
pub use redis::{Redis, RedisCluster, Server};
pub use sidecar::{Cli, CliOutput, Sidecar, SidecarBuilder};
pub use tempdir::TestDir;
pub use upstream::{Recorded, SilentServer, UpstreamApp};

use std::path::PathBuf;

/// The workspace root (the parent of this crate's directory).
pub fn workspace_root() -> PathBuf {
    let here = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    here.parent().map(PathBuf::from).unwrap_or(here)
}

/// `tests/fixtures/` in the source tree.
pub fn fixtures_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures")
}

/// The usual setup: NSD on the fixture zones and a sidecar using it as its nameserver, with the
/// builder adjusted by `configure` (extra flags, keys...).
pub fn start_with(configure: impl FnOnce(SidecarBuilder) -> SidecarBuilder) -> (Sidecar, Nsd) {
    let nsd = Nsd::start();
    let sidecar = configure(Sidecar::builder().dns(nsd.addr())).start();
    (sidecar, nsd)
}

/// [`start_with`] with the defaults (one `pro` key).
pub fn start() -> (Sidecar, Nsd) {
    start_with(|b| b)
}

/// `GET /api/v1/domain/{segment}` target with `?key=`.
pub fn api_target(segment: &str, key: &str) -> String {
    format!("/api/v1/domain/{segment}?key={key}")
}
