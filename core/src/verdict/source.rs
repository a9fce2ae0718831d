//! What decided a verdict ([`VerdictSource`]): the one thing that, on its own, made it what it
//! is. On call, a jump in blocked signups is undone where it came from (a reviewer's decision,
//! the operator's list files, a list source, the infrastructure index), so the sidecar counts
//! verdicts by it and tells the gateway in a response header. Never part of the JSON record.

use crate::api::VerdictResult;
use crate::verdict::Signals;

/// The deciding source of a verdict. A bounded set: it labels a metric.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum VerdictSource {
    /// A strong list source decided `disposable` on its own.
    StrongList,
    /// A listing that does not decide alone (weak-only, or a parent's whose mail the domain does
    /// not share), corroborated by the domain's own mail servers (`mx_ip_match`).
    List,
    /// A reviewer's decision (`review set`, the admin API), on the domain or a parent.
    Reviewer,
    /// The operator's allowlist or blocklist files.
    Operator,
    /// The domain's own mail servers are known disposable infrastructure (`mx_ip_match`), no
    /// listing beside it.
    Infrastructure,
    /// Nothing above: the default rules (no MX, free webmail, a relay, an unlisted domain, a
    /// listing in question left `safe`).
    Rules,
}

impl VerdictSource {
    /// Every source, for the metric's series to exist from the start.
    pub const ALL: [VerdictSource; 6] =
        [Self::StrongList, Self::List, Self::Reviewer, Self::Operator, Self::Infrastructure, Self::Rules];

    /// The response header of the lookup API that names it.
    pub const HEADER: &'static str = "x-email-verdict-source";

    /// The source named `value` ([`Self::as_str`]).
    pub fn parse(value: &[u8]) -> Option<Self> {
        Self::ALL.into_iter().find(|s| s.as_str().as_bytes() == value)
    }

    /// The stable name: the metric's `source` label and the `x-email-verdict-source` header.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::StrongList => "strong_list",
            Self::List => "list",
            Self::Reviewer => "reviewer",
            Self::Operator => "operator",
            Self::Infrastructure => "infrastructure",
            Self::Rules => "rules",
        }
    }

    /// The source of `result`, reached from `signals` (by [`crate::verdict::decide`] or
    /// [`crate::verdict::decide_without_mx`]). `by_reviewer`: the decision in `signals` is a
    /// reviewer's, not the operator's files (only the caller knows; core merges the two).
    ///
    /// A decision in force (`allowlisted` or `blocked`) decides alone, so it is the source even
    /// beside a listing that agrees: undoing it is what changes the verdict. A decision that
    /// free webmail overrides decided nothing (`rules`).
    pub fn of(signals: &Signals, result: &VerdictResult, by_reviewer: bool) -> Self {
        if result.allowlisted || result.blocked {
            return if by_reviewer { Self::Reviewer } else { Self::Operator };
        }
        if !result.disposable {
            return Self::Rules;
        }
        if signals.listing_decides() {
            Self::StrongList
        } else if result.mx_ip_match && signals.listing.is_some() {
            Self::List
        } else if result.mx_ip_match {
            Self::Infrastructure
        } else {
            // Unreachable by the rules (a disposable verdict has one of the above); said plainly
            // rather than guessed.
            Self::Rules
        }
    }
}

impl std::fmt::Display for VerdictSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::SourceSet;
    use crate::verdict::{Decision, Listing, MxHost, MxInfo, decide, decide_without_mx};

    fn mx() -> MxInfo {
        MxInfo::Mx { hosts: vec![MxHost::new("mx.example.net", vec!["192.0.2.1".parse().unwrap()])] }
    }

    fn listing(strong: bool, via_parent: bool) -> Option<Listing> {
        Some(Listing { sources: SourceSet::one(0), strong, via_parent })
    }

    /// `signals` decided with MX (`by_reviewer` as the sidecar would say) gives `want`.
    fn check(name: &str, signals: Signals, by_reviewer: bool, want: VerdictSource) {
        let result = decide(&signals, &mx(), false);
        assert_eq!(VerdictSource::of(&signals, &result, by_reviewer), want, "{name}: {result:?}");
    }

    #[test]
    fn each_source_from_what_decided() {
        use VerdictSource::*;
        let none = Signals::default();
        let block = Some(Decision::Block);
        let allow = Some(Decision::Allow);
        check("strong listing", Signals { listing: listing(true, false), ..none }, false, StrongList);
        let parent_mail = Signals { listing: listing(true, true), parent_mail: true, ..none };
        check("strong parent sharing mail", parent_mail, false, StrongList);
        check("weak + mx_ip_match", Signals { listing: listing(false, false), mx_ip_match: true, ..none }, false, List);
        check(
            "parent's, own mail + mx_ip_match",
            Signals { listing: listing(true, true), mx_ip_match: true, ..none },
            false,
            List,
        );
        check("reviewer block", Signals { decision: block, ..none }, true, Reviewer);
        check(
            "reviewer block on a weak listing",
            Signals { listing: listing(false, false), decision: block, ..none },
            true,
            Reviewer,
        );
        check(
            "reviewer allow (safe)",
            Signals { listing: listing(true, false), decision: allow, ..none },
            true,
            Reviewer,
        );
        check("operator block file", Signals { decision: block, ..none }, false, Operator);
        check("operator allow file", Signals { decision: allow, ..none }, false, Operator);
        check("mx_ip_match alone", Signals { mx_ip_match: true, ..none }, false, Infrastructure);
        check("unlisted", none, false, Rules);
        check("free webmail", Signals { free: true, listing: listing(true, false), ..none }, false, Rules);
        check("free webmail beats a block", Signals { free: true, decision: block, ..none }, true, Rules);
        check("relay", Signals { relay: true, mx_ip_match: true, ..none }, false, Rules);
        check("weak listing in question", Signals { listing: listing(false, false), ..none }, false, Rules);
    }

    #[test]
    fn without_mx_the_same_sources() {
        let s = Signals { decision: Some(Decision::Block), ..Signals::default() };
        let no_mx = decide(&s, &MxInfo::NoMx, false);
        assert_eq!(VerdictSource::of(&s, &no_mx, true), VerdictSource::Reviewer, "a block beats rule 4");
        let strong = Signals { listing: listing(true, false), ..Signals::default() };
        let r = decide_without_mx(&strong).unwrap();
        assert_eq!(VerdictSource::of(&strong, &r, false), VerdictSource::StrongList);
        let r = decide(&strong, &MxInfo::NoMx, false);
        assert_eq!(VerdictSource::of(&strong, &r, false), VerdictSource::Rules, "no MX: rule 4 decided");
    }

    #[test]
    fn names_are_stable_and_distinct() {
        let names: Vec<&str> = VerdictSource::ALL.iter().map(|s| s.as_str()).collect();
        assert_eq!(names, ["strong_list", "list", "reviewer", "operator", "infrastructure", "rules"]);
    }
}
