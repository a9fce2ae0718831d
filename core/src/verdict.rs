//! The verdict rules of the spec, in one function: [`decide`].
//!
//! Rules (spec numbering): (1) two verdicts; ambiguous means `safe` + `review_required`;
//! (2) free webmail is never `disposable`, whatever a list or decision says; (3) shared MX
//! decides neither `disposable` nor `allowlisted`; (4) no MX (none, null MX, or no such
//! domain) is `safe` with no MX data — only an explicit block decision overrides it.

use std::net::IpAddr;

use crate::api::{Level, Recommendation, Verdict, VerdictResult};

/// What DNS said about a domain's mail exchangers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MxInfo {
    /// NXDOMAIN: the name does not exist.
    NoDomain,
    /// The name exists but has no MX record.
    NoMx,
    /// RFC 7505 null MX (`MX 0 .`): the domain states it accepts no mail.
    NullMx,
    /// MX hosts, by preference, each with its addresses.
    Mx { hosts: Vec<MxHost> },
}

/// One mail exchanger: its name (lowercase, no trailing dot) and its A/AAAA addresses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MxHost {
    pub name: String,
    pub ips: Vec<IpAddr>,
}

impl MxHost {
    pub fn new(name: impl Into<String>, ips: Vec<IpAddr>) -> Self {
        Self { name: name.into(), ips }
    }
}

impl MxInfo {
    pub fn has_mx(&self) -> bool {
        matches!(self, Self::Mx { .. })
    }

    pub fn domain_exists(&self) -> bool {
        !matches!(self, Self::NoDomain)
    }

    /// The MX hosts (none without MX).
    pub fn hosts(&self) -> &[MxHost] {
        match self {
            Self::Mx { hosts } => hosts,
            _ => &[],
        }
    }

    /// Every MX address, in MX order, without duplicates.
    pub fn addresses(&self) -> Vec<IpAddr> {
        let mut all: Vec<IpAddr> = Vec::new();
        for ip in self.hosts().iter().flat_map(|h| &h.ips) {
            if !all.contains(ip) {
                all.push(*ip);
            }
        }
        all
    }
}

/// A reviewer's (or an operator list's) decision about a domain.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// Reclassified `safe`: `allowlisted`.
    Allow,
    /// Reclassified `disposable`: `blocked`.
    Block,
}

/// Everything known about a domain apart from DNS.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Signals {
    /// On a free-webmail list.
    pub free: bool,
    /// On a disposable list.
    pub disposable: bool,
    /// An alias/relay service protecting a permanent inbox: known, never disposable.
    pub relay: bool,
    /// An MX host is shared multi-tenant infrastructure.
    pub shared_mx: bool,
    /// An MX host or address is infrastructure known to serve disposable domains.
    pub mx_ip_match: bool,
    pub decision: Option<Decision>,
}

/// Applies the rules to the signals and the DNS answer.
pub fn decide(s: &Signals, mx: &MxInfo, cached: bool) -> VerdictResult {
    let has_mx = mx.has_mx();
    let allowlisted = s.decision == Some(Decision::Allow) && !s.free;
    let blocked = s.decision == Some(Decision::Block) && !s.free;
    let known_safe = s.free || s.relay || allowlisted;
    let mx_ip_match = has_mx && s.mx_ip_match && !known_safe && !s.shared_mx;
    let disposable = blocked || (has_mx && !known_safe && (s.disposable || mx_ip_match));
    let free_provider = has_mx && s.free;
    let shared_mx = has_mx && s.shared_mx;
    let mx_records = mx.hosts().iter().map(|h| h.name.clone()).collect();
    let mx_ip_address = mx.addresses().iter().map(IpAddr::to_string).collect();
    VerdictResult {
        verdict: if disposable { Verdict::Disposable } else { Verdict::Safe },
        disposable,
        temporary: disposable,
        safe: !disposable,
        free_provider,
        business_email: shared_mx && !disposable && !s.free && !s.relay,
        shared_mx,
        has_mx,
        domain_exists: mx.domain_exists(),
        mx_records,
        mx_ip_address,
        level: if disposable { Level::Critical } else { Level::Low },
        recommendation: if disposable { Recommendation::Block } else { Recommendation::Allow },
        cached,
        allowlisted,
        blocked,
        mx_ip_match,
        review_required: has_mx && !disposable && !known_safe,
    }
}

#[cfg(test)]
mod tests;
