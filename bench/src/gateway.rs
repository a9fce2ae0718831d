//! Section 4: Envoy side by side, one worker each, pinned to one CPU, wrk on the other: no
//! filter; the shipped filter on a non-signup route; a signup whose verdict is cached; a signup
//! with a callout on every request; Envoy's own ext_authz calling an equivalent endpoint; then
//! the real verdict service behind both enforcement points: the shipped ext_authz configuration
//! against the sidecar's `/ext_authz` and against a bare server answering its bytes, and the
//! filter calling the real sidecar on every request; last, a signup counted by the sidecar
//! (`velocity`, issue 32) through each enforcement point; and the protocols of issue 43: the
//! cached signup as one gRPC message, and a large GraphQL query on a GraphQL route that runs no
//! signup operation (read for its operation, then let through unread) beside the same query with
//! no filter.
//!
//! The callout and ext_authz cases of rows 5–6 call the same endpoint: a bare Pingora server
//! answering the bytes of a cached sidecar lookup, so the two differ only in the gateway's work.
//! The cached case runs the shipped configuration against the real sidecar. The gateway's key
//! is on the unlimited `gateway` plan. Filter counters check that every request took the path
//! its row names; the verdict service's CPU per request is shown apart.
//!
//! Every row is run for each [`Side`] (a build with its own sidecar and configuration files):
//! with a baseline (`--baseline`), the two builds' runs of a row alternate (this build's, the
//! baseline's, the next row...), and a second table puts both builds' rows and their ratio side
//! by side. A row a build cannot run (an older build without signup counts) says so.

use std::net::SocketAddr;

use anyhow::{Context, ensure};
use email_verdict_tests::envoy::signup;
use email_verdict_tests::{Envoy, Request, Sidecar, TestDir};
use serde_json::{Value, json};

use crate::bare::{Bare, write};
use crate::build::{Build, Filter};
use crate::capture::Captured;
use crate::envoy::{BenchEnvoy, pin};
use crate::report::{cells, count, cpu_ratio, errors, met, ms};
use crate::wrk::{Run, post_script, post_script_bytes};
use crate::{Case, Ctx, GATEWAY_PLAN};

mod protocols;
use protocols::{Scripts, graphql_query, grpc_signup};

const SIGNUP: &str = r#"{"email":"ann@gmail.com","name":"Test User"}"#;

/// (row, baseline row, least ratio when the issue sets a target), rows counted from 0.
const RATIOS: [(usize, usize, Option<f64>); 20] = [
    (1, 0, Some(0.97)),
    (3, 2, Some(0.9)),
    (4, 5, Some(1.0)),
    (6, 2, None),
    (8, 7, None),
    (9, 8, None),
    (8, 2, None),
    (10, 3, None),
    (11, 8, None),
    (10, 11, None),
    (12, 2, None),
    (3, 12, None),
    (13, 2, None),
    (14, 2, None),
    (14, 4, None),
    (15, 3, None),
    (15, 2, None),
    (16, 17, None),
    (18, 3, None),
    (18, 2, None),
];
/// The header the diagnostic case carries the email in.
const EMAIL_HEADER: &str = "x-signup-email";
/// The cached rows' verdict cache lifetime: longer than the whole section (the shipped 300 s
/// can end during a run, and then the 32 connections' requests waiting on the expired entry each
/// call out once: the row would not measure a cached verdict).
const CACHED_TTL: u64 = 86_400;
/// The mailbox hash's secret of the counting rows (at least 32 bytes).
const MAILBOX_SECRET: &str = "email-verdict-bench-mailbox-secret-0123456789";
/// Limits no run reaches (one client, one mailbox: any real limit would fire), `block` so that
/// one firing would show as `too_many_signups` and as non-2xx answers.
const NEVER: u64 = 1_000_000_000_000;
/// The rows; their number is the position here, plus one.
const ROWS: [&str; 19] = [
    "no filter, GET /",
    "filter on, non-signup route, GET /",
    "no filter, POST /signup",
    "filter, POST /signup, cached verdict",
    "filter, POST /signup, callout every request",
    "ext_authz, POST /signup, HTTP call with body",
    "(diagnostic) filter, POST /signup, cached verdict, email in a header too (the body is read all the same)",
    "ext_authz (envoy/ext-authz.yaml) → bare server answering /ext_authz's bytes",
    "ext_authz (envoy/ext-authz.yaml) → sidecar /ext_authz",
    "filter, POST /signup, callout every request → sidecar",
    "filter, POST /signup, cached verdict, counting on → sidecar",
    "ext_authz (envoy/ext-authz.yaml) → sidecar /ext_authz, counting on",
    "(floor) no filter, POST /signup, Envoy's buffer filter + the 6 verdict headers added by the route",
    "(diagnostic) filter on, POST /signup, not a signup in its configuration (the filter runs, reads nothing)",
    "filter, POST /signup, sidecar down (connection refused), 100,000 decided names kept, cache off",
    "filter, POST /signup as gRPC (one framed protobuf message, over HTTP/1.1), cached verdict",
    "filter, POST /graphql, a 16 KB query running no signup operation (read for its operation, passed unread)",
    "no filter, POST /graphql, the same 16 KB query",
    "filter, POST /signup, cached verdict, shadow mode (no header hold; the body streams on, copied)",
];
/// Row 15: how many names the sidecar's decisions hold when it goes away.
const DECIDED_NAMES: usize = 100_000;

/// One build's side of the section: the build, its sidecar (serving, with its keys made) and
/// that sidecar's cached lookup of `gmail.com` (what the bare endpoint answers).
pub struct Side<'a> {
    pub build: &'a Build,
    pub sidecar: &'a Sidecar,
    pub pro_key: &'a str,
    pub gateway_key: &'a str,
    pub lookup: &'a Captured,
    /// Another filter of the first side's build (same sidecar): it runs the rows with a filter
    /// only, the others being the first side's.
    pub filter_only: bool,
}

/// The rows that run a filter (0-based); the others are the same whichever filter a build has.
const FILTER_ROWS: [usize; 11] = [1, 3, 4, 6, 9, 10, 13, 14, 15, 16, 18];
/// The dynamic module's targets (issue 33): (row, baseline row, least ratio of requests/s).
const MODULE_TARGETS: [(usize, usize, f64); 3] = [(1, 0, 0.99), (3, 2, 0.85), (4, 5, 1.0)];

/// `velocity` with limits that never fire.
fn velocity() -> Value {
    json!({ "mailbox": { "per_day": NEVER, "action": "block" }, "client": { "per_hour": NEVER, "action": "block" } })
}

/// Everything a side runs; the Envoys first, so they stop before what they call.
struct Setup {
    plain: BenchEnvoy,
    /// Row 13: what reading the body and adding the headers costs in Envoy's own code.
    buffered: BenchEnvoy,
    /// Row 14: the filter on the signup route, configured with no signup route.
    idle_filter: Envoy,
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
    /// The shipped filter with `velocity`: the verdict cached, the signup counted (or why not).
    counting: Result<Envoy, String>,
    /// The shipped ext_authz configuration against the counting sidecar (or why not).
    authz_counting: Result<Envoy, String>,
    /// Row 15: the filter whose sidecar is gone, after it fetched [`DECIDED_NAMES`] decisions.
    sidecar_down: Envoy,
    /// Rows 16–17: the shipped filter reading gRPC's address at field 1 and a GraphQL route (or
    /// why an older build cannot).
    protocols: Result<Envoy, String>,
    /// Row 19: the shipped filter in shadow mode (issue 44), or why an older build has none.
    shadow: Result<Envoy, String>,
    _app: Bare,
    endpoint: Bare,
    authz_endpoint: Bare,
    /// A sidecar of the build with `/ext_authz` counting (`--ext-authz-config` with `velocity`,
    /// `--mailbox-secret`), and its gateway key.
    counting_sidecar: Option<(Sidecar, String)>,
    _dir: TestDir,
}

/// Starts the app, the endpoints and the Envoys of one side, pins the Envoys, and makes the one
/// callout of each cached case.
fn start(ctx: &Ctx, dns: SocketAddr, side: &Side) -> anyhow::Result<Setup> {
    let (build, sidecar) = (side.build, side.sidecar);
    let dir = TestDir::new("bench-gateway");
    let app = Bare::start("bare-app", &Captured::ok(), 1)?;
    let endpoint = Bare::start("bare-endpoint", side.lookup, 1)?;
    let key = side.pro_key;
    let app_port = ("APP_PORT", app.addr().port().to_string());
    let plain = BenchEnvoy::start("no-filter", std::slice::from_ref(&app_port))?;
    let buffered = BenchEnvoy::start("buffer", std::slice::from_ref(&app_port))?;
    let idle_filter = build
        .filter_envoy(sidecar.addr(), app.addr())
        .api_key(key)
        .set("/signup_routes", json!([{ "method": "POST", "path": "/not-the-signup" }]))
        .start();
    let shipped = build
        .filter_envoy(sidecar.addr(), app.addr())
        .api_key(key)
        .set("/cache/ttl_seconds", json!(CACHED_TTL))
        .start();
    let callout =
        build.filter_envoy(endpoint.addr(), app.addr()).api_key(key).set("/cache/ttl_seconds", json!(0)).start();
    // Diagnostic: the cached case with the email in a header as well.
    let in_header = build
        .filter_envoy(sidecar.addr(), app.addr())
        .api_key(key)
        .set("/email/headers", json!([EMAIL_HEADER]))
        .set("/cache/ttl_seconds", json!(CACHED_TTL))
        .start();
    let authz = BenchEnvoy::start("ext-authz", &[app_port, ("AUTHZ_PORT", endpoint.addr().port().to_string())])?;
    let gateway_key = side.gateway_key;
    let authz_answer = capture_ext_authz(sidecar, gateway_key)?;
    let authz_endpoint = Bare::start("bare-ext-authz", &authz_answer, 1)?;
    let authz_bare = build.ext_authz_envoy(authz_endpoint.addr(), app.addr()).api_key(gateway_key).start();
    let authz_sidecar = build.ext_authz_envoy(sidecar.addr(), app.addr()).api_key(gateway_key).start();
    let callout_sidecar =
        build.filter_envoy(sidecar.addr(), app.addr()).api_key(gateway_key).set("/cache/ttl_seconds", json!(0)).start();
    // Counting: an older filter refuses `velocity` (an unknown field), an older sidecar has no
    // `--mailbox-secret`; those rows are then not run for that build.
    let counting = build
        .filter_envoy(sidecar.addr(), app.addr())
        .api_key(gateway_key)
        .set("/velocity", velocity())
        .set("/mailbox_secret", json!(MAILBOX_SECRET))
        .set("/cache/ttl_seconds", json!(CACHED_TTL))
        .try_start()
        .map_err(|f| format!("its filter does not start with `velocity` ({})", first_error_line(&f.log)));
    let counting_sidecar = if build.counts_at_ext_authz() {
        let mut config = build.ext_authz_config()?;
        config["velocity"] = velocity();
        let file = write(dir.path(), "ext-authz-config.json", &config.to_string())?;
        let threads = ctx.server_threads.to_string();
        let args = ["--threads", &threads, "--ext-authz-config", &file.display().to_string()];
        let counting_sidecar = build
            .sidecar()
            .dns(dns)
            .settings(GATEWAY_PLAN)
            .args(&args)
            .args(&["--mailbox-secret", MAILBOX_SECRET])
            .start();
        let key = crate::keys::create_on_plan(&counting_sidecar, "gateway", 1)?.remove(0);
        Some((counting_sidecar, key))
    } else {
        None
    };
    let authz_counting = match &counting_sidecar {
        Some((s, key)) => Ok(build.ext_authz_envoy(s.addr(), app.addr()).api_key(key).start()),
        None => Err("its sidecar has no --mailbox-secret (no signup counts)".to_owned()),
    };
    let sidecar_down = sidecar_gone_after_decisions(build, app.addr(), key)?;
    let protocols = build
        .filter_envoy(sidecar.addr(), app.addr())
        .api_key(key)
        .set("/email/proto_fields", json!(["1"]))
        .set("/graphql", json!({ "paths": ["/graphql"], "operations": ["signUp"] }))
        .set("/cache/ttl_seconds", json!(CACHED_TTL))
        .try_start()
        .map_err(|f| format!("its filter reads no gRPC or GraphQL ({})", first_error_line(&f.log)));
    let shadow = build
        .filter_envoy(sidecar.addr(), app.addr())
        .api_key(key)
        .set("/mode", json!("shadow"))
        .set("/hold_headers", json!(false))
        .set("/cache/ttl_seconds", json!(CACHED_TTL))
        .try_start()
        .map_err(|f| format!("its filter has no shadow mode ({})", first_error_line(&f.log)));
    let mut pids = vec![
        sidecar_down.pid(),
        plain.pid(),
        shipped.pid(),
        callout.pid(),
        in_header.pid(),
        authz.pid(),
        authz_bare.pid(),
        authz_sidecar.pid(),
        callout_sidecar.pid(),
    ];
    pids.extend(counting.iter().chain(&authz_counting).chain(&protocols).chain(&shadow).map(Envoy::pid));
    for pid in pids {
        pin(pid, ctx.envoy_cpu);
    }
    let post = || signup("application/json", SIGNUP.as_bytes());
    let warm = shipped.send(&post());
    ensure!(warm.status == 200, "warm-up signup through the shipped filter answered\n{warm}");
    let warm = in_header.send(&post().header(EMAIL_HEADER, "ann@gmail.com"));
    ensure!(warm.status == 200, "warm-up signup with the email in a header answered\n{warm}");
    for envoy in counting.iter().chain(&authz_counting).chain(&shadow) {
        let warm = envoy.send(&post());
        ensure!(warm.status == 200, "warm-up signup with counting on answered\n{warm}");
    }
    if let Ok(envoy) = &protocols {
        let warm = envoy.send(&signup("application/grpc", &grpc_signup()));
        ensure!(warm.status == 200, "warm-up gRPC signup answered\n{warm}");
        let graphql = Request::new("POST", "/graphql").header("Content-Type", "application/json");
        let query = envoy.send(&graphql.body(graphql_query().as_bytes()));
        ensure!(query.status == 200, "warm-up GraphQL query answered\n{query}");
    }
    Ok(Setup {
        plain,
        buffered,
        idle_filter,
        shipped,
        callout,
        in_header,
        authz,
        authz_bare,
        authz_sidecar,
        callout_sidecar,
        counting,
        authz_counting,
        sidecar_down,
        protocols,
        shadow,
        _app: app,
        endpoint,
        authz_endpoint,
        counting_sidecar,
        _dir: dir,
    })
}

/// Row 15's Envoy: the filter fetches [`DECIDED_NAMES`] reviewer blocks from a stand-in of
/// the sidecar, which then goes away, so every signup's callout is refused and the kept
/// decisions are consulted (`local_fallback`). The cache is off, so every signup takes that path.
fn sidecar_gone_after_decisions(build: &Build, app: SocketAddr, key: &str) -> anyhow::Result<Envoy> {
    let names: Vec<String> = (0..DECIDED_NAMES).map(|i| format!("\"decided-{i}.example\"")).collect();
    let body = format!(
        r#"{{"reviewer":{{"block":[{}],"allow":[]}},"operator":{{"block":[],"allow":[]}},"complete":true}}"#,
        names.join(",")
    );
    let headers = vec![
        ("content-type".to_owned(), "application/json".to_owned()),
        ("etag".to_owned(), "\"bench-decisions\"".to_owned()),
        ("content-length".to_owned(), body.len().to_string()),
    ];
    let decisions = Bare::start("bare-decisions", &Captured { status: 200, headers, body }, 1)?;
    let envoy = build.filter_envoy(decisions.addr(), app).api_key(key).set("/cache/ttl_seconds", json!(0)).start();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while envoy.counter("email_verdict.decision_syncs").unwrap_or(0) == 0 {
        ensure!(std::time::Instant::now() < deadline, "row 15: the decisions were not fetched\n{}", envoy.log_text());
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    // A decided name is blocked by the kept list (the stand-in's answer to a lookup is no verdict).
    let body = json!({ "email": "x@decided-99999.example" }).to_string();
    let probe = envoy.send(&signup("application/json", body.as_bytes()));
    ensure!(probe.status == 403, "row 15: a decided name was not blocked by the kept decisions\n{probe}");
    drop(decisions);
    Ok(envoy)
}

/// What the first error line of an Envoy log says (after its `[...]` prefixes), fit for a table cell.
fn first_error_line(log: &str) -> String {
    let line = log.lines().find(|l| l.contains("[critical]") || l.contains("[error]")).unwrap_or("see its log");
    let message = line.rsplit_once("] ").map_or(line, |(_, m)| m);
    message.chars().take(160).map(|c| if c == '|' { '/' } else { c }).collect()
}

/// The sidecar's `/ext_authz` answer to the bench's signup, as Envoy's check sends it (its MX
/// cached by a first check).
fn capture_ext_authz(sidecar: &Sidecar, key: &str) -> anyhow::Result<Captured> {
    let check = || ext_authz_check(sidecar, key);
    check()?;
    let r = check()?;
    ensure!(r.status == 200 && r.header("x-email-verdict") == Some("safe"), "POST /ext_authz/signup answered\n{r}");
    let mut answer = Captured::from_response(&r)?;
    // Per request, not part of what is compared.
    answer.headers.retain(|(n, _)| !n.eq_ignore_ascii_case("x-request-id"));
    Ok(answer)
}

fn ext_authz_check(sidecar: &Sidecar, key: &str) -> anyhow::Result<email_verdict_tests::Response> {
    Request::new("POST", "/ext_authz/signup")
        .header("Content-Type", "application/json")
        .header("x-email-verdict-key", key)
        .body(SIGNUP.as_bytes())
        .try_send(sidecar.addr())
        .context("POST /ext_authz/signup")
}

/// The cases of one side, by row (`None`: the build cannot run the row).
fn cases(s: &Setup, side: &Side, rows: &[usize], scripts: &Scripts) -> Vec<Option<Case>> {
    let (post, post_header) = (scripts.post, scripts.post_header);
    let sidecar_pid = side.sidecar.pid();
    let envoy = |row: usize, e: &Envoy, script| Case::new(ROWS[row], e.addr(), "/signup", script, vec![e.pid()]);
    let counting_pid = s.counting_sidecar.as_ref().map(|(c, _)| c.pid());
    let all = vec![
        Some(Case::new(ROWS[0], s.plain.addr(), "/", None, vec![s.plain.pid()])),
        Some(Case::new(ROWS[1], s.shipped.addr(), "/", None, vec![s.shipped.pid()])),
        Some(Case::new(ROWS[2], s.plain.addr(), "/signup", post, vec![s.plain.pid()])),
        Some(envoy(3, &s.shipped, post)),
        Some(envoy(4, &s.callout, post).service(vec![s.endpoint.pid()])),
        Some(Case::new(ROWS[5], s.authz.addr(), "/signup", post, vec![s.authz.pid()]).service(vec![s.endpoint.pid()])),
        Some(envoy(6, &s.in_header, post_header)),
        Some(envoy(7, &s.authz_bare, post).service(vec![s.authz_endpoint.pid()])),
        Some(envoy(8, &s.authz_sidecar, post).service(vec![sidecar_pid])),
        Some(envoy(9, &s.callout_sidecar, post).service(vec![sidecar_pid])),
        s.counting.as_ref().ok().map(|e| envoy(10, e, post).service(vec![sidecar_pid])),
        s.authz_counting.as_ref().ok().zip(counting_pid).map(|(e, pid)| envoy(11, e, post).service(vec![pid])),
        Some(Case::new(ROWS[12], s.buffered.addr(), "/signup", post, vec![s.buffered.pid()])),
        Some(envoy(13, &s.idle_filter, post)),
        Some(envoy(14, &s.sidecar_down, post)),
        s.protocols.as_ref().ok().map(|e| envoy(15, e, scripts.grpc)),
        s.protocols.as_ref().ok().map(|e| Case::new(ROWS[16], e.addr(), "/graphql", scripts.graphql, vec![e.pid()])),
        Some(Case::new(ROWS[17], s.plain.addr(), "/graphql", scripts.graphql, vec![s.plain.pid()])),
        s.shadow.as_ref().ok().map(|e| envoy(18, e, post)),
    ];
    let selected = |row: usize| rows.is_empty() || rows.contains(&(row + 1));
    let runs_row = |row: usize| selected(row) && (!side.filter_only || FILTER_ROWS.contains(&row));
    all.into_iter().enumerate().map(|(row, case)| case.filter(|_| runs_row(row))).collect()
}

pub fn run(ctx: &Ctx, dns: SocketAddr, sides: &[Side]) -> anyhow::Result<String> {
    eprintln!("4. Envoy, side by side");
    let setups = sides.iter().map(|side| start(ctx, dns, side)).collect::<anyhow::Result<Vec<_>>>()?;
    let post = write(ctx.dir.path(), "signup.lua", &post_script("application/json", SIGNUP, &[]))?;
    let header = [(EMAIL_HEADER, "ann@gmail.com")];
    let post_header = write(ctx.dir.path(), "signup-header.lua", &post_script("application/json", SIGNUP, &header))?;
    let grpc = write(ctx.dir.path(), "signup-grpc.lua", &post_script_bytes("application/grpc", &grpc_signup(), &[]))?;
    let graphql = write(ctx.dir.path(), "graphql.lua", &post_script("application/json", &graphql_query(), &[]))?;
    let scripts = Scripts {
        post: Some(post.as_path()),
        post_header: Some(post_header.as_path()),
        grpc: Some(grpc.as_path()),
        graphql: Some(graphql.as_path()),
    };
    let mut by_side: Vec<Vec<Option<Case>>> =
        setups.iter().zip(sides).map(|(s, side)| cases(s, side, &ctx.envoy_rows, &scripts)).collect();
    // Row by row, each side's run of it in turn: with a baseline, the builds alternate.
    let mut flat = Vec::new();
    let mut slots = Vec::new();
    for row in 0..ROWS.len() {
        for (i, cases) in by_side.iter_mut().enumerate() {
            if let Some(mut case) = cases[row].take() {
                if sides.len() > 1 {
                    case.name = format!("{} [{}]", case.name, sides[i].build.label);
                }
                flat.push(case);
                slots.push((i, row));
            }
        }
    }
    let flat_runs = ctx.alternate(&flat)?;
    let mut runs: Vec<Vec<Option<Run>>> = vec![vec![None; ROWS.len()]; sides.len()];
    for ((i, row), run) in slots.into_iter().zip(flat_runs) {
        runs[i][row] = Some(run);
    }
    let checks: Vec<String> =
        setups.iter().zip(&runs).map(|(s, r)| checks(s, r)).collect::<anyhow::Result<Vec<_>>>()?;
    let not_run = |i: usize, row: usize| match row {
        _ if !ctx.envoy_rows.is_empty() && !ctx.envoy_rows.contains(&(row + 1)) => {
            Some("not selected (--rows)".to_owned())
        }
        _ if sides[i].filter_only && !FILTER_ROWS.contains(&row) => {
            Some("no filter in this row: the first line's run".to_owned())
        }
        10 => setups[i].counting.as_ref().err().cloned(),
        11 => setups[i].authz_counting.as_ref().err().cloned(),
        15 | 16 => setups[i].protocols.as_ref().err().cloned(),
        18 => setups[i].shadow.as_ref().err().cloned(),
        _ => None,
    };
    let rows: Vec<String> = (0..ROWS.len())
        .map(|row| match &runs[0][row] {
            Some(r) => table_row(row, r, &runs[0]),
            None => format!(
                "| {} | {} | not run: {} | | | | | | | | |",
                row + 1,
                ROWS[row],
                not_run(0, row).unwrap_or_default()
            ),
        })
        .collect();
    let mut text = format!(
        "## 4. Envoy, side by side\n\n\
         Envoy 1 worker (`--concurrency 1`){pin}; wrk `-t1 -c{conns}`, best of {rounds} alternating {secs} s runs. \
         Signup body `{SIGNUP}` (a safe verdict: the request reaches the app). Callout and ext_authz call the same \
         endpoint (bare Pingora answering a cached sidecar lookup's bytes). Filter: {filter}.\n\n\
         | row | case | requests/s | p50 | p99 | errors | Envoy CPU / request | CPU vs baseline | ratio | target | verdict service CPU / request |\n\
         |---|---|---:|---:|---:|---|---:|---:|---:|---|---:|\n{}\n\n\
         Envoy CPU / request: user + system time of that Envoy process during the run over the requests answered, \
         the least of the rounds. The app and the callout endpoint are other processes, not counted there; the \
         verdict service's (bare server or sidecar) is the last column. Rows 8–12 run the shipped \
         `envoy/ext-authz.yaml` (path normalization, header removal) or the shipped filter against the same \
         signup, with the gateway's key on the unlimited `gateway` plan. Rows 11–12 count every signup \
         (`velocity` with limits no run reaches; row 11: the filter's `POST /api/v1/signups` beside the cached \
         verdict; row 12: the sidecar's `/ext_authz` with `--mailbox-secret`, a sidecar of its own). Row 13 \
         is a floor, no filter of ours: Envoy's own buffer filter holding the signup until its body is in and \
         the route adding the six headers a safe cached signup gets, what any filter that reads the body first \
         makes Envoy do (row 4 vs row 13: the filter's own cost above that floor). Row 14 runs the filter on the signup route with \
         no signup route in its configuration: what the filter's mere presence on a POST costs. Row 15: the \
         filter with the cache off after it fetched 100,000 decided names from a stand-in sidecar that then went \
         away (every callout refused, every signup judged by the kept decisions, then `failure_mode`). \
         Row 16: the cached signup sent as one gRPC message (`application/grpc`, a 5-byte frame, the address at \
         field 1, `email.proto_fields: [\"1\"]`) over HTTP/1.1 (wrk has no HTTP/2; the filter's reading is the \
         same). Rows 17–18: a GraphQL query of about 16 KB on a `graphql.paths` route (`operations: [signUp]`): \
         the filter holds the body, finds no signup operation and lets it through unread, against the same \
         request with no filter.\n\n\
         Filter counters: {}.\n",
        rows.join("\n"),
        checks[0],
        filter = sides[0].build.filter.describe(),
        pin = ctx.envoy_cpu.map(|c| format!(", pinned to CPU {c}")).unwrap_or_default(),
        conns = ctx.wrk.connections,
        rounds = ctx.rounds,
        secs = ctx.wrk.seconds,
    );
    if sides.len() > 1 {
        text.push_str(&side_by_side(sides, &runs, &checks, &not_run));
    }
    Ok(text)
}

/// The builds' rows beside each other, with this build's figures over the baseline's.
fn side_by_side(
    sides: &[Side],
    runs: &[Vec<Option<Run>>],
    checks: &[String],
    not_run: &dyn Fn(usize, usize) -> Option<String>,
) -> String {
    let mut lines = Vec::new();
    for row in 0..ROWS.len() {
        let new = runs[0][row].as_ref();
        for (i, side) in sides.iter().enumerate() {
            let label = &side.build.label;
            let Some(r) = runs[i][row].as_ref() else {
                let why = not_run(i, row).unwrap_or_default();
                lines.push(format!("| {} | {} | {label} | not run: {why} | | | | | | | | | |", row + 1, ROWS[row]));
                continue;
            };
            let within = RATIOS
                .iter()
                .filter(|(of, ..)| *of == row)
                .filter_map(|(_, base, _)| {
                    // A filter-only side's baseline rows are the first side's runs.
                    let base_run = runs[i][*base].as_ref().or(runs[0][*base].as_ref())?;
                    let ratio = r.rps / base_run.rps;
                    let target = match &side.build.filter {
                        Filter::Module(_) => MODULE_TARGETS
                            .iter()
                            .find(|(of, b, _)| *of == row && b == base)
                            .map(|(.., least)| format!(" (module target ≥ {least}: {})", met(ratio >= *least))),
                        Filter::Wasm(_) => None,
                    };
                    Some(format!("{ratio:.2} vs row {}{}", base + 1, target.unwrap_or_default()))
                })
                .collect::<Vec<_>>()
                .join("; ");
            let service = r.service_cpu_us.map_or_else(String::new, |us| format!("{us:.1} µs"));
            let cpu = r.cpu_us.map_or_else(|| "?".to_owned(), |us| format!("{us:.1} µs"));
            // The ratios on the other lines: the first line's figure over this line's.
            let ratios = match (i, new) {
                (0, _) | (_, None) => " | | ".to_owned(),
                (_, Some(n)) => format!(
                    "{:.2} | {} | {}",
                    n.rps / r.rps,
                    over(n.cpu_us, r.cpu_us),
                    over(n.service_cpu_us, r.service_cpu_us)
                ),
            };
            lines.push(format!(
                "| {} | {} | {label} | {} | {} | {} | {} | {cpu} | {service} | {within} | {ratios} |",
                row + 1,
                ROWS[row],
                count(r.rps),
                ms(r.p50_ms),
                ms(r.p99_ms),
                errors(r),
            ));
        }
    }
    let counters: Vec<String> = sides.iter().zip(checks).map(|(s, c)| format!("{}: {c}", s.build.label)).collect();
    let builds: Vec<String> = sides
        .iter()
        .map(|s| {
            format!(
                "{}: `{}`, {}, configuration from `{}`",
                s.build.label,
                s.build.sidecar_bin.display(),
                s.build.filter.describe(),
                s.build.tree.display()
            )
        })
        .collect();
    format!(
        "\n### 4b. The builds side by side\n\n\
         The same rows, each build with its own sidecar, filter and configuration files (another filter of the same \
         build shares its sidecar and runs only the rows with a filter); the builds' runs of a row alternate (the \
         first line's build, the next, next row; then the next round). Builds: {}.\n\n\
         | row | case | build | requests/s | p50 | p99 | errors | Envoy CPU / request | verdict service CPU / request | ratio within the build | first / this: requests/s | first / this: Envoy CPU | first / this: service CPU |\n\
         |---|---|---|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|\n{}\n\n\
         first / this: the first line's figure over this line's (requests/s above 1: the first is faster; CPU \
         above 1: the first takes more CPU per request). Rows whose Envoy configuration is the same for both \
         builds (1, 3, 6) show the run's noise.\n\n\
         Filter counters: {}.\n",
        builds.join("; "),
        lines.join("\n"),
        counters.join("; ")
    )
}

fn over(new: Option<f64>, old: Option<f64>) -> String {
    new.zip(old).filter(|(_, o)| *o > 0.0).map_or_else(String::new, |(n, o)| format!("{:.2}", n / o))
}

fn table_row(i: usize, r: &Run, runs: &[Option<Run>]) -> String {
    let name = ROWS[i];
    let service = r.service_cpu_us.map_or_else(String::new, |us| format!("{us:.1} µs"));
    let parts: Vec<(String, String, String)> = RATIOS
        .iter()
        .filter(|(row, ..)| *row == i)
        .filter_map(|(_, base, least)| Some(comparison(r, runs[*base].as_ref()?, *base, *least)))
        .collect();
    if parts.is_empty() {
        return format!("| {} | {name} | {} | | | | {service} |", i + 1, cells(r));
    }
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

mod checks;
use checks::checks;
