//! The sidecar's decisions, kept in the proxy for the moment the sidecar gives no verdict
//! (`decision_sync_seconds` in `CONFIG.md`): a reviewer's block or the operator's blocklist then
//! still blocks, and an allow decision keeps the embedded strong lists from blocking a name the
//! operator vouched for.
//!
//! One root context per period fetches `GET /api/v1/decisions` with the gateway's key (the
//! due time in shared data moves by compare-and-swap, so all workers of a `vm_id` share one
//! fetch), sending the `ETag` it has; the answer is stored in shared data as `etag\n` + the
//! compact form of its names (`core::DecidedSet`, searched where it lies: a worker holds that
//! one copy, not a parsed list), then its `ETag` under a small key of its own ([`VERSION_KEY`]), whose CAS token
//! changes with every store. A lookup reads only that small key, and the list itself (up to
//! [`MAX_BODY`]) only when the token changed, to parse it again: shared data hands out copies,
//! so reading the list per lookup would copy it per signup while the sidecar is down.
//! A failed fetch keeps the last good list.
//!
//! The same version ties the verdict cache to the decisions (`cache.rs`): a cached verdict
//! judged under another version is a miss, so a decision reaches the cached verdicts with the
//! sync that brings it. That is why the decisions are also synced with `local_fallback` off
//! while the cache is on (`config.rs`).

use std::cell::RefCell;
use std::sync::{Arc, Mutex};

use email_verdict_core::{DecidedSet, Decision, DecisionList, Domain};

use crate::cache::SharedData;
use crate::host::HostError;

pub const PATH: &str = "/api/v1/decisions";
/// The stored list: `etag\n` + `DecidedSet::as_bytes`. Named after the form: shared data
/// outlives a filter update, and a build that read another form under the same `ETag` would get
/// `304`s for a list it cannot read.
pub const LIST_KEY: &str = "email_verdict.decisions.evd1";
/// The stored list's `ETag`, written after the list: its CAS token is the list's version
/// ([`version`]), new with every store (a `304` stores nothing).
pub const VERSION_KEY: &str = "email_verdict.decisions.evd1.version";
/// When the next fetch is due (Unix milliseconds, decimal).
pub const DUE_KEY: &str = "email_verdict.decisions.due";
/// The largest answer read (100,000 names in each of four lists fit with room to spare).
pub const MAX_BODY: usize = 16 * 1024 * 1024;
/// How often root contexts look at the due time.
pub const TICK_MS: u64 = 1000;

/// Whether this root context fetches now: the due time has passed and this context moved it
/// `period_ms` ahead first. A failed shared-data call means "not now" (the next tick retries).
pub fn claim(store: &mut (impl SharedData + ?Sized), now_ms: u64, period_ms: u64) -> bool {
    let Ok((value, cas)) = store.shared_data_get(DUE_KEY) else { return false };
    let due = value.and_then(|v| std::str::from_utf8(&v).ok()?.parse::<u64>().ok()).unwrap_or(0);
    if now_ms < due {
        return false;
    }
    let next = now_ms.saturating_add(period_ms).to_string();
    store.shared_data_set(DUE_KEY, next.as_bytes(), cas).is_ok()
}

/// The request headers of a fetch of the sidecar's decisions, with the stored `etag` (the
/// same for every host).
pub fn fetch_headers<'a>(sidecar: &'a crate::config::Sidecar, etag: Option<&'a str>) -> Vec<(&'a str, &'a str)> {
    let mut headers = vec![
        (":method", "GET"),
        (":path", PATH),
        (":authority", sidecar.authority.as_str()),
        ("authorization", sidecar.authorization.as_str()),
        ("accept", "application/json"),
    ];
    if let Some(etag) = etag {
        headers.push(("if-none-match", etag));
    }
    headers
}

/// The `ETag` of the stored list, to send as `If-None-Match` (from the small key: the list is
/// not copied for it).
pub fn stored_etag(store: &(impl SharedData + ?Sized)) -> Option<String> {
    let (value, _) = store.shared_data_get(VERSION_KEY).ok()?;
    String::from_utf8(value?).ok().filter(|e| !e.is_empty())
}

/// The version of the stored decisions: the CAS token of [`VERSION_KEY`]; `None` before the
/// first store. Every write takes the next token of one counter (Envoy's and the module's
/// shared data), so a new list never has an old version (short of 2^32 writes).
pub fn version(store: &(impl SharedData + ?Sized)) -> Result<Option<u32>, HostError> {
    Ok(store.shared_data_get(VERSION_KEY)?.1)
}

/// Stores a `200` answer once it parses; returns how many names it holds.
pub fn store_answer(store: &mut (impl SharedData + ?Sized), etag: &str, body: &[u8]) -> Result<usize, String> {
    let list: DecisionList = serde_json::from_slice(body).map_err(|e| format!("the decisions do not parse: {e}"))?;
    if etag.contains('\n') {
        return Err("the ETag holds a line break".to_owned());
    }
    let set = DecidedSet::new(&list);
    drop(list);
    let names = set.len();
    let value = [etag.as_bytes(), b"\n", set.as_bytes()].concat();
    store.shared_data_set(LIST_KEY, &value, None).map_err(|e| format!("could not store the decisions: {e:?}"))?;
    // After the list: a reader that sees the new version finds at least this list.
    store
        .shared_data_set(VERSION_KEY, etag.as_bytes(), None)
        .map_err(|e| format!("could not store the decisions' version: {e:?}"))?;
    // Where the workers share memory, the set parsed here is theirs: no worker parses it again.
    if let (Some(slot), Ok((_, Some(version)))) = (store.parsed_decisions(), store.shared_data_get(VERSION_KEY)) {
        slot.put(version, Arc::new(set));
    }
    Ok(names)
}

/// One worker's parsed copy of the stored list.
#[derive(Debug, Default)]
pub struct LocalCopy {
    /// The version (CAS token of [`VERSION_KEY`]) the set was parsed at.
    parsed: RefCell<(Option<u32>, Arc<DecidedSet>)>,
    /// How many times the stored list was read (tests).
    #[cfg(test)]
    reads: std::cell::Cell<usize>,
}

impl LocalCopy {
    /// The decision in force for `domain`, from the stored list (read and parsed again only when
    /// its version changed). Nothing stored, or a stored value that cannot be read, decides
    /// nothing.
    pub fn decision(&self, store: &(impl SharedData + ?Sized), domain: &Domain) -> Option<Decision> {
        let Ok((_, version)) = store.shared_data_get(VERSION_KEY) else {
            return self.parsed.borrow().1.decision(domain); // the last copy read
        };
        if version.is_none() || self.parsed.borrow().0 != version {
            let set = match version {
                None => Arc::default(),
                Some(version) => match self.read(store, version) {
                    Some(set) => set,
                    None => return self.parsed.borrow().1.decision(domain),
                },
            };
            *self.parsed.borrow_mut() = (version, set);
        }
        let set = Arc::clone(&self.parsed.borrow().1);
        set.decision(domain)
    }

    /// The list of `version`: parsed already by another reader of the store, else read and
    /// parsed (and handed to the others); `None` when the store cannot be read.
    fn read(&self, store: &(impl SharedData + ?Sized), version: u32) -> Option<Arc<DecidedSet>> {
        let slot = store.parsed_decisions();
        if let Some(set) = slot.and_then(|s| s.get(version)) {
            return Some(set);
        }
        let (value, _) = store.shared_data_get(LIST_KEY).ok()?;
        #[cfg(test)]
        self.reads.set(self.reads.get() + 1);
        let set = Arc::new(value.and_then(parse_stored).unwrap_or_default());
        if let Some(slot) = slot {
            slot.put(version, Arc::clone(&set));
        }
        Some(set)
    }
}

/// The decisions parsed once for every reader of a store whose readers share memory: the
/// dynamic module's worker threads hold one set per process rather than one each (a Wasm VM's
/// memory is its own, so each keeps its [`LocalCopy`]). Two threads that miss at once may both
/// parse; the set kept is the newest version's.
#[derive(Debug)]
pub struct ParsedSlot(Mutex<Option<(u32, Arc<DecidedSet>)>>);

impl Default for ParsedSlot {
    fn default() -> Self {
        Self::new()
    }
}

impl ParsedSlot {
    pub const fn new() -> Self {
        Self(Mutex::new(None))
    }

    fn get(&self, version: u32) -> Option<Arc<DecidedSet>> {
        let slot = self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        slot.as_ref().filter(|(v, _)| *v == version).map(|(_, set)| Arc::clone(set))
    }

    /// Keeps `set` unless a newer version is kept (versions only grow: one counter per store).
    fn put(&self, version: u32, set: Arc<DecidedSet>) {
        let mut slot = self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if slot.as_ref().is_none_or(|(v, _)| *v < version) {
            *slot = Some((version, set));
        }
    }
}

/// The set in a stored value (`etag\n` + its form): checked, not parsed, and kept where it was
/// copied to (the prefix is moved out in place).
fn parse_stored(mut value: Vec<u8>) -> Option<DecidedSet> {
    let start = value.iter().position(|&b| b == b'\n')? + 1;
    value.drain(..start);
    DecidedSet::from_bytes(value)
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;
    use crate::cache::SharedDataError;

    #[derive(Default)]
    struct Store(HashMap<String, (Vec<u8>, u32)>);

    impl SharedData for Store {
        fn shared_data_get(&self, key: &str) -> Result<(Option<Vec<u8>>, Option<u32>), HostError> {
            Ok(self.0.get(key).map_or((None, None), |(v, cas)| (Some(v.clone()), Some(*cas))))
        }
        fn shared_data_set(&mut self, key: &str, value: &[u8], cas: Option<u32>) -> Result<(), SharedDataError> {
            let current = self.0.get(key).map(|(_, c)| *c);
            if cas.is_some() && cas != current {
                return Err(SharedDataError::CasMismatch);
            }
            self.0.insert(key.to_owned(), (value.to_vec(), current.unwrap_or(0) + 1));
            Ok(())
        }
    }

    #[test]
    fn one_fetch_per_period_for_all_workers() {
        let mut store = Store::default();
        assert!(claim(&mut store, 1_000, 30_000), "nothing due yet: the first tick fetches");
        assert!(!claim(&mut store, 1_001, 30_000), "another worker in the same period does not");
        assert!(!claim(&mut store, 30_999, 30_000));
        assert!(claim(&mut store, 31_000, 30_000));
    }

    #[test]
    fn the_stored_list_decides_and_changes_are_seen() {
        let mut store = Store::default();
        let copy = LocalCopy::default();
        let d = |s: &str| Domain::parse(s).unwrap();
        assert_eq!(copy.decision(&store, &d("x.blocked.example")), None, "nothing stored yet");
        let body = br#"{"reviewer":{"block":["blocked.example"],"allow":[]},"operator":{"block":[],"allow":["ok.example"]},"complete":true}"#;
        assert_eq!(store_answer(&mut store, "\"v1\"", body), Ok(2));
        assert_eq!(stored_etag(&store).as_deref(), Some("\"v1\""));
        assert_eq!(copy.decision(&store, &d("x.blocked.example")), Some(Decision::Block));
        assert_eq!(copy.decision(&store, &d("ok.example")), Some(Decision::Allow));
        let body = br#"{"reviewer":{"block":[],"allow":[]},"operator":{"block":[],"allow":[]},"complete":true}"#;
        store_answer(&mut store, "\"v2\"", body).unwrap();
        assert_eq!(copy.decision(&store, &d("x.blocked.example")), None, "a withdrawn decision is gone");
        assert_eq!(copy.reads.get(), 2, "the list is read once per version, not per lookup");
        assert!(store_answer(&mut store, "\"v3\"", b"<html>").is_err(), "a bad answer keeps the last list");
        assert_eq!(stored_etag(&store).as_deref(), Some("\"v2\""));
    }

    /// A store whose readers share one parsed list (the dynamic module's).
    #[derive(Default)]
    struct Sharing(Store, ParsedSlot);

    impl SharedData for Sharing {
        fn shared_data_get(&self, key: &str) -> Result<(Option<Vec<u8>>, Option<u32>), HostError> {
            self.0.shared_data_get(key)
        }
        fn shared_data_set(&mut self, key: &str, value: &[u8], cas: Option<u32>) -> Result<(), SharedDataError> {
            self.0.shared_data_set(key, value, cas)
        }
        fn parsed_decisions(&self) -> Option<&ParsedSlot> {
            Some(&self.1)
        }
    }

    #[test]
    fn workers_sharing_memory_parse_each_version_once() {
        let mut store = Sharing::default();
        let d = |s: &str| Domain::parse(s).unwrap();
        let body = br#"{"reviewer":{"block":["blocked.example"],"allow":[]},"operator":{"block":[],"allow":[]},"complete":true}"#;
        store_answer(&mut store, "\"v1\"", body).unwrap();
        let workers: Vec<LocalCopy> = (0..4).map(|_| LocalCopy::default()).collect();
        for w in &workers {
            assert_eq!(w.decision(&store, &d("a.blocked.example")), Some(Decision::Block));
        }
        let reads = |ws: &[LocalCopy]| ws.iter().map(|w| w.reads.get()).sum::<usize>();
        assert_eq!(reads(&workers), 0, "the sync's own parse serves every worker");
        store.1 = ParsedSlot::new(); // as after a sync by another filter configuration's store
        let late = LocalCopy::default();
        assert_eq!(late.decision(&store, &d("a.blocked.example")), Some(Decision::Block));
        assert_eq!(workers[0].decision(&store, &d("a.blocked.example")), Some(Decision::Block));
        assert_eq!(late.reads.get(), 1, "read and parsed by the first worker that needs it");
        let body = br#"{"reviewer":{"block":[],"allow":[]},"operator":{"block":[],"allow":[]},"complete":true}"#;
        store_answer(&mut store, "\"v2\"", body).unwrap();
        for w in &workers {
            assert_eq!(w.decision(&store, &d("a.blocked.example")), None, "the new version everywhere");
        }
        assert_eq!(reads(&workers), 0, "the new version too");
        // An older version parsed late never replaces a newer one.
        store.1.put(1, Arc::default());
        assert!(store.1.get(1).is_none());
    }

    /// A store that counts the bytes it hands out.
    #[derive(Default)]
    struct Counting(Store, std::cell::Cell<usize>);

    impl SharedData for Counting {
        fn shared_data_get(&self, key: &str) -> Result<(Option<Vec<u8>>, Option<u32>), HostError> {
            let got = self.0.shared_data_get(key)?;
            self.1.set(self.1.get() + got.0.as_ref().map_or(0, Vec::len));
            Ok(got)
        }
        fn shared_data_set(&mut self, key: &str, value: &[u8], cas: Option<u32>) -> Result<(), SharedDataError> {
            self.0.shared_data_set(key, value, cas)
        }
    }

    #[test]
    fn a_lookup_does_not_copy_the_list() {
        let mut store = Counting::default();
        let names: Vec<String> = (0..1000).map(|i| format!("\"n{i}.example\"")).collect();
        let body = format!(
            r#"{{"reviewer":{{"block":[{}],"allow":[]}},"operator":{{"block":[],"allow":[]}},"complete":true}}"#,
            names.join(",")
        );
        store_answer(&mut store, "\"big\"", body.as_bytes()).unwrap();
        let copy = LocalCopy::default();
        let d = Domain::parse("n7.example").unwrap();
        assert_eq!(copy.decision(&store, &d), Some(Decision::Block));
        store.1.set(0);
        for _ in 0..100 {
            assert_eq!(copy.decision(&store, &d), Some(Decision::Block));
        }
        assert_eq!(store.1.get(), 100 * "\"big\"".len(), "only the version key is read");
    }
}
