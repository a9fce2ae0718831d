//! The parts of an [`Explanation`](super::Explanation): each read from the service that owns it.

use email_verdict_core::catalog::Tier;
use email_verdict_core::signup::velocity::{Action, Limit, Scope, Window};
use email_verdict_core::{Catalog, Decision, Domain};
use serde::Serialize;

use super::Explainer;
use crate::clock::rfc3339;
use crate::lists::{LiveCatalog, OPERATOR_SOURCE, OPERATOR_WEAK_SOURCE, shipped_version};
use crate::state::{Counter, DecisionRecord, StateError, StateStore, decision_str};
use crate::verdicts::{InfraMatch, InfraReason, WhyDecision, WhyListing};

/// The disposable listing that covers the domain.
#[derive(Debug, Clone, Serialize)]
pub struct ListingFacts {
    /// The entry that matched: the domain itself or a parent.
    pub entry: String,
    pub via_parent: bool,
    /// For a parent's listing: the domain's mail goes where the parent's does.
    pub parent_mail: bool,
    /// A strong source lists it.
    pub strong: bool,
    /// Every source that lists it.
    pub sources: Vec<SourceFacts>,
}

#[derive(Debug, Clone, Serialize)]
pub struct SourceFacts {
    pub name: String,
    /// `strong` or `weak`.
    pub tier: &'static str,
    /// The shipped package's version (`null` for the operator's lists).
    pub version: Option<String>,
    /// Where it comes from: the shipped file, or the operator's lists of that tier.
    pub location: String,
    /// The operator's lists: when the newest of them was last loaded (RFC 3339).
    pub loaded_at: Option<String>,
}

impl ListingFacts {
    pub fn new(l: &WhyListing, lists: &LiveCatalog) -> Self {
        let sources = l.sources.iter().map(|(name, tier)| SourceFacts::new(name, *tier, lists)).collect();
        let (entry, via_parent, parent_mail, strong) = (l.entry.clone(), l.via_parent, l.parent_mail, l.strong);
        Self { entry, via_parent, parent_mail, strong, sources }
    }
}

impl SourceFacts {
    fn new(name: &str, tier: Tier, lists: &LiveCatalog) -> Self {
        let tier_str = tier.as_str();
        if let Some((version, path)) = shipped_version(name) {
            let (version, location) = (Some(version.to_owned()), format!("shipped: {path}"));
            return Self { name: name.to_owned(), tier: tier_str, version, location, loaded_at: None };
        }
        // The operator's disposable lists of this tier make up the source `operator(-weak)`.
        let operator = [OPERATOR_SOURCE, OPERATOR_WEAK_SOURCE].contains(&name);
        let files: Vec<_> = lists
            .lists()
            .into_iter()
            .filter(|s| operator && s.kind == "disposable" && s.tier == Some(tier_str))
            .collect();
        let location = files.iter().map(|s| s.source.as_str()).collect::<Vec<_>>().join(", ");
        let loaded_at = files.iter().filter_map(|s| s.last_success).max().map(rfc3339);
        Self { name: name.to_owned(), tier: tier_str, version: None, location, loaded_at }
    }
}

/// The decision in force: a reviewer's (with who, when and the note) or the operator's file.
#[derive(Debug, Clone, Serialize)]
pub struct DecisionFacts {
    /// `reviewer` or `operator`.
    pub by: &'static str,
    /// `safe` or `disposable`.
    pub verdict: &'static str,
    /// The name it was made on (the domain or a parent; for a file, the entry that matched).
    pub on: String,
    pub reviewer: Option<String>,
    /// RFC 3339.
    pub at: Option<String>,
    pub note: Option<String>,
    /// For the operator's decision: its allowlist or blocklist files.
    pub files: Vec<String>,
}

impl DecisionFacts {
    pub async fn new(
        d: &WhyDecision,
        domain: &Domain,
        store: &dyn StateStore,
        catalog: &Catalog,
        lists: &LiveCatalog,
    ) -> Result<Self, StateError> {
        match d {
            WhyDecision::Reviewer { decision, on } => {
                let history = store.decision_history(on).await?;
                let made: Option<&DecisionRecord> = history.iter().rev().find(|r| r.decision == Some(*decision));
                Ok(Self {
                    by: "reviewer",
                    verdict: decision_str(Some(*decision)),
                    on: on.clone(),
                    reviewer: made.map(|r| r.reviewer.clone()),
                    at: made.map(|r| rfc3339(r.at)),
                    note: made.map(|r| r.note.clone()),
                    files: Vec::new(),
                })
            }
            WhyDecision::Operator(decision) => {
                let (set, kind) = match decision {
                    Decision::Block => (&catalog.block, "blocklist"),
                    Decision::Allow => (&catalog.allow, "allowlist"),
                };
                let on =
                    set.find_in(domain.parents_to_registrable()).map_or_else(|| domain.to_string(), |(n, _)| n.into());
                let files = lists.lists().into_iter().filter(|s| s.kind == kind).map(|s| s.source).collect();
                let verdict = decision_str(Some(*decision));
                Ok(Self { by: "operator", verdict, on, reviewer: None, at: None, note: None, files })
            }
        }
    }
}

/// One of the domain's own mail servers that makes it disposable infrastructure.
#[derive(Debug, Clone, Serialize)]
pub struct InfraFact {
    /// A host name or an address.
    pub server: String,
    /// `host` or `address`.
    pub kind: &'static str,
    /// Disposable domains known to use it (besides this one).
    pub disposable_domains: u64,
    /// `marked` (a reviewer marked it), `owner` (named under a listed domain) or `domains`
    /// (enough disposable domains, no legitimate one, use it).
    pub reason: &'static str,
    /// For `owner`: the listed domain it is named under.
    pub owner: Option<String>,
}

impl InfraFact {
    pub fn new(m: &InfraMatch) -> Self {
        let kind = if m.server.value.parse::<std::net::IpAddr>().is_ok() { "address" } else { "host" };
        let (reason, owner) = match &m.reason {
            InfraReason::Marked => ("marked", None),
            InfraReason::Owner(o) => ("owner", Some(o.clone())),
            InfraReason::Domains => ("domains", None),
        };
        Self { server: m.server.value.clone(), kind, disposable_domains: m.disposable, reason, owner }
    }
}

/// The gateways' signup counts the store holds (read, never counted).
#[derive(Debug, Clone, Serialize)]
pub struct SignupFacts {
    /// The registrable domain's counts.
    pub domain: WindowFacts,
    /// Its own mail server's, when known.
    pub server: Option<WindowFacts>,
    /// Whether this sidecar has `velocity` limits (`/ext_authz`); a gateway's filter has its own.
    pub limits_configured: bool,
}

#[derive(Debug, Clone, Serialize)]
pub struct WindowFacts {
    pub name: String,
    /// Signups in the last hour and the last 24 hours.
    pub hour: u64,
    pub day: u64,
    pub limit: Option<LimitFacts>,
}

#[derive(Debug, Clone, Serialize)]
pub struct LimitFacts {
    /// `hour` or `day`.
    pub window: &'static str,
    pub max: u64,
    /// `block` or `flag`.
    pub action: &'static str,
    /// The next signup passes it.
    pub reached: bool,
}

impl SignupFacts {
    pub async fn read(x: &Explainer<'_>, domain: &Domain) -> Result<Self, StateError> {
        // Named as the gateway counts them (`signups.rs`): the registrable domain, its own server.
        let registrable = domain.registrable().unwrap_or(domain.as_str()).to_owned();
        let server = x.verdicts.known_mail_server(domain);
        let mut counters = vec![Counter::new(Scope::Domain, &registrable)];
        counters.extend(server.as_deref().map(|s| Counter::new(Scope::Server, s)));
        let windows = x.store.signup_counts(&counters, x.now).await?;
        let facts = |scope: Scope, name: String, w: Option<&Window>| {
            let w = w.copied().unwrap_or_default();
            let limit = x.limits.and_then(|l| l.limit(scope)).and_then(|l| LimitFacts::new(l, w));
            WindowFacts { name, hour: w.hour, day: w.day, limit }
        };
        Ok(Self {
            domain: facts(Scope::Domain, registrable, windows.first()),
            server: server.map(|s| facts(Scope::Server, s, windows.get(1))),
            limits_configured: x.limits.is_some(),
        })
    }
}

impl LimitFacts {
    fn new(limit: &Limit, w: Window) -> Option<Self> {
        let (window, max, count) = match (limit.per_hour, limit.per_day) {
            (Some(n), None) => ("hour", n, w.hour),
            (None, Some(n)) => ("day", n, w.day),
            _ => return None,
        };
        let action = match limit.action {
            Action::Block => "block",
            Action::Flag => "flag",
        };
        // A signup passes the limit when its count, itself included, is over `max`.
        Some(Self { window, max, action, reached: count >= max })
    }
}

/// What support can do about it.
#[derive(Debug, Clone, Serialize)]
pub struct Next {
    /// The command that turns the verdict around (`null`: none can, e.g. free webmail).
    pub undo: Option<String>,
    /// The command that withdraws the reviewer's decision in force, if one is.
    pub withdraw: Option<String>,
    /// When the change reaches lookups and gateways.
    pub takes_effect: String,
}

/// How long gateways take to follow a decision (the filter's `decision_sync_seconds` default).
const SYNC: &str = "lookups and /ext_authz follow a decision at once; a gateway's cached verdicts and its \
                    local fallback within its decision_sync_seconds (default 30)";

impl Next {
    pub fn new(domain: &Domain, disposable: Option<bool>, free: bool, why: &crate::verdicts::Why) -> Self {
        let undo = match disposable {
            Some(false) if free => None,
            Some(false) => Some(format!("email-verdict review set {domain} disposable --note \"REASON\"")),
            _ => Some(format!("email-verdict review set {domain} safe --note \"REASON\"")),
        };
        let withdraw = match &why.decision {
            Some(WhyDecision::Reviewer { on, .. }) => {
                Some(format!("email-verdict review clear {on} --note \"REASON\""))
            }
            _ => None,
        };
        Self { undo, withdraw, takes_effect: SYNC.to_owned() }
    }
}
