//! `kill -9` of the sidecar on SQLite while lookups and key creations keep coming, then a
//! restart on the same database. `plans.rs` kills an idle process; here requests are in flight.

use std::collections::HashMap;
use std::time::Instant;

use email_verdict_tests::verdict::check_ok;
use email_verdict_tests::{Load, Outcome, Request, Shot, start_with};
use serde_json::{Value, json};

use super::{CLIENT_TIMEOUT, PACE, PROGRESS, lookup, usage};

/// Workers 0..LOOKUPS look up with key `w` each; worker LOOKUPS creates keys (admin API).
const LOOKUPS: usize = 4;

#[test]
fn kill_9_under_load_keeps_every_answered_key_and_count() {
    let (mut sc, _nsd) = start_with(|b| b.keys(&["pro"; LOOKUPS + 1]));
    // The DNS cache warm, through the one key whose count is not checked.
    check_ok(&sc.lookup_with_key("ownmail.example", &sc.keys()[LOOKUPS].clone()), "warm-up");
    let (addr, admin, keys) = (sc.addr(), sc.admin_addr(), sc.keys().to_vec());
    let load = Load::start(LOOKUPS + 1, PACE, move |w, n| {
        if w < LOOKUPS {
            return lookup(addr, "ownmail.example", &keys[w], "lookup");
        }
        let body = json!({ "plan": "basic", "name": format!("load-{n}") }).to_string();
        let req = Request::new("POST", "/admin/v1/keys").header("Content-Type", "application/json");
        Shot::new(admin, req.body(body.as_bytes()).timeout(CLIENT_TIMEOUT), "create")
    });
    load.wait_each(10, PROGRESS);
    let killing = Instant::now();
    sc.kill();
    let outcomes = load.stop();
    sc.restart();

    for o in &outcomes {
        match (o.tag.as_str(), o.status()) {
            ("lookup", Some(200 | 429)) | ("create", Some(201)) => {}
            (_, None) => assert!(o.finished >= killing, "failed before the kill: {o}"),
            _ => panic!("unexpected answer: {o}"),
        }
    }
    let listed = keys_by_id(&sc);
    for o in outcomes.iter().filter(|o| o.status() == Some(201)) {
        let id = o.response().expect("answered").json()["id"].as_str().unwrap_or_default().to_string();
        let row = listed.get(&id).unwrap_or_else(|| panic!("key {id} was created (201) and is gone: {o}"));
        assert_eq!(row["status"], "active", "{row}");
    }
    for w in 0..LOOKUPS {
        check_count(&sc, w, &outcomes);
        check_ok(&sc.lookup_with_key("ownmail.example", &sc.keys()[w].clone()), "a key after the restart");
    }
}

/// A 200 is sent only after its admission committed, so count >= 200s. A request counted
/// without a 200 answer was admitted and not yet answered (or its answer not yet read) when
/// the process died: its client saw the connection fail. A worker has one request in flight
/// at a time, so count <= 200s + 1, and + 0 when none of its requests failed.
fn check_count(sc: &email_verdict_tests::Sidecar, w: usize, outcomes: &[Outcome]) {
    let mine: Vec<&Outcome> = outcomes.iter().filter(|o| o.worker == w).collect();
    let ok = mine.iter().filter(|o| o.status() == Some(200)).count() as u64;
    let cut = mine.iter().filter(|o| o.result.is_err()).count().min(1) as u64;
    assert!(ok > 0, "worker {w} got no 200 before the kill");
    let used = usage(sc, &sc.cli().row_named(&format!("test-{w}")).id);
    assert!(ok <= used && used <= ok + cut, "key {w}: count {used} after kill -9; 200s {ok}, cut off {cut}");
}

/// `GET /admin/v1/keys` as id -> record.
fn keys_by_id(sc: &email_verdict_tests::Sidecar) -> HashMap<String, Value> {
    let r = Request::get("/admin/v1/keys").send(sc.admin_addr());
    assert_eq!(r.status, 200, "{r}");
    let keys = r.json()["keys"].as_array().cloned().unwrap_or_default();
    keys.into_iter().map(|k| (k["id"].as_str().unwrap_or_default().to_string(), k)).collect()
}
