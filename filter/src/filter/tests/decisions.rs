//! The cache and the sidecar's decisions (`cache.rs`, `decided.rs`): a verdict cached before a
//! decision the gateway has synced is asked again, whatever its `ttl_seconds` left.

use super::*;

/// A sync that brought a new list: `mailinator.com` allowed by a reviewer (`etag` differs each time).
fn sync(h: &Harness, etag: &str) {
    let body = br#"{"reviewer":{"block":["decided.example"],"allow":["mailinator.com"]},"operator":{"block":[],"allow":[]},"complete":true}"#;
    let mut writer = MockHost::new(Rc::clone(&h.store));
    crate::decided::store_answer(&mut writer, etag, body).unwrap();
}

/// A signup of `email` on its own stream (`id`); its host, after the filter's headers and body.
fn signup(h: &Harness, id: u64, email: &str) -> (RequestFilter, MockHost) {
    let mut host = json_signup(h, email);
    host.stream = id;
    let mut f = h.filter();
    send(&mut f, &mut host);
    (f, host)
}

#[test]
fn a_synced_decision_reaches_a_cached_verdict() {
    let h = Harness::new(json!({ "cache": { "ttl_seconds": 300 } }));
    sync(&h, "\"v1\"");
    let (mut f, mut host) = signup(&h, 1, "a@mailinator.com");
    answer(&mut f, &mut host, lookup_response("mailinator.com", "disposable", &[]));
    assert_eq!(only_sent(&host).status, 403);
    let (_, host) = signup(&h, 2, "a@mailinator.com");
    assert_eq!((host.dispatched.len(), host.count(Counter::CacheHits)), (0, 1), "cached");
    // The reviewer's "safe" is synced: the next signup asks the sidecar, which says so.
    sync(&h, "\"v2\"");
    let (mut f, mut host) = signup(&h, 3, "a@mailinator.com");
    assert_eq!((host.dispatched.len(), host.count(Counter::CacheHits)), (1, 0), "asked again");
    answer(&mut f, &mut host, lookup_response("mailinator.com", "safe", &["allowlisted"]));
    assert!(host.sent.is_empty(), "{:?}", host.sent);
    assert_eq!(host.header("x-email-verdict").as_deref(), Some("safe"));
    // The new answer is cached under the new version.
    let (_, host) = signup(&h, 4, "b@mailinator.com");
    assert_eq!((host.dispatched.len(), host.header("x-email-verdict").as_deref()), (0, Some("safe")));
}

#[test]
fn an_answer_to_a_callout_made_before_a_sync_is_asked_again() {
    let h = Harness::new(json!({}));
    sync(&h, "\"v1\"");
    let (mut f, mut host) = signup(&h, 1, "a@mailinator.com");
    sync(&h, "\"v2\""); // lands while the callout is in flight
    answer(&mut f, &mut host, lookup_response("mailinator.com", "disposable", &[]));
    let (_, host) = signup(&h, 2, "a@mailinator.com");
    assert_eq!(host.dispatched.len(), 1, "the answer may predate the decision");
}

#[test]
fn a_miss_after_a_sync_does_not_wait_for_a_callout_made_before_it() {
    let h = Harness::new(json!({}));
    sync(&h, "\"v1\"");
    let (mut old, mut old_host) = signup(&h, 1, "a@fresh.example");
    let (mut same, mut same_host) = signup(&h, 2, "b@fresh.example");
    assert!(same_host.dispatched.is_empty(), "same decisions: waits for stream 1");
    sync(&h, "\"v2\"");
    let (mut new, mut new_host) = signup(&h, 3, "c@fresh.example");
    assert_eq!(new_host.dispatched.len(), 1, "newer decisions: its own callout");
    // The older callout answers its own stream; the waiter gets the newer answer.
    answer(&mut old, &mut old_host, lookup_response("fresh.example", "disposable", &[]));
    assert_eq!((only_sent(&old_host).status, old_host.woken.len()), (403, 0));
    answer(&mut new, &mut new_host, lookup_response("fresh.example", "safe", &[]));
    assert_eq!(new_host.woken, vec![2]);
    same.on_wake(&mut same_host);
    assert_eq!(same_host.header("x-email-verdict").as_deref(), Some("safe"));
}

#[test]
fn without_local_fallback_the_decisions_still_tie_the_cache_but_decide_nothing_locally() {
    let h = Harness::new(json!({ "local_fallback": false }));
    assert!(h.config.decisions.is_some(), "synced for the cache");
    sync(&h, "\"v1\"");
    let (mut f, mut host) = signup(&h, 1, "a@decided.example");
    answer(&mut f, &mut host, error_response(503, "upstream connect error"));
    assert!(host.sent.is_empty(), "failure_mode (allow) decides, not the reviewer's block");
    assert_eq!(host.count(Counter::LocalDecisions), 0);
    let (mut f, mut host) = signup(&h, 2, "a@mailinator.com");
    answer(&mut f, &mut host, lookup_response("mailinator.com", "disposable", &[]));
    sync(&h, "\"v2\"");
    let (_, host) = signup(&h, 3, "a@mailinator.com");
    assert_eq!(host.dispatched.len(), 1, "the cached verdict predates the synced decisions");
}

#[test]
fn without_the_sync_a_cached_verdict_lives_its_ttl() {
    let h = Harness::new(json!({ "decision_sync_seconds": 0 }));
    let (mut f, mut host) = signup(&h, 1, "a@mailinator.com");
    answer(&mut f, &mut host, lookup_response("mailinator.com", "disposable", &[]));
    sync(&h, "\"v2\""); // another configuration of the vm_id syncs
    let (_, host) = signup(&h, 2, "a@mailinator.com");
    assert_eq!((host.dispatched.len(), only_sent(&host).status), (0, 403));
}
