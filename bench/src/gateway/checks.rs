//! The counters' account of each row's run: the row measured what it says (cached answers were
//! cached, callouts called out, counts counted).

use super::*;

/// The counters' account of one side's runs.
pub(super) fn checks(s: &Setup, runs: &[Option<Run>]) -> anyhow::Result<String> {
    let run = |row: usize| runs[row].clone().unwrap_or_default();
    // Only the rows that ran (`--rows`) are checked.
    let ran = |row: usize| runs[row].is_some();
    let mut out = Vec::new();
    if ran(3) {
        out.push(check_cached("cached case", &s.shipped, &run(3)));
    }
    if ran(4) {
        out.push(check_callouts("callout case", &s.callout, &run(4)));
    }
    if ran(6) {
        out.push(check_cached("diagnostic case", &s.in_header, &run(6)));
    }
    if ran(9) {
        out.push(check_callouts("callout case → sidecar", &s.callout_sidecar, &run(9)));
    }
    if let (Ok(envoy), true) = (&s.counting, ran(10)) {
        out.push(check_counting(envoy, &run(10)));
    }
    if let (Ok(_), Some((sidecar, key)), Some(_)) = (&s.authz_counting, &s.counting_sidecar, &runs[11]) {
        out.push(check_authz_counting(sidecar, key, &run(11))?);
    }
    if ran(14) {
        out.push(check_sidecar_down(&s.sidecar_down, &run(14)));
    }
    if let (Ok(envoy), true) = (&s.shadow, ran(18)) {
        out.push(check_cached("shadow case", envoy, &run(18)));
    }
    Ok(out.join("; "))
}

/// Every POST of a cached case was answered from the filter's cache, none bypassed.
fn check_cached(case: &str, envoy: &Envoy, run: &Run) -> String {
    let (hits, callouts, bypassed) = counters(envoy);
    let ok = hits >= run.requests && callouts == 1 && bypassed == 0;
    format!("{case}: {hits} cache hits, {callouts} callout (the warm-up), {bypassed} bypassed ({})", verdict(ok))
}

/// Every POST of the callout case made a callout, none bypassed.
fn check_callouts(case: &str, envoy: &Envoy, run: &Run) -> String {
    let (hits, callouts, bypassed) = counters(envoy);
    let ok = hits == 0 && callouts >= run.requests && bypassed == 0;
    format!("{case}: {callouts} callouts, {hits} cache hits, {bypassed} bypassed ({})", verdict(ok))
}

/// Every POST of the counting case was answered from the cache and counted, no limit fired.
fn check_counting(envoy: &Envoy, run: &Run) -> String {
    let (hits, callouts, bypassed) = counters(envoy);
    let c = |n: &str| envoy.counter(n).unwrap_or(0);
    let (counted, refused) = (c("email_verdict.counted"), c("email_verdict.too_many_signups"));
    let ok = hits >= run.requests && callouts == 1 && bypassed == 0 && counted > run.requests && refused == 0;
    format!(
        "counting case: {counted} counted, {refused} too_many_signups, {hits} cache hits, {callouts} callout \
         (the warm-up), {bypassed} bypassed ({})",
        verdict(ok)
    )
}

/// The counting sidecar's count of the bench's mailbox (one check more, counted too) holds every
/// signup of the ext_authz counting case.
fn check_authz_counting(sidecar: &Sidecar, key: &str, run: &Run) -> anyhow::Result<String> {
    let r = ext_authz_check(sidecar, key)?;
    let counted: u64 = r.header("x-email-mailbox-signups").and_then(|v| v.parse().ok()).unwrap_or(0);
    let ok = r.status == 200 && counted > run.requests && run.non_2xx == 0;
    Ok(format!(
        "ext_authz counting case: the mailbox counted {counted} times by the sidecar (the best run: {} requests, \
         {} non-2xx) ({})",
        run.requests,
        run.non_2xx,
        verdict(ok)
    ))
}

/// Every POST of row 15 called out, got no verdict, and went on by `failure_mode` (the kept
/// decisions consulted: the one local decision is the probe's).
fn check_sidecar_down(envoy: &Envoy, run: &Run) -> String {
    let (hits, callouts, bypassed) = counters(envoy);
    let c = |n: &str| envoy.counter(n).unwrap_or(0);
    let (syncs, local) = (c("email_verdict.decision_syncs"), c("email_verdict.local_decisions"));
    let ok = hits == 0 && callouts >= run.requests && bypassed >= run.requests && syncs >= 1 && local == 1;
    format!(
        "sidecar-down case: {callouts} callouts, {bypassed} bypassed, {syncs} decision syncs, {local} local \
         decision (the probe) ({})",
        verdict(ok)
    )
}

fn counters(envoy: &Envoy) -> (u64, u64, u64) {
    let c = |n: &str| envoy.counter(n).unwrap_or(0);
    (c("email_verdict.cache_hits"), c("email_verdict.callouts"), c("email_verdict.bypassed"))
}

fn verdict(ok: bool) -> &'static str {
    if ok { "as intended" } else { "NOT as intended: the row does not measure what it says" }
}
