//! DNS: what a domain's mail exchangers are, kept apart into answers (NXDOMAIN, no MX, null MX,
//! MX hosts) and failures (timeout, SERVFAIL, REFUSED, I/O), which are never answers.

mod cache;
mod hickory;

use std::time::Duration;

use async_trait::async_trait;
use email_verdict_core::{Domain, MxInfo};

pub use cache::{CacheConfig, Lookup, MxCache};
pub use hickory::{HickoryResolver, ResolverSettings, parse_nameserver};

/// MX host names kept from one answer, by preference (then name): judged against the lists and
/// the infrastructure index, shown, and in `mx_records`. Later ones are only counted.
pub const MX_HOSTS_KEPT: usize = 20;
/// MX hosts whose addresses (A and AAAA) are looked up: the first ones kept. The others are
/// judged by name only.
pub const MX_HOSTS_RESOLVED: usize = 10;
/// Distinct addresses kept per MX host (A before AAAA, in answer order). Later ones are counted.
pub const ADDRESSES_PER_HOST: usize = 8;

/// An authoritative answer about a domain's MX, with how long it may be trusted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MxAnswer {
    pub mx: MxInfo,
    pub ttl: Duration,
}

/// The lookup could not be answered now (timeout, SERVFAIL, REFUSED, network error). Always
/// transient: it says nothing about the domain, so it is never cached or reported as "no MX".
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("DNS lookup failed: {0}")]
pub struct DnsFailure(pub String);

#[async_trait]
pub trait MxResolver: Send + Sync + 'static {
    async fn resolve(&self, domain: &Domain) -> Result<MxAnswer, DnsFailure>;
}
