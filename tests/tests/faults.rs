//! Issue 7: faults under load. Client threads ([`Load`]) keep requests going while a test breaks
//! something — the nameserver, Redis, the sidecar (behind Envoy, or `kill -9` on SQLite) — or
//! upgrades the sidecar in place; every request's answer is then judged against the moments
//! the fault began and ended. Assertions are about correctness (what each request got, what
//! the state kept), never speed: the only times are hang guards.
//!
//! Windows: a request "during the fault" was sent after the fault was in place and answered
//! before the repair began (`Outcome::within`); requests straddling either moment may get
//! either behaviour, but always a well-formed one.

#[path = "faults/dns.rs"]
mod dns;
#[path = "faults/gateway.rs"]
mod gateway;
#[path = "faults/kill9.rs"]
mod kill9;
#[path = "faults/redis.rs"]
mod redis;
#[path = "faults/redis_cluster.rs"]
mod redis_cluster;
#[path = "faults/upgrade.rs"]
mod upgrade;

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use email_verdict_tests::verdict::check_error;
use email_verdict_tests::{Load, Outcome, Request, Shot, Sidecar, api_target, wait_for};

/// Every request in these tests gets its answer within this, whatever is broken: a hang guard.
pub const ANSWER_BOUND: Duration = Duration::from_secs(10);
/// The client's read timeout: past the bound, so a hang shows as a broken bound, with its request.
pub const CLIENT_TIMEOUT: Duration = Duration::from_secs(20);
/// Pause after each answer, per worker: about 30 requests a second at most, under the `pro`
/// burst limit (50/s), so 429s stay out of the picture.
/// How long after a key's last request every replica has given its leases back.
pub const LEASES_END: Duration =
    Duration::from_millis(email_verdict::leases::IDLE_MS as u64 + 3 * email_verdict::leases::SWEEP.as_millis() as u64);
pub const PACE: Duration = Duration::from_millis(30);
/// How long the workers may take to make the progress a test waits for (a loaded 2-core box).
pub const PROGRESS: Duration = Duration::from_secs(20);

/// `GET /api/v1/domain/{segment}?key=` to `addr`, tagged `tag`.
pub fn lookup(addr: SocketAddr, segment: &str, key: &str, tag: &str) -> Shot {
    Shot::new(addr, Request::get(&api_target(segment, key)).timeout(CLIENT_TIMEOUT), tag)
}

/// Every request got a complete HTTP answer (never refused, reset or cut short), within the bound.
pub fn assert_all_answered(outcomes: &[Outcome]) {
    assert!(!outcomes.is_empty(), "the load sent nothing");
    for o in outcomes {
        assert!(o.result.is_ok(), "no complete HTTP answer: {o}");
        assert!(o.took() < ANSWER_BOUND, "answered after more than {ANSWER_BOUND:?}: {o}");
    }
}

/// The outcomes tagged `tag`.
pub fn tagged<'a>(outcomes: &'a [Outcome], tag: &'a str) -> impl Iterator<Item = &'a Outcome> + 'a {
    outcomes.iter().filter(move |o| o.tag == tag)
}

/// Panics unless `what` has at least one member: a window the test meant to cover was missed.
pub fn nonempty<'a>(v: Vec<&'a Outcome>, what: &str) -> Vec<&'a Outcome> {
    assert!(!v.is_empty(), "no request fell wholly in {what}: the test did not cover it");
    v
}

/// A key's count over today and yesterday (in case the test crosses midnight UTC), from the
/// admin API, once the leases taken during the load have ended: a count includes the units a
/// replica leased and has not spent until it gives them back, `leases::IDLE_MS` after the key's last
/// request there (and a sweep). Called right after a load stops.
pub fn usage(sc: &Sidecar, id: &str) -> u64 {
    std::thread::sleep(LEASES_END);
    let r = Request::get(&format!("/admin/v1/keys/{id}/usage?days=2")).send(sc.admin_addr());
    assert_eq!(r.status, 200, "usage of {id}\n{r}");
    let days = r.json()["days"].as_array().cloned().unwrap_or_default();
    assert_eq!(days.len(), 2, "usage of {id}\n{r}");
    days.iter().map(|d| d["used"].as_u64().unwrap_or_else(|| panic!("usage of {id}: {d}"))).sum()
}

/// When both sidecars (requests tagged "A" and "B") answered 200 again, by themselves, to
/// requests sent after `since`; waits up to `bound`.
pub fn both_recovered(load: &Load, since: Instant, bound: Duration) -> Instant {
    wait_for("both sidecars to answer 200 again by themselves", bound, || {
        let s = load.snapshot();
        let ok_on = |side| s.iter().any(|o| o.tag == side && o.started >= since && o.status() == Some(200));
        (ok_on("A") && ok_on("B")).then(Instant::now)
    })
}

/// The state store broke under two sidecars sharing it, workers using keys of `plans`: every
/// request got a 200, a 429, a 402 (free keys only) or a 500 `internal_error` with Retry-After;
/// the `pro` keys got 200 again from `recovered` on; both sidecars report healthy.
pub fn check_store_fault(outcomes: &[Outcome], plans: &[&str], recovered: Instant, sidecars: [&Sidecar; 2]) {
    assert_all_answered(outcomes);
    for o in outcomes {
        match o.status() {
            Some(200 | 429) => {}
            Some(402) => assert_eq!(plans[o.worker], "free", "{o}"),
            _ => {
                let r = o.response().expect("answered");
                check_error(r, 500, "internal_error", &o.to_string());
                assert!(r.header("retry-after").is_some(), "no Retry-After: {o}");
            }
        }
    }
    for o in outcomes.iter().filter(|o| o.started >= recovered && plans[o.worker] == "pro") {
        assert_eq!(o.status(), Some(200), "after recovery: {o}");
    }
    for (sc, name) in sidecars.into_iter().zip(["A", "B"]) {
        let health = Request::get("/healthz").send(sc.admin_addr());
        assert_eq!((health.status, health.text().trim()), (200, "ok"), "{name} after the fault");
    }
}
