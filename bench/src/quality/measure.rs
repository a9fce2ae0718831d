//! Looking every labelled name up on one sidecar, concurrently, keys in rotation.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use email_verdict_tests::{Request, api_target};

/// What the API answered for one name.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Outcome {
    /// The HTTP status; 0 when no answer came.
    pub status: u16,
    pub disposable: bool,
    pub mx_ip_match: bool,
    pub review_required: bool,
}

impl Outcome {
    pub fn ok(&self) -> bool {
        self.status == 200
    }
}

/// How many times a 429 (a key's one-second burst) is retried, a second apart.
const RETRIES_ON_429: usize = 10;

/// Looks `names` up on `addr` with `threads` client threads, the i-th name with key
/// `i % keys.len()`; the outcomes in the order of `names`.
pub fn lookup_all(addr: SocketAddr, keys: &[String], names: &[&str], threads: usize) -> Vec<Outcome> {
    fetch_all(addr, keys, names, threads, &outcome)
}

/// Like [`lookup_all`], each answer (status and body; status 0 when none came) read by `read`.
pub fn fetch_all<T: Clone + Default + Send>(
    addr: SocketAddr,
    keys: &[String],
    names: &[&str],
    threads: usize,
    read: &(dyn Fn(u16, &[u8]) -> T + Sync),
) -> Vec<T> {
    let next = AtomicUsize::new(0);
    let mut out = vec![T::default(); names.len()];
    let results: Vec<Vec<(usize, T)>> = std::thread::scope(|s| {
        let workers: Vec<_> = (0..threads.max(1))
            .map(|_| {
                s.spawn(|| {
                    let mut mine = Vec::new();
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        let Some(name) = names.get(i) else { break mine };
                        mine.push((i, lookup(addr, &keys[i % keys.len()], name, read)));
                    }
                })
            })
            .collect();
        workers.into_iter().map(|w| w.join().unwrap_or_default()).collect()
    });
    for (i, o) in results.into_iter().flatten() {
        out[i] = o;
    }
    out
}

fn lookup<T: Default>(addr: SocketAddr, key: &str, name: &str, read: &(dyn Fn(u16, &[u8]) -> T + Sync)) -> T {
    let req = Request::get(&api_target(name, key)).timeout(Duration::from_secs(30));
    for _ in 0..=RETRIES_ON_429 {
        match req.try_send(addr) {
            Ok(r) if r.status == 429 => std::thread::sleep(Duration::from_millis(1100)),
            Ok(r) => return read(r.status, &r.body),
            Err(_) => return T::default(),
        }
    }
    read(429, b"")
}

fn outcome(status: u16, body: &[u8]) -> Outcome {
    let json: serde_json::Value = serde_json::from_slice(body).unwrap_or_default();
    let flag = |f: &str| json["result"][f].as_bool().unwrap_or(false);
    Outcome {
        status,
        disposable: flag("disposable"),
        mx_ip_match: flag("mx_ip_match"),
        review_required: flag("review_required"),
    }
}
