//! Pure core of email-verdict, shared by the sidecar and the Envoy filter.
//!
//! Holds everything that decides *what* a verdict is, and nothing that does I/O:
//! input parsing and normalization ([`input`], [`domain`], [`email`]), list matching bounded by
//! the Public Suffix List ([`lists`]), the verdict rules of the spec ([`verdict`]), typo
//! suggestions towards popular mail providers ([`suggest`]), the JSON
//! types of `/api/v1` ([`api`]), and what a gateway does with a signup request ([`signup`]:
//! finding the email, the enforcement settings, the answers), shared by the filter and ext_authz.
//!
//! Invariants: no tokio, pingora, hickory or proxy-wasm here (the filter compiles this crate to
//! wasm); no panics on any input; every `Domain` is ASCII, lowercase, without a trailing dot.

pub mod api;
pub mod catalog;
pub mod decided;
pub mod details;
pub mod domain;
pub mod email;
pub mod input;
pub mod lists;
pub mod signup;
pub mod suggest;
pub mod verdict;

pub use api::{
    BatchItem, BatchRequest, BatchResponse, Details, ErrorBody, ErrorCode, InputType, LookupRecord, LookupResponse,
    VerdictResult,
};
pub use catalog::{Catalog, ListKind};
pub use decided::{DecidedNames, DecidedSet, DecisionList};
pub use domain::Domain;
pub use email::EmailAddress;
pub use input::{InputError, LookupInput};
pub use lists::{DomainSet, NameMap};
pub use suggest::Providers;
pub use verdict::{Decision, Mail, MxHost, MxInfo, Signals, VerdictSource};
