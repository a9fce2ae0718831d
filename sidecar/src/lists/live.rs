//! `LiveCatalog`: the catalog in force, swapped whole when a list changes. A lookup takes the
//! current `Arc<Catalog>` once (an atomic load, no lock) and judges with it to the end, so no
//! request sees a half-loaded catalog, waits for a reload, or mixes two versions.
//! Beside it: what each list's last load gave (for the admin API and the dashboard), and a
//! version number the warm-up watches.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use arc_swap::ArcSwap;
use email_verdict_core::Catalog;
use tokio::sync::watch;

/// One operator list as its last load left it.
#[derive(Debug, Clone, PartialEq)]
pub struct ListStatus {
    /// Its position among the operator lists (as configured): the metrics' `list` label.
    pub index: usize,
    /// `disposable`, `free`, `allowlist`, `blocklist`.
    pub kind: &'static str,
    /// The path, or the URL with its secrets redacted.
    pub source: String,
    /// `file` or `url`.
    pub location: &'static str,
    /// `strong` or `weak` for a disposable list; `None` for the others.
    pub tier: Option<&'static str>,
    /// Distinct names in the copy in use.
    pub entries: usize,
    /// Unix seconds of the last successful load (for a URL: fetch, or "not modified").
    pub last_success: Option<i64>,
    /// The copy in use was read back from the kept copy (not fetched by this process yet).
    pub from_kept_copy: bool,
    /// The last attempt's failure, when it failed: message and unix seconds.
    pub last_error: Option<(String, i64)>,
}

/// A shipped list (embedded at build time), for the same views.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShippedStatus {
    pub kind: &'static str,
    pub source: &'static str,
    pub tier: Option<&'static str>,
    pub entries: usize,
}

/// How lists are reloaded, for the views.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ReloadSettings {
    pub refresh_secs: u64,
    pub max_shrink: f64,
    pub kept_dir: Option<String>,
}

pub struct LiveCatalog {
    catalog: ArcSwap<Catalog>,
    lists: Mutex<Vec<ListStatus>>,
    shipped: Vec<ShippedStatus>,
    settings: ReloadSettings,
    version: watch::Sender<u64>,
    /// Set once the reloader listens for SIGHUP (readiness waits for it).
    watching: AtomicBool,
}

impl LiveCatalog {
    pub fn new(
        catalog: Catalog,
        lists: Vec<ListStatus>,
        shipped: Vec<ShippedStatus>,
        settings: ReloadSettings,
    ) -> Self {
        Self {
            catalog: ArcSwap::from_pointee(catalog),
            lists: Mutex::new(lists),
            shipped,
            settings,
            version: watch::Sender::new(0),
            watching: AtomicBool::new(false),
        }
    }

    /// A catalog that no list reloads (tests, operator commands).
    pub fn fixed(catalog: Catalog) -> Self {
        Self::new(catalog, Vec::new(), Vec::new(), ReloadSettings::default())
    }

    /// The catalog in force now: keep it for the whole of one judgement.
    pub fn current(&self) -> Arc<Catalog> {
        self.catalog.load_full()
    }

    /// Puts `catalog` in force and tells the watchers.
    pub fn swap(&self, catalog: Catalog) {
        self.catalog.store(Arc::new(catalog));
        self.version.send_modify(|v| *v += 1);
    }

    /// Changes with every swap.
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.version.subscribe()
    }

    pub fn lists(&self) -> Vec<ListStatus> {
        self.lists.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    pub fn set_lists(&self, lists: Vec<ListStatus>) {
        *self.lists.lock().unwrap_or_else(|p| p.into_inner()) = lists;
    }

    pub fn shipped(&self) -> &[ShippedStatus] {
        &self.shipped
    }

    pub fn settings(&self) -> &ReloadSettings {
        &self.settings
    }

    pub fn set_watching(&self) {
        self.watching.store(true, Ordering::Release);
    }

    pub fn is_watching(&self) -> bool {
        self.watching.load(Ordering::Acquire)
    }
}
