//! Background warm-up of the infrastructure index (issue 14): on a fresh install the index
//! knows no mail server, so a never-listed or weak-only domain on a known disposable server is
//! not caught until users happen to look up the strong-listed domains it shares. The warm-up
//! resolves the MX (and MX addresses) of every strong-listed domain, at a bounded rate, and
//! records their own (not shared) mail servers as disposable infrastructure, as a lookup of
//! each would.
//!
//! It runs as a Pingora background service, on its own runtime, through the resolver directly
//! (not the MX cache, whose entries it would evict): it never slows the lookup path. Its
//! progress (the last name done, in sorted order) is in the state store, so a restart, or any
//! replica sharing the store, goes on from there. When a list reload swaps the catalog, another
//! pass resolves the new names after the cursor and, first, those this process saw added before
//! it (without moving the cursor); names added before the cursor while no process watched are
//! learned when looked up. A week after a pass ended, the next one starts over from the first
//! name: facts fade when not seen again (`verdicts/infra.rs`), so the index keeps what the
//! lists still say and follows mail servers that moved. Only registrable names teach.

use std::num::NonZeroU32;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use pingora::server::ShutdownWatch;
use pingora::services::background::BackgroundService;

use email_verdict_core::{Catalog, Decision, Domain};

use crate::clock::Clock;
use crate::dns::MxResolver;
use crate::lists::LiveCatalog;
use crate::metrics::{Metrics, WarmupOutcome};
use crate::state::{StateError, StateStore, WarmupProgress, covering_names};
use crate::verdicts::OwnInfra;

/// The most time one domain's resolution may take before it counts as failed.
const RESOLVE_TIMEOUT: Duration = Duration::from_secs(10);
/// How long to wait before trying again when the store fails.
const STORE_RETRY: Duration = Duration::from_secs(10);
/// How long after a pass ended (the last name done) the next one starts over from the first.
pub const REPASS_AFTER_SECS: i64 = 7 * 86_400;
/// How often a finished warm-up checks whether the next pass is due.
const REPASS_CHECK: Duration = Duration::from_secs(3600);

pub struct Warmup {
    catalog: Arc<LiveCatalog>,
    resolver: Arc<dyn MxResolver>,
    store: Arc<dyn StateStore>,
    clock: Arc<dyn Clock>,
    metrics: Arc<Metrics>,
    /// Domains resolved per second, at most.
    rate: NonZeroU32,
}

/// The domains the warm-up resolves, sorted: strong-listed entries (a listing that decides on
/// its own) that are not free webmail, relays or on an operator allowlist, which are never
/// disposable.
pub fn candidates(catalog: &Catalog) -> Vec<&str> {
    let mut names: Vec<&str> = catalog
        .disposable
        .iter()
        .filter(|(_, sources)| catalog.is_strong(**sources))
        .map(|(name, _)| name)
        .filter(|name| {
            Domain::parse(name)
                .is_ok_and(|d| ![&catalog.free, &catalog.relay, &catalog.allow].iter().any(|l| l.contains(&d)))
        })
        .collect();
    names.sort_unstable();
    names
}

/// How many of the sorted `names` come after `cursor` (all of them for an empty cursor).
pub fn remaining<S: AsRef<str>>(names: &[S], cursor: &str) -> usize {
    names.len() - names.partition_point(|n| n.as_ref() <= cursor)
}

/// The names of sorted `new` that sorted `old` lacks, up to `cursor` (included), in reverse
/// order (taken from the end).
fn added_before(new: &[Box<str>], old: &[Box<str>], cursor: &str) -> Vec<Box<str>> {
    let upto = new.len() - remaining(new, cursor);
    new[..upto].iter().rev().filter(|n| old.binary_search(n).is_err()).cloned().collect()
}

impl Warmup {
    pub fn new(
        catalog: Arc<LiveCatalog>,
        resolver: Arc<dyn MxResolver>,
        store: Arc<dyn StateStore>,
        clock: Arc<dyn Clock>,
        metrics: Arc<Metrics>,
        rate: NonZeroU32,
    ) -> Self {
        Self { catalog, resolver, store, clock, metrics, rate }
    }

    /// Passes over the candidates, another one after each catalog swap, until `stop`.
    pub async fn run(&self, mut stop: ShutdownWatch) {
        let mut versions = self.catalog.subscribe();
        let mut known = Vec::new();
        loop {
            versions.borrow_and_update();
            if self.pass(&mut known, &mut stop).await {
                return;
            }
            tokio::select! {
                changed = versions.changed() => if changed.is_err() { return },
                _ = tokio::time::sleep(REPASS_CHECK) => {}
                _ = stop.changed() => return,
            }
        }
    }

    /// Resolves and records, one per tick of the rate, the candidates of the catalog in force
    /// that a reload added before the stored cursor since the last pass (`known`: the names that
    /// pass saw; empty on the first), then every candidate after the cursor. True when `stop`
    /// turned true.
    pub async fn pass(&self, known: &mut Vec<Box<str>>, stop: &mut ShutdownWatch) -> bool {
        let catalog = self.catalog.current();
        let names: Vec<Box<str>> = candidates(&catalog).into_iter().map(Box::from).collect();
        drop(catalog);
        let mut progress = loop {
            match self.store.warmup_progress().await {
                Ok(p) => break p,
                Err(e) => {
                    if self.wait_after_store_error(e, stop).await {
                        return true;
                    }
                }
            }
        };
        let mut added = if known.is_empty() { Vec::new() } else { added_before(&names, known, &progress.cursor) };
        let now = self.clock.now_ms().div_euclid(1000);
        if remaining(&names, &progress.cursor) == 0 && added.is_empty() {
            if progress.updated_at == 0 || now - progress.updated_at < REPASS_AFTER_SECS {
                *known = names;
                return false;
            }
            // A week since the last pass ended: over again from the first name.
            progress.cursor.clear();
        }
        *known = names;
        let names = &*known;
        let start = names.len() - remaining(names, &progress.cursor);
        self.metrics.warmup_remaining(names.len() - start + added.len());
        tracing::info!(
            done = start,
            total = names.len(),
            added = added.len(),
            rate = self.rate.get(),
            "infrastructure warm-up"
        );
        let mut tick = tokio::time::interval(Duration::from_secs(1) / self.rate.get());
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut next = start;
        while next < names.len() || !added.is_empty() {
            tokio::select! {
                _ = tick.tick() => {}
                _ = stop.changed() => return true,
            }
            // Added names first: they do not move the cursor.
            let (name, advance) = match added.last() {
                Some(name) => (&**name, false),
                None => (&*names[next], true),
            };
            match self.one(name, advance, &mut progress).await {
                Ok(outcome) => {
                    if advance {
                        next += 1;
                    } else {
                        added.pop();
                    }
                    self.metrics.warmup(outcome, names.len() - next + added.len());
                }
                // The same name again after a pause: the store is down, the index cannot learn.
                Err(e) => {
                    if self.wait_after_store_error(e, stop).await {
                        return true;
                    }
                }
            }
        }
        tracing::info!(total = names.len(), learned = progress.learned, "infrastructure warm-up done");
        false
    }

    /// Resolves `name`, records its own mail servers as disposable infrastructure, and, when
    /// `advance`, moves the stored cursor past it.
    async fn one(&self, name: &str, advance: bool, progress: &mut WarmupProgress) -> Result<WarmupOutcome, StateError> {
        // A reviewer's `safe` outweighs the list: such a domain's servers are not disposable.
        let allowed = self.store.decision(&covering_names(name)).await?.is_some_and(|a| a.decision == Decision::Allow);
        let now = self.clock.now_ms().div_euclid(1000);
        let outcome = match self.resolve(name).await {
            Some(_) if allowed => WarmupOutcome::Nothing,
            None => WarmupOutcome::Failed,
            // A subdomain entry teaches nothing about its registrable domain's servers.
            Some((registrable, _)) if registrable.as_str() != name => WarmupOutcome::Nothing,
            Some((registrable, infra)) => {
                // Replaces what it taught: servers it no longer uses are forgotten.
                self.store.learn_infra(&registrable, true, infra.facts(), now).await?;
                if infra.is_empty() { WarmupOutcome::Nothing } else { WarmupOutcome::Learned }
            }
        };
        let mut next = progress.clone();
        if advance {
            next.cursor = name.to_owned();
        }
        match outcome {
            WarmupOutcome::Learned => (next.resolved, next.learned) = (next.resolved + 1, next.learned + 1),
            WarmupOutcome::Nothing => next.resolved += 1,
            WarmupOutcome::Failed => next.failed += 1,
        }
        next.updated_at = now;
        self.store.save_warmup_progress(&next).await?;
        *progress = next;
        Ok(outcome)
    }

    /// The registrable domain of `name` and its own mail servers; `None` when DNS failed.
    async fn resolve(&self, name: &str) -> Option<(String, OwnInfra)> {
        let domain = Domain::parse(name).ok()?;
        let answer = tokio::time::timeout(RESOLVE_TIMEOUT, self.resolver.resolve(&domain)).await.ok()?.ok()?;
        let registrable = domain.registrable().unwrap_or(domain.as_str()).to_owned();
        Some((registrable, OwnInfra::of(&self.catalog.current(), &answer.mx)))
    }

    /// Logs a store failure and waits before the caller retries; true when told to stop.
    async fn wait_after_store_error(&self, e: StateError, stop: &mut ShutdownWatch) -> bool {
        self.metrics.store_error();
        tracing::warn!(error = %e, "infrastructure warm-up: state store failed; retrying");
        tokio::select! {
            _ = tokio::time::sleep(STORE_RETRY) => false,
            _ = stop.changed() => true,
        }
    }
}

#[async_trait]
impl BackgroundService for Warmup {
    async fn start(&self, shutdown: ShutdownWatch) {
        self.run(shutdown).await;
    }
}

#[cfg(test)]
mod tests;
