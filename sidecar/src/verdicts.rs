//! The verdict for a lookup input: DNS (through the cache) plus the catalog, by the core rules.

use std::sync::Arc;

use email_verdict_core::verdict::decide;
use email_verdict_core::{Catalog, LookupInput, VerdictResult};

use crate::dns::{DnsFailure, MxCache};

pub struct Verdicts {
    catalog: Catalog,
    mx: Arc<MxCache>,
}

impl Verdicts {
    pub fn new(catalog: Catalog, mx: Arc<MxCache>) -> Self {
        Self { catalog, mx }
    }

    pub async fn verdict(&self, input: &LookupInput) -> Result<VerdictResult, DnsFailure> {
        let domain = input.domain();
        let lookup = self.mx.lookup(domain).await?;
        let signals = self.catalog.signals(domain, &lookup.mx, None);
        Ok(decide(&signals, &lookup.mx, lookup.cached))
    }
}
