//! Why a verdict is what it is, for the public page (issue 14: "say why"). Never part of the
//! JSON record, which stays exactly the spec's.

use email_verdict_core::catalog::Tier;
use email_verdict_core::{Catalog, Decision, Domain, Signals};

use crate::state::AppliedDecision;

/// The facts behind a verdict.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Why {
    /// The disposable listing that covers the domain, if any.
    pub listing: Option<WhyListing>,
    /// A reviewer's decision in force, or an operator's list.
    pub decision: Option<WhyDecision>,
    /// Own MX host names or addresses known to serve disposable domains, with how many.
    pub infra: Vec<(String, u64)>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WhyListing {
    /// The list entry that matched: the domain itself or a parent.
    pub entry: String,
    /// Every source that lists it, with its tier.
    pub sources: Vec<(String, Tier)>,
    pub strong: bool,
    pub via_parent: bool,
    /// For a parent's listing: the domain's mail goes where the parent's does.
    pub parent_mail: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WhyDecision {
    /// A reviewer's decision, made on the domain or on a parent (`on`).
    Reviewer { decision: Decision, on: String },
    /// The operator's allowlist or blocklist file.
    Operator(Decision),
}

impl Why {
    pub fn new(
        catalog: &Catalog,
        domain: &Domain,
        signals: &Signals,
        applied: Option<AppliedDecision>,
        infra: Vec<(String, u64)>,
    ) -> Self {
        let listing = signals.listing.and_then(|l| {
            let listed = catalog.disposable_listing(domain)?;
            Some(WhyListing {
                entry: listed.entry.to_owned(),
                sources: catalog.sources_of(l.sources).map(|s| (s.name.to_string(), s.tier)).collect(),
                strong: l.strong,
                via_parent: l.via_parent,
                parent_mail: signals.parent_mail,
            })
        });
        let decision = match applied {
            Some(AppliedDecision { decision, on }) => Some(WhyDecision::Reviewer { decision, on }),
            None => signals.decision.map(WhyDecision::Operator),
        };
        Self { listing, decision, infra }
    }
}
