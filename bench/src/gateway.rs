//! Section 4: Envoy side by side, one worker each, pinned to one CPU, wrk on the other: no
//! filter; the shipped filter on a non-signup route; a signup whose verdict is cached; a signup
//! with a callout on every request; Envoy's own ext_authz calling an equivalent endpoint.
//!
//! The callout and ext_authz cases call the same endpoint: a bare Pingora server answering the
//! bytes of a cached sidecar lookup, so the two differ only in the gateway's work. The cached
//! case runs the shipped configuration against the real sidecar. Filter counters check that
//! every request took the path its row names.

use anyhow::ensure;
use email_verdict_tests::envoy::{EnvoyBuilder, signup};
use email_verdict_tests::{Envoy, Sidecar};
use serde_json::json;

use crate::bare::{Bare, write};
use crate::capture::Captured;
use crate::envoy::{BenchEnvoy, pin};
use crate::report::{cells, cpu_ratio, met};
use crate::wrk::{Run, post_script};
use crate::{Case, Ctx};

const SIGNUP: &str = r#"{"email":"ann@gmail.com","name":"Test User"}"#;

/// (row, baseline row, least ratio when the issue sets a target).
const RATIOS: [(usize, usize, Option<f64>); 4] =
    [(1, 0, Some(0.97)), (3, 2, Some(0.9)), (4, 5, Some(1.0)), (6, 2, None)];
/// The header the diagnostic case carries the email in.
const EMAIL_HEADER: &str = "x-signup-email";

/// Everything the section runs; the Envoys first, so they stop before what they call.
struct Setup {
    plain: BenchEnvoy,
    shipped: Envoy,
    callout: Envoy,
    in_header: Envoy,
    authz: BenchEnvoy,
    _app: Bare,
    _endpoint: Bare,
}

/// Starts the app, the endpoint and the five Envoys, pins the Envoys, and makes the one callout
/// of each cached case.
fn start(ctx: &Ctx, sidecar: &Sidecar, lookup: &Captured) -> anyhow::Result<Setup> {
    let app = Bare::start("bare-app", &Captured::ok(), 1)?;
    let endpoint = Bare::start("bare-endpoint", lookup, 1)?;
    let key = &ctx.keys[0];
    let app_port = ("APP_PORT", app.addr().port().to_string());
    let plain = BenchEnvoy::start("no-filter", std::slice::from_ref(&app_port))?;
    let shipped = EnvoyBuilder::new(sidecar.addr(), app.addr()).api_key(key).start();
    let callout =
        EnvoyBuilder::new(endpoint.addr(), app.addr()).api_key(key).set("/cache/ttl_seconds", json!(0)).start();
    // Diagnostic: the cached case with the email in a header, so the body is not buffered.
    let in_header =
        EnvoyBuilder::new(sidecar.addr(), app.addr()).api_key(key).set("/email/headers", json!([EMAIL_HEADER])).start();
    let authz = BenchEnvoy::start("ext-authz", &[app_port, ("AUTHZ_PORT", endpoint.addr().port().to_string())])?;
    for pid in [plain.pid(), shipped.pid(), callout.pid(), in_header.pid(), authz.pid()] {
        pin(pid, ctx.envoy_cpu);
    }
    let warm = shipped.send(&signup("application/json", SIGNUP.as_bytes()));
    ensure!(warm.status == 200, "warm-up signup through the shipped filter answered\n{warm}");
    let warm = in_header.send(&signup("application/json", SIGNUP.as_bytes()).header(EMAIL_HEADER, "ann@gmail.com"));
    ensure!(warm.status == 200, "warm-up signup with the email in a header answered\n{warm}");
    Ok(Setup { plain, shipped, callout, in_header, authz, _app: app, _endpoint: endpoint })
}

pub fn run(ctx: &Ctx, sidecar: &Sidecar, lookup: &Captured) -> anyhow::Result<String> {
    eprintln!("4. Envoy, side by side");
    let s = start(ctx, sidecar, lookup)?;
    let post = write(ctx.dir.path(), "signup.lua", &post_script("application/json", SIGNUP, &[]))?;
    let header = [(EMAIL_HEADER, "ann@gmail.com")];
    let post_header = write(ctx.dir.path(), "signup-header.lua", &post_script("application/json", SIGNUP, &header))?;
    let (post, post_header) = (Some(post.as_path()), Some(post_header.as_path()));
    let (plain, shipped) = (s.plain.pid(), s.shipped.pid());
    let cases = [
        Case::new("no filter, GET /", s.plain.addr(), "/", None, vec![plain]),
        Case::new("filter on, non-signup route, GET /", s.shipped.addr(), "/", None, vec![shipped]),
        Case::new("no filter, POST /signup", s.plain.addr(), "/signup", post, vec![plain]),
        Case::new("filter, POST /signup, cached verdict", s.shipped.addr(), "/signup", post, vec![shipped]),
        Case::new(
            "filter, POST /signup, callout every request",
            s.callout.addr(),
            "/signup",
            post,
            vec![s.callout.pid()],
        ),
        Case::new("ext_authz, POST /signup, HTTP call with body", s.authz.addr(), "/signup", post, vec![s.authz.pid()]),
        Case::new(
            "(diagnostic) filter, POST /signup, cached verdict, email in a header: body not buffered",
            s.in_header.addr(),
            "/signup",
            post_header,
            vec![s.in_header.pid()],
        ),
    ];
    let runs = ctx.alternate(&cases)?;
    let checks = [
        check_cached("cached case", &s.shipped, &runs[3]),
        check_callouts(&s.callout, &runs[4]),
        check_cached("diagnostic case", &s.in_header, &runs[6]),
    ];
    let rows: Vec<String> =
        cases.iter().zip(&runs).enumerate().map(|(i, (case, r))| row(i, &case.name, r, &runs)).collect();
    Ok(format!(
        "## 4. Envoy, side by side\n\n\
         Envoy 1 worker (`--concurrency 1`){pin}; wrk `-t1 -c{conns}`, best of {rounds} alternating {secs} s runs. \
         Signup body `{SIGNUP}` (a safe verdict: the request reaches the app). Callout and ext_authz call the same \
         endpoint (bare Pingora answering a cached sidecar lookup's bytes).\n\n\
         | row | case | requests/s | p50 | p99 | errors | Envoy CPU / request | CPU vs baseline | ratio | target |\n\
         |---|---|---:|---:|---:|---|---:|---:|---:|---|\n{}\n\n\
         Envoy CPU / request: user + system time of that Envoy process during the run over the requests answered, \
         the least of the rounds. The app and the callout endpoint are other processes, not counted.\n\n\
         Filter counters: {}.\n",
        rows.join("\n"),
        checks.join("; "),
        pin = ctx.envoy_cpu.map(|c| format!(", pinned to CPU {c}")).unwrap_or_default(),
        conns = ctx.wrk.connections,
        rounds = ctx.rounds,
        secs = ctx.wrk.seconds,
    ))
}

fn row(i: usize, name: &str, r: &Run, runs: &[Run]) -> String {
    let Some((_, base, least)) = RATIOS.iter().find(|(row, ..)| *row == i) else {
        return format!("| {} | {name} | {} | | | |", i + 1, cells(r));
    };
    let ratio = r.rps / runs[*base].rps;
    let target = match least {
        Some(least) => format!("≥ {least}: {}", met(ratio >= *least && r.clean() && runs[*base].clean())),
        None => "(no target)".to_owned(),
    };
    let cpu = cpu_ratio(r, &runs[*base]);
    format!("| {} | {name} | {} | {cpu} | {ratio:.2} vs row {} | {target} |", i + 1, cells(r), base + 1)
}

/// Every POST of a cached case was answered from the filter's cache, none bypassed.
fn check_cached(case: &str, envoy: &Envoy, run: &Run) -> String {
    let (hits, callouts, bypassed) = counters(envoy);
    let ok = hits >= run.requests && callouts == 1 && bypassed == 0;
    format!("{case}: {hits} cache hits, {callouts} callout (the warm-up), {bypassed} bypassed ({})", verdict(ok))
}

/// Every POST of the callout case made a callout, none bypassed.
fn check_callouts(envoy: &Envoy, run: &Run) -> String {
    let (hits, callouts, bypassed) = counters(envoy);
    let ok = hits == 0 && callouts >= run.requests && bypassed == 0;
    format!("callout case: {callouts} callouts, {hits} cache hits, {bypassed} bypassed ({})", verdict(ok))
}

fn counters(envoy: &Envoy) -> (u64, u64, u64) {
    let c = |n: &str| envoy.counter(n).unwrap_or(0);
    (c("email_verdict.cache_hits"), c("email_verdict.callouts"), c("email_verdict.bypassed"))
}

fn verdict(ok: bool) -> &'static str {
    if ok { "as intended" } else { "NOT as intended: the row does not measure what it says" }
}
