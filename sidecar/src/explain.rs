//! Why a domain's verdict is what it is, for support ("a customer says they were refused"):
//! `email-verdict explain` and `GET /admin/v1/explain` answer the same [`Explanation`].
//!
//! The verdict comes from the lookup's own path ([`Verdicts::verdict_explained_learning`], the
//! facts the public page shows as [`Why`]), without learning anything: a support question is no
//! signup. For an email address only its domain is judged and shown; the local part is never
//! kept. When DNS does not answer, what is known offline (lists, decisions) is still told.
//! The JSON field names are stable (docs/operator-guide.md, "Explaining a verdict").

mod facts;

use email_verdict_core::signup::velocity::VelocityLimits;
use email_verdict_core::{Domain, InputError, LookupInput, MxInfo, VerdictResult, VerdictSource};
use serde::Serialize;

use crate::lists::LiveCatalog;
use crate::state::{StateError, StateStore};
use crate::verdicts::{LookupError, Verdicts, Why, WhyDecision};
pub use facts::{DecisionFacts, InfraFact, ListingFacts, Next, SignupFacts, SourceFacts, WindowFacts};

/// What an explanation is made from: the server's (or the command's) own services.
pub struct Explainer<'a> {
    pub verdicts: &'a Verdicts,
    pub store: &'a dyn StateStore,
    pub lists: &'a LiveCatalog,
    /// `velocity` limits this sidecar applies (`/ext_authz`), when configured.
    pub limits: Option<&'a VelocityLimits>,
    /// Unix seconds.
    pub now: i64,
}

#[derive(Debug, thiserror::Error)]
pub enum ExplainError {
    /// Not a domain or an email address (the input is not repeated: it may be an address).
    #[error("not a domain or an email address: {0}")]
    BadInput(InputError),
    #[error(transparent)]
    Store(#[from] StateError),
}

/// Which fact decides the verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Deciding {
    /// A strong list names the domain, or a parent whose mail it shares.
    StrongList,
    /// A weak-only listing, corroborated by the domain's own mail servers.
    List,
    /// A reviewer's decision (`email-verdict review set`).
    Reviewer,
    /// The operator's allowlist or blocklist file.
    Operator,
    /// Its own mail servers serve disposable domains (`mx_ip_match`).
    Infrastructure,
    /// Free webmail: never disposable (rule 2).
    FreeWebmail,
    /// A privacy relay protecting a permanent inbox: never disposable.
    Relay,
    /// The rules alone: nothing lists or decides it (or only what does not decide alone).
    Rules,
    /// DNS did not answer and the verdict needs it.
    Unknown,
}

/// Why the verdict is what it is (the JSON form; the CLI's text form says the same).
#[derive(Debug, Clone, Serialize)]
pub struct Explanation {
    /// The domain judged (for an email address, its domain).
    pub domain: String,
    /// `domain` or `email`: what was asked about.
    pub input_type: &'static str,
    /// `disposable`, `safe`, or `null` when DNS did not answer and the verdict needs it.
    pub verdict: Option<&'static str>,
    pub source: Deciding,
    /// One sentence for people.
    pub reason: String,
    pub dns: DnsFacts,
    pub listing: Option<ListingFacts>,
    pub decision: Option<DecisionFacts>,
    pub infrastructure: Vec<InfraFact>,
    pub free_webmail: bool,
    pub relay: bool,
    /// The lookup queues it for a person to look at.
    pub review_required: bool,
    pub signups: SignupFacts,
    pub next: Next,
}

/// What DNS said, or that it did not answer.
#[derive(Debug, Clone, Serialize)]
pub struct DnsFacts {
    pub available: bool,
    pub error: Option<String>,
    pub domain_exists: bool,
    pub has_mx: bool,
    /// MX hosts by preference, each `host (address, ...)`.
    pub mx: Vec<String>,
}

impl Explainer<'_> {
    /// Explains `query` (a domain or an email address).
    pub async fn explain(&self, query: &str) -> Result<Explanation, ExplainError> {
        let input = LookupInput::parse(query.trim()).map_err(ExplainError::BadInput)?;
        // Only the domain is looked at: nothing of a local part goes further than this line.
        let domain = input.domain().clone();
        let input_type = match input.input_type() {
            email_verdict_core::InputType::Domain => "domain",
            email_verdict_core::InputType::Email => "email",
        };
        let (verdict, why, dns, infra) = match self.judge(&domain).await? {
            Judgement::Done { result, source, why, dns, infra } => (Some((result, source)), why, dns, infra),
            Judgement::NoDns { why, error } => (None, why, DnsFacts::failed(error), Vec::new()),
        };
        let source_of = verdict.as_ref().map(|(r, s)| (r, *s));
        let catalog = self.verdicts.catalog();
        let (free, relay) = (catalog.free.contains(&domain), catalog.relay.contains(&domain));
        let (source, reason) = deciding(source_of, &why, free, relay);
        let verdict = verdict.map(|(r, _)| r);
        let listing = why.listing.as_ref().map(|l| ListingFacts::new(l, self.lists));
        let decision = match &why.decision {
            Some(d) => Some(DecisionFacts::new(d, &domain, self.store, &catalog, self.lists).await?),
            None => None,
        };
        let signups = SignupFacts::read(self, &domain).await?;
        let verdict_str = verdict.as_ref().map(|r| if r.disposable { "disposable" } else { "safe" });
        let next = Next::new(&domain, verdict.as_ref().map(|r| r.disposable), free, &why);
        Ok(Explanation {
            domain: domain.to_string(),
            input_type,
            verdict: verdict_str,
            source,
            reason,
            dns,
            listing,
            decision,
            infrastructure: infra,
            free_webmail: free,
            relay,
            review_required: verdict.as_ref().is_some_and(|r| r.review_required),
            signups,
            next,
        })
    }

    async fn judge(&self, domain: &Domain) -> Result<Judgement, ExplainError> {
        let input = LookupInput::Domain(domain.clone());
        match self.verdicts.verdict_explained_learning(&input, false).await {
            Ok(e) => {
                let dns = if e.mx_unavailable {
                    DnsFacts::failed("no MX answer in time".into())
                } else {
                    DnsFacts::of(&e.mx)
                };
                let infra = e.infra.iter().map(InfraFact::new).collect();
                Ok(Judgement::Done { result: e.result, source: e.source, why: e.why, dns, infra })
            }
            Err(LookupError::Dns(failure)) => {
                // What is known without DNS: the lists and the decisions.
                let applied = self.verdicts.applied_decision(domain).await.map_err(store_error)?;
                let catalog = self.verdicts.catalog();
                let signals = catalog.signals(domain, &MxInfo::NoMx, applied.as_ref().map(|a| a.decision));
                let why = Why::new(&catalog, domain, &signals, applied, Vec::new());
                Ok(Judgement::NoDns { why, error: failure.to_string() })
            }
            Err(LookupError::Store(e)) => Err(e.into()),
        }
    }
}

enum Judgement {
    Done { result: VerdictResult, source: VerdictSource, why: Why, dns: DnsFacts, infra: Vec<InfraFact> },
    NoDns { why: Why, error: String },
}

fn store_error(e: LookupError) -> ExplainError {
    match e {
        LookupError::Store(e) => e.into(),
        LookupError::Dns(d) => StateError::Unavailable(d.to_string()).into(),
    }
}

impl DnsFacts {
    fn failed(error: String) -> Self {
        Self { available: false, error: Some(error), domain_exists: false, has_mx: false, mx: Vec::new() }
    }

    fn of(mx: &MxInfo) -> Self {
        let hosts = mx.hosts().iter().map(|h| {
            let ips: Vec<String> = h.ips.iter().map(ToString::to_string).collect();
            if ips.is_empty() { h.name.clone() } else { format!("{} ({})", h.name, ips.join(", ")) }
        });
        Self {
            available: true,
            error: None,
            domain_exists: mx.domain_exists(),
            has_mx: mx.has_mx(),
            mx: hosts.collect(),
        }
    }
}

/// The deciding fact and a sentence saying it: the verdict's [`VerdictSource`] (what the metric
/// and `x-email-verdict-source` say), told apart further where a person needs more (free
/// webmail, a relay, no DNS) and said in a sentence.
fn deciding(result: Option<(&VerdictResult, VerdictSource)>, why: &Why, free: bool, relay: bool) -> (Deciding, String) {
    if free {
        return (Deciding::FreeWebmail, "free webmail: never disposable, whatever a list or decision says".into());
    }
    match &why.decision {
        Some(WhyDecision::Reviewer { decision, on }) => {
            let v = crate::state::decision_str(Some(*decision));
            return (Deciding::Reviewer, format!("a reviewer decided {v} on {on}"));
        }
        Some(WhyDecision::Operator(decision)) => {
            let (v, file) = match decision {
                email_verdict_core::Decision::Block => ("disposable", "blocklist"),
                email_verdict_core::Decision::Allow => ("safe", "allowlist"),
            };
            return (Deciding::Operator, format!("the operator's {file} file makes it {v}"));
        }
        None => {}
    }
    if relay {
        return (Deciding::Relay, "a privacy relay that forwards to a permanent inbox: never disposable".into());
    }
    let Some((result, source)) = result else {
        return (Deciding::Unknown, "DNS did not answer, and nothing known offline decides the verdict".into());
    };
    match source {
        VerdictSource::StrongList => (Deciding::StrongList, "a strong list names it".into()),
        VerdictSource::List => {
            (Deciding::List, "a weak listing, corroborated by its own mail servers serving disposable domains".into())
        }
        VerdictSource::Infrastructure => {
            (Deciding::Infrastructure, "its own mail servers serve disposable domains".into())
        }
        // A decision in force is `why.decision`, said above.
        VerdictSource::Reviewer => (Deciding::Reviewer, "a reviewer's decision".into()),
        VerdictSource::Operator => (Deciding::Operator, "the operator's list file".into()),
        VerdictSource::Rules if !result.has_mx => (Deciding::Rules, "it cannot receive mail (no MX): safe".into()),
        VerdictSource::Rules if why.listing.is_some() => {
            (Deciding::Rules, "listed, but not by a source that decides alone: safe, and queued for review".into())
        }
        VerdictSource::Rules => (Deciding::Rules, "no list, decision or mail server marks it: safe".into()),
    }
}

#[cfg(test)]
mod tests {
    use email_verdict_core::catalog::Tier;
    use email_verdict_core::verdict::{Listing, MxHost, decide};
    use email_verdict_core::{Decision, Signals};

    use super::*;
    use crate::verdicts::WhyListing;

    /// The signals of a case, and the `Why` the lookup would give for them.
    struct Case {
        signals: Signals,
        has_mx: bool,
        reviewer: bool,
        dns: bool,
    }

    fn case(f: impl FnOnce(&mut Signals)) -> Case {
        let mut signals = Signals::default();
        f(&mut signals);
        Case { signals, has_mx: true, reviewer: false, dns: true }
    }

    fn check(c: Case, expected: Deciding) {
        let mx = if c.has_mx { MxInfo::Mx { hosts: vec![MxHost::new("mx.x.test", Vec::new())] } } else { MxInfo::NoMx };
        let result = decide(&c.signals, &mx, false);
        let listing = c.signals.listing.map(|l| WhyListing {
            entry: "x.test".into(),
            sources: vec![("s".into(), if l.strong { Tier::Strong } else { Tier::Weak })],
            strong: l.strong,
            via_parent: l.via_parent,
            parent_mail: c.signals.parent_mail,
        });
        let decision = c.signals.decision.map(|d| {
            if c.reviewer {
                WhyDecision::Reviewer { decision: d, on: "x.test".into() }
            } else {
                WhyDecision::Operator(d)
            }
        });
        let why = Why { listing, decision, infra: Vec::new() };
        let source = VerdictSource::of(&c.signals, &result, c.reviewer);
        let result = c.dns.then_some((&result, source));
        let (got, reason) = deciding(result, &why, c.signals.free, c.signals.relay);
        assert_eq!(got, expected, "{reason}");
    }

    fn listed(strong: bool) -> Option<Listing> {
        Some(Listing { sources: Default::default(), strong, via_parent: false })
    }

    #[test]
    fn the_deciding_source_follows_the_rules_order() {
        check(case(|s| (s.free, s.decision) = (true, Some(Decision::Block))), Deciding::FreeWebmail);
        check(Case { reviewer: true, ..case(|s| s.decision = Some(Decision::Allow)) }, Deciding::Reviewer);
        check(case(|s| (s.decision, s.listing) = (Some(Decision::Block), listed(false))), Deciding::Operator);
        check(case(|s| (s.relay, s.listing) = (true, listed(true))), Deciding::Relay);
        check(case(|s| s.listing = listed(true)), Deciding::StrongList);
        check(case(|s| (s.listing, s.mx_ip_match) = (listed(false), true)), Deciding::List);
        check(case(|s| s.mx_ip_match = true), Deciding::Infrastructure);
        check(case(|s| s.listing = listed(false)), Deciding::Rules);
        check(Case { has_mx: false, ..case(|s| s.listing = listed(true)) }, Deciding::Rules);
        check(case(|_| {}), Deciding::Rules);
        check(Case { dns: false, ..case(|s| s.listing = listed(false)) }, Deciding::Unknown);
    }
}
