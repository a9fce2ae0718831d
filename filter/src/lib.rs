//! `email_verdict_filter.wasm`: a proxy-wasm HTTP filter for Envoy that finds the email of a
//! signup request, asks the email-verdict sidecar about its domain (through a shared-data cache),
//! and blocks or flags the signup. The plugin configuration is the contract in `CONFIG.md`.
//!
//! Layout (after Kuadrant's wasm-shim): the logic ([`filter`], [`decision`], [`extract`],
//! [`cache`], [`config`]) sees the proxy only through the [`host::Host`] trait, so it is tested
//! natively against a mock host. `wasm_host.rs`, compiled for `wasm32` only, is the one file that
//! talks to proxy-wasm.
//!
//! Invariants: no panics (a panic kills the Wasm VM and, depending on Envoy's `failure_policy`,
//! fails every request on the worker or silently lets every signup through), hence no
//! `unwrap`/`expect`/`panic` outside tests; only the normalized domain ever leaves the proxy,
//! never the local part of an address, and logs name the domain only.
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used, clippy::panic))]

pub mod abi;
pub mod cache;
pub mod config;
pub mod counting;
pub mod decided;
pub mod decision;
pub mod fallback;
pub mod filter;
pub mod flight;
pub mod host;
pub mod relay;
pub use email_verdict_core::signup::path as signup_path;

#[cfg(test)]
mod mock_host;

#[cfg(target_arch = "wasm32")]
mod wasm_host;

/// The Envoy dynamic module (`make module`): the same logic over Envoy's native ABI.
#[cfg(all(feature = "dynamic-module", not(target_arch = "wasm32")))]
pub mod module;

pub use config::FilterConfig;
pub use email_verdict_core::signup::ConfigError;
pub use filter::RequestFilter;
pub use host::{Action, Counter, Host, HostError};
