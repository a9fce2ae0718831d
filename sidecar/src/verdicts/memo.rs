//! The last verdicts reached, each with what it was reached from: a lookup whose inputs are the
//! very same (the catalog in force, the cached MX answer, the reviewer's decision) takes its
//! verdict from here instead of judging again. Judging a cached name was about a tenth of a
//! lookup's CPU (BENCHMARKS.md section 2): the MX hosts parsed and their addresses formatted
//! again on every request, for an answer that had not changed.
//!
//! Only a verdict that read nothing else is kept: none that asked the store for the
//! infrastructure index's evidence, nor a parent's MX answer. The inputs are compared by
//! identity: a list reload swaps the catalog, an MX answer refreshed or re-checked is a new one,
//! so either makes the next lookup judge afresh. They are held weakly (the pointer cannot be
//! reused while held), so a kept verdict never keeps an old catalog's lists alive.

use std::num::NonZeroUsize;
use std::sync::{Arc, Mutex, Weak};

use lru::LruCache;

use email_verdict_core::details::DomainDetails;
use email_verdict_core::{Catalog, Decision, Domain, MxInfo, Signals, VerdictSource};

use super::{OwnInfra, SharedResult};

/// Verdicts kept (the least recently used go): the busy names, a few KB each.
const KEPT: usize = 4_096;

/// A verdict that read only its catalog, its MX answer and its decision.
#[derive(Clone)]
pub(super) struct Judgement {
    pub result: SharedResult,
    pub signals: Signals,
    pub suggestion: Option<Domain>,
    pub infra: OwnInfra,
    pub source: VerdictSource,
    pub about: DomainDetails,
    /// What its lookups teach the infrastructure index, hashed (`verdicts::teaches`).
    pub teaches: u64,
}

/// A verdict and what it was reached from.
pub(super) struct Kept {
    catalog: Weak<Catalog>,
    mx: Weak<MxInfo>,
    decision: Option<Decision>,
    cached: bool,
    pub judgement: Judgement,
}

/// What a verdict was reached from.
pub(super) struct Reached<'a> {
    pub catalog: &'a Arc<Catalog>,
    pub mx: &'a Arc<MxInfo>,
    pub decision: Option<Decision>,
    pub cached: bool,
}

impl Reached<'_> {
    fn matches(&self, kept: &Kept) -> bool {
        Weak::as_ptr(&kept.catalog) == Arc::as_ptr(self.catalog)
            && Weak::as_ptr(&kept.mx) == Arc::as_ptr(self.mx)
            && kept.decision == self.decision
            && kept.cached == self.cached
    }
}

pub(super) struct Memo(Mutex<LruCache<Box<str>, Arc<Kept>>>);

impl Default for Memo {
    fn default() -> Self {
        Self(Mutex::new(LruCache::new(NonZeroUsize::new(KEPT).unwrap_or(NonZeroUsize::MIN))))
    }
}

impl Memo {
    /// The verdict kept for `domain` if it was reached from `from`.
    pub fn get(&self, domain: &Domain, from: &Reached<'_>) -> Option<Arc<Kept>> {
        let mut kept = self.0.lock().unwrap_or_else(|p| p.into_inner());
        kept.get(domain.as_str()).filter(|k| from.matches(k)).cloned()
    }

    /// Keeps the verdict of `domain` reached from `from`.
    pub fn put(&self, domain: &Domain, from: &Reached<'_>, judgement: Judgement) {
        let kept = Kept {
            catalog: Arc::downgrade(from.catalog),
            mx: Arc::downgrade(from.mx),
            decision: from.decision,
            cached: from.cached,
            judgement,
        };
        self.0.lock().unwrap_or_else(|p| p.into_inner()).put(domain.as_str().into(), Arc::new(kept));
    }

    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).len()
    }

    /// Whether the catalog `domain`'s kept verdict was reached with is still alive.
    #[cfg(test)]
    pub fn catalog_alive(&self, domain: &str) -> Option<bool> {
        let kept = self.0.lock().unwrap_or_else(|p| p.into_inner());
        kept.peek(domain).map(|k| k.catalog.strong_count() > 0)
    }
}
