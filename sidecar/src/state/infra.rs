//! The index of mail infrastructure (issues 5, 14, 24): which mail servers (MX host names and
//! addresses) domains of known standing use, and reviewers' marks on servers.
//!
//! A *fact* is what one registrable domain that the lists or a reviewer call disposable (or
//! legitimate) teaches about a server it uses: that it uses it, when that was last seen, and
//! through a host named under which registrable domain (`via`, the host's owner). The verdict
//! path (`verdicts/infra.rs`) weighs them; the store only keeps and counts them. What a domain
//! teaches is replaced whole each time it is learned again, so a fact goes as soon as its
//! evidence does (the domain's MX moved, or it is no longer known: learned with no facts).

use async_trait::async_trait;

use email_verdict_core::Decision;

use super::{StateError, parse_decision};

/// What kind of value a server is known by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ServerKind {
    /// An MX host name (lower case, no trailing dot).
    Host,
    /// An address of an MX host, in its textual form.
    Address,
}

impl ServerKind {
    /// As stored and shown: `host` or `ip`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Host => "host",
            Self::Address => "ip",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "host" => Some(Self::Host),
            "ip" => Some(Self::Address),
            _ => None,
        }
    }
}

/// A mail server as the index knows it: a host name or an address.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct MailServer {
    pub kind: ServerKind,
    pub value: String,
}

impl MailServer {
    pub fn host(name: impl Into<String>) -> Self {
        Self { kind: ServerKind::Host, value: name.into() }
    }

    pub fn address(ip: impl Into<String>) -> Self {
        Self { kind: ServerKind::Address, value: ip.into() }
    }

    /// A value as a reviewer types it: an IP address, else a host name (normalized like a
    /// domain: lower case, no trailing dot). `None` when it is neither.
    pub fn parse(text: &str) -> Option<Self> {
        let text = text.trim();
        if let Ok(ip) = text.trim_start_matches('[').trim_end_matches(']').parse::<std::net::IpAddr>() {
            return Some(Self::address(ip.to_string()));
        }
        email_verdict_core::Domain::parse(text).ok().map(|d| Self::host(d.to_string()))
    }
}

impl std::fmt::Display for MailServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.value)
    }
}

/// One fact a domain teaches: it uses `server`, reached through a host named under `via` (the
/// registrable domain that owns that host; for a host, its own owner).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ServerFact {
    pub server: MailServer,
    pub via: String,
}

/// What the index holds on one server as evidence about one judged domain: the distinct
/// registrable domains known disposable and known legitimate that use it, counting only facts
/// seen recently enough, and leaving out the judged domain's own facts and every fact taught
/// through a host the judged domain owns (a server named under a domain is that domain's: other
/// domains pointing at it do not make its owner disposable); and a reviewer's mark.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ServerEvidence {
    pub disposable: u64,
    pub legitimate: u64,
    /// A reviewer's mark in force: `Block` (disposable) or `Allow` (legitimate).
    pub mark: Option<Decision>,
}

/// A reviewer's mark on a server (`decision: None` withdraws the previous one).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerMark {
    pub server: MailServer,
    pub decision: Option<Decision>,
    pub reviewer: String,
    pub note: String,
    /// Unix seconds.
    pub at: i64,
}

/// A server of the index, for a reviewer: how many domains of each standing use it (fresh
/// facts), when it was last seen, and its mark.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LearnedServer {
    pub server: MailServer,
    pub disposable: u64,
    pub legitimate: u64,
    /// Unix seconds; 0 when no fresh fact is left (a marked server).
    pub last_seen: i64,
    pub mark: Option<Decision>,
}

/// One domain that taught a server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Teacher {
    pub domain: String,
    pub disposable: bool,
    /// The owners of the hosts through which it uses the server.
    pub via: Vec<String>,
    /// Unix seconds.
    pub seen: i64,
}

/// A page of the index's servers, most disposable domains first.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ServerPage {
    pub servers: Vec<LearnedServer>,
    /// Servers in the index (with a fact or a mark).
    pub total: u64,
}

/// The index of mail infrastructure.
#[async_trait]
pub trait InfraStore: Send + Sync + 'static {
    /// Replaces what `domain` (a registrable domain) teaches by `facts`, seen at `now`, known
    /// disposable or known legitimate: facts it taught before and not now are removed. Empty
    /// `facts` forgets the domain.
    async fn learn_infra(
        &self,
        domain: &str,
        disposable: bool,
        facts: &[ServerFact],
        now: i64,
    ) -> Result<(), StateError>;
    /// The evidence on each of `servers` (in order) about `judged` (a registrable domain),
    /// counting facts seen at or after `fresh_since` only.
    async fn infra_evidence(
        &self,
        judged: &str,
        servers: &[MailServer],
        fresh_since: i64,
    ) -> Result<Vec<ServerEvidence>, StateError>;
    /// Records a reviewer's mark on a server (or withdraws it); the history is kept.
    async fn mark_server(&self, mark: ServerMark) -> Result<(), StateError>;
    /// Every mark on `server`, oldest first.
    async fn server_marks(&self, server: &MailServer) -> Result<Vec<ServerMark>, StateError>;
    /// Servers of the index, most (fresh) disposable domains first, then by kind and value.
    async fn learned_servers(&self, fresh_since: i64, offset: usize, limit: usize) -> Result<ServerPage, StateError>;
    /// The domains that taught `server` (fresh facts), most recently seen first, at most `limit`.
    async fn server_teachers(
        &self,
        server: &MailServer,
        fresh_since: i64,
        limit: usize,
    ) -> Result<Vec<Teacher>, StateError>;
}

/// `disposable` / `safe` / `withdrawn`, as server marks are written (like decisions).
pub fn mark_str(d: Option<Decision>) -> &'static str {
    super::decision_str(d)
}

// Reading back what a backend kept as text, once for both backends, so that they agree on what
// a stored value means and on what counts as a damaged store.

fn damaged(what: &str, text: &str) -> StateError {
    StateError::Invalid(format!("infrastructure data: bad {what} {text:?}"))
}

impl ServerKind {
    /// From [`ServerKind::as_str`]'s text.
    pub(super) fn stored(text: &str) -> Result<Self, StateError> {
        Self::parse(text).ok_or_else(|| damaged("server kind", text))
    }
}

impl ServerMark {
    /// One mark of a server's history, its decision as [`mark_str`] wrote it.
    pub(super) fn stored(
        server: MailServer,
        decision: &str,
        reviewer: String,
        note: String,
        at: i64,
    ) -> Result<Self, StateError> {
        let decision = parse_decision(decision).ok_or_else(|| damaged("mark", decision))?;
        Ok(Self { server, decision, reviewer, note, at })
    }
}

/// The mark in force on a server from the last one [`mark_str`] wrote: none when there is none
/// or it was a withdrawal.
pub(super) fn mark_in_force(text: Option<&str>) -> Option<Decision> {
    text.and_then(parse_decision).flatten()
}

/// The owners of the hosts a domain reaches a server through, as both backends join them.
pub(super) fn split_owners(joined: &str) -> impl Iterator<Item = &str> {
    joined.split(',').filter(|o| !o.is_empty())
}

impl Teacher {
    /// `owners_joined` as [`split_owners`] reads it; `via` comes out sorted.
    pub(super) fn stored(domain: String, disposable: bool, owners_joined: &str, seen: i64) -> Self {
        let mut via: Vec<String> = split_owners(owners_joined).map(str::to_owned).collect();
        via.sort();
        Self { domain, disposable, via, seen }
    }
}
