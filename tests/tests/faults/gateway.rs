//! The sidecar is killed (SIGKILL) while signups flow through Envoy, then started again on the
//! same port. `envoy_failures.rs` covers a sidecar that is down from the start; here the filter
//! must switch to its failure mode mid-stream and back to real verdicts by itself.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use email_verdict_tests::envoy::{gateway_with, signup};
use email_verdict_tests::{Load, Outcome, Recorded, Shot};
use serde_json::json;

use super::{CLIENT_TIMEOUT, PROGRESS, assert_all_answered, nonempty};

/// All workers share Envoy's one `pro` key: 3 workers at this pace stay under its 50/s burst,
/// so the sidecar never answers 429 (which the filter would treat as a failure).
const PACE: Duration = Duration::from_millis(100);

#[test]
fn sidecar_killed_under_load_fail_open_then_real_verdicts() {
    sidecar_killed_behind_envoy("allow");
}

#[test]
fn sidecar_killed_under_load_fail_closed_then_real_verdicts() {
    sidecar_killed_behind_envoy("deny");
}

fn sidecar_killed_behind_envoy(mode: &str) {
    // No filter cache (every signup asks the sidecar) and a callout timeout far above any
    // answer time, so only the kill makes callouts fail.
    let mut g = gateway_with(
        |s| s,
        |e| {
            e.set("/failure_mode", json!(mode))
                .set("/sidecar/timeout_ms", json!(5000))
                .set("/cache/ttl_seconds", json!(0))
        },
    );
    for d in ["mailinator.com", "gmail.com"] {
        g.sidecar.lookup_ok(d); // the sidecar's DNS cache, so callouts are quick
    }
    let envoy = g.envoy.addr();
    let load = Load::start(3, PACE, move |w, n| {
        let name = format!("w{w}n{n}");
        let (domain, tag) = if n % 2 == 0 { ("mailinator.com", "disposable") } else { ("gmail.com", "safe") };
        let body = json!({ "email": format!("{name}@{domain}"), "name": name }).to_string();
        Shot::new(envoy, signup("application/json", body.as_bytes()).timeout(CLIENT_TIMEOUT), tag)
    });
    load.wait_each(4, PROGRESS);
    let killing = Instant::now();
    g.sidecar.kill();
    let down = Instant::now();
    std::thread::sleep(Duration::from_millis(1000));
    load.wait_each(3, PROGRESS);
    let repairing = Instant::now();
    g.sidecar.restart();
    let up = Instant::now();
    load.wait_each(4, PROGRESS);
    let outcomes = load.stop();

    assert_all_answered(&outcomes);
    let at_app = by_name(&g.app.requests());
    let judge =
        |o: &Outcome| (real_verdict(o, at_app.get(&name_of(o))), failure_answer(o, at_app.get(&name_of(o)), mode));
    for o in outcomes.iter().filter(|o| o.finished < killing || o.started >= up) {
        if let Err(e) = judge(o).0 {
            panic!("sidecar up, expected a real verdict: {e}\n{o}");
        }
    }
    nonempty(outcomes.iter().filter(|o| o.started >= up).collect(), "the time after the restart");
    for o in nonempty(outcomes.iter().filter(|o| o.within(down, repairing)).collect(), "the outage") {
        if let Err(e) = judge(o).1 {
            panic!("sidecar down, expected failure_mode {mode}: {e}\n{o}");
        }
    }
    for o in &outcomes {
        let (real, failure) = judge(o);
        assert!(
            real.is_ok() || failure.is_ok(),
            "neither a verdict ({real:?}) nor the failure mode ({failure:?})\n{o}"
        );
    }
}

fn name_of(o: &Outcome) -> String {
    format!("w{}n{}", o.worker, o.seq)
}

/// The app's requests by the `name` field of their JSON body.
fn by_name(requests: &[Recorded]) -> HashMap<String, Recorded> {
    let name =
        |r: &Recorded| serde_json::from_slice::<serde_json::Value>(&r.body).ok()?["name"].as_str().map(String::from);
    requests.iter().filter_map(|r| Some((name(r)?, r.clone()))).collect()
}

/// Disposable: blocked by the filter (403, never at the app). Safe: at the app with the verdict.
fn real_verdict(o: &Outcome, at_app: Option<&Recorded>) -> Result<(), String> {
    let r = o.response().ok_or("no answer")?;
    match (o.tag.as_str(), r.status, at_app) {
        ("disposable", 403, None) if error_of(r) == Some("disposable_email".into()) => Ok(()),
        ("safe", 200, Some(req))
            if req.header("x-email-verdict") == Some("safe") && req.header("x-email-verdict-bypass").is_none() =>
        {
            Ok(())
        }
        (tag, status, req) => Err(format!("{tag}: status {status}, at the app: {:?}", req.map(|r| &r.headers))),
    }
}

/// A disposable (strong-listed) signup is still blocked: the filter decides it from its embedded
/// lists (local_fallback). Any other: allow, at the app with the bypass header and no verdict;
/// deny, failure_status 503 with `verdict_unavailable`, never at the app.
fn failure_answer(o: &Outcome, at_app: Option<&Recorded>, mode: &str) -> Result<(), String> {
    if o.tag == "disposable" {
        return real_verdict(o, at_app);
    }
    let r = o.response().ok_or("no answer")?;
    let ok = match (mode, r.status, at_app) {
        ("allow", 200, Some(req)) => {
            req.headers_named("x-email-verdict-bypass") == ["sidecar_error"] && req.header("x-email-verdict").is_none()
        }
        ("deny", 503, None) => error_of(r) == Some("verdict_unavailable".into()),
        _ => false,
    };
    ok.then_some(()).ok_or_else(|| format!("status {}, at the app: {:?}", r.status, at_app.map(|r| &r.headers)))
}

/// The `error` string of a JSON body, if it is one.
fn error_of(r: &email_verdict_tests::Response) -> Option<String> {
    serde_json::from_slice::<serde_json::Value>(&r.body).ok()?["error"].as_str().map(String::from)
}
