//! What the sidecar has decided about names, for a gateway that must decide without it:
//! `GET /api/v1/decisions` ([`DecisionList`], the sidecar's side) and [`DecidedSet`], the
//! lookup the filter's `local_fallback` makes with the same precedence as the sidecar's verdict:
//! a reviewer's decision on the most specific covering name wins; else the operator's blocklist
//! (any covering name), then its allowlist.
//!
//! The walk covers every parent of a name: the sidecar leaves out names that are public
//! suffixes (a decision there covers nothing), so walking every parent matches what its walk up
//! to the registrable domain matches.

use serde::{Deserialize, Serialize};

use crate::{Decision, Domain};

/// The answer of `GET /api/v1/decisions`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DecisionList {
    /// Reviewers' decisions in force.
    pub reviewer: DecidedNames,
    /// The operator's `--blocklist` / `--allowlist` names.
    pub operator: DecidedNames,
    /// False when a list was cut at the endpoint's bound (the rest is still decided by the
    /// sidecar's own verdicts, only not known to the gateway when the sidecar gives none).
    pub complete: bool,
}

/// Names decided `disposable` (`block`) and `safe` (`allow`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DecidedNames {
    pub block: Vec<String>,
    pub allow: Vec<String>,
}

/// A [`DecisionList`] prepared for lookups: sorted names, a binary search per parent.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DecidedSet {
    reviewer: Vec<(Box<str>, Decision)>,
    operator_block: Vec<Box<str>>,
    operator_allow: Vec<Box<str>>,
}

impl DecidedSet {
    /// Names that do not parse as a [`Domain`] (or are not in its normal form) are left out.
    pub fn new(list: &DecisionList) -> Self {
        let reviewer = normalized(&list.reviewer.block, Decision::Block)
            .chain(normalized(&list.reviewer.allow, Decision::Allow))
            .collect::<Vec<_>>();
        let mut set = Self {
            reviewer,
            operator_block: normalized(&list.operator.block, ()).map(|(n, ())| n).collect(),
            operator_allow: normalized(&list.operator.allow, ()).map(|(n, ())| n).collect(),
        };
        // A name both blocked and allowed by reviewers cannot be: keep the first (sorted, stable).
        set.reviewer.sort_by(|a, b| a.0.cmp(&b.0));
        set.reviewer.dedup_by(|a, b| a.0 == b.0);
        set.operator_block.sort_unstable();
        set.operator_allow.sort_unstable();
        set
    }

    pub fn len(&self) -> usize {
        self.reviewer.len() + self.operator_block.len() + self.operator_allow.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The decision in force for `domain`, as the sidecar would apply it.
    pub fn decision(&self, domain: &Domain) -> Option<Decision> {
        let reviewer = parents(domain)
            .find_map(|name| self.reviewer.binary_search_by(|(n, _)| (**n).cmp(name)).ok().map(|i| self.reviewer[i].1));
        let on = |names: &[Box<str>]| parents(domain).any(|name| names.binary_search_by(|n| (**n).cmp(name)).is_ok());
        reviewer.or_else(|| {
            if on(&self.operator_block) {
                Some(Decision::Block)
            } else if on(&self.operator_allow) {
                Some(Decision::Allow)
            } else {
                None
            }
        })
    }
}

fn normalized<T: Copy + 'static>(names: &[String], tag: T) -> impl Iterator<Item = (Box<str>, T)> + '_ {
    names
        .iter()
        .filter_map(move |n| Domain::parse(n).ok().filter(|d| d.as_str() == n).map(|d| (d.as_str().into(), tag)))
}

/// `domain` and every parent name, most specific first.
fn parents(domain: &Domain) -> impl Iterator<Item = &str> {
    let mut next = Some(domain.as_str());
    std::iter::from_fn(move || {
        let current = next?;
        next = current.split_once('.').map(|(_, p)| p);
        Some(current)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn precedence_is_the_sidecars() {
        let list = DecisionList {
            reviewer: DecidedNames {
                block: names(&["burner.example", "bad.vouched.example"]),
                allow: names(&["ok.burner.example", "vouched.example"]),
            },
            operator: DecidedNames {
                block: names(&["op.example", "vouched.example", "Not A Name"]),
                allow: names(&["op-ok.example", "op.example"]),
            },
            complete: true,
        };
        let set = DecidedSet::new(&list);
        assert_eq!(set.len(), 8, "the name that does not parse is left out");
        let check = |name: &str, expected: Option<Decision>| {
            assert_eq!(set.decision(&Domain::parse(name).unwrap()), expected, "{name}");
        };
        use Decision::*;
        check("burner.example", Some(Block));
        check("fresh-4711.burner.example", Some(Block));
        check("ok.burner.example", Some(Allow));
        check("x.ok.burner.example", Some(Allow));
        // A reviewer's decision wins over the operator's lists, the most specific one first.
        check("vouched.example", Some(Allow));
        check("bad.vouched.example", Some(Block));
        // Operator: the blocklist before the allowlist.
        check("op.example", Some(Block));
        check("a.op-ok.example", Some(Allow));
        check("unrelated.example", None);
    }
}
