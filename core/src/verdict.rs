//! The verdict rules of the spec, in one function: [`decide`].
//!
//! Rules (spec numbering): (1) two verdicts; ambiguous means `safe` + `review_required`;
//! (2) free webmail is never `disposable`, whatever a list or decision says; (3) shared MX
//! decides neither `disposable` nor `allowlisted`, and hides nothing: the domain's own (not
//! shared) mail servers are judged on their own beside it (issue 24); (4) no MX (none, null MX,
//! or no such domain) is `safe` with no MX data — only an explicit block decision overrides it.
//!
//! Sources are not equal: a strong listing decides `disposable`; a weak-only one is a reason
//! to review (rule 1) unless something independent corroborates it — a block decision or the
//! domain's own mail servers (`mx_ip_match`). A listing through a parent decides only when the
//! domain's mail goes where the parent's does: a wildcard-MX service (`x7.mailinator.com`
//! answers MX with the service's own host) inherits it; a subdomain with a mail server of its
//! own is reviewed; a subdomain with no MX at all stays rule 4 (`safe`, queued `no_mx`: it
//! cannot receive the signup's mail).

use std::collections::HashSet;
use std::net::IpAddr;

use crate::api::{Level, Recommendation, Verdict, VerdictResult};
use crate::catalog::SourceSet;

/// What DNS said about a domain's mail exchangers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MxInfo {
    /// NXDOMAIN: the name does not exist.
    NoDomain,
    /// The name exists but has no MX record.
    NoMx,
    /// RFC 7505 null MX (`MX 0 .`): the domain states it accepts no mail.
    NullMx,
    /// The name exists with no MX record but with an address: RFC 5321 §5.1 delivers to the
    /// name itself (an implicit MX). Also what a failed address lookup is taken for: only what
    /// DNS says cannot receive mail is [`Mail::None`]. `has_mx` stays false, as the spec reads it.
    ImplicitMx,
    /// MX hosts, by preference, each with its addresses.
    Mx { hosts: Vec<MxHost> },
    /// MX hosts from an answer larger than what is kept (a resolver bounds what one lookup may
    /// cost): `hosts` are the first ones by preference, and `more_hosts` were in the answer
    /// after them, neither judged nor shown. Never the whole picture: see [`MxInfo::cut`].
    Partial { hosts: Vec<MxHost>, more_hosts: usize },
}

/// Where a domain's mail goes ([`MxInfo::mail`]): the `x-email-verdict-mail` header, which the
/// gateway's `no_mx` setting reads. Never part of the JSON record.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Mail {
    /// MX records.
    Mx,
    /// No MX record, an address record: the implicit MX.
    Implicit,
    /// No mail can be delivered: the name does not exist, has neither MX nor address, or says
    /// so with a null MX.
    None,
}

impl Mail {
    pub const HEADER: &'static str = "x-email-verdict-mail";

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Mx => "mx",
            Self::Implicit => "implicit",
            Self::None => "none",
        }
    }

    pub fn parse(value: &[u8]) -> Option<Self> {
        [Self::Mx, Self::Implicit, Self::None].into_iter().find(|m| m.as_str().as_bytes() == value)
    }
}

/// One mail exchanger: its name (lowercase, no trailing dot) and its A/AAAA addresses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MxHost {
    pub name: String,
    pub ips: Vec<IpAddr>,
    /// Whether its addresses were looked up: hosts past a resolver's bound are known by name
    /// only (`ips` empty, which then does not mean "no address").
    pub resolved: bool,
    /// Addresses its answers held beyond `ips` (left out to bound the answer).
    pub more_ips: usize,
}

impl MxHost {
    /// A host whose addresses were looked up, all of them kept.
    pub fn new(name: impl Into<String>, ips: Vec<IpAddr>) -> Self {
        Self { name: name.into(), ips, resolved: true, more_ips: 0 }
    }

    /// A host known by name only: its addresses were not looked up.
    pub fn unresolved(name: impl Into<String>) -> Self {
        Self { name: name.into(), ips: Vec::new(), resolved: false, more_ips: 0 }
    }
}

/// What an MX answer lost to the bounds of a lookup ([`MxInfo::cut`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MxCut {
    /// MX hosts after the kept ones: not judged, not shown.
    pub hosts: usize,
    /// Kept hosts whose addresses were not looked up (named, judged by name only).
    pub unresolved: usize,
    /// Addresses left out of the kept hosts' answers.
    pub addresses: usize,
}

impl MxInfo {
    /// `Mx`, or `Partial` when `more_hosts` were left out.
    pub fn with_hosts(hosts: Vec<MxHost>, more_hosts: usize) -> Self {
        if more_hosts == 0 { Self::Mx { hosts } } else { Self::Partial { hosts, more_hosts } }
    }

    pub fn has_mx(&self) -> bool {
        matches!(self, Self::Mx { .. } | Self::Partial { .. })
    }

    pub fn domain_exists(&self) -> bool {
        !matches!(self, Self::NoDomain)
    }

    /// Whether mail can be delivered to the domain, as RFC 5321 reads its DNS.
    pub fn mail(&self) -> Mail {
        match self {
            Self::Mx { .. } | Self::Partial { .. } => Mail::Mx,
            Self::ImplicitMx => Mail::Implicit,
            Self::NoDomain | Self::NoMx | Self::NullMx => Mail::None,
        }
    }

    /// The MX hosts kept (none without MX).
    pub fn hosts(&self) -> &[MxHost] {
        match self {
            Self::Mx { hosts } | Self::Partial { hosts, .. } => hosts,
            _ => &[],
        }
    }

    /// What was left out of the answer to bound it; `None` when nothing was: every MX host with
    /// every address. A cut answer is not the whole picture, so it must never be what vouches
    /// for a domain (the hosts and addresses an attacker hid are unknown).
    pub fn cut(&self) -> Option<MxCut> {
        let more_hosts = match self {
            Self::Partial { more_hosts, .. } => *more_hosts,
            _ => 0,
        };
        let hosts = self.hosts();
        let cut = MxCut {
            hosts: more_hosts,
            unresolved: hosts.iter().filter(|h| !h.resolved).count(),
            addresses: hosts.iter().map(|h| h.more_ips).sum(),
        };
        (cut != MxCut::default()).then_some(cut)
    }

    /// Every MX address, in MX order, without duplicates (linear time: a hash set of those seen).
    pub fn addresses(&self) -> Vec<IpAddr> {
        let mut seen: HashSet<IpAddr, foldhash::fast::RandomState> = HashSet::default();
        self.hosts().iter().flat_map(|h| &h.ips).filter(|ip| seen.insert(**ip)).copied().collect()
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

/// A disposable listing that covers a domain: which sources, and whether it names a parent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Listing {
    /// Every source that lists the matched entry (see [`crate::catalog::Catalog::sources_of`]).
    pub sources: SourceSet,
    /// At least one of them is strong.
    pub strong: bool,
    /// The entry is a parent of the domain, not the domain itself.
    pub via_parent: bool,
}

/// Everything known about a domain apart from DNS.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Signals {
    /// On a free-webmail list.
    pub free: bool,
    /// On a disposable list (the name or a parent), with the sources that say so.
    pub listing: Option<Listing>,
    /// For a listing through a parent: the domain's own mail goes where the parent's does
    /// (an MX host name or address of the parent's, shared infrastructure aside).
    pub parent_mail: bool,
    /// An alias/relay service protecting a permanent inbox: known, never disposable.
    pub relay: bool,
    /// An MX host is shared multi-tenant infrastructure.
    pub shared_mx: bool,
    /// One of the domain's own MX hosts (not shared infrastructure), or its address, is
    /// infrastructure known to serve disposable domains. A shared host beside it changes nothing
    /// (rule 3 says shared infrastructure transmits no signal, not that it hides one).
    pub mx_ip_match: bool,
    pub decision: Option<Decision>,
}

impl Signals {
    /// The listing decides `disposable` on its own: a strong source lists the name, or lists
    /// a parent whose mail the name shares. A weak-only listing never does (it needs
    /// corroboration: a block decision or `mx_ip_match`).
    pub fn listing_decides(&self) -> bool {
        self.listing.is_some_and(|l| l.strong && (!l.via_parent || self.parent_mail))
    }

    /// A free or relay list, an operator file or a reviewer vouches for or decided the name: a
    /// typo suggestion is never made then. A disposable listing does not count: typosquatters
    /// register the common typos and the lists carry them, and a name without mail (the other
    /// condition) misleads no one who receives mail there.
    pub fn known_beyond_disposable_lists(&self) -> bool {
        self.free || self.relay || self.decision.is_some()
    }

    /// A listing that did not decide: the domain is queued for review because of it.
    pub fn listing_in_question(&self) -> bool {
        self.listing.is_some() && !self.listing_decides()
    }
}

/// Applies the rules to the signals and the DNS answer.
pub fn decide(s: &Signals, mx: &MxInfo, cached: bool) -> VerdictResult {
    judge(s, mx, cached, false)
}

/// The verdict when the MX answer could not be had (DNS failing, or slower than the lookup's
/// deadline), if what is known apart from DNS fixes it: a decision (a reviewer's, or the
/// operator's allow/block file), free webmail or a relay service (`safe`), or a strong source
/// listing the name itself (`disposable`: a provider the lists know receives mail). `None`
/// when the verdict needs DNS: a weak-only or parent's listing, a name no list knows. The
/// result carries no MX data (`has_mx` and `domain_exists` false, empty MX arrays, `cached`
/// false) and is never `review_required`; `free_provider` says what the list says.
pub fn decide_without_mx(s: &Signals) -> Option<VerdictResult> {
    let strong_here = s.listing.is_some_and(|l| l.strong && !l.via_parent);
    let known = s.decision.is_some() || s.free || s.relay || strong_here;
    // Nothing was shown to resolve: `domain_exists` false, as `has_mx`.
    known.then(|| judge(s, &MxInfo::NoDomain, false, true))
}

/// [`decide`]; with `mail_assumed`, a domain is judged as one that receives mail although
/// `mx` says nothing of it ([`decide_without_mx`]).
fn judge(s: &Signals, mx: &MxInfo, cached: bool, mail_assumed: bool) -> VerdictResult {
    let has_mx = mx.has_mx();
    let has_mail = has_mx || mail_assumed;
    let allowlisted = s.decision == Some(Decision::Allow) && !s.free;
    let blocked = s.decision == Some(Decision::Block) && !s.free;
    let known_safe = s.free || s.relay || allowlisted;
    let mx_ip_match = has_mx && s.mx_ip_match && !known_safe;
    let disposable = blocked || (has_mail && !known_safe && (s.listing_decides() || mx_ip_match));
    let free_provider = has_mail && s.free;
    let shared_mx = has_mx && s.shared_mx;
    let mx_records = mx.hosts().iter().map(|h| h.name.clone()).collect();
    let mx_ip_address = mx.addresses().iter().map(IpAddr::to_string).collect();
    VerdictResult {
        verdict: if disposable { Verdict::Disposable } else { Verdict::Safe },
        disposable,
        temporary: disposable,
        safe: !disposable,
        free_provider,
        // Never for a domain whose own mail servers are disposable infrastructure, even when a
        // reviewer's `safe` keeps it safe.
        // A cut answer (past the resolver's bounds) never vouches for a domain: what was left
        // out is unknown.
        business_email: shared_mx && !disposable && !s.free && !s.relay && !s.mx_ip_match && mx.cut().is_none(),
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

pub mod source;
pub use source::VerdictSource;

#[cfg(test)]
mod tests;
