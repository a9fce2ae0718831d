//! The infrastructure index, server marks, and the public pages' re-checks.

use super::*;

fn fact(server: MailServer, via: &str) -> ServerFact {
    ServerFact { server, via: via.into() }
}

/// What a domain self-hosting on `host` (under `owner`) at `ip` teaches.
fn own(host: &str, owner: &str, ip: &str) -> Vec<ServerFact> {
    vec![fact(MailServer::host(host), owner), fact(MailServer::address(ip), owner)]
}

/// (disposable, legitimate) on each server, about `judged`, counting facts seen since `since`.
async fn evidence(store: &dyn StateStore, judged: &str, servers: &[MailServer], since: i64) -> Vec<(u64, u64)> {
    let e = store.infra_evidence(judged, servers, since).await.unwrap();
    e.iter().map(|e| (e.disposable, e.legitimate)).collect()
}

/// Issue 24: what each domain teaches is replaced when learned again (its MX moved) and
/// forgotten when it teaches nothing; counts leave out the judged domain and what was taught
/// through hosts it owns; only fresh facts count.
async fn infrastructure_index(open: impl Fn() -> Arc<dyn StateStore>) {
    let (store, other) = (open(), open());
    let ip = MailServer::address("192.0.2.10");
    let mx = MailServer::host("mx.burner.example");
    store
        .learn_infra("burner-a.example", true, &own("mx.burner.example", "burner.example", "192.0.2.10"), 100)
        .await
        .unwrap();
    other
        .learn_infra("burner-b.example", true, &own("mail.burner-b.example", "burner-b.example", "192.0.2.10"), 100)
        .await
        .unwrap();
    store
        .learn_infra("burner-b.example", true, &own("mail.burner-b.example", "burner-b.example", "192.0.2.10"), 110)
        .await
        .unwrap();
    store
        .learn_infra("webmail.example", false, &own("mx.webmail.example", "webmail.example", "192.0.2.99"), 100)
        .await
        .unwrap();
    let servers = [mx.clone(), MailServer::host("unknown.example"), ip.clone(), MailServer::address("192.0.2.99")];
    assert_eq!(evidence(&*other, "new.example", &servers, 0).await, [(1, 0), (0, 0), (2, 0), (0, 1)]);
    // The judged domain's own facts are left out, and so is what reached a server through a
    // host it owns: burner-b.example's address, for burner-b.example.
    assert_eq!(evidence(&*other, "burner-a.example", &[mx.clone(), ip.clone()], 0).await, [(0, 0), (1, 0)]);
    assert_eq!(
        evidence(&*other, "burner.example", std::slice::from_ref(&ip), 0).await,
        [(1, 0)],
        "taught through its host"
    );
    // Only fresh facts: burner-a.example was seen at 100, burner-b.example again at 110.
    assert_eq!(evidence(&*other, "new.example", std::slice::from_ref(&ip), 105).await, [(1, 0)]);
    // A domain that turns out legitimate moves sides; one whose MX moved leaves its old servers.
    store
        .learn_infra("burner-a.example", false, &own("mx.burner.example", "burner.example", "192.0.2.10"), 120)
        .await
        .unwrap();
    assert_eq!(evidence(&*store, "new.example", std::slice::from_ref(&ip), 0).await, [(1, 1)]);
    store
        .learn_infra("burner-b.example", true, &own("mx.moved.example", "moved.example", "192.0.2.77"), 130)
        .await
        .unwrap();
    let moved = [ip.clone(), MailServer::host("mx.moved.example"), MailServer::address("192.0.2.77")];
    assert_eq!(evidence(&*other, "new.example", &moved, 0).await, [(0, 1), (1, 0), (1, 0)]);
    // Teaching nothing forgets.
    store.learn_infra("burner-a.example", false, &[], 140).await.unwrap();
    assert_eq!(evidence(&*other, "new.example", &[ip.clone(), mx.clone()], 0).await, [(0, 0), (0, 0)]);
    // The reviewer's view: servers with their counts, most disposable domains first, and who
    // taught each.
    let page = other.learned_servers(0, 0, 10).await.unwrap();
    let listed: Vec<_> = page.servers.iter().map(|s| (s.server.value.as_str(), s.disposable, s.legitimate)).collect();
    assert_eq!(
        listed,
        [("mx.moved.example", 1, 0), ("192.0.2.77", 1, 0), ("mx.webmail.example", 0, 1), ("192.0.2.99", 0, 1)]
    );
    assert_eq!((page.total, page.servers[0].last_seen), (4, 130));
    let next = other.learned_servers(0, 3, 10).await.unwrap();
    assert_eq!(next.servers.iter().map(|s| s.server.value.as_str()).collect::<Vec<_>>(), ["192.0.2.99"]);
    let taught = other.server_teachers(&MailServer::address("192.0.2.77"), 0, 10).await.unwrap();
    assert_eq!(
        taught.iter().map(|t| (t.domain.as_str(), t.disposable, t.via.clone(), t.seen)).collect::<Vec<_>>(),
        [("burner-b.example", true, vec!["moved.example".to_owned()], 130)]
    );
}
with_all_backends!(infra, infrastructure_index, valkey_cluster);

/// Issue 24: a reviewer's mark on a server is in force for every domain and kept with its
/// history; a marked server is listed even without facts.
async fn server_marks(open: impl Fn() -> Arc<dyn StateStore>) {
    let (store, other) = (open(), open());
    let server = MailServer::host("mx.victim.example");
    let mark =
        |decision, at| ServerMark { server: server.clone(), decision, reviewer: "ana".into(), note: "n".into(), at };
    assert_eq!(other.infra_evidence("x.example", std::slice::from_ref(&server), 0).await.unwrap()[0].mark, None);
    store.mark_server(mark(Some(Decision::Block), 10)).await.unwrap();
    assert_eq!(
        other.infra_evidence("x.example", std::slice::from_ref(&server), 0).await.unwrap()[0].mark,
        Some(Decision::Block)
    );
    store.mark_server(mark(Some(Decision::Allow), 20)).await.unwrap();
    assert_eq!(
        other.infra_evidence("victim.example", std::slice::from_ref(&server), 0).await.unwrap()[0].mark,
        Some(Decision::Allow)
    );
    let page = other.learned_servers(0, 0, 10).await.unwrap();
    assert_eq!((page.total, page.servers[0].mark, page.servers[0].disposable), (1, Some(Decision::Allow), 0));
    store.mark_server(mark(None, 30)).await.unwrap();
    assert_eq!(other.infra_evidence("x.example", std::slice::from_ref(&server), 0).await.unwrap()[0].mark, None);
    let history: Vec<_> = other.server_marks(&server).await.unwrap().iter().map(|m| (m.decision, m.at)).collect();
    assert_eq!(history, [(Some(Decision::Block), 10), (Some(Decision::Allow), 20), (None, 30)]);
}
with_all_backends!(marks, server_marks);

/// Spec Limits rule 3: one public re-check per domain per interval, atomically for every caller.
async fn one_recheck_per_domain_per_interval(open: impl Fn() -> Arc<dyn StateStore>) {
    use email_verdict::state::Recheck;
    let store = open();
    let t0 = DAY_START / 1000;
    assert_eq!(store.try_recheck("a.example", t0, 86_400).await.unwrap(), Recheck::Allowed);
    let refused = Recheck::Refused { next_at: t0 + 86_400 };
    assert_eq!(store.try_recheck("a.example", t0 + 10, 86_400).await.unwrap(), refused);
    assert_eq!(open().try_recheck("a.example", t0 + 86_399, 86_400).await.unwrap(), refused, "another replica");
    assert_eq!(store.try_recheck("b.example", t0 + 10, 86_400).await.unwrap(), Recheck::Allowed, "per domain");
    // Concurrent callers on separate handles: exactly one wins.
    let results = futures::future::join_all((0..8).map(|_| {
        let handle = open();
        async move { handle.try_recheck("c.example", t0, 3_600).await.unwrap() }
    }))
    .await;
    assert_eq!(results.iter().filter(|r| **r == Recheck::Allowed).count(), 1, "{results:?}");
}
with_all_backends!(recheck, one_recheck_per_domain_per_interval);

/// A re-check that could not be completed gives its slot back, and only its own.
async fn an_uncompleted_recheck_gives_its_slot_back(open: impl Fn() -> Arc<dyn StateStore>) {
    use email_verdict::state::Recheck;
    let store = open();
    let t0 = 1_800_000_000;
    assert_eq!(store.try_recheck("g.example", t0, 86_400).await.unwrap(), Recheck::Allowed);
    store.give_back_recheck("g.example", t0).await.unwrap();
    assert_eq!(open().try_recheck("g.example", t0 + 5, 86_400).await.unwrap(), Recheck::Allowed);
    store.give_back_recheck("g.example", t0).await.unwrap(); // an older one: changes nothing
    let refused = Recheck::Refused { next_at: t0 + 5 + 86_400 };
    assert_eq!(store.try_recheck("g.example", t0 + 6, 86_400).await.unwrap(), refused);
}
with_all_backends!(recheck_give_back, an_uncompleted_recheck_gives_its_slot_back);

/// After the interval the next re-check is allowed (SQLite by time arithmetic, Redis by the
/// key's expiry, which runs on Redis' own clock: so one real second here).
async fn recheck_is_allowed_again_after_the_interval(open: impl Fn() -> Arc<dyn StateStore>) {
    use email_verdict::state::Recheck;
    let store = open();
    let now = email_verdict::clock::unix_now();
    assert_eq!(store.try_recheck("d.example", now, 1).await.unwrap(), Recheck::Allowed);
    assert_eq!(store.try_recheck("d.example", now, 1).await.unwrap(), Recheck::Refused { next_at: now + 1 });
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let later = email_verdict::clock::unix_now().max(now + 1);
    assert_eq!(store.try_recheck("d.example", later, 1).await.unwrap(), Recheck::Allowed);
}
with_all_backends!(recheck_expiry, recheck_is_allowed_again_after_the_interval);
