//! The "why" of a domain page (issue 14): one message per fact behind the verdict — a
//! reviewer's or the operator's decision, free webmail or relay, the sources that list the
//! domain or its parent (with their tier), the mail servers that tie it to known disposable
//! domains — or that nothing marks it.

use email_verdict_core::catalog::Tier;
use email_verdict_core::{Decision, VerdictResult};
use serde::Serialize;

use super::super::i18n;
use super::super::lang::Lang;
use crate::verdicts::{Why, WhyDecision, WhyListing};

/// One message: `why_<key>` with its placeholders (unused ones are empty).
#[derive(Debug, Default, Serialize, PartialEq, Eq)]
pub struct WhyLine {
    pub key: &'static str,
    pub sources: String,
    pub entry: String,
    pub servers: String,
    pub count: u64,
    pub on: String,
}

impl WhyLine {
    fn new(key: &'static str) -> Self {
        Self { key, ..Self::default() }
    }
}

pub fn why_lines(lang: Lang, r: &VerdictResult, why: &Why, relay: bool) -> Vec<WhyLine> {
    let mut lines = Vec::new();
    match &why.decision {
        Some(WhyDecision::Reviewer { decision, on }) => {
            let key = if *decision == Decision::Block { "decision_block" } else { "decision_allow" };
            lines.push(WhyLine { on: on.clone(), ..WhyLine::new(key) });
        }
        Some(WhyDecision::Operator(Decision::Block)) => lines.push(WhyLine::new("operator_block")),
        Some(WhyDecision::Operator(Decision::Allow)) => lines.push(WhyLine::new("operator_allow")),
        None => {}
    }
    if r.free_provider {
        lines.push(WhyLine::new("free"));
    } else if relay {
        lines.push(WhyLine::new("relay"));
    }
    if let Some(listing) = &why.listing {
        lines.push(listing_line(lang, listing));
    }
    if !why.infra.is_empty() {
        let servers = why.infra.iter().map(|(v, _)| v.as_str()).collect::<Vec<_>>().join(", ");
        let count = why.infra.iter().map(|(_, n)| *n).max().unwrap_or(0);
        lines.push(WhyLine { servers, count, ..WhyLine::new("infra") });
    }
    if lines.is_empty() {
        let key = match (r.has_mx, r.domain_exists) {
            (true, _) => "nothing",
            (false, true) => "no_mx",
            (false, false) => "no_domain",
        };
        lines.push(WhyLine::new(key));
    }
    lines
}

fn listing_line(lang: Lang, l: &WhyListing) -> WhyLine {
    let key = match (l.via_parent, l.strong, l.parent_mail) {
        (false, true, _) => "listed_strong",
        (false, false, _) => "listed_weak",
        (true, false, _) => "parent_weak",
        (true, true, true) => "parent_same_mail",
        (true, true, false) => "parent_own_mail",
    };
    let sources = l
        .sources
        .iter()
        .map(|(name, tier)| {
            let tier = i18n::text(lang, if *tier == Tier::Strong { "tier_strong" } else { "tier_weak" }, &[]);
            format!("{name} ({tier})")
        })
        .collect::<Vec<_>>()
        .join(", ");
    WhyLine { sources, entry: l.entry.clone(), ..WhyLine::new(key) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use email_verdict_core::verdict::decide;
    use email_verdict_core::{MxHost, MxInfo, Signals};

    fn result(disposable: bool) -> VerdictResult {
        let mx = MxInfo::Mx { hosts: vec![MxHost::new("mx.example", vec![])] };
        let s = Signals { decision: disposable.then_some(Decision::Block), ..Signals::default() };
        decide(&s, &mx, false)
    }

    fn keys(lines: &[WhyLine]) -> Vec<&str> {
        lines.iter().map(|l| l.key).collect()
    }

    fn listing(strong: bool, via_parent: bool, parent_mail: bool) -> Option<WhyListing> {
        let sources = vec![("ded".to_owned(), Tier::Strong), ("mailchecker".to_owned(), Tier::Weak)];
        let sources = if strong { sources } else { sources[1..].to_vec() };
        Some(WhyListing { entry: "listed.example".into(), sources, strong, via_parent, parent_mail })
    }

    #[test]
    fn one_line_per_fact() {
        let safe = result(false);
        let check = |why: Why, want: &[&str]| assert_eq!(keys(&why_lines(Lang::En, &safe, &why, false)), want);
        check(Why::default(), &["nothing"]);
        check(Why { listing: listing(true, false, false), ..Why::default() }, &["listed_strong"]);
        check(Why { listing: listing(false, false, false), ..Why::default() }, &["listed_weak"]);
        check(Why { listing: listing(true, true, true), ..Why::default() }, &["parent_same_mail"]);
        check(Why { listing: listing(true, true, false), ..Why::default() }, &["parent_own_mail"]);
        check(Why { listing: listing(false, true, true), ..Why::default() }, &["parent_weak"]);
        let reviewer = Some(WhyDecision::Reviewer { decision: Decision::Block, on: "parent.example".into() });
        let infra = vec![("mx.example".to_owned(), 3), ("192.0.2.10".to_owned(), 4)];
        let lines = why_lines(Lang::En, &result(true), &Why { decision: reviewer, infra, ..Why::default() }, false);
        assert_eq!(keys(&lines), ["decision_block", "infra"]);
        assert_eq!(
            (lines[0].on.as_str(), lines[1].servers.as_str(), lines[1].count),
            ("parent.example", "mx.example, 192.0.2.10", 4)
        );
    }

    #[test]
    fn sources_are_named_with_their_tier_in_the_page_language() {
        let why = Why { listing: listing(true, false, false), ..Why::default() };
        let lines = why_lines(Lang::De, &result(false), &why, false);
        assert_eq!(lines[0].sources, "ded (geprüfte Liste), mailchecker (ungeprüfte Liste)");
    }
}
