//! What a lookup teaches: the review queue's cause, and the facts the infrastructure index
//! learns from what strong lists and reviewers say (written off the request's path by
//! [`super::Verdicts`]).

use std::hash::BuildHasher;

use email_verdict_core::{Catalog, Decision, Domain, Signals, VerdictResult};

use super::OwnInfra;
use crate::state::{ReviewCause, ReviewReason};

/// Why the lookup queues `domain` for review, if it does: the listing that did not decide
/// (its sources and entry) is named, so a reviewer sees why; with how likely it is to be
/// disposable (`near`: disposable domains on the closest of its own servers; `age_days`: a
/// young registered domain is likelier) and those servers.
pub(super) fn review_cause(
    catalog: &Catalog,
    domain: &Domain,
    signals: &Signals,
    result: &VerdictResult,
    infra: &OwnInfra,
    near: u64,
    age_days: Option<u32>,
) -> Option<ReviewCause> {
    let reason = if !result.has_mx && !result.disposable {
        ReviewReason::NoMx
    } else if !result.review_required {
        return None;
    } else if signals.listing_in_question() {
        if signals.listing.is_some_and(|l| l.via_parent) {
            ReviewReason::ParentListing
        } else {
            ReviewReason::WeakListing
        }
    } else {
        ReviewReason::Ambiguous
    };
    let mut cause = ReviewCause::new(reason);
    let likelihood = crate::state::queue::likelihood(reason, near, !infra.is_empty());
    cause.likelihood = crate::state::queue::with_age(likelihood, age_days);
    let servers = infra.hosts.iter().take(crate::state::queue::SERVERS_KEPT / 2).chain(&infra.ips);
    cause.servers = servers.take(crate::state::queue::SERVERS_KEPT).cloned().collect();
    if let Some(listed) = catalog.disposable_listing(domain) {
        cause.sources = catalog.sources_of(listed.sources).map(|s| s.name.to_string()).collect();
        cause.listed_as = listed.entry.to_owned();
    }
    Some(cause)
}

/// `(known, known_disposable)`: learn only from what strong lists and reviewers say, never from
/// a weak-only listing (the very names in question) nor from mx_ip_match itself.
pub(super) fn knowledge(signals: &Signals, result: &VerdictResult) -> (bool, bool) {
    let known_disposable = signals.listing_decides() && !result.safe || signals.decision == Some(Decision::Block);
    let known_legitimate = signals.free || result.allowlisted;
    (known_disposable || known_legitimate, known_disposable)
}

/// The name `domain`'s lookups teach the infrastructure index under: only a registrable domain
/// teaches (what a subdomain uses says nothing of the servers of the domain it belongs to).
pub(super) fn teacher(domain: &Domain) -> Option<&str> {
    domain.registrable().filter(|r| *r == domain.as_str())
}

/// What a lookup of `domain` judged so teaches, hashed: written once per [`super::RELEARN_AFTER`]
/// ([`super::Verdicts::first_sight`]), hashed once per judgement (a kept verdict's lookups do not hash
/// its mail servers again). What it teaches replaces what it taught (its MX moved: the old facts
/// go); one no longer known (delisted, a decision withdrawn) teaches nothing, which forgets what
/// it taught.
pub(super) fn teaches(domain: &Domain, signals: &Signals, result: &VerdictResult, infra: &OwnInfra) -> u64 {
    let (known, known_disposable) = knowledge(signals, result);
    foldhash::fast::FixedState::default().hash_one((teacher(domain), known, known_disposable, infra))
}
