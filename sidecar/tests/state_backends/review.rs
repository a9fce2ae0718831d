//! The review queue, decisions and their cover, the queue's bound, the warm-up's progress.

use super::*;
use email_verdict::state::DECISION_CHECK_MS;

/// The decision in force for `domain` (through its covering names), as (decision, made on), as
/// `store` applies it once a decision made elsewhere has reached it (a replica reads the
/// store's decision version again at most every `DECISION_CHECK_MS`).
async fn applied(store: &dyn StateStore, domain: &str) -> Option<(Decision, String)> {
    tokio::time::sleep(std::time::Duration::from_millis(DECISION_CHECK_MS + 2)).await;
    store.decision(&covering_names(domain)).await.unwrap().map(|AppliedDecision { decision, on }| (decision, on))
}

pub(crate) fn decision_on(domain: &str, decision: Option<Decision>, at: i64) -> DecisionRecord {
    DecisionRecord { domain: domain.into(), decision, reviewer: "ana".into(), note: "checked".into(), at }
}

async fn review_queue_and_decisions(open: impl Fn() -> Arc<dyn StateStore>) {
    let (store, other) = (open(), open());
    let weak = ReviewCause {
        sources: vec!["mailchecker".into()],
        listed_as: "new.example".into(),
        ..ReviewCause::new(ReviewReason::WeakListing)
    };
    store.note_for_review("new.example", &ReviewCause::new(ReviewReason::Ambiguous), 100).await.unwrap();
    store.note_for_review("old.example", &ReviewCause::new(ReviewReason::NoMx), 50).await.unwrap();
    other.note_for_review("new.example", &weak, 130).await.unwrap();
    let queue = store.review_queue().await.unwrap();
    let summary: Vec<_> =
        queue.iter().map(|i| (i.domain.as_str(), i.reason, i.first_seen, i.last_seen, i.lookups)).collect();
    assert_eq!(
        summary,
        [("old.example", ReviewReason::NoMx, 50, 50, 1), ("new.example", ReviewReason::WeakListing, 100, 130, 2)]
    );
    assert_eq!((queue[0].sources.len(), queue[0].listed_as.as_str()), (0, ""));
    assert_eq!(
        (queue[1].sources.clone(), queue[1].listed_as.as_str()),
        (vec!["mailchecker".to_owned()], "new.example")
    );
    let record = |decision, at| decision_on("new.example", decision, at);
    store.decide(record(Some(Decision::Block), 200)).await.unwrap();
    assert_eq!(applied(&*other, "new.example").await, Some((Decision::Block, "new.example".into())));
    assert_eq!(other.review_queue().await.unwrap().len(), 1, "a decided domain leaves the queue");
    store.decide(record(Some(Decision::Allow), 210)).await.unwrap();
    assert_eq!(applied(&*other, "new.example").await, Some((Decision::Allow, "new.example".into())));
    store.decide(record(None, 220)).await.unwrap();
    assert_eq!(applied(&*other, "new.example").await, None);
    assert_eq!(other.review_queue().await.unwrap().len(), 2, "withdrawn: back in the queue");
    let history: Vec<_> =
        other.decision_history("new.example").await.unwrap().iter().map(|r| (r.decision, r.at)).collect();
    assert_eq!(history, [(Some(Decision::Block), 200), (Some(Decision::Allow), 210), (None, 220)]);
    assert_eq!(applied(&*store, "never.example").await, None);
    assert_eq!(store.decision(&[]).await.unwrap(), None);
}
with_all_backends!(review, review_queue_and_decisions, valkey_cluster);

/// Issue 13 item 11: a decision on a name covers its subdomains (down to the registrable
/// domain's walk), unless a more specific decision exists; a withdrawn one is no decision.
async fn decisions_cover_subdomains(open: impl Fn() -> Arc<dyn StateStore>) {
    let (store, other) = (open(), open());
    store.decide(decision_on("rtdisp.example", Some(Decision::Block), 10)).await.unwrap();
    let block_on_parent = Some((Decision::Block, "rtdisp.example".to_owned()));
    assert_eq!(applied(&*other, "rtdisp.example").await, block_on_parent);
    assert_eq!(applied(&*other, "sub.rtdisp.example").await, block_on_parent);
    assert_eq!(applied(&*other, "a.b.rtdisp.example").await, block_on_parent);
    assert_eq!(applied(&*other, "notrtdisp.example").await, None);
    store.decide(decision_on("ok.rtdisp.example", Some(Decision::Allow), 20)).await.unwrap();
    let allow_on_sub = Some((Decision::Allow, "ok.rtdisp.example".to_owned()));
    assert_eq!(applied(&*other, "ok.rtdisp.example").await, allow_on_sub, "the more specific wins");
    assert_eq!(applied(&*other, "x.ok.rtdisp.example").await, allow_on_sub);
    store.decide(decision_on("ok.rtdisp.example", None, 30)).await.unwrap();
    assert_eq!(applied(&*other, "x.ok.rtdisp.example").await, block_on_parent, "withdrawn: the parent's applies");
    // A decision on a public suffix covers nothing below it (the walk stops at the registrable domain).
    store.decide(decision_on("pp.ua", Some(Decision::Block), 40)).await.unwrap();
    assert_eq!(applied(&*other, "shop.pp.ua").await, None);
    // A queued subdomain of a decided parent is not waiting for review.
    store.note_for_review("sub.rtdisp.example", &ReviewCause::new(ReviewReason::Ambiguous), 50).await.unwrap();
    store.note_for_review("else.example", &ReviewCause::new(ReviewReason::Ambiguous), 60).await.unwrap();
    let queued: Vec<_> = other.review_queue().await.unwrap().into_iter().map(|i| i.domain).collect();
    assert_eq!(queued, ["else.example"]);
}
with_all_backends!(review_subdomains, decisions_cover_subdomains);

/// Issue 24: the queue keeps each entry's likelihood and own mail servers, and its bound drops
/// decided entries first, then the lowest priority (likelihood × use), counting by reason what
/// it dropped undecided. Bounded at 3 here.
async fn queue_is_ranked_and_bounded(open: impl Fn() -> Arc<dyn StateStore>) {
    let (store, other) = (open(), open());
    let cause = |reason, likelihood, servers: &[&str]| ReviewCause {
        likelihood,
        servers: servers.iter().map(|s| s.to_string()).collect(),
        ..ReviewCause::new(reason)
    };
    let note = |store: &Arc<dyn StateStore>, domain: &'static str, cause: ReviewCause, at: i64| {
        let store = store.clone();
        async move { store.note_for_review(domain, &cause, at).await.unwrap() }
    };
    note(&store, "a.example", cause(ReviewReason::Ambiguous, 100, &["mx.a.example"]), 10).await;
    note(&store, "b.example", cause(ReviewReason::WeakListing, 500, &["mx.b.example", "192.0.2.1"]), 20).await;
    for at in 30..33 {
        note(&other, "c.example", cause(ReviewReason::Ambiguous, 100, &[]), at).await;
    }
    // Over the bound: the lowest priority goes, the new entry itself here, then a.example.
    note(&other, "d.example", cause(ReviewReason::NoMx, 20, &[]), 40).await;
    note(&store, "e.example", cause(ReviewReason::Ambiguous, 250, &["mx.b.example"]), 50).await;
    let queue = other.review_queue().await.unwrap();
    let summary: Vec<_> = queue.iter().map(|i| (i.domain.as_str(), i.lookups, i.likelihood, i.priority())).collect();
    assert_eq!(summary, [("b.example", 1, 500, 500), ("c.example", 3, 100, 200), ("e.example", 1, 250, 250)]);
    assert_eq!(queue[0].servers, ["mx.b.example", "192.0.2.1"]);
    assert_eq!(store.review_queue_len().await.unwrap(), 3, "what /metrics reads: the bound held");
    assert_eq!(queue[0].server(), "mx.b.example");
    let dropped = store.review_dropped().await.unwrap();
    assert_eq!(dropped, [(ReviewReason::Ambiguous, 1), (ReviewReason::NoMx, 1)]);
    // A decided entry leaves the queue and is the first to go when the bound needs room; it is
    // not counted as dropped (nothing was lost).
    store.decide(decision_on("b.example", Some(Decision::Block), 55)).await.unwrap();
    note(&store, "f.example", cause(ReviewReason::Ambiguous, 100, &[]), 60).await;
    let queued: Vec<_> = other.review_queue().await.unwrap().into_iter().map(|i| i.domain).collect();
    assert_eq!(queued, ["c.example", "e.example", "f.example"]);
    assert_eq!(other.review_queue_len().await.unwrap(), 3, "the decided entry went first");
    assert_eq!(store.review_dropped().await.unwrap(), dropped);
    store.decide(decision_on("b.example", None, 70)).await.unwrap();
    assert_eq!(other.review_queue().await.unwrap().len(), 3, "b.example was dropped: nothing comes back");
    // Settled otherwise (a mark on their mail server): out of the queue, not counted as dropped.
    store.dismiss(&["c.example".to_owned(), "gone.example".to_owned()]).await.unwrap();
    let queued: Vec<_> = other.review_queue().await.unwrap().into_iter().map(|i| i.domain).collect();
    assert_eq!(queued, ["e.example", "f.example"]);
    assert_eq!(store.review_dropped().await.unwrap(), dropped);
    note(&other, "c.example", cause(ReviewReason::Ambiguous, 100, &[]), 80).await;
    let c = other.review_queue().await.unwrap().into_iter().find(|i| i.domain == "c.example").map(|i| i.lookups);
    assert_eq!(c, Some(1), "a later lookup queues it afresh");
}
with_all_backends_bounded!(review_bound, queue_is_ranked_and_bounded, 3);

/// The infrastructure warm-up's progress survives the handle (a restart) and is shared.
async fn warmup_progress_round_trip(open: impl Fn() -> Arc<dyn StateStore>) {
    let (store, other) = (open(), open());
    assert_eq!(store.warmup_progress().await.unwrap(), WarmupProgress::default());
    let p =
        WarmupProgress { cursor: "b.example".into(), resolved: 7, learned: 3, failed: 1, updated_at: 1_800_000_000 };
    store.save_warmup_progress(&p).await.unwrap();
    assert_eq!(other.warmup_progress().await.unwrap(), p);
    let later = WarmupProgress { cursor: "c.example".into(), resolved: 8, ..p };
    other.save_warmup_progress(&later).await.unwrap();
    assert_eq!(open().warmup_progress().await.unwrap(), later);
}
with_all_backends!(warmup, warmup_progress_round_trip);
