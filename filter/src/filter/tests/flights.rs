//! One callout per domain at a time on a worker (`flight.rs`): waiters share the leader's
//! answer, are woken, follow `failure_mode` on a failure, and take over from a leader that ends.

use super::*;

/// A stream of one worker: its id, so it can wait on another stream's callout.
fn stream(h: &Harness, id: u64, email: &str) -> (RequestFilter, MockHost) {
    let mut host = json_signup(h, email);
    host.stream = id;
    (h.filter(), host)
}

#[test]
fn concurrent_misses_for_one_domain_make_one_callout() {
    let h = Harness::new(json!({}));
    let (mut leader, mut lead_host) = stream(&h, 1, "a@fresh.example");
    assert_eq!(send(&mut leader, &mut lead_host), (Action::Pause, Action::Pause));
    assert_eq!(lead_host.dispatched.len(), 1);
    let mut waiters: Vec<_> = (2..=5).map(|id| stream(&h, id, &format!("u{id}@FRESH.example"))).collect();
    for (f, host) in &mut waiters {
        assert_eq!(send(f, host), (Action::Pause, Action::Pause));
        assert!(host.dispatched.is_empty(), "waits for the leader's callout");
    }
    assert_eq!(h.config.flights.len(), 1);
    answer(&mut leader, &mut lead_host, lookup_response("fresh.example", "disposable", &[]));
    assert_eq!(only_sent(&lead_host).status, 403);
    assert_eq!(lead_host.woken, vec![2, 3, 4, 5]);
    for (f, host) in &mut waiters {
        f.on_wake(host);
        assert_eq!(only_sent(host).status, 403);
        assert_eq!(host.count(Counter::Blocked), 1);
        assert_eq!(host.count(Counter::Callouts), 0);
    }
    assert!(h.config.flights.is_empty());
    // The answer is in the cache: the next signup neither calls out nor waits.
    let (mut f, mut host) = stream(&h, 6, "z@fresh.example");
    send(&mut f, &mut host);
    assert_eq!((host.dispatched.len(), host.count(Counter::CacheHits)), (0, 1));
}

#[test]
fn a_waiter_resumes_with_the_verdict_headers() {
    let h = Harness::new(json!({}));
    let (mut leader, mut lead_host) = stream(&h, 1, "a@fresh.example");
    send(&mut leader, &mut lead_host);
    let (mut f, mut host) = stream(&h, 2, "b@fresh.example");
    send(&mut f, &mut host);
    answer(&mut leader, &mut lead_host, lookup_response("fresh.example", "safe", &["has_mx"]));
    f.on_wake(&mut host);
    assert_eq!(host.resumed, 1);
    assert_eq!(host.header("x-email-verdict").as_deref(), Some("safe"));
    assert_eq!(host.header("x-email-flags").as_deref(), Some("has_mx"));
}

#[test]
fn a_failed_shared_callout_follows_failure_mode_for_every_waiter() {
    let h = Harness::new(json!({ "failure_mode": "deny", "failure_status": 503 }));
    let (mut leader, mut lead_host) = stream(&h, 1, "a@fresh.example");
    send(&mut leader, &mut lead_host);
    let (mut f, mut host) = stream(&h, 2, "b@fresh.example");
    send(&mut f, &mut host);
    // Envoy's own answer to a callout that timed out.
    answer(&mut leader, &mut lead_host, error_response(504, "timeout"));
    f.on_wake(&mut host);
    assert_eq!((only_sent(&lead_host).status, only_sent(&host).status), (503, 503));
    assert_eq!(host.count(Counter::DeniedOnError), 1);
}

#[test]
fn a_leader_that_ends_hands_its_flight_to_a_waiter() {
    let h = Harness::new(json!({}));
    let (mut leader, mut lead_host) = stream(&h, 1, "a@fresh.example");
    send(&mut leader, &mut lead_host);
    let (mut next, mut next_host) = stream(&h, 2, "b@fresh.example");
    send(&mut next, &mut next_host);
    let (mut last, mut last_host) = stream(&h, 3, "c@fresh.example");
    send(&mut last, &mut last_host);
    // The leader's client goes away: its callout goes with it.
    lead_host.woken_calls_out = true;
    leader.on_destroy(&mut lead_host);
    assert_eq!(lead_host.woken, vec![2]);
    next.on_wake(&mut next_host);
    assert_eq!(next_host.dispatched.len(), 1, "the first waiter calls out and leads");
    answer(&mut next, &mut next_host, lookup_response("fresh.example", "disposable", &[]));
    assert_eq!(next_host.woken, vec![3]);
    last.on_wake(&mut last_host);
    assert_eq!((only_sent(&next_host).status, only_sent(&last_host).status), (403, 403));
    assert!(last_host.dispatched.is_empty());
}

#[test]
fn without_a_hand_over_the_root_context_leads_the_orphaned_flight() {
    let h = Harness::new(json!({}));
    let (mut leader, mut lead_host) = stream(&h, 1, "a@fresh.example");
    send(&mut leader, &mut lead_host);
    let (mut f, mut host) = stream(&h, 2, "b@fresh.example");
    send(&mut f, &mut host);
    // Wasm: a woken stream cannot call out for itself.
    assert!(leader.on_destroy(&mut lead_host), "orphaned: the root's tick is made due");
    assert!(lead_host.woken.is_empty());
    let (mut root, mut root_host) = stream(&h, 100, "unused@example.org");
    root.lead_orphans(&mut root_host);
    assert_eq!(root_host.dispatched.len(), 1, "the root calls out");
    answer(&mut root, &mut root_host, lookup_response("fresh.example", "disposable", &[]));
    assert_eq!(root_host.woken, vec![2]);
    assert!(root_host.sent.is_empty(), "the root answers no request of its own");
    f.on_wake(&mut host);
    assert_eq!(only_sent(&host).status, 403);
    assert!(h.config.flights.is_empty());

    // A root callout that cannot start: the waiters follow failure_mode.
    let (mut leader, mut lead_host) = stream(&h, 3, "a@other.example");
    send(&mut leader, &mut lead_host);
    let (mut f, mut host) = stream(&h, 4, "b@other.example");
    send(&mut f, &mut host);
    leader.on_destroy(&mut lead_host);
    root_host.fail.dispatch = true;
    root.lead_orphans(&mut root_host);
    assert_eq!(root_host.woken, vec![2, 4]);
    f.on_wake(&mut host);
    assert_eq!(host.header("x-email-verdict-bypass").as_deref(), Some("sidecar_error"));
}

#[test]
fn a_waiter_that_ends_is_not_woken_and_no_cache_means_no_sharing() {
    let h = Harness::new(json!({}));
    let (mut leader, mut lead_host) = stream(&h, 1, "a@fresh.example");
    send(&mut leader, &mut lead_host);
    let (mut f, mut host) = stream(&h, 2, "b@fresh.example");
    send(&mut f, &mut host);
    f.on_destroy(&mut host);
    answer(&mut leader, &mut lead_host, lookup_response("fresh.example", "safe", &[]));
    assert!(lead_host.woken.is_empty());

    let h = Harness::new(json!({ "cache": { "ttl_seconds": 0 } }));
    let (mut leader, mut lead_host) = stream(&h, 1, "a@fresh.example");
    send(&mut leader, &mut lead_host);
    let (mut f, mut host) = stream(&h, 2, "b@fresh.example");
    send(&mut f, &mut host);
    assert_eq!((lead_host.dispatched.len(), host.dispatched.len()), (1, 1), "every signup asks");
    assert!(h.config.flights.is_empty());
}

#[test]
fn an_expired_verdict_is_refreshed_by_one_signup_while_the_others_keep_it() {
    let h = Harness::new(json!({ "cache": { "ttl_seconds": 10 } }));
    let (mut f, mut host) = stream(&h, 1, "a@fresh.example");
    send(&mut f, &mut host);
    answer(&mut f, &mut host, lookup_response("fresh.example", "disposable", &[]));
    // Past the expiry, on any worker (ids 0: no per-worker sharing): one signup asks again...
    let expired = host.now_ms + 10_000;
    let mut refresher = json_signup(&h, "b@fresh.example");
    refresher.now_ms = expired;
    let mut refreshing = h.filter();
    send(&mut refreshing, &mut refresher);
    assert_eq!(refresher.dispatched.len(), 1);
    // ...the others keep the old verdict until its answer, without a callout.
    for i in 0..5 {
        let mut other = json_signup(&h, &format!("c{i}@fresh.example"));
        other.now_ms = expired + 10;
        assert_eq!(send(&mut h.filter(), &mut other), (Action::Pause, Action::Pause));
        assert!(other.dispatched.is_empty());
        assert_eq!(only_sent(&other).status, 403);
    }
    answer(&mut refreshing, &mut refresher, lookup_response("fresh.example", "safe", &[]));
    let mut after = json_signup(&h, "d@fresh.example");
    after.now_ms = expired + 20;
    assert_eq!(send(&mut h.filter(), &mut after), (Action::Pause, Action::Continue), "the new verdict");
    assert!(after.dispatched.is_empty());
}
