//! Section 4: Envoy side by side, one worker each, pinned to one CPU, wrk on the other: no
//! filter; the shipped filter on a non-signup route; a signup whose verdict is cached; a signup
//! with a callout on every request; Envoy's own ext_authz calling an equivalent endpoint; then
//! the real verdict service behind both enforcement points: the shipped ext_authz configuration
//! against the sidecar's `/ext_authz` and against a bare server answering its bytes, and the
//! filter calling the real sidecar on every request.
//!
//! The callout and ext_authz cases of rows 5–6 call the same endpoint: a bare Pingora server
//! answering the bytes of a cached sidecar lookup, so the two differ only in the gateway's work.
//! The cached case runs the shipped configuration against the real sidecar. The gateway's key
//! is on the unlimited `gateway` plan. Filter counters check that every request took the path
//! its row names; the verdict service's CPU per request is shown apart.

use anyhow::ensure;
use email_verdict_tests::envoy::{EnvoyBuilder, signup};
use email_verdict_tests::{Envoy, Request, Sidecar};
use serde_json::json;

use crate::bare::{Bare, write};
use crate::capture::Captured;
use crate::envoy::{BenchEnvoy, pin};
use crate::report::{cells, cpu_ratio, met};
use crate::wrk::{Run, post_script};
use crate::{Case, Ctx};

const SIGNUP: &str = r#"{"email":"ann@gmail.com","name":"Test User"}"#;

/// (row, baseline row, least ratio when the issue sets a target), rows counted from 0.
const RATIOS: [(usize, usize, Option<f64>); 7] =
    [(1, 0, Some(0.97)), (3, 2, Some(0.9)), (4, 5, Some(1.0)), (6, 2, None), (8, 7, None), (9, 8, None), (8, 2, None)];
/// The header the diagnostic case carries the email in.
const EMAIL_HEADER: &str = "x-signup-email";

/// Everything the section runs; the Envoys first, so they stop before what they call.
struct Setup {
    plain: BenchEnvoy,
    shipped: Envoy,
    callout: Envoy,
    in_header: Envoy,
    authz: BenchEnvoy,
    /// The shipped ext_authz configuration against a bare server answering `/ext_authz`'s bytes.
    authz_bare: Envoy,
    /// The same against the sidecar's `/ext_authz`.
    authz_sidecar: Envoy,
    /// The filter calling the real sidecar on every request (cache off).
    callout_sidecar: Envoy,
    _app: Bare,
    endpoint: Bare,
    authz_endpoint: Bare,
}

/// Starts the app, the endpoints and the eight Envoys, pins the Envoys, and makes the one callout
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
    let gateway_key = &ctx.gateway_key;
    let authz_answer = capture_ext_authz(sidecar, gateway_key)?;
    let authz_endpoint = Bare::start("bare-ext-authz", &authz_answer, 1)?;
    let authz_bare = EnvoyBuilder::new(authz_endpoint.addr(), app.addr()).api_key(gateway_key).ext_authz().start();
    let authz_sidecar = EnvoyBuilder::new(sidecar.addr(), app.addr()).api_key(gateway_key).ext_authz().start();
    let callout_sidecar =
        EnvoyBuilder::new(sidecar.addr(), app.addr()).api_key(gateway_key).set("/cache/ttl_seconds", json!(0)).start();
    for pid in [
        plain.pid(),
        shipped.pid(),
        callout.pid(),
        in_header.pid(),
        authz.pid(),
        authz_bare.pid(),
        authz_sidecar.pid(),
        callout_sidecar.pid(),
    ] {
        pin(pid, ctx.envoy_cpu);
    }
    let warm = shipped.send(&signup("application/json", SIGNUP.as_bytes()));
    ensure!(warm.status == 200, "warm-up signup through the shipped filter answered\n{warm}");
    let warm = in_header.send(&signup("application/json", SIGNUP.as_bytes()).header(EMAIL_HEADER, "ann@gmail.com"));
    ensure!(warm.status == 200, "warm-up signup with the email in a header answered\n{warm}");
    Ok(Setup {
        plain,
        shipped,
        callout,
        in_header,
        authz,
        authz_bare,
        authz_sidecar,
        callout_sidecar,
        _app: app,
        endpoint,
        authz_endpoint,
    })
}

/// The sidecar's `/ext_authz` answer to the bench's signup, as Envoy's check sends it (its MX
/// cached by a first check).
fn capture_ext_authz(sidecar: &Sidecar, key: &str) -> anyhow::Result<Captured> {
    let check = || {
        Request::new("POST", "/ext_authz/signup")
            .header("Content-Type", "application/json")
            .header("x-email-verdict-key", key)
            .body(SIGNUP.as_bytes())
            .try_send(sidecar.addr())
    };
    check()?;
    let r = check()?;
    ensure!(r.status == 200 && r.header("x-email-verdict") == Some("safe"), "POST /ext_authz/signup answered\n{r}");
    let mut answer = Captured::from_response(&r)?;
    // Per request, not part of what is compared.
    answer.headers.retain(|(n, _)| !n.eq_ignore_ascii_case("x-request-id"));
    Ok(answer)
}

pub fn run(ctx: &Ctx, sidecar: &Sidecar, lookup: &Captured) -> anyhow::Result<String> {
    eprintln!("4. Envoy, side by side");
    let s = start(ctx, sidecar, lookup)?;
    let post = write(ctx.dir.path(), "signup.lua", &post_script("application/json", SIGNUP, &[]))?;
    let header = [(EMAIL_HEADER, "ann@gmail.com")];
    let post_header = write(ctx.dir.path(), "signup-header.lua", &post_script("application/json", SIGNUP, &header))?;
    let (post, post_header) = (Some(post.as_path()), Some(post_header.as_path()));
    let (plain, shipped, sidecar_pid) = (s.plain.pid(), s.shipped.pid(), sidecar.pid());
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
        )
        .service(vec![s.endpoint.pid()]),
        Case::new("ext_authz, POST /signup, HTTP call with body", s.authz.addr(), "/signup", post, vec![s.authz.pid()])
            .service(vec![s.endpoint.pid()]),
        Case::new(
            "(diagnostic) filter, POST /signup, cached verdict, email in a header too (the body is read all the same)",
            s.in_header.addr(),
            "/signup",
            post_header,
            vec![s.in_header.pid()],
        ),
        Case::new(
            "ext_authz (envoy/ext-authz.yaml) → bare server answering /ext_authz's bytes",
            s.authz_bare.addr(),
            "/signup",
            post,
            vec![s.authz_bare.pid()],
        )
        .service(vec![s.authz_endpoint.pid()]),
        Case::new(
            "ext_authz (envoy/ext-authz.yaml) → sidecar /ext_authz",
            s.authz_sidecar.addr(),
            "/signup",
            post,
            vec![s.authz_sidecar.pid()],
        )
        .service(vec![sidecar_pid]),
        Case::new(
            "filter, POST /signup, callout every request → sidecar",
            s.callout_sidecar.addr(),
            "/signup",
            post,
            vec![s.callout_sidecar.pid()],
        )
        .service(vec![sidecar_pid]),
    ];
    let runs = ctx.alternate(&cases)?;
    let checks = [
        check_cached("cached case", &s.shipped, &runs[3]),
        check_callouts(&s.callout, &runs[4]),
        check_cached("diagnostic case", &s.in_header, &runs[6]),
        check_callouts(&s.callout_sidecar, &runs[9]),
    ];
    let rows: Vec<String> =
        cases.iter().zip(&runs).enumerate().map(|(i, (case, r))| row(i, &case.name, r, &runs)).collect();
    Ok(format!(
        "## 4. Envoy, side by side\n\n\
         Envoy 1 worker (`--concurrency 1`){pin}; wrk `-t1 -c{conns}`, best of {rounds} alternating {secs} s runs. \
         Signup body `{SIGNUP}` (a safe verdict: the request reaches the app). Callout and ext_authz call the same \
         endpoint (bare Pingora answering a cached sidecar lookup's bytes).\n\n\
         | row | case | requests/s | p50 | p99 | errors | Envoy CPU / request | CPU vs baseline | ratio | target | verdict service CPU / request |\n\
         |---|---|---:|---:|---:|---|---:|---:|---:|---|---:|\n{}\n\n\
         Envoy CPU / request: user + system time of that Envoy process during the run over the requests answered, \
         the least of the rounds. The app and the callout endpoint are other processes, not counted there; the \
         verdict service's (bare server or sidecar) is the last column. Rows 8–10 run the shipped \
         `envoy/ext-authz.yaml` (path normalization, header removal) or the shipped filter against the same \
         signup, with the gateway's key on the unlimited `gateway` plan.\n\n\
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
    let service = r.service_cpu_us.map_or_else(String::new, |us| format!("{us:.1} µs"));
    let comparisons: Vec<_> = RATIOS.iter().filter(|(row, ..)| *row == i).collect();
    if comparisons.is_empty() {
        return format!("| {} | {name} | {} | | | | {service} |", i + 1, cells(r));
    }
    let parts: Vec<(String, String, String)> =
        comparisons.iter().map(|(_, base, least)| comparison(r, &runs[*base], *base, *least)).collect();
    let join =
        |f: fn(&(String, String, String)) -> &String| parts.iter().map(f).cloned().collect::<Vec<_>>().join("; ");
    format!(
        "| {} | {name} | {} | {} | {} | {} | {service} |",
        i + 1,
        cells(r),
        join(|p| &p.0),
        join(|p| &p.1),
        join(|p| &p.2)
    )
}

/// (CPU vs baseline, ratio, target) of `r` against the run of row `base`.
fn comparison(r: &Run, base_run: &Run, base: usize, least: Option<f64>) -> (String, String, String) {
    let ratio = r.rps / base_run.rps;
    let target = match least {
        Some(least) => format!("≥ {least}: {}", met(ratio >= least && r.clean() && base_run.clean())),
        None => "(no target)".to_owned(),
    };
    (cpu_ratio(r, base_run), format!("{ratio:.2} vs row {}", base + 1), target)
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
