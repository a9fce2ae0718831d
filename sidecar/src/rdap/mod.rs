//! Domain age from RDAP: when the registered domain of a looked-up name was
//! registered, for `details.domain_age_days`, the public page and the review queue's order.
//! Off unless `serve --rdap`.
//!
//! **Never on a verdict's path**: [`DomainAges::age`] answers from what is already known and
//! never waits; a domain not known yet is queued for a background worker, and its age is there
//! for a later lookup. The age never decides a verdict.
//!
//! Bounds, whatever the traffic (an anonymous flood of distinct names included): a queue of
//! [`QUEUE`] domains (more are not queued, and a later lookup queues them again), [`WORKERS`]
//! requests at once, one domain asked once at a time, per RDAP server one request at a time at
//! least [`book::MIN_INTERVAL`] apart, each bounded by `--rdap-timeout-ms`; [`CACHE_ENTRIES`]
//! answers kept (LRU). A server that answers `429` (or `503` with `Retry-After`) is not asked
//! again before its `Retry-After` (60 s without one, a day at most); one that fails is left
//! alone 30 s. Lifetimes: [`book::ANSWER_TTL`] for a date, shorter for none, a `404` or a
//! failure.
//!
//! What is asked: `GET {base}domain/{registered}`, `base` from the bootstrap registry
//! (`bootstrap.rs`, RFC 9224), `registered` the registrable domain a registry handed out
//! ([`Domain::registered`]): never the local part of an email, never a subdomain, nothing for
//! a name under a private public suffix (`github.io`) or a TLD without an RDAP service.

pub mod book;
pub mod bootstrap;
mod client;
pub mod response;

use std::num::NonZeroUsize;
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use email_verdict_core::Domain;

pub use book::{Book, Known, Outcome, Refused};
pub use bootstrap::{Bootstrap, BootstrapError};
use client::Client;

use crate::metrics::Metrics;
use crate::outbound::Reach;

/// Domains waiting for a worker; past this, lookups do not queue more.
pub const QUEUE: usize = 256;
/// Requests under way at once (each a thread of its own).
pub const WORKERS: usize = 4;
/// Registration dates (and absences) kept.
pub const CACHE_ENTRIES: usize = 100_000;
/// `--rdap-timeout-ms` by default.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(3);

/// `serve --rdap`'s settings.
#[derive(Debug, Clone)]
pub struct RdapSettings {
    pub bootstrap: Arc<Bootstrap>,
    /// The most one request may take.
    pub timeout: Duration,
    /// Which addresses an RDAP server may have (`--allow-private-outbound`).
    pub reach: Reach,
}

/// When a registered domain was registered, and how many whole days ago.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DomainAge {
    /// Unix seconds.
    pub registered: i64,
    pub days: u32,
}

impl DomainAge {
    /// The age at `now` (Unix seconds) of a registration at `registered`; `None` for a date
    /// that cannot be one (more than a day ahead).
    pub fn at(registered: i64, now: i64) -> Option<Self> {
        response::age_days(registered, now).map(|days| Self { registered, days })
    }
}

/// The domain ages known and being learned. Cheap to ask from any thread or runtime.
pub struct DomainAges {
    shared: Arc<Shared>,
    jobs: SyncSender<Job>,
}

struct Shared {
    book: Mutex<Book>,
    /// Signalled whenever a request ends (a server may be free).
    freed: Condvar,
    bootstrap: Arc<Bootstrap>,
    client: Client,
    metrics: Arc<Metrics>,
}

struct Job {
    domain: Box<str>,
    server: Arc<str>,
    /// The span of the lookup that asked, so the RDAP request shows in its trace.
    trace: Option<opentelemetry::trace::SpanContext>,
}

impl DomainAges {
    /// Starts [`WORKERS`] worker threads; they end when this is dropped.
    pub fn start(settings: &RdapSettings, metrics: Arc<Metrics>) -> std::io::Result<Arc<Self>> {
        let capacity = NonZeroUsize::new(CACHE_ENTRIES).unwrap_or(NonZeroUsize::MIN);
        let shared = Arc::new(Shared {
            book: Mutex::new(Book::new(capacity)),
            freed: Condvar::new(),
            bootstrap: settings.bootstrap.clone(),
            client: Client::new(settings.timeout, settings.reach),
            metrics,
        });
        let (jobs, queue) = sync_channel(QUEUE);
        let queue = Arc::new(Mutex::new(queue));
        for i in 0..WORKERS {
            let (shared, queue) = (shared.clone(), queue.clone());
            std::thread::Builder::new().name(format!("rdap-{i}")).spawn(move || work(&shared, &queue))?;
        }
        Ok(Arc::new(Self { shared, jobs }))
    }

    /// The age of `domain`'s registered domain at `now` (Unix seconds), if known; never waits.
    /// When it is not known (or due to be renewed), it is queued to be asked, unless it is
    /// queued already, its server asked to be left alone, or the queue is full.
    pub fn age(&self, domain: &Domain, now: i64) -> Option<DomainAge> {
        let name = domain.registered()?;
        let server = self.shared.bootstrap.server_for(name)?;
        let at = Instant::now();
        let mut book = self.shared.lock();
        let registered = match book.known(name, at) {
            Known::Fresh(registered) => return registered.and_then(|t| DomainAge::at(t, now)),
            Known::Stale(t) => Some(t),
            Known::Unknown => None,
        };
        if book.claim(name, server, at)
            && self
                .jobs
                .try_send(Job { domain: name.into(), server: server.clone(), trace: crate::telemetry::current_span() })
                .is_err()
        {
            book.unclaim(name);
            self.shared.metrics.rdap_not_queued();
        }
        registered.and_then(|t| DomainAge::at(t, now))
    }
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Book> {
        self.book.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// When this worker may ask `server`, waiting while another request to it is under way;
    /// `None` when the server asked to be left alone.
    fn turn(&self, server: &Arc<str>) -> Option<Instant> {
        let mut book = self.lock();
        loop {
            match book.reserve(server, Instant::now()) {
                Ok(start) => return Some(start),
                Err(Refused::BackedOff(_)) => return None,
                Err(Refused::Busy) => {
                    book = self.freed.wait_timeout(book, Duration::from_secs(1)).unwrap_or_else(|p| p.into_inner()).0;
                }
            }
        }
    }
}

/// A worker: takes the next queued domain, waits for its server's turn, asks, records.
fn work(shared: &Shared, queue: &Mutex<Receiver<Job>>) {
    loop {
        let job = match queue.lock().unwrap_or_else(|p| p.into_inner()).recv() {
            Ok(job) => job,
            Err(_) => return,
        };
        let Some(start) = shared.turn(&job.server) else {
            shared.lock().unclaim(&job.domain);
            continue;
        };
        std::thread::sleep(start.saturating_duration_since(Instant::now()));
        let fetch = || shared.client.fetch(&job.server, &job.domain);
        let outcome = crate::telemetry::span_under("rdap", job.trace.as_ref(), fetch, |o| {
            vec![crate::telemetry::Attribute::new("email_verdict.outcome", o.label())]
        });
        shared.lock().settle(&job.domain, &job.server, &outcome, Instant::now());
        shared.freed.notify_all();
        shared.metrics.rdap_request(outcome.label());
        let host = host_of(&job.server);
        match &outcome {
            Outcome::RateLimited(wait) => tracing::info!(
                server = host,
                retry_after_secs = wait.map(|w| w.as_secs()),
                "RDAP server asked to wait; not asked again before then"
            ),
            Outcome::Unavailable(why) => {
                tracing::info!(server = host, domain = %job.domain, error = %why, "RDAP server unavailable; left alone 30 s")
            }
            Outcome::Refused(refusal) => {
                shared.metrics.outbound_refused("rdap", refusal.as_str());
                tracing::warn!(server = host, error = %refusal, "RDAP request refused; left alone 30 s");
            }
            outcome => tracing::debug!(server = host, domain = %job.domain, ?outcome, "RDAP"),
        }
    }
}

/// The host of a base URL, for the log (without any user information).
fn host_of(base: &str) -> &str {
    let rest = base.split_once("://").map_or(base, |(_, r)| r);
    let authority = rest.split(['/', '?', '#']).next().unwrap_or(rest);
    authority.rsplit_once('@').map_or(authority, |(_, host)| host)
}

#[cfg(test)]
mod tests;
