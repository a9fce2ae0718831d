//! Placeholder for the proxy-wasm filter (issue 4). It only proves the pure core builds into it.
pub use email_verdict_core as core;
