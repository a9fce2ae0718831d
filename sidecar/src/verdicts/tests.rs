//! The verdict with its catalog, a scripted resolver and a real (SQLite) store: the parts of
//! issue 14 that need DNS (a subdomain's mail against its listed parent's) and the review cause.

use std::collections::HashMap;
use std::net::IpAddr;
use std::num::NonZeroUsize;
use std::time::Duration;

use async_trait::async_trait;
use email_verdict_core::catalog::Tier;
use email_verdict_core::{ListKind, MxHost};

use super::*;
use crate::clock::SystemClock;
use crate::dns::{CacheConfig, MxAnswer, MxResolver};
use crate::state::SqliteStore;

/// Answers by name (no hosts: NXDOMAIN); a name not in the script is a DNS failure.
struct Scripted(HashMap<&'static str, Vec<(&'static str, &'static str)>>);

#[async_trait]
impl MxResolver for Scripted {
    async fn resolve(&self, domain: &Domain) -> Result<MxAnswer, DnsFailure> {
        if domain.as_str().starts_with("slow.") {
            // An owner who makes the answer slow on purpose: far longer than DECIDED_DNS_WAIT.
            tokio::time::sleep(Duration::from_secs(2)).await;
            let hosts = vec![MxHost::new("mx.slow.example", vec!["192.0.2.70".parse().unwrap()])];
            return Ok(MxAnswer { mx: MxInfo::Mx { hosts }, ttl: Duration::from_secs(60) });
        }
        let hosts = self.0.get(domain.as_str()).ok_or_else(|| DnsFailure("not scripted".into()))?;
        let hosts: Vec<_> = hosts.iter().map(|(h, ip)| MxHost::new(*h, vec![ip.parse::<IpAddr>().unwrap()])).collect();
        let mx = if hosts.is_empty() { MxInfo::NoDomain } else { MxInfo::Mx { hosts } };
        Ok(MxAnswer { mx, ttl: Duration::from_secs(60) })
    }
}

fn verdicts(name: &str) -> Verdicts {
    let mut catalog = Catalog::default();
    catalog.load_disposable("strong-list", Tier::Strong, "burner.example\nunresolvable.example\n").unwrap();
    catalog.load_disposable("weak-list", Tier::Weak, "weakonly.example\nburner.example\n").unwrap();
    catalog.load(ListKind::SharedMx, "shared-mx.example\tShared\n");
    catalog.load(ListKind::Popular, "gmail.com\n");
    catalog.load_disposable("weak-list", Tier::Weak, "gmaul.com\n").unwrap();
    catalog.load(ListKind::Free, "gnail.com\n");
    let script = HashMap::from([
        ("burner.example", vec![("mx.burner.example", "192.0.2.10")]),
        ("weakonly.example", vec![("mx.weakonly.example", "192.0.2.20")]),
        ("same.burner.example", vec![("mx.burner.example", "192.0.2.10")]),
        ("sameip.burner.example", vec![("in.sameip.burner.example", "192.0.2.10")]),
        ("own.burner.example", vec![("mx.own.burner.example", "192.0.2.30")]),
        ("shared.burner.example", vec![("a.shared-mx.example", "192.0.2.40")]),
        ("sub.unresolvable.example", vec![("mx.sub.unresolvable.example", "192.0.2.50")]),
        ("gmial.com", vec![]),
        ("gmaul.com", vec![]),
        ("gnail.com", vec![]),
        ("gmaik.com", vec![("mx.gmaik.com", "192.0.2.60")]),
    ]);
    let config = CacheConfig {
        capacity: NonZeroUsize::new(64).unwrap(),
        min_ttl: Duration::from_secs(30),
        max_ttl: Duration::from_secs(600),
        stale_ttl: Duration::from_secs(3600),
        lookup_timeout: Duration::from_secs(5),
    };
    let metrics = Arc::new(Metrics::new());
    let mx = MxCache::new(Arc::new(Scripted(script)), config, metrics.clone());
    // In the build tree, not /tmp: the store stays open for the test's life (nothing to clean).
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("../target/test-state/verdicts-{name}"));
    let _ = std::fs::remove_dir_all(&dir); // a previous run's database and its WAL
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("state.db");
    let store = Arc::new(SqliteStore::open(&path).unwrap());
    Verdicts::new(Arc::new(LiveCatalog::fixed(catalog)), mx, store, Arc::new(SystemClock), 2, metrics)
}

fn input(s: &str) -> LookupInput {
    LookupInput::parse(s).unwrap()
}

/// (verdict is disposable, review_required, the review cause's reason, sources, entry).
type Outcome = (bool, bool, Option<(&'static str, Vec<String>, String)>);

async fn check(v: &Verdicts, name: &str, expected: Outcome) {
    let domain = input(name);
    let lookup = v.mx.lookup(domain.domain()).await.unwrap();
    let catalog = v.catalog();
    let mut signals = catalog.signals(domain.domain(), &lookup.mx, None);
    if signals.listing.is_some_and(|l| l.via_parent) {
        let infra = OwnInfra::of(&catalog, &lookup.mx);
        signals.parent_mail = v
            .mail_goes_to_parent(
                &catalog,
                domain.domain(),
                &infra,
                tokio::time::Instant::now() + Duration::from_secs(5),
            )
            .await
            .unwrap();
    }
    let result = v.verdict(&domain, None).await.unwrap().result;
    let infra = OwnInfra::of(&catalog, &lookup.mx);
    let cause = review_cause(&catalog, domain.domain(), &signals, &result, &infra, 0, None)
        .map(|c| (c.reason.as_str(), c.sources, c.listed_as));
    assert_eq!((result.disposable, result.review_required, cause), expected, "{name}");
}

fn cause(reason: &'static str, sources: &[&str], entry: &str) -> Option<(&'static str, Vec<String>, String)> {
    Some((reason, sources.iter().map(|s| s.to_string()).collect(), entry.to_owned()))
}

#[tokio::test]
async fn tiers_and_parents_decide_and_explain() {
    let v = verdicts("tiers");
    let both = ["strong-list", "weak-list"];
    check(&v, "burner.example", (true, false, None)).await;
    check(&v, "weakonly.example", (false, true, cause("weak_listing", &["weak-list"], "weakonly.example"))).await;
    check(&v, "same.burner.example", (true, false, None)).await;
    check(&v, "sameip.burner.example", (true, false, None)).await;
    check(&v, "own.burner.example", (false, true, cause("parent_listing", &both, "burner.example"))).await;
    // Two tenants of one shared provider share nothing else (rule 3).
    check(&v, "shared.burner.example", (false, true, cause("parent_listing", &both, "burner.example"))).await;
}

/// `did_you_mean` comes with the verdict: for a domain without mail that nothing vouches for or
/// decided (a disposable listing does not count).
#[tokio::test]
async fn a_probable_typo_comes_with_its_suggestion() {
    let v = verdicts("suggest");
    let suggestion = |name: &'static str| {
        let v = &v;
        async move { v.verdict(&input(name), None).await.unwrap().suggestion.map(|d| d.to_string()) }
    };
    assert_eq!(suggestion("ann@gmial.com").await.as_deref(), Some("gmail.com"));
    assert_eq!(suggestion("gmaik.com").await, None, "it has MX");
    assert_eq!(suggestion("gmaul.com").await.as_deref(), Some("gmail.com"), "disposable-listed, no mail");
    assert_eq!(suggestion("gnail.com").await, None, "a free-webmail list vouches for it");
    let blocked = v.verdict(&input("gmial.com"), Some(Decision::Block)).await.unwrap();
    assert_eq!((blocked.result.disposable, blocked.suggestion), (true, None), "a reviewer decided");
}

/// What cannot be read is not "absent": the listed parent's MX failing fails the lookup
/// rather than deciding the subdomain does not share it.
#[tokio::test]
async fn a_parent_that_cannot_be_resolved_is_a_dns_failure() {
    let v = verdicts("parent-failure");
    let result = v.verdict(&input("sub.unresolvable.example"), None).await;
    assert!(matches!(result, Err(LookupError::Dns(_))), "{result:?}");
}

/// Issue 23: a decided verdict never waits for, nor fails with, DNS that the domain's owner
/// controls (slow answers, failures): it comes without MX data, and only then.
#[tokio::test]
async fn a_decision_stands_when_dns_is_slow_or_failing() {
    let v = verdicts("decided-without-dns");
    for name in ["slow.example", "not-scripted.example", "x.slow.example"] {
        for (decision, disposable) in [(Decision::Block, true), (Decision::Allow, false)] {
            let r = v.verdict(&input(name), Some(decision)).await.unwrap().result;
            assert_eq!((r.disposable, r.blocked, r.allowlisted), (disposable, disposable, !disposable), "{name}");
            assert_eq!((r.has_mx, r.mx_records.len(), r.review_required, r.cached), (false, 0, false, false), "{name}");
        }
        // Undecided: DNS is needed, and its failure is a failure.
        if name.starts_with("not-scripted") {
            assert!(matches!(v.verdict(&input(name), None).await, Err(LookupError::Dns(_))));
        }
    }
    // A decision on a name whose DNS answers in time keeps its MX data.
    let r = v.verdict(&input("burner.example"), Some(Decision::Block)).await.unwrap().result;
    assert_eq!((r.disposable, r.mx_records.clone()), (true, vec!["mx.burner.example".to_owned()]));
    // A block never applies to free webmail (rule 2), so DNS is awaited there as before.
    let r = v.verdict(&input("gnail.com"), Some(Decision::Block)).await.unwrap().result;
    assert!(!r.disposable && !r.domain_exists, "NXDOMAIN came from DNS");
}

/// Issue 32, item 4: a judgement remembers whether it queued the domain with a mail server of
/// its own (that server, for the domain's signups: their wave); a domain not judged here is not
/// known.
#[tokio::test]
async fn a_queued_domain_is_remembered_on_its_mail_server() {
    let v = verdicts("queued-on");
    let queued_on = |name: &str| v.queued_on(input(name).domain());
    assert_eq!(queued_on("weakonly.example"), None, "not judged here: not known");
    v.verdict(&input("weakonly.example"), None).await.unwrap();
    assert_eq!(queued_on("weakonly.example"), Some(Some("mx.weakonly.example".to_owned())));
    v.verdict(&input("burner.example"), None).await.unwrap();
    assert_eq!(queued_on("burner.example"), Some(None), "strong-listed: not queued");
    v.verdict(&input("gmial.com"), None).await.unwrap();
    assert_eq!(queued_on("gmial.com"), Some(None), "queued (no MX), but no mail server of its own");
    v.verdict(&input("weakonly.example"), Some(Decision::Allow)).await.unwrap();
    assert_eq!(queued_on("weakonly.example"), Some(None), "decided since: no longer queued");
    v.remember_queued_on(input("elsewhere.example").domain(), Some("mx.elsewhere.example".to_owned()));
    assert_eq!(queued_on("elsewhere.example"), Some(Some("mx.elsewhere.example".to_owned())), "the store's answer");
}

/// A verdict kept ([`Memo`]) answers only while what it was reached from is the very same: a
/// reviewer's decision, a list reload and a re-check each make the next lookup judge afresh;
/// one that read the infrastructure index is never kept.
#[tokio::test]
async fn a_kept_verdict_is_judged_again_when_what_it_was_reached_from_changes() {
    let v = verdicts("memo");
    let judged = |name: &'static str, decision: Option<Decision>| {
        let v = &v;
        async move { v.verdict(&input(name), decision).await.unwrap().result }
    };
    let first = judged("burner.example", None).await;
    assert!(first.disposable && !first.cached, "resolved for this lookup");
    let cached = judged("burner.example", None).await;
    assert!(cached.cached, "from the MX cache, not the first lookup's verdict");
    assert_eq!(judged("burner.example", None).await, cached);
    assert_eq!(v.memo.len(), 1);
    // A reviewer's decision.
    let allowed = judged("burner.example", Some(Decision::Allow)).await;
    assert!(allowed.safe && allowed.allowlisted, "{allowed:?}");
    assert_eq!(judged("burner.example", None).await, cached, "the decision withdrawn");
    // A list reload that drops it: an unknown domain with mail, for review.
    let mut reloaded = Catalog::default();
    reloaded.load(ListKind::SharedMx, "shared-mx.example\tShared\n");
    v.catalog.swap(reloaded);
    let unlisted = judged("burner.example", None).await;
    assert!(unlisted.safe && unlisted.review_required, "{unlisted:?}");
    assert_eq!(v.memo.len(), 1);
    assert_eq!(
        v.memo.catalog_alive("burner.example"),
        Some(false),
        "read the infrastructure index: not kept; nor does the old verdict keep the old lists alive"
    );
    // A re-check resolves again: not the cached answer's verdict.
    v.invalidate(&Domain::parse("gmial.com").unwrap());
    assert!(!judged("gmial.com", None).await.cached);
    assert!(judged("gmial.com", None).await.cached);
    v.invalidate(&Domain::parse("gmial.com").unwrap());
    assert!(!judged("gmial.com", None).await.cached, "the re-check, not the kept verdict");
}
