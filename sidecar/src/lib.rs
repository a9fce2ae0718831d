//! The email-verdict sidecar: the verdict API of `verdict-api.md` on Pingora, its public lookup
//! pages and operator dashboard, and the operator CLI of `operations.md`.
//!
//! Invariants: only this crate knows Pingora, hickory and the state backends; the verdict
//! itself is decided by `email-verdict-core`. No API key or email address is ever logged.
//! A DNS failure is never reported or cached as "no MX".

// A request's future is built and moved whole: its large, rare branches are boxed so that
// it stays small (`future-size-threshold` in clippy.toml; BENCHMARKS section 2, "Futures").
#![warn(clippy::large_futures)]

pub mod admin;
pub mod api;
pub mod auth;
pub mod check_cmd;
pub mod cli;
pub mod client_ip;
pub mod clock;
pub mod config;
pub mod dns;
pub mod explain;
pub mod explain_cmd;
pub mod grpc_authz;
pub mod http_guard;
pub mod keys;
pub mod keys_cmd;
pub mod leases;
pub mod limits;
pub mod lists;
pub mod logging;
pub mod metrics;
pub mod outbound;
pub mod pages;
pub mod plans;
pub mod rdap;
pub mod request;
pub mod review;
pub mod review_cmd;
pub mod server;
pub mod signups;
pub mod state;
pub mod telemetry;
pub mod validate_cmd;
pub mod verdicts;
pub mod warmup;

/// An operator mistake (bad flag value, unknown id...): exit code 2 with a one-line message.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct UsageError(pub String);

pub fn usage_error(message: impl Into<String>) -> anyhow::Error {
    UsageError(message.into()).into()
}
