//! Shared data for the dynamic module: one process-global map, shared by every worker thread
//! (and every filter configuration of this module in the process), with proxy-wasm's semantics:
//! a value and a version (the CAS token, never 0) per key, every write bumps the version, a
//! write with a token succeeds only while the key is at that version. No TTL, no eviction, no
//! listing: `cache.rs` bounds what it writes, exactly as over proxy-wasm shared data.

use std::collections::HashMap;
use std::sync::{LazyLock, Mutex, MutexGuard};

use crate::cache::{SharedData, SharedDataError};
use crate::host::HostError;

#[derive(Debug, Default)]
pub struct Store {
    inner: Mutex<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    data: HashMap<String, (Vec<u8>, u32)>,
    /// The last version handed out, process-wide, so a token is never reused for a key.
    version: u32,
}

impl Store {
    pub fn new() -> Self {
        Self::default()
    }

    /// A poisoned lock (a panic while holding it, which the code below cannot cause) still
    /// gives the map: every write replaces a value whole, so it is never half-written.
    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    pub fn get(&self, key: &str) -> (Option<Vec<u8>>, Option<u32>) {
        self.lock().data.get(key).map_or((None, None), |(v, cas)| (Some(v.clone()), Some(*cas)))
    }

    pub fn set(&self, key: &str, value: &[u8], cas: Option<u32>) -> Result<(), SharedDataError> {
        let mut inner = self.lock();
        let current = inner.data.get(key).map(|(_, c)| *c);
        if let Some(cas) = cas
            && current != Some(cas)
        {
            return Err(SharedDataError::CasMismatch);
        }
        inner.version = inner.version.checked_add(1).unwrap_or(1);
        let version = inner.version;
        match inner.data.get_mut(key) {
            Some(slot) => *slot = (value.to_vec(), version),
            None => {
                inner.data.insert(key.to_owned(), (value.to_vec(), version));
            }
        }
        Ok(())
    }
}

/// The module's shared data.
pub static SHARED: LazyLock<Store> = LazyLock::new(Store::new);

/// [`SharedData`] over [`SHARED`], for hosts that need nothing else (the decision sync).
#[derive(Debug, Clone, Copy, Default)]
pub struct Global;

impl SharedData for Global {
    fn shared_data_get(&self, key: &str) -> Result<(Option<Vec<u8>>, Option<u32>), HostError> {
        Ok(SHARED.get(key))
    }

    fn shared_data_set(&mut self, key: &str, value: &[u8], cas: Option<u32>) -> Result<(), SharedDataError> {
        SHARED.set(key, value, cas)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_and_compare_and_swap() {
        let store = Store::new();
        assert_eq!(store.get("k"), (None, None));
        assert_eq!(store.set("k", b"a", Some(1)), Err(SharedDataError::CasMismatch), "no key: a token fails");
        store.set("k", b"a", None).unwrap();
        let (value, cas) = store.get("k");
        assert_eq!(value.as_deref(), Some(&b"a"[..]));
        let cas = cas.unwrap();
        assert_ne!(cas, 0);
        store.set("k", b"b", Some(cas)).unwrap();
        assert_eq!(store.set("k", b"c", Some(cas)), Err(SharedDataError::CasMismatch), "a stale token loses");
        assert_eq!(store.get("k").0.as_deref(), Some(&b"b"[..]));
        store.set("other", b"x", None).unwrap();
        assert_ne!(store.get("other").1, store.get("k").1, "tokens are never shared");
    }

    #[test]
    fn threads_share_one_store_and_one_cas_winner() {
        let store = std::sync::Arc::new(Store::new());
        store.set("due", b"0", None).unwrap();
        let (_, cas) = store.get("due");
        let winners: usize = (0..8)
            .map(|i| {
                let store = std::sync::Arc::clone(&store);
                std::thread::spawn(move || store.set("due", i.to_string().as_bytes(), cas).is_ok())
            })
            .collect::<Vec<_>>()
            .into_iter()
            .map(|t| usize::from(t.join().unwrap()))
            .sum();
        assert_eq!(winners, 1);
    }
}
