//! The decisions in force as one list ([`DecisionList`]), for a gateway that must decide
//! without the sidecar (`GET /api/v1/decisions`).

use email_verdict_core::{Catalog, DecidedNames, Decision, DecisionList, Domain};

use super::{LookupError, Verdicts};

/// At most this many names in each of the list's parts; `complete` says when one was cut.
pub const MAX_DECIDED: usize = 100_000;

impl Verdicts {
    /// Reviewers' decisions in force and the operator's lists, without the names that decide
    /// nothing: public suffixes (a decision there covers no name below it) and blocks on free
    /// webmail (rule 2).
    pub async fn decision_list(&self) -> Result<DecisionList, LookupError> {
        let catalog = self.catalog();
        let in_force = self.store.decisions_in_force(MAX_DECIDED + 1).await.map_err(|e| self.store_failed(e))?;
        let mut complete = in_force.len() <= MAX_DECIDED;
        let mut reviewer = DecidedNames::default();
        for (name, decision) in in_force.into_iter().take(MAX_DECIDED) {
            match decision {
                Decision::Block if decides(&catalog, &name, true) => reviewer.block.push(name),
                Decision::Allow if decides(&catalog, &name, false) => reviewer.allow.push(name),
                _ => {}
            }
        }
        let mut operator = DecidedNames::default();
        for (names, set, block) in
            [(&mut operator.block, &catalog.block, true), (&mut operator.allow, &catalog.allow, false)]
        {
            names.extend(
                set.iter().map(|(n, _)| n.to_owned()).filter(|n| decides(&catalog, n, block)).take(MAX_DECIDED),
            );
            complete &= set.len() <= MAX_DECIDED;
            names.sort_unstable();
        }
        Ok(DecisionList { reviewer, operator, complete })
    }
}

/// Whether a decision on `name` decides anything.
fn decides(catalog: &Catalog, name: &str, block: bool) -> bool {
    let Ok(domain) = Domain::parse(name) else { return false };
    domain.registrable().is_some() && !(block && catalog.free.contains(&domain))
}
