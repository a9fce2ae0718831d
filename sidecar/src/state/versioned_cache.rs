//! What a replica last read of something that rarely changes, kept in memory (issue 46: no
//! store round trip for what does not change per request): the reviewers' decisions and the API
//! keys' records. Each store keeps what it read here, tagged with the store's version of that
//! kind of data (a counter every change moves: SQLite's last decision row or its key-change
//! counter, a Redis counter). The version is read again at most every [`CHECK_MS`], by the
//! request that finds it due, and an entry read under another version is read again: a change
//! reaches every replica within [`CHECK_MS`] and a round trip (this process's own at once), and
//! an entry is read again after its kind's `keep` whatever the version says. A failed version
//! read leaves the version unknown, and nothing is served from memory until one succeeds.

use std::borrow::Borrow;
use std::hash::Hash;
use std::num::NonZeroUsize;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use lru::LruCache;

use super::{AppliedDecision, KeyRecord, StateError};
use crate::keys::KeyHash;

/// How often the version is read again (ms).
pub const CHECK_MS: u64 = 10;
/// Entries kept (the least recently used go first).
const KEPT: usize = 10_000;
const UNKNOWN: u64 = u64::MAX;

/// Decisions by the names they cover; an entry at most 1 s old (a decision whose version bump
/// failed, which is not reported to the reviewer, still arrives).
pub type DecisionCache = VersionedCache<Vec<String>, Option<AppliedDecision>>;
/// Key records (`None`: no such key) by hash, shared (a lookup copies none of it); an entry at
/// most [`KEY_KEEP_MS`] old (a change whose version bump failed is an error to whoever made it).
pub type KeyCache = VersionedCache<KeyHash, Option<Arc<KeyRecord>>>;
/// How long a key record is served at most, whatever the version says.
pub const KEY_KEEP_MS: u64 = 10_000;

/// What was read for one entry: the version it was read under, when, and the value.
type Entry<V> = (u64, u64, V);

pub struct VersionedCache<K: Hash + Eq, V> {
    start: Instant,
    /// How long an entry is served at most (ms).
    keep_ms: u64,
    /// When the version was last claimed for a read (ms since `start`, + 1; 0: never).
    checked: AtomicU64,
    version: AtomicU64,
    entries: Mutex<LruCache<K, Entry<V>>>,
}

impl DecisionCache {
    pub fn for_decisions() -> Self {
        Self::new(1_000)
    }
}

impl KeyCache {
    pub fn for_keys() -> Self {
        Self::new(KEY_KEEP_MS)
    }
}

impl<K: Hash + Eq, V: Clone> VersionedCache<K, V> {
    fn new(keep_ms: u64) -> Self {
        Self {
            start: Instant::now(),
            keep_ms,
            checked: AtomicU64::new(0),
            version: AtomicU64::new(UNKNOWN),
            entries: Mutex::new(LruCache::new(NonZeroUsize::new(KEPT).expect("nonzero"))),
        }
    }

    /// The value for `key`, from memory when read under the store's current version, else from
    /// `read`; `version` reads the store's version when it is due.
    pub async fn get<Q: Hash + Eq + ToOwned<Owned = K> + ?Sized>(
        &self,
        key: &Q,
        version: impl AsyncFnOnce() -> Result<u64, StateError>,
        read: impl AsyncFnOnce() -> Result<V, StateError>,
    ) -> Result<V, StateError>
    where
        K: Borrow<Q>,
    {
        let now = self.start.elapsed().as_millis() as u64 + 1;
        let last = self.checked.load(Ordering::Acquire);
        if (last == 0 || now >= last + CHECK_MS)
            && self.checked.compare_exchange(last, now, Ordering::AcqRel, Ordering::Acquire).is_ok()
        {
            match version().await {
                Ok(v) => self.version.store(v, Ordering::Release),
                Err(e) => {
                    self.invalidate();
                    return Err(e);
                }
            }
        }
        let version = self.version.load(Ordering::Acquire);
        if version != UNKNOWN {
            let entries = &mut *self.entries.lock().unwrap_or_else(|p| p.into_inner());
            if let Some((v, at, value)) = entries.get(key)
                && *v == version
                && now < at + self.keep_ms
            {
                return Ok(value.clone());
            }
        }
        let value = read().await?;
        if version != UNKNOWN {
            self.entries.lock().unwrap_or_else(|p| p.into_inner()).put(key.to_owned(), (version, now, value.clone()));
        }
        Ok(value)
    }

    /// This process changed what is cached: nothing read before is served again.
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
        let cache = DecisionCache::for_decisions();
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

    #[tokio::test]
    async fn an_entry_is_read_again_after_its_keep_whatever_the_version() {
        let cache: VersionedCache<u8, u8> = VersionedCache::new(30);
        assert_eq!(cache.get(&1, async || Ok(7), async || Ok(1)).await.unwrap(), 1);
        std::thread::sleep(std::time::Duration::from_millis(CHECK_MS + 2));
        assert_eq!(cache.get(&1, async || Ok(7), async || panic!("read")).await.unwrap(), 1);
        std::thread::sleep(std::time::Duration::from_millis(30));
        assert_eq!(cache.get(&1, async || Ok(7), async || Ok(2)).await.unwrap(), 2, "kept past its keep");
    }
}
