//! Signup counts, waves and boards.

use super::*;
use crate::review::decision_on;

/// Issue 32: signup counts over the last hour and day, per counter, the same from every handle
/// (replica), sliding a bucket at a time, and exact under concurrent signups.
async fn signup_counts_slide_and_agree(open: impl Fn() -> Arc<dyn StateStore>) {
    use email_verdict::state::Counter;
    use email_verdict_core::signup::velocity::{Scope, Window};
    let (store, other) = (open(), open());
    let t0 = DAY_START / 1000;
    let mailbox = Counter::new(Scope::Mailbox, &"a".repeat(64));
    let client = Counter::new(Scope::Client, "203.0.113.7");
    let w = |hour, day| Window { hour, day };
    let both = [mailbox.clone(), client.clone()];
    assert_eq!(store.count_signup(&both, t0).await.unwrap(), [w(1, 1), w(1, 1)]);
    assert_eq!(other.count_signup(&both, t0 + 10).await.unwrap(), [w(2, 2), w(2, 2)], "another replica");
    assert_eq!(store.count_signup(std::slice::from_ref(&client), t0 + 20).await.unwrap(), [w(3, 3)]);
    assert_eq!(store.count_signup(&[], t0).await.unwrap(), []);
    // Read without counting (`explain`): the same windows from any handle, twice; a counter no
    // signup touched is 0.
    let read = [mailbox.clone(), client.clone(), Counter::new(Scope::Server, "mx.never.example")];
    assert_eq!(other.signup_counts(&read, t0 + 30).await.unwrap(), [w(2, 2), w(3, 3), w(0, 0)]);
    assert_eq!(store.signup_counts(&read, t0 + 30).await.unwrap(), [w(2, 2), w(3, 3), w(0, 0)], "nothing counted");
    // An hour later (12 five-minute buckets on) the hour starts over, the day goes on.
    assert_eq!(store.count_signup(&both, t0 + 3_600).await.unwrap(), [w(1, 3), w(1, 4)]);
    // Within the hour, the buckets before the last 55..60 minutes have left it.
    assert_eq!(store.count_signup(&both, t0 + 3_600 + 3_299).await.unwrap(), [w(2, 4), w(2, 5)]);
    assert_eq!(store.count_signup(&both, t0 + 3_600 + 3_600).await.unwrap(), [w(2, 5), w(2, 6)]);
    assert_eq!(other.signup_counts(&both, t0 + 3_600 + 3_600).await.unwrap(), [w(2, 5), w(2, 6)], "read");
    // A day later the day starts over too; other scopes with the same value are other counters.
    assert_eq!(store.count_signup(&both, t0 + 86_400 + 3_600).await.unwrap(), [w(1, 2), w(1, 2)]);
    assert_eq!(store.count_signup(&[Counter::new(Scope::Domain, "203.0.113.7")], t0).await.unwrap(), [w(1, 1)]);
    // Concurrent signups on separate handles: every one counted.
    let server = Counter::new(Scope::Server, "mx.example");
    let t1 = t0 + 10 * 86_400;
    let results = futures::future::join_all((0..20).map(|_| {
        let (handle, server) = (open(), server.clone());
        async move { handle.count_signup(&[server], t1).await.unwrap()[0] }
    }))
    .await;
    let mut hours: Vec<u64> = results.iter().map(|w| w.hour).collect();
    hours.sort_unstable();
    assert_eq!(hours, (1..=20).collect::<Vec<_>>());
}
with_all_backends!(signup_counts, signup_counts_slide_and_agree, valkey_cluster);

/// Issue 32, item 4: a server's wave is the distinct new domains signed up on it in the last
/// hour, the same from every handle, bounded; the boards keep the busiest values of their window,
/// at most `BOARD_KEPT`, and answer their floor once full.
async fn waves_and_boards(open: impl Fn() -> Arc<dyn StateStore>) {
    use email_verdict::state::signups::{BOARD_KEPT, Board, Entry, NewDomain, WAVE_DOMAINS_KEPT, Wave};
    let (store, other) = (open(), open());
    let t0 = DAY_START / 1000;
    let new = |domain: &str| NewDomain::new("mx.wave.example", domain);
    let wave = |n, added| Wave { new_domains: n, added };
    assert_eq!(store.count_new_domain(&new("a.example"), t0).await.unwrap(), wave(1, true));
    assert_eq!(other.count_new_domain(&new("a.example"), t0 + 5).await.unwrap(), wave(1, false), "one domain");
    assert_eq!(other.count_new_domain(&new("b.example"), t0 + 10).await.unwrap(), wave(2, true));
    let elsewhere = NewDomain::new("mx.other.example", "a.example");
    assert_eq!(store.count_new_domain(&elsewhere, t0 + 10).await.unwrap(), wave(1, true), "another server");
    // An hour after a.example's last signup it has left the wave; b.example has not yet.
    assert_eq!(store.count_new_domain(&new("c.example"), t0 + 3_605).await.unwrap(), wave(2, true));
    assert_eq!(store.count_new_domain(&new("a.example"), t0 + 3_606).await.unwrap(), wave(3, true), "new again");
    // Concurrent new domains on separate handles: each counted once.
    let t1 = t0 + 86_400;
    let results = futures::future::join_all((0..20).map(|i| {
        let (handle, new) = (open(), NewDomain::new("mx.burst.example", &format!("d{i}.example")));
        async move { handle.count_new_domain(&new, t1).await.unwrap() }
    }))
    .await;
    let mut counts: Vec<u64> = results.iter().map(|w| w.new_domains).collect();
    counts.sort_unstable();
    assert_eq!(counts, (1..=20).collect::<Vec<_>>());
    // Bounded: past WAVE_DOMAINS_KEPT the oldest go.
    let t2 = t1 + 86_400;
    for i in 0..WAVE_DOMAINS_KEPT + 5 {
        let got = store.count_new_domain(&NewDomain::new("mx.huge.example", &format!("h{i}.example")), t2).await;
        assert_eq!(got.unwrap().new_domains, (i + 1).min(WAVE_DOMAINS_KEPT));
    }

    // Boards: the latest count of each value, the busiest first, within the window.
    let entry = |board, value: &str, count| Entry { board, value: value.to_owned(), count };
    let floors = store
        .rank(&[entry(Board::Clients, "203.0.113.7", 3), entry(Board::Waves, "mx.wave.example", 12)], t0)
        .await
        .unwrap();
    assert_eq!(floors, [0, 0], "not full");
    other.rank(&[entry(Board::Clients, "198.51.100.1", 5)], t0 + 1).await.unwrap();
    other.rank(&[entry(Board::Clients, "203.0.113.7", 2)], t0 + 2).await.unwrap(); // overtaken: kept at 3
    let shown = |r: Vec<email_verdict::state::signups::Ranked>| -> Vec<(String, u64)> {
        r.into_iter().map(|r| (r.value, r.count)).collect()
    };
    let clients = shown(store.busiest(Board::Clients, t0 + 3, 10).await.unwrap());
    assert_eq!(clients, [("198.51.100.1".to_owned(), 5), ("203.0.113.7".to_owned(), 3)]);
    assert_eq!(shown(store.busiest(Board::Waves, t0 + 3, 10).await.unwrap()), [("mx.wave.example".to_owned(), 12)]);
    assert_eq!(store.busiest(Board::Waves, t0 + 3_600, 10).await.unwrap(), [], "the wave board is the hour's");
    assert_eq!(store.busiest(Board::Mailboxes, t0, 10).await.unwrap(), []);
    // A day later the count starts over from what it is then.
    store.rank(&[entry(Board::Clients, "203.0.113.7", 1)], t0 + 86_401).await.unwrap();
    assert_eq!(shown(store.busiest(Board::Clients, t0 + 86_401, 10).await.unwrap()), [("203.0.113.7".to_owned(), 1)]);
    // Bounded: past BOARD_KEPT the lowest counts go, and the floor says what can enter.
    let t3 = t0 + 3 * 86_400;
    let mut floor = 0;
    for i in 0..BOARD_KEPT as u64 + 10 {
        floor = store.rank(&[entry(Board::Servers, &format!("mx{i}.example"), i + 1)], t3).await.unwrap()[0];
    }
    let servers = store.busiest(Board::Servers, t3, BOARD_KEPT + 10).await.unwrap();
    assert_eq!(servers.len(), BOARD_KEPT);
    assert_eq!((servers[0].count, servers[BOARD_KEPT - 1].count, floor), (BOARD_KEPT as u64 + 10, 11, 11));

    // What a signup reads when another replica judged its domain: the server it waits on.
    let mut cause = ReviewCause::new(ReviewReason::Ambiguous);
    cause.servers = vec!["mx.wave.example".into(), "192.0.2.98".into()];
    store.note_for_review("w1.example", &cause, t0).await.unwrap();
    store.note_for_review("bare.example", &ReviewCause::new(ReviewReason::NoMx), t0).await.unwrap();
    assert_eq!(other.queued_server("w1.example").await.unwrap().as_deref(), Some("mx.wave.example"));
    assert_eq!(other.queued_server("bare.example").await.unwrap(), None, "no server of its own");
    assert_eq!(other.queued_server("never.example").await.unwrap(), None, "not queued");
    store.decide(decision_on("w1.example", Some(Decision::Allow), t0 + 1)).await.unwrap();
    assert_eq!(other.queued_server("w1.example").await.unwrap(), None, "decided: no longer waiting");
}
with_all_backends!(waves, waves_and_boards);
