//! Reviewers' decisions, as both the CLI and the admin API take them: the domain normalized like
//! any lookup, and free webmail refused a `disposable` decision (rule 2: it stays `safe`); marks
//! on mail servers in `servers.rs`.

pub mod servers;

use email_verdict_core::{Catalog, Decision, Domain};

use crate::state::{DecisionRecord, StateError, StateStore};

#[derive(Debug, thiserror::Error)]
pub enum ReviewError {
    #[error("{0:?} is not a valid domain: {1}")]
    BadDomain(String, email_verdict_core::InputError),
    #[error("{0} is free webmail: it stays safe whatever a decision says (rule 2)")]
    FreeProvider(String),
    #[error("{0:?} is neither a mail server's host name nor an IP address")]
    BadServer(String),
    #[error("{0} is shared mail infrastructure ({1}): it never makes a domain disposable (rule 3)")]
    SharedServer(String, String),
    #[error(transparent)]
    Store(#[from] StateError),
}

/// Records `decision` (`None` withdraws) for `domain`; returns the normalized domain.
pub async fn set_decision(
    store: &dyn StateStore,
    catalog: &Catalog,
    domain: &str,
    decision: Option<Decision>,
    reviewer: &str,
    note: &str,
    now: i64,
) -> Result<String, ReviewError> {
    let parsed = Domain::parse(domain).map_err(|e| ReviewError::BadDomain(domain.to_owned(), e))?;
    if decision == Some(Decision::Block) && catalog.free.contains(&parsed) {
        return Err(ReviewError::FreeProvider(parsed.to_string()));
    }
    let record = DecisionRecord {
        domain: parsed.to_string(),
        decision,
        reviewer: reviewer.to_owned(),
        note: note.to_owned(),
        at: now,
    };
    store.decide(record).await?;
    Ok(parsed.to_string())
}

/// `disposable` → block, `safe` → allow.
pub fn parse_verdict(s: &str) -> Option<Decision> {
    match s {
        "disposable" => Some(Decision::Block),
        "safe" => Some(Decision::Allow),
        _ => None,
    }
}
