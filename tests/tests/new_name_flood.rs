//! Issue 31: a flood of never-seen names does not stall everyone else's lookups, on SQLite (the
//! default store) and on Redis. Random subdomains of one wildcard-MX zone (`flood.example`: what
//! any signup form lets an attacker send) each join the review queue; once the queue is full, a
//! new name must cost the store an indexed eviction, not a count and sort of the whole queue on
//! the store's one thread, where every lookup's admission waits (before the fix: cached lookups
//! fell to a few per cent of their rate alone with the queue at 20,000).
//!
//! The queue is filled through the store API first (not tens of thousands of DNS lookups), then
//! cached lookups are counted alone and during a paced flood of new names. Not a benchmark
//! (`make bench` has the figures, side by side): the bar is a tenth of what the fix gives, and
//! ten times what the scan allowed.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use email_verdict::state::{ReviewCause, ReviewReason, StateStore, open_with_capacity};
use email_verdict_tests::{Nsd, Redis, Request, Sidecar, api_target};

/// The queue's bound: big enough that a scan per new name shows.
const CAPACITY: usize = 50_000;
/// New names a second during the flood, and the connections sending them.
const FLOOD_RATE: u32 = 200;
const FLOOD_THREADS: u32 = 8;
/// How long each measurement runs.
const MEASURE: Duration = Duration::from_secs(4);
/// Cached lookups during the flood, at least this share of their rate alone.
const BAR: f64 = 0.25;

/// Puts `n` never-looked-up names in the queue of the store at `url`: Redis through the store
/// API; SQLite rows written in the file, as every schema since issue 24 holds them (opening it
/// through this build's store would migrate it past the schema of an older build under test).
fn fill(url: &str, n: usize) {
    let an_hour_ago = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs() as i64 - 3600;
    if let Some(path) = url.strip_prefix("sqlite:") {
        let mut db = rusqlite::Connection::open(path).unwrap();
        db.busy_timeout(Duration::from_secs(10)).unwrap();
        let tx = db.transaction().unwrap();
        {
            let mut insert = tx
                .prepare(
                    "INSERT INTO review_items (domain, reason, first_seen, last_seen, lookups, likelihood, priority, servers)
                     VALUES (?1, 'ambiguous', ?2, ?2, 1, 100, 100, 'mx.fill.example')",
                )
                .unwrap();
            for i in 0..n {
                insert.execute(rusqlite::params![format!("f{i}.fill.example"), an_hour_ago]).unwrap();
            }
        }
        tx.commit().unwrap();
        return;
    }
    let store = open_with_capacity(url, CAPACITY).expect("open the state store");
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let cause = ReviewCause {
        likelihood: 100,
        servers: vec!["mx.fill.example".to_owned()],
        ..ReviewCause::new(ReviewReason::Ambiguous)
    };
    runtime.block_on(async {
        for start in (0..n).step_by(500) {
            let mut calls = tokio::task::JoinSet::new();
            for i in start..(start + 500).min(n) {
                let (store, cause): (Arc<dyn StateStore>, _) = (store.clone(), cause.clone());
                calls.spawn(
                    async move { store.note_for_review(&format!("f{i}.fill.example"), &cause, an_hour_ago).await },
                );
            }
            while let Some(done) = calls.join_next().await {
                done.unwrap().expect("queue a name");
            }
        }
    });
}

/// Cached lookups of `gmail.com` answered per second by two clients over [`MEASURE`].
fn cached_rate(sc: &Sidecar, key: &str) -> f64 {
    let target = api_target("gmail.com", key);
    let started = Instant::now();
    let answered: usize = std::thread::scope(|s| {
        let clients: Vec<_> = (0..2)
            .map(|_| {
                s.spawn(|| {
                    let mut n = 0;
                    while started.elapsed() < MEASURE {
                        let r = Request::get(&target).send(sc.addr());
                        assert_eq!(r.status, 200, "{r}");
                        n += 1;
                    }
                    n
                })
            })
            .collect();
        clients.into_iter().map(|c| c.join().unwrap()).sum()
    });
    answered as f64 / started.elapsed().as_secs_f64()
}

/// Looks up never-seen names under `flood.example` at [`FLOOD_RATE`] until `stop`.
fn flood(sc: &Sidecar, key: &str, stop: &AtomicBool, sent: &AtomicUsize) {
    let interval = Duration::from_secs(1) * FLOOD_THREADS / FLOOD_RATE;
    std::thread::scope(|s| {
        for t in 0..FLOOD_THREADS {
            s.spawn(move || {
                let mut next = Instant::now();
                for i in 0.. {
                    if stop.load(Ordering::Relaxed) {
                        break;
                    }
                    let name = format!("n{t}x{i}-{}.flood.example", std::process::id());
                    let r = Request::get(&api_target(&name, key)).send(sc.addr());
                    assert_eq!(r.status, 200, "{name}: {r}");
                    sent.fetch_add(1, Ordering::Relaxed);
                    next += interval;
                    std::thread::sleep(next.saturating_duration_since(Instant::now()));
                }
            });
        }
    });
}

/// The queue full at [`CAPACITY`], then cached lookups alone and during the flood.
fn check(nsd: &Nsd, state: Option<&str>) {
    let capacity = CAPACITY.to_string();
    let mut builder =
        Sidecar::builder().dns(nsd.addr()).keys(&["gateway"]).args(&["--review-queue-capacity", &capacity]);
    if let Some(url) = state {
        builder = builder.state(url);
    }
    let sc = builder.start();
    let url = state.map_or_else(|| format!("sqlite:{}", sc.state_db().display()), str::to_owned);
    fill(&url, CAPACITY);
    let key = sc.key().to_owned();
    let first = sc.lookup_with_key("gmail.com", &key);
    assert_eq!(first.status, 200, "{first}");
    let alone = cached_rate(&sc, &key);
    let (stop, sent) = (AtomicBool::new(false), AtomicUsize::new(0));
    let during = std::thread::scope(|s| {
        s.spawn(|| flood(&sc, &key, &stop, &sent));
        std::thread::sleep(Duration::from_millis(500));
        let during = cached_rate(&sc, &key);
        stop.store(true, Ordering::Relaxed);
        during
    });
    let sent = sent.load(Ordering::Relaxed);
    eprintln!("{url}: cached lookups {alone:.0}/s alone, {during:.0}/s during a flood of {sent} new names");
    // The flood did go past the bound: the queue is full and the names it pushed out are counted.
    let mut reviews = serde_json::Value::Null;
    for _ in 0..100 {
        reviews = Request::get("/admin/v1/reviews?limit=1").send(sc.admin_addr()).json();
        if reviews["dropped"]["ambiguous"].as_u64().is_some_and(|n| n >= sent as u64 / 2) {
            break;
        }
        std::thread::sleep(Duration::from_millis(300));
    }
    assert!(reviews["dropped"]["ambiguous"].as_u64().is_some_and(|n| n >= sent as u64 / 2), "{reviews}");
    assert_eq!(reviews["waiting"].as_u64(), Some(CAPACITY as u64), "{reviews}");
    assert!(during >= BAR * alone, "{url}: cached lookups stalled: {during:.0}/s during the flood, {alone:.0}/s alone");
}

/// One measurement at a time: two side by side would measure each other.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

#[test]
fn a_flood_of_new_names_does_not_stall_cached_lookups_on_sqlite() {
    let _alone = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    check(&Nsd::start(), None);
}

#[test]
fn a_flood_of_new_names_does_not_stall_cached_lookups_on_redis() {
    let _alone = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let redis = Redis::start();
    check(&Nsd::start(), Some(&redis.url()));
}
