//! The warm-up against a scripted resolver and a real (SQLite) store.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::atomic::{AtomicUsize, Ordering};

use email_verdict_core::catalog::Tier;
use email_verdict_core::{ListKind, MxHost, MxInfo};

use super::*;
use crate::clock::SystemClock;
use crate::dns::{DnsFailure, MxAnswer};
use crate::state::{MailServer, SqliteStore};

/// Answers by name, counting calls; a name not in the script is a DNS failure.
struct Scripted {
    answers: HashMap<&'static str, MxInfo>,
    calls: AtomicUsize,
}

#[async_trait]
impl MxResolver for Scripted {
    async fn resolve(&self, domain: &Domain) -> Result<MxAnswer, DnsFailure> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        let mx = self.answers.get(domain.as_str()).cloned().ok_or_else(|| DnsFailure("not scripted".into()))?;
        Ok(MxAnswer { mx, ttl: Duration::from_secs(60) })
    }
}

fn mx(host: &str, ip: &str) -> MxInfo {
    MxInfo::Mx { hosts: vec![MxHost::new(host, vec![ip.parse::<IpAddr>().unwrap()])] }
}

fn catalog() -> Catalog {
    let mut c = Catalog::default();
    let strong =
        "a-burner.example\nb-burner.example\nc-shared.example\nd-nomx.example\ne-broken.example\nfree.example\n";
    c.load_disposable("strong", Tier::Strong, strong).unwrap();
    c.load_disposable("weak", Tier::Weak, "a-burner.example\nweak-only.example\n").unwrap();
    c.load(ListKind::Free, "free.example\n");
    c.load(ListKind::Allow, "allowed.example\n");
    c.load(ListKind::SharedMx, "shared-mx.example\tShared\n");
    c
}

fn resolver() -> Arc<Scripted> {
    let answers = HashMap::from([
        ("a-burner.example", mx("mx.burner.example", "192.0.2.10")),
        ("b-burner.example", mx("mx.b-burner.example", "192.0.2.10")),
        ("c-shared.example", mx("x.shared-mx.example", "192.0.2.40")),
        ("d-nomx.example", MxInfo::NoMx),
        ("weak-only.example", mx("mx.weak.example", "192.0.2.50")),
    ]);
    Arc::new(Scripted { answers, calls: AtomicUsize::new(0) })
}

fn store(name: &str) -> Arc<dyn StateStore> {
    // In the build tree, not /tmp: the store stays open for the test's life (nothing to clean).
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("../target/test-state/warmup-{name}"));
    let _ = std::fs::remove_dir_all(&dir); // a previous run's database and its WAL
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("state.db");
    Arc::new(SqliteStore::open(&path).unwrap())
}

fn warmup(store: &Arc<dyn StateStore>, resolver: &Arc<Scripted>) -> Warmup {
    let rate = NonZeroU32::new(1000).unwrap();
    Warmup::new(
        Arc::new(LiveCatalog::fixed(catalog())),
        resolver.clone(),
        store.clone(),
        Arc::new(SystemClock),
        Arc::new(Metrics::new()),
        rate,
    )
}

/// How many disposable domains the index knows on each of `servers` (for a never-seen domain).
async fn disposable_on(store: &Arc<dyn StateStore>, servers: &[MailServer]) -> Vec<u64> {
    let evidence = store.infra_evidence("judged.example", servers, 0).await.unwrap();
    evidence.iter().map(|e| e.disposable).collect()
}

/// One pass, as on a fresh start.
async fn run(w: &Warmup) {
    let (_keep, mut stop) = tokio::sync::watch::channel(false);
    w.pass(&mut Vec::new(), &mut stop).await;
}

#[test]
fn candidates_are_the_strong_listed_names_that_can_be_disposable() {
    let c = catalog();
    let names = candidates(&c);
    assert_eq!(
        names,
        ["a-burner.example", "b-burner.example", "c-shared.example", "d-nomx.example", "e-broken.example"]
    );
    assert_eq!(remaining(&names, ""), 5);
    assert_eq!(remaining(&names, "b-burner.example"), 3);
    assert_eq!(remaining(&names, "zzz.example"), 0);
}

#[tokio::test]
async fn learns_own_mail_servers_of_strong_listed_names_and_resumes_from_the_store() {
    let (store, dns) = (store("learn"), resolver());
    run(&warmup(&store, &dns)).await;
    assert_eq!(dns.calls.load(Ordering::SeqCst), 5, "weak-only and free names are not resolved");
    let servers = [
        MailServer::host("mx.burner.example"),
        MailServer::host("x.shared-mx.example"),
        MailServer::host("mx.weak.example"),
        MailServer::address("192.0.2.10"),
    ];
    let disposable = disposable_on(&store, &servers).await;
    assert_eq!(disposable, [1, 0, 0, 2], "own servers learned; shared and weak-only ones never");
    let p = store.warmup_progress().await.unwrap();
    assert_eq!((p.cursor.as_str(), p.resolved, p.learned, p.failed), ("e-broken.example", 4, 2, 1));
    assert!(p.updated_at > 0);
    // A restart (another Warmup on the same store) does not start over.
    let again = resolver();
    run(&warmup(&store, &again)).await;
    assert_eq!(again.calls.load(Ordering::SeqCst), 0);
}

/// A reviewer's `safe` on a strong-listed domain (or a parent) keeps its servers out.
#[tokio::test]
async fn a_domain_a_reviewer_calls_safe_is_not_learned() {
    let (store, dns) = (store("allowed"), resolver());
    let record = crate::state::DecisionRecord {
        domain: "a-burner.example".into(),
        decision: Some(Decision::Allow),
        reviewer: "ana".into(),
        note: String::new(),
        at: 1,
    };
    store.decide(record).await.unwrap();
    run(&warmup(&store, &dns)).await;
    assert_eq!(disposable_on(&store, &[MailServer::host("mx.burner.example")]).await, [0]);
    assert_eq!(store.warmup_progress().await.unwrap().learned, 1, "b-burner.example only");
}

#[tokio::test]
async fn goes_on_after_the_stored_cursor() {
    let (store, dns) = (store("resume"), resolver());
    let half = WarmupProgress { cursor: "b-burner.example".into(), resolved: 2, learned: 2, ..Default::default() };
    store.save_warmup_progress(&half).await.unwrap();
    run(&warmup(&store, &dns)).await;
    assert_eq!(dns.calls.load(Ordering::SeqCst), 3);
    let p = store.warmup_progress().await.unwrap();
    assert_eq!((p.resolved, p.learned, p.failed), (4, 2, 1));
}

/// A reload adds names on both sides of the cursor: the next pass resolves both, and the
/// cursor stays where it was for the one before it.
#[tokio::test]
async fn a_reload_adds_names_before_and_after_the_cursor() {
    let (store, dns) = (store("reload"), resolver());
    let w = warmup(&store, &dns);
    let (_keep, mut stop) = tokio::sync::watch::channel(false);
    let mut known = Vec::new();
    assert!(!w.pass(&mut known, &mut stop).await);
    assert_eq!(dns.calls.load(Ordering::SeqCst), 5);
    let mut c = catalog();
    c.load_disposable("operator", Tier::Strong, "aa-new.example\nzz-new.example\n").unwrap();
    w.catalog.swap(c);
    assert!(!w.pass(&mut known, &mut stop).await);
    assert_eq!(dns.calls.load(Ordering::SeqCst), 7, "the two new names, nothing again");
    assert_eq!(store.warmup_progress().await.unwrap().cursor, "zz-new.example");
    assert!(!w.pass(&mut known, &mut stop).await);
    assert_eq!(dns.calls.load(Ordering::SeqCst), 7, "nothing new: nothing resolved");
}

#[test]
fn names_added_up_to_the_cursor() {
    let names = |s: &[&str]| s.iter().map(|n| Box::<str>::from(*n)).collect::<Vec<_>>();
    let (old, new) = (names(&["b", "d", "f"]), names(&["a", "b", "c", "d", "e", "g"]));
    assert_eq!(added_before(&new, &old, "d"), names(&["c", "a"]));
    assert_eq!(added_before(&new, &old, ""), names(&[]));
}

#[tokio::test]
async fn stops_when_told() {
    let (store, dns) = (store("stop"), resolver());
    let w = Warmup { rate: NonZeroU32::new(1).unwrap(), ..warmup(&store, &dns) };
    let (tx, stop) = tokio::sync::watch::channel(false);
    let running = tokio::spawn(async move { w.run(stop).await });
    tx.send(true).unwrap();
    tokio::time::timeout(Duration::from_secs(10), running).await.unwrap().unwrap();
    assert!(dns.calls.load(Ordering::SeqCst) <= 1, "at most the first name (the first tick is at once)");
}

/// A week after a pass ended the next one starts over, so facts stay fresh and follow servers
/// that moved; before that, a finished warm-up resolves nothing.
#[tokio::test]
async fn a_week_after_a_pass_the_next_starts_over() {
    let (store, dns) = (store("repass"), resolver());
    let done = WarmupProgress { cursor: "e-broken.example".into(), resolved: 4, learned: 2, failed: 1, updated_at: 1 };
    store.save_warmup_progress(&done).await.unwrap();
    run(&warmup(&store, &dns)).await;
    assert_eq!(dns.calls.load(Ordering::SeqCst), 5, "over again from the first name");
    assert_eq!(disposable_on(&store, &[MailServer::address("192.0.2.10")]).await, [2]);
    run(&warmup(&store, &dns)).await;
    assert_eq!(dns.calls.load(Ordering::SeqCst), 5, "just done: nothing resolved");
}
