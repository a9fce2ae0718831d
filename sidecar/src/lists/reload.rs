//! `Lists`: every operator list with its good copy, and how each is brought up to date.
//!
//! At start (synchronously, before serving): files are read (one that cannot be read stops
//! `serve`, as before); a URL list starts from its kept copy and is fetched again at once in
//! the background, or, without one, is fetched now (bounded) — a failure there starts it empty,
//! with its error shown, and it is retried. While serving, [`Lists::reload`] runs each second
//! (and on SIGHUP with `force`): a file is read again once a change of its size, time or inode
//! has held for one poll (so a file being written is not read half-way), a URL when its time
//! is due. Every list that changed is loaded into one new catalog, swapped in once.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use email_verdict_core::Catalog;
use email_verdict_core::lists::ParsedList;

use super::check::{ListError, accept};
use super::fetch::{self, Fetched, Fetcher, Validators};
use super::kept::KeptCopies;
use super::live::{ListStatus, LiveCatalog, ReloadSettings};
use super::{ListSettings, ListSpec, ListUrl, Location, assemble, shipped_catalog};
use crate::clock::unix_now;
use crate::metrics::Metrics;

/// The longest wait before a failed URL is tried again (sooner when `--list-refresh` is shorter).
const RETRY_AFTER_FAILURE: Duration = Duration::from_secs(300);

pub struct Lists {
    base: Catalog,
    states: Vec<ListState>,
    settings: ListSettings,
    fetcher: Arc<Fetcher>,
    kept: Option<KeptCopies>,
    live: Arc<LiveCatalog>,
    metrics: Arc<Metrics>,
}

struct ListState {
    spec: ListSpec,
    /// The good copy in use; `None` until one was had.
    data: Option<Arc<ParsedList>>,
    /// The good copy's validators (URL lists).
    validators: Option<Validators>,
    file: FileWatch,
    /// When a URL list is fetched next; `None`: on SIGHUP only.
    due: Option<Instant>,
    status: ListStatus,
}

/// What a load brought.
enum Incoming {
    NotModified,
    Body { bytes: Vec<u8>, validators: Option<Validators> },
}

impl Lists {
    /// Loads every list (see the module's comment); `network: false` fetches nothing (URL lists
    /// then hold their kept copies only: the operator commands).
    pub fn start(settings: ListSettings, metrics: Arc<Metrics>, network: bool) -> anyhow::Result<Self> {
        let (base, shipped) = shipped_catalog()?;
        let kept = settings.kept_dir.clone().map(KeptCopies::new);
        let mut states: Vec<ListState> =
            settings.specs.iter().enumerate().map(|(i, spec)| ListState::new(i, spec.clone())).collect();
        for st in &mut states {
            let refresh = if st.spec.is_url() { settings.refresh.as_secs() } else { 0 };
            metrics.list_known(st.status.index, st.status.kind, refresh);
            st.initial(kept.as_ref())?;
            if st.data.is_some() {
                metrics.list_loaded(st.status.index, st.status.kind, st.status.entries, st.status.last_success);
            }
        }
        let view = ReloadSettings {
            refresh_secs: settings.refresh.as_secs(),
            max_shrink: settings.max_shrink,
            kept_dir: kept.as_ref().map(|k| k.dir().display().to_string()),
        };
        // Without operator lists nothing is ever reloaded: keep no second copy of the shipped ones.
        let (base, catalog) = if states.is_empty() {
            (Catalog::default(), base)
        } else {
            let catalog = assemble(&base, states.iter().map(|s| (&s.spec, s.data.as_deref())));
            (base, catalog)
        };
        let statuses = states.iter().map(|s| s.status.clone()).collect();
        let live = Arc::new(LiveCatalog::new(catalog, statuses, shipped, view));
        let fetcher = Arc::new(Fetcher::new(fetch::TIMEOUT, fetch::MAX_BYTES, settings.reach));
        let mut lists = Self { base, states, settings, fetcher, kept, live, metrics };
        if network {
            lists.first_fetches();
        }
        Ok(lists)
    }

    pub fn live(&self) -> Arc<LiveCatalog> {
        self.live.clone()
    }

    /// URL lists without a kept copy, fetched now, side by side (each bounded by the fetch's
    /// time limit).
    fn first_fetches(&mut self) {
        let pending: Vec<(usize, ListUrl)> = (self.states.iter().enumerate())
            .filter(|(_, st)| st.data.is_none())
            .filter_map(|(i, st)| match &st.spec.location {
                Location::Url(url) => Some((i, url.clone())),
                Location::File(_) => None,
            })
            .collect();
        if pending.is_empty() {
            return;
        }
        let fetcher = &self.fetcher;
        let results: Vec<(usize, Result<Incoming, ListError>)> = std::thread::scope(|s| {
            let handles: Vec<_> = pending
                .iter()
                .map(|(i, url)| (*i, s.spawn(move || Job::Url(url.clone(), None).run(fetcher))))
                .collect();
            handles.into_iter().map(|(i, h)| (i, h.join().unwrap_or_else(|_| Err(panicked())))).collect()
        });
        let changed = results.into_iter().fold(false, |changed, (i, result)| self.apply(i, result) || changed);
        self.publish(changed);
    }

    /// Brings every list that is due up to date (`force`: every list, now); returns how many
    /// changed. The catalog is swapped once, after all of them.
    pub async fn reload(&mut self, force: bool) -> usize {
        let now = Instant::now();
        let mut jobs = Vec::new();
        for (i, st) in self.states.iter_mut().enumerate() {
            match &st.spec.location {
                Location::File(path) if st.file.due(path, force) => jobs.push((i, Job::File(path.clone()))),
                Location::Url(url) if force || st.due.is_some_and(|d| d <= now) => {
                    jobs.push((i, Job::Url(url.clone(), st.validators.clone())));
                }
                _ => {}
            }
        }
        if jobs.is_empty() {
            return 0;
        }
        // A trace of its own: no request waits on a refresh.
        let due = jobs.len() as i64;
        crate::telemetry::root("lists.refresh", self.run(jobs), |changed| {
            use crate::telemetry::Attribute;
            vec![
                Attribute::new("email_verdict.lists_due", due),
                Attribute::new("email_verdict.lists_changed", *changed as i64),
            ]
        })
        .await
    }

    /// Loads the lists of `jobs` side by side and publishes the catalog once.
    async fn run(&mut self, jobs: Vec<(usize, Job)>) -> usize {
        let runs = jobs.into_iter().map(|(i, job)| {
            let fetcher = self.fetcher.clone();
            async move {
                // ureq bounds the fetch itself; this only keeps a stuck thread from holding reloads.
                let result =
                    match tokio::time::timeout(fetch::TIMEOUT + Duration::from_secs(5), job.run_apart(fetcher)).await {
                        Ok(result) => result,
                        Err(_) => Err(ListError::Fetch("timed out".into())),
                    };
                (i, result)
            }
        });
        let results = futures::future::join_all(runs).await;
        let mut changed = 0;
        for (i, result) in results {
            changed += usize::from(self.apply(i, result));
        }
        self.publish(changed > 0);
        changed
    }

    /// Records what a load of list `i` gave; true when its entries changed.
    fn apply(&mut self, i: usize, result: Result<Incoming, ListError>) -> bool {
        let now = unix_now();
        let (refresh, max_shrink) = (self.settings.refresh, self.settings.max_shrink);
        let st = &mut self.states[i];
        let (kind, source) = (st.status.kind, st.status.source.clone());
        let outcome = result.and_then(|incoming| match incoming {
            Incoming::NotModified => Ok(None),
            Incoming::Body { bytes, validators } => {
                accept(&bytes, st.data.as_deref(), max_shrink).map(|(text, parsed)| Some((text, parsed, validators)))
            }
        });
        match outcome {
            Err(e) => {
                tracing::warn!(list = i, kind, source, error = %e, "list reload failed; the last good copy stays");
                self.metrics.list_failed(i, kind);
                if let ListError::Refused(refusal) = e {
                    self.metrics.outbound_refused("list", refusal.as_str());
                }
                st.status.last_error = Some((e.to_string(), now));
                st.schedule(refresh.min(RETRY_AFTER_FAILURE));
                false
            }
            Ok(None) => {
                let entries = st.status.entries;
                tracing::info!(list = i, kind, source, entries, added = 0, removed = 0, "list reloaded: not modified");
                st.status.from_kept_copy = false;
                st.succeeded(now, refresh);
                self.metrics.list_loaded(i, kind, entries, Some(now));
                false
            }
            Ok(Some((text, parsed, validators))) => {
                let (added, removed) = parsed.diff(st.data.as_deref().unwrap_or(&ParsedList::default()));
                if let (Location::Url(url), Some(kept)) = (&st.spec.location, &self.kept) {
                    let validators = validators.clone().unwrap_or_default();
                    if let Err(e) = kept.save(url, &text, now, &validators) {
                        tracing::warn!(list = i, kind, source, dir = %kept.dir().display(), error = %e, "cannot keep the list's copy on disk");
                    }
                }
                let entries = parsed.len();
                let refused = parsed.refused().len();
                tracing::info!(list = i, kind, source, entries, added, removed, refused, "list reloaded");
                st.validators = validators;
                st.data = Some(Arc::new(parsed));
                st.status.entries = entries;
                st.status.from_kept_copy = false;
                st.succeeded(now, refresh);
                self.metrics.list_loaded(i, kind, entries, Some(now));
                added + removed > 0
            }
        }
    }

    /// Swaps in a catalog with the current copies when `changed`, and shows every list's state.
    fn publish(&self, changed: bool) {
        if changed {
            self.live.swap(assemble(&self.base, self.states.iter().map(|s| (&s.spec, s.data.as_deref()))));
        }
        self.live.set_lists(self.states.iter().map(|s| s.status.clone()).collect());
    }
}

fn panicked() -> ListError {
    ListError::Fetch("the load stopped unexpectedly".into())
}

impl ListState {
    fn new(index: usize, spec: ListSpec) -> Self {
        let status = ListStatus {
            index,
            kind: spec.role.as_str(),
            source: spec.shown(),
            location: if spec.is_url() { "url" } else { "file" },
            tier: (spec.role == super::ListRole::Disposable).then(|| spec.tier.as_str()),
            entries: 0,
            last_success: None,
            from_kept_copy: false,
            last_error: None,
        };
        Self { spec, data: None, validators: None, file: FileWatch::default(), due: None, status }
    }

    /// The copy to start from: the file (which must be readable), or the URL's kept copy.
    fn initial(&mut self, kept: Option<&KeptCopies>) -> anyhow::Result<()> {
        let (i, kind, source) = (self.status.index, self.status.kind, self.status.source.clone());
        match &self.spec.location {
            Location::File(path) => {
                self.file.tried = Stamp::of(path);
                let text =
                    std::fs::read_to_string(path).with_context(|| format!("cannot read list {}", path.display()))?;
                let parsed = ParsedList::parse(&text);
                tracing::info!(
                    list = i,
                    kind,
                    source,
                    loaded = parsed.len(),
                    refused = parsed.refused().len(),
                    "list loaded"
                );
                for (entry, why) in parsed.refused().iter().take(20) {
                    tracing::warn!(list = i, source, entry = entry.as_str(), "list entry ignored: {why}");
                }
                self.status.entries = parsed.len();
                self.status.last_success = Some(unix_now());
                self.data = Some(Arc::new(parsed));
            }
            Location::Url(url) => {
                let Some(copy) = kept.and_then(|k| k.load(url)) else { return Ok(()) };
                let parsed = ParsedList::parse(&copy.text);
                if parsed.is_empty() {
                    return Ok(());
                }
                tracing::info!(list = i, kind, source, loaded = parsed.len(), "list loaded from its kept copy");
                self.status.entries = parsed.len();
                self.status.last_success = Some(copy.fetched_at);
                self.status.from_kept_copy = true;
                self.data = Some(Arc::new(parsed));
                self.validators = Some(copy.validators);
                // Fetched again at once, in the background.
                self.due = Some(Instant::now());
            }
        }
        Ok(())
    }

    fn succeeded(&mut self, now: i64, refresh: Duration) {
        self.status.last_success = Some(now);
        self.status.last_error = None;
        self.schedule(refresh);
    }

    /// The next fetch of a URL list, `period` from now give or take a tenth (so that replicas
    /// started together do not fetch together); none when `period` is zero.
    fn schedule(&mut self, period: Duration) {
        if self.spec.is_url() {
            self.due = (!period.is_zero()).then(|| Instant::now() + jittered(period));
        }
    }
}

fn jittered(period: Duration) -> Duration {
    let unit = getrandom::u32().map_or(0.5, |r| f64::from(r) / f64::from(u32::MAX));
    period.mul_f64(0.9 + 0.2 * unit)
}

/// One load to run on a blocking thread.
enum Job {
    File(PathBuf),
    Url(ListUrl, Option<Validators>),
}

impl Job {
    /// [`run`](Self::run) on a thread of its own rather than the runtime's blocking pool, whose
    /// shutdown would wait for a fetch that takes its whole 30 s.
    async fn run_apart(self, fetcher: Arc<Fetcher>) -> Result<Incoming, ListError> {
        let (tx, rx) = tokio::sync::oneshot::channel();
        std::thread::Builder::new()
            .name("list-load".into())
            .spawn(move || tx.send(self.run(&fetcher)))
            .map_err(|e| ListError::Fetch(format!("cannot start a thread: {e}")))?;
        rx.await.unwrap_or_else(|_| Err(panicked()))
    }

    fn run(self, fetcher: &Fetcher) -> Result<Incoming, ListError> {
        match self {
            Job::File(path) => std::fs::read(&path)
                .map(|bytes| Incoming::Body { bytes, validators: None })
                .map_err(|e| ListError::Read(e.to_string())),
            Job::Url(url, have) => match fetcher.fetch(&url, have.as_ref())? {
                Fetched::NotModified => Ok(Incoming::NotModified),
                Fetched::Body { bytes, validators } => Ok(Incoming::Body { bytes, validators: Some(validators) }),
            },
        }
    }
}

/// A file's identity and version as far as `stat` tells.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
enum Stamp {
    #[default]
    Missing,
    Present {
        dev: u64,
        ino: u64,
        size: u64,
        mtime: i64,
        mtime_nsec: i64,
    },
}

impl Stamp {
    fn of(path: &Path) -> Self {
        std::fs::metadata(path).map_or(Stamp::Missing, |m| Stamp::Present {
            dev: m.dev(),
            ino: m.ino(),
            size: m.size(),
            mtime: m.mtime(),
            mtime_nsec: m.mtime_nsec(),
        })
    }
}

/// When a file list is read again: once a new stamp has held for one poll.
#[derive(Debug, Default)]
struct FileWatch {
    /// The stamp of the last read (successful or not).
    tried: Stamp,
    /// A new stamp seen at the last poll.
    pending: Option<Stamp>,
}

impl FileWatch {
    fn due(&mut self, path: &Path, force: bool) -> bool {
        let now = Stamp::of(path);
        let due = force || (now != self.tried && self.pending == Some(now));
        self.pending = (now != self.tried && !due).then_some(now);
        if due {
            self.tried = now;
        }
        due
    }
}

#[cfg(test)]
mod tests;
