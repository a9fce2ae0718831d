//! The reviewers' decisions as a replica last read them (issue 46: no store round trip for
//! what does not change per request). A lookup used to read its names' decisions from the store
//! every time; now each store keeps what it read here, tagged with the store's decision version
//! (a counter every decision moves: SQLite's last history row, a Redis counter). The version is
//! read again at most every [`CHECK_MS`], by the request that finds it due, and an entry read
//! under another version is read again: a decision reaches every replica's lookups within
//! [`CHECK_MS`] and a round trip (this process's own at once), and an entry is read again after
//! [`KEEP_MS`] whatever the version says. A failed version read leaves the
//! version unknown, and nothing is served from memory until one succeeds.

use std::num::NonZeroUsize;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use lru::LruCache;

use super::{AppliedDecision, StateError};

/// How often the version is read again (ms).
pub const CHECK_MS: u64 = 10;
/// How long an entry is served at most, whatever the version says (a decision whose version
/// bump failed still arrives).
const KEEP_MS: u64 = 1_000;
/// Names kept (the least recently looked up go first).
const KEPT: usize = 10_000;
const UNKNOWN: u64 = u64::MAX;

/// What was read for some names: the version it was read under, when, and the decision.
type Entry = (u64, u64, Option<AppliedDecision>);

pub struct DecisionCache {
    start: Instant,
    /// When the version was last claimed for a read (ms since `start`, + 1; 0: never).
    checked: AtomicU64,
    version: AtomicU64,
    /// Each entry with the version it was read under and when (ms since `start`).
    entries: Mutex<LruCache<Vec<String>, Entry>>,
}

impl Default for DecisionCache {
    fn default() -> Self {
        Self {
            start: Instant::now(),
            checked: AtomicU64::new(0),
            version: AtomicU64::new(UNKNOWN),
            entries: Mutex::new(LruCache::new(NonZeroUsize::new(KEPT).expect("nonzero"))),
        }
    }
}

impl DecisionCache {
    /// The decision for `names`, from memory when read under the store's current version, else
    /// from `read`; `version` reads the store's version when it is due.
    pub async fn get(
        &self,
        names: &[String],
        version: impl AsyncFnOnce() -> Result<u64, StateError>,
        read: impl AsyncFnOnce() -> Result<Option<AppliedDecision>, StateError>,
    ) -> Result<Option<AppliedDecision>, StateError> {
        let now = self.start.elapsed().as_millis() as u64 + 1;
        let last = self.checked.load(Ordering::Acquire);
        if (last == 0 || now >= last + CHECK_MS)
            && self.checked.compare_exchange(last, now, Ordering::AcqRel, Ordering::Acquire).is_ok()
        {
            match version().await {
                Ok(v) => self.version.store(v, Ordering::Release),
                Err(e) => {
                    self.version.store(UNKNOWN, Ordering::Release);
                    self.checked.store(0, Ordering::Release);
                    return Err(e);
                }
            }
        }
        let version = self.version.load(Ordering::Acquire);
        if version != UNKNOWN {
            let entries = &mut *self.entries.lock().unwrap_or_else(|p| p.into_inner());
            if let Some((v, at, decision)) = entries.get(names)
                && *v == version
                && now < at + KEEP_MS
            {
                return Ok(decision.clone());
            }
        }
        let decision = read().await?;
        if version != UNKNOWN {
            self.entries
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .put(names.to_vec(), (version, now, decision.clone()));
        }
        Ok(decision)
    }

    /// This process made a decision: nothing read before it is served again.
    pub fn invalidate(&self) {
        self.version.store(UNKNOWN, Ordering::Release);
        self.checked.store(0, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn on(name: &str) -> Option<AppliedDecision> {
        Some(AppliedDecision { decision: email_verdict_core::Decision::Block, on: name.into() })
    }

    #[tokio::test]
    async fn an_entry_is_read_again_under_a_new_version_and_never_while_it_is_unknown() {
        let cache = DecisionCache::default();
        let names = vec!["a.example".to_owned()];
        let got = cache.get(&names, async || Ok(1), async || Ok(None)).await.unwrap();
        assert_eq!(got, None);
        // Same version (not due yet): from memory, the store not read.
        let got = cache.get(&names, async || Ok(1), async || panic!("read")).await.unwrap();
        assert_eq!(got, None);
        // Due, and the version moved: read again.
        std::thread::sleep(std::time::Duration::from_millis(CHECK_MS + 2));
        let got = cache.get(&names, async || Ok(2), async || Ok(on("a.example"))).await.unwrap();
        assert_eq!(got, on("a.example"));
        // This process decided: read again at once, whatever the time.
        cache.invalidate();
        let got = cache.get(&names, async || Ok(3), async || Ok(None)).await.unwrap();
        assert_eq!(got, None);
        // A failed version read: an error, then nothing from memory until one succeeds.
        std::thread::sleep(std::time::Duration::from_millis(CHECK_MS + 2));
        assert!(
            cache.get(&names, async || Err(StateError::Unavailable("down".into())), async || Ok(None)).await.is_err()
        );
        let got = cache.get(&names, async || Err(StateError::Unavailable("down".into())), async || Ok(on("x"))).await;
        assert!(got.is_err(), "the version is due again at once after a failure");
    }
}
