//! The sidecar's decisions, kept in the proxy for the moment the sidecar gives no verdict
//! (`decision_sync_seconds` in `CONFIG.md`): a reviewer's block or the operator's blocklist then
//! still blocks, and an allow decision keeps the embedded strong lists from blocking a name the
//! operator vouched for.
//!
//! One root context per period fetches `GET /api/v1/decisions` with the gateway's key (the
//! due time in shared data moves by compare-and-swap, so all workers of a `vm_id` share one
//! fetch), sending the `ETag` it has; the answer is stored in shared data in [`BUCKETS`] parts
//! (each `etag\n` + the compact form of its names, `core::DecidedSet`), built as the answer is
//! read from the host a slice at a time (`core::decided::PartsBuilder::from_json`: the fetching
//! VM never holds the answer or a parsed list, and its memory never shrinks), then its `ETag`
//! under a small key of its own ([`VERSION_KEY`]), whose CAS token changes with every store. A
//! lookup reads that small key and, only when a decision is wanted (the sidecar gave no verdict),
//! the part of each of its names (a name and its parents: a few parts of a few KB), searched
//! where they were copied. No worker holds the list: shared data is in the proxy once, and a
//! read is a copy. A failed fetch keeps the last good list.
//!
//! The same version ties the verdict cache to the decisions (`cache.rs`): a cached verdict
//! judged under another version is a miss, so a decision reaches the cached verdicts with the
//! sync that brings it. That is why the decisions are also synced with `local_fallback` off
//! while the cache is on (`config.rs`).

use std::io::Read;

use email_verdict_core::decided::{PartsBuilder, bucket_of, decide, parents};
use email_verdict_core::{DecidedSet, Decision, Domain};

use crate::cache::SharedData;
use crate::host::HostError;

pub const PATH: &str = "/api/v1/decisions";
/// The stored list's parts: `<LIST_KEY>.<part>`, each `etag\n` + `DecidedSet::as_bytes`. Named
/// after the form: shared data outlives a filter update, and a build that read another form
/// under the same `ETag` would get `304`s for a list it cannot read.
pub const LIST_KEY: &str = "email_verdict.decisions.evd2";
/// The parts the list is stored in: 100,000 names make parts of about 10 KB.
pub const BUCKETS: usize = 256;
/// The stored list's `ETag`, written after the parts: its CAS token is the list's version
/// ([`version`]), new with every store (a `304` stores nothing).
pub const VERSION_KEY: &str = "email_verdict.decisions.evd2.version";
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

/// Stores a `200` answer held whole (tests); [`store_answer_read`] does the work.
pub fn store_answer(store: &mut (impl SharedData + ?Sized), etag: &str, body: &[u8]) -> Result<usize, String> {
    store_answer_read(store, etag, body, body.len())
}

/// Stores a `200` answer of `len` bytes read from `body` once it parses whole; returns how many
/// names it holds. The names go from the JSON straight into their parts
/// (`core::decided::PartsBuilder::from_json`): the parse holds the parts' names, never the
/// answer or a parsed list (a Wasm VM keeps its peak for the proxy's life). Nothing is stored
/// before the whole answer parsed: a bad one keeps the last good list.
pub fn store_answer_read(
    store: &mut (impl SharedData + ?Sized),
    etag: &str,
    body: impl Read,
    len: usize,
) -> Result<usize, String> {
    if len > MAX_BODY {
        return Err(format!("the answer is over {MAX_BODY} bytes"));
    }
    if etag.contains('\n') {
        return Err("the ETag holds a line break".to_owned());
    }
    let parts = PartsBuilder::from_json(body, BUCKETS).map_err(|e| format!("the decisions do not parse: {e}"))?;
    let (mut names, mut value) = (0, Vec::new());
    for (i, part) in parts.into_parts().enumerate() {
        names += part.len();
        value.clear();
        value.extend_from_slice(etag.as_bytes());
        value.push(b'\n');
        value.extend_from_slice(part.as_bytes());
        store
            .shared_data_set(&part_key(i), &value, None)
            .map_err(|e| format!("could not store the decisions: {e:?}"))?;
    }
    // After the parts: a reader that sees the new version finds them all.
    store
        .shared_data_set(VERSION_KEY, etag.as_bytes(), None)
        .map_err(|e| format!("could not store the decisions' version: {e:?}"))?;
    Ok(names)
}

/// A body of `len` bytes the host holds, read through `read(start, max)` (proxy-wasm's
/// `proxy_get_buffer_bytes`) as the parse asks for it, `core::decided::JSON_BUFFER` bytes at a
/// time: the VM never holds the whole answer. A host error is an I/O error (the parse fails);
/// fewer bytes than asked for end the body early.
pub fn host_body<F>(len: usize, read: F) -> HostBody<F>
where
    F: FnMut(usize, usize) -> Result<Vec<u8>, HostError>,
{
    HostBody { read, at: 0, len }
}

/// See [`host_body`].
pub struct HostBody<F> {
    read: F,
    at: usize,
    len: usize,
}

impl<F: FnMut(usize, usize) -> Result<Vec<u8>, HostError>> Read for HostBody<F> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let want = buf.len().min(self.len.saturating_sub(self.at));
        if want == 0 {
            return Ok(0);
        }
        let slice = (self.read)(self.at, want).map_err(|e| std::io::Error::other(e.to_string()))?;
        let n = slice.len().min(want);
        buf[..n].copy_from_slice(&slice[..n]);
        self.at += n;
        Ok(n)
    }
}

/// A body in the chunks Envoy handed the dynamic module, read where they lie.
pub struct Chunks<'a> {
    rest: &'a [&'a [u8]],
    current: &'a [u8],
}

impl<'a> Chunks<'a> {
    pub fn new(chunks: &'a [&'a [u8]]) -> Self {
        Self { rest: chunks, current: &[] }
    }

    /// The body's length.
    pub fn len(&self) -> usize {
        self.current.len() + self.rest.iter().map(|c| c.len()).sum::<usize>()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl Read for Chunks<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        while self.current.is_empty() {
            let Some((first, rest)) = self.rest.split_first() else { return Ok(0) };
            (self.current, self.rest) = (first, rest);
        }
        self.current.read(buf)
    }
}

fn part_key(i: usize) -> String {
    format!("{LIST_KEY}.{i}")
}

/// Reads the stored decisions for a lookup (no copy is kept between lookups).
#[derive(Debug, Default)]
pub struct StoredDecisions {
    /// Bytes of stored parts read (tests).
    #[cfg(test)]
    read: std::cell::Cell<usize>,
}

impl StoredDecisions {
    /// The decision in force for `domain`, from the parts of its names stored under the
    /// current version. Nothing stored, a part that cannot be read or that another version
    /// wrote (a store under way) decides nothing for its names.
    pub fn decision(&self, store: &(impl SharedData + ?Sized), domain: &Domain) -> Option<Decision> {
        let (etag, _) = store.shared_data_get(VERSION_KEY).ok()?;
        let etag = etag?;
        let mut parts: Vec<(usize, Option<DecidedSet>)> = Vec::new();
        let entries = parents(domain).map(|name| {
            let bucket = bucket_of(name, BUCKETS);
            let at = match parts.iter().position(|(b, _)| *b == bucket) {
                Some(at) => at,
                None => {
                    parts.push((bucket, self.part(store, bucket, &etag)));
                    parts.len() - 1
                }
            };
            parts[at].1.as_ref().map(|set| set.entry(name)).unwrap_or_default()
        });
        decide(entries.collect::<Vec<_>>().into_iter())
    }

    fn part(&self, store: &(impl SharedData + ?Sized), bucket: usize, etag: &[u8]) -> Option<DecidedSet> {
        let (value, _) = store.shared_data_get(&part_key(bucket)).ok()?;
        let mut value = value?;
        #[cfg(test)]
        self.read.set(self.read.get() + value.len());
        let start = value.iter().position(|&b| b == b'\n')?;
        if value[..start] != *etag {
            return None;
        }
        value.drain(..=start);
        DecidedSet::from_bytes(value)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;
    use crate::cache::SharedDataError;

    #[derive(Debug, Default, Clone, PartialEq)]
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
        let reader = StoredDecisions::default();
        let d = |s: &str| Domain::parse(s).unwrap();
        assert_eq!(reader.decision(&store, &d("x.blocked.example")), None, "nothing stored yet");
        let body = br#"{"reviewer":{"block":["blocked.example"],"allow":[]},"operator":{"block":[],"allow":["ok.example"]},"complete":true}"#;
        assert_eq!(store_answer(&mut store, "\"v1\"", body), Ok(2));
        assert_eq!(stored_etag(&store).as_deref(), Some("\"v1\""));
        assert_eq!(reader.decision(&store, &d("x.blocked.example")), Some(Decision::Block));
        assert_eq!(reader.decision(&store, &d("ok.example")), Some(Decision::Allow));
        let body = br#"{"reviewer":{"block":[],"allow":[]},"operator":{"block":[],"allow":[]},"complete":true}"#;
        store_answer(&mut store, "\"v2\"", body).unwrap();
        assert_eq!(reader.decision(&store, &d("x.blocked.example")), None, "a withdrawn decision is gone");
        assert!(store_answer(&mut store, "\"v3\"", b"<html>").is_err(), "a bad answer keeps the last list");
        assert_eq!(stored_etag(&store).as_deref(), Some("\"v2\""));
    }

    #[test]
    fn a_part_another_version_wrote_decides_nothing() {
        let mut store = Store::default();
        let body = br#"{"reviewer":{"block":["blocked.example"],"allow":[]},"operator":{"block":[],"allow":[]},"complete":true}"#;
        store_answer(&mut store, "\"v1\"", body).unwrap();
        // A store under way: the version key still names v1 while a part holds v2's names.
        let key = part_key(bucket_of("blocked.example", BUCKETS));
        let (value, _) = store.shared_data_get(&key).unwrap();
        let rewritten = [b"\"v2\"\n".as_slice(), &value.unwrap()[5..]].concat();
        store.shared_data_set(&key, &rewritten, None).unwrap();
        let d = Domain::parse("blocked.example").unwrap();
        assert_eq!(StoredDecisions::default().decision(&store, &d), None);
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

    /// 100,000 names: a lookup copies the parts of its names only, a few KB, never the list.
    #[test]
    fn a_lookup_copies_only_the_parts_of_its_names() {
        let mut store = Counting::default();
        let names: Vec<String> = (0..100_000).map(|i| format!("\"n{i}.decided.example\"")).collect();
        let body = format!(
            r#"{{"reviewer":{{"block":[{}],"allow":[]}},"operator":{{"block":[],"allow":[]}},"complete":true}}"#,
            names.join(",")
        );
        store_answer(&mut store, "\"big\"", body.as_bytes()).unwrap();
        let whole: usize = (0..BUCKETS).map(|i| store.0.0[&part_key(i)].0.len()).sum();
        let reader = StoredDecisions::default();
        let d = Domain::parse("x.n7.decided.example").unwrap();
        store.1.set(0);
        assert_eq!(reader.decision(&store, &d), Some(Decision::Block));
        let copied = store.1.get();
        assert!(copied * 40 < whole, "one lookup copied {copied} bytes of {whole}");
        assert_eq!(copied, reader.read.get() + "\"big\"".len(), "the version key and the parts read");
    }

    /// A body of `names` names per list, drawn with repeats from a pool that has names on two
    /// lists, names that are not in normal form and ones that are not names.
    fn generated(names: usize) -> String {
        let pool = |i: usize| match i % 53 {
            0 => "Not A Name".to_owned(),
            1 => format!("N{i}.Decided.Example"),
            2 => "bücher.example".to_owned(),
            _ => format!("n{}.decided.example", i % 7919),
        };
        let list = |salt: usize| -> Vec<String> { (0..names).map(|i| pool(i * 31 + salt)).collect() };
        let list = |salt: usize| serde_json::to_string(&list(salt)).unwrap_or_default();
        format!(
            r#"{{"reviewer":{{"block":{},"allow":{}}},"operator":{{"block":{},"allow":{}}},"complete":false}}"#,
            list(0),
            list(5),
            list(11),
            list(3)
        )
    }

    /// The host's slices and Envoy's chunks store what the answer held whole stores, byte for
    /// byte; the host is never asked for more than a slice.
    #[test]
    fn an_answer_read_in_slices_or_chunks_stores_the_same_parts() {
        let body = generated(20_000);
        let mut whole = Store::default();
        let names = store_answer(&mut whole, "\"g\"", body.as_bytes()).unwrap();
        let list: email_verdict_core::DecisionList = serde_json::from_str(&body).unwrap();
        assert_eq!(names, DecidedSet::new(&list).len());
        assert!(names > 7000, "{names}");

        let (mut sliced, mut asked) = (Store::default(), Vec::new());
        let reader = host_body(body.len(), |start, max| {
            asked.push((start, max));
            Ok(body.as_bytes()[start..start + max].to_vec())
        });
        assert_eq!(store_answer_read(&mut sliced, "\"g\"", reader, body.len()), Ok(names));
        assert_eq!(sliced, whole);
        assert!(
            asked.len() > 1 && asked.iter().all(|&(_, max)| max <= email_verdict_core::decided::JSON_BUFFER),
            "{asked:?}"
        );
        assert_eq!(asked.iter().map(|(_, max)| max).sum::<usize>(), body.len(), "each byte asked for once");

        let bytes = body.as_bytes();
        let chunks: Vec<&[u8]> = vec![&bytes[..1], &[], &bytes[1..70_000], &bytes[70_000..]];
        let mut chunked = Store::default();
        let reader = Chunks::new(&chunks);
        assert_eq!(reader.len(), body.len());
        assert_eq!(store_answer_read(&mut chunked, "\"g\"", reader, body.len()), Ok(names));
        assert_eq!(chunked, whole);
    }

    /// Cut, malformed, too large, unreadable, or under an `ETag` with a line break: nothing is
    /// stored, the last good list stays as it was (every key, every CAS token).
    #[test]
    fn a_bad_answer_stores_nothing_and_keeps_the_last_good_list() {
        let mut store = Store::default();
        let good = generated(500);
        store_answer(&mut store, "\"v1\"", good.as_bytes()).unwrap();
        let kept = store.clone();
        let mut refuse = |what: &str, store_answer: &dyn Fn(&mut Store) -> Result<usize, String>| {
            let outcome = store_answer(&mut store);
            assert!(outcome.is_err(), "{what}: {outcome:?}");
            assert!(store == kept, "{what} changed the store");
        };
        for cut in [0, 1, good.len() / 2, good.len() - 1] {
            refuse(&format!("cut at {cut}"), &|s| store_answer(s, "\"v2\"", &good.as_bytes()[..cut]));
        }
        let missing = good.replace(r#","complete":false"#, "");
        assert!(missing.len() < good.len());
        refuse("no complete flag", &|s| store_answer(s, "\"v2\"", missing.as_bytes()));
        refuse("html", &|s| store_answer(s, "\"v2\"", b"<html>"));
        refuse("a line break", &|s| store_answer(s, "\"v2\"\n", good.as_bytes()));
        let padded = format!("{good}{}", " ".repeat(MAX_BODY + 1 - good.len()));
        assert!(serde_json::from_str::<serde::de::IgnoredAny>(&padded).is_ok(), "valid JSON, only too long");
        refuse("too large", &|s| store_answer(s, "\"v2\"", padded.as_bytes()));
        refuse("a host error", &|s| {
            let failing = host_body(good.len(), |start, max| match start {
                0 => Ok(good.as_bytes()[..max.min(100)].to_vec()),
                _ => Err(HostError::new("proxy_get_buffer_bytes", 2)),
            });
            store_answer_read(s, "\"v2\"", failing, good.len())
        });
        let empty =
            |s: &mut Store| store_answer_read(s, "\"v2\"", host_body(good.len(), |_, _| Ok(vec![])), good.len());
        refuse("a host with nothing", &empty);
        assert_eq!(stored_etag(&store).as_deref(), Some("\"v1\""));
    }
}
