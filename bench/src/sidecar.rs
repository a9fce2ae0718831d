//! Section 2: cached lookups with valid keys, the sidecar against a bare Pingora server answering
//! the same bytes, under the same wrk script (rotating over the keys).

use anyhow::{Context, bail};
use email_verdict_tests::{Request, Sidecar, api_target};

use crate::bare::{Bare, write};
use crate::capture::Captured;
use crate::report::{cells, count, cpu_ratio, met};
use crate::wrk::rotating_get_script;
use crate::{Case, Ctx};

/// The sidecar must reach this share of the bare server's requests per second (issue 46: the
/// store's own CPU counted, on this machine's two cores).
const TARGET: f64 = 0.5;

/// One sidecar under test, with the keys (in its own state store) the load rotates over.
pub struct Subject<'a> {
    pub label: String,
    pub sidecar: &'a Sidecar,
    pub keys: &'a [String],
    /// The processes that serve it: the sidecar, and its Redis when it has one.
    pub pids: Vec<u32>,
    /// Another build's sidecar (`--baseline`) compared with the subject of this index: its row
    /// also gives that subject's requests/s and CPU per request over its own.
    pub versus: Option<usize>,
}

/// A cached lookup of `domain`: asked twice, the second answer must say `cached: true`.
pub fn capture_cached(subject: &Subject, domain: &str) -> anyhow::Result<Captured> {
    let target = api_target(domain, &subject.keys[0]);
    let _ = Request::get(&target).try_send(subject.sidecar.addr())?;
    let r = Request::get(&target).try_send(subject.sidecar.addr())?;
    if r.status != 200 || r.json()["result"]["cached"] != serde_json::Value::Bool(true) {
        bail!("GET {domain}: expected a cached 200 answer, got\n{r}");
    }
    Captured::from_response(&r)
}

/// Runs the comparison for each domain: the bare server answers the first subject's capture.
/// Returns the section and the capture of the first domain.
pub fn run(ctx: &Ctx, subjects: &[Subject], domains: &[&str]) -> anyhow::Result<(String, Captured)> {
    let mut rows = Vec::new();
    let mut first = None;
    // Every answer is captured before any load: right after a load, the keys' burst windows
    // are full and a capture would get 429.
    let mut captures = Vec::new();
    for domain in domains {
        captures.push(capture_cached(&subjects[0], domain)?);
        for s in &subjects[1..] {
            capture_cached(s, domain)?;
        }
    }
    for (domain, capture) in domains.iter().zip(captures) {
        eprintln!("2. sidecar, cached lookups of {domain}");
        let bare = Bare::start(&format!("bare-{domain}"), &capture, ctx.server_threads)?;
        let bare_script = script(ctx, domain, "bare", subjects[0].keys)?;
        let mut cases =
            vec![Case::new("bare Pingora, same bytes", bare.addr(), "/", Some(&bare_script), vec![bare.pid()])];
        for s in subjects {
            let script = script(ctx, domain, &s.label, s.keys)?;
            cases.push(Case::new(&s.label, s.sidecar.addr(), "/", Some(&script), s.pids.clone()));
        }
        let runs = ctx.alternate(&cases)?;
        let base = &runs[0];
        rows.push(format!("| `{domain}` | {} | {} | | | |", cases[0].name, cells(base)));
        for (i, (Case { name: label, .. }, ours)) in cases.iter().zip(&runs).enumerate().skip(1) {
            let ratio = ours.rps / base.rps;
            let ok = ratio >= TARGET && ours.clean() && base.clean();
            let cpu = cpu_ratio(ours, base);
            let versus = subjects[i - 1].versus.map_or_else(String::new, |j| {
                let new = &runs[j + 1];
                format!(" (new / old: {:.2} requests/s, {} CPU)", new.rps / ours.rps, cpu_ratio(new, ours))
            });
            rows.push(format!("| `{domain}` | {label}{versus} | {} | {cpu} | {ratio:.2} | {} |", cells(ours), met(ok)));
        }
        first.get_or_insert(capture);
    }
    let capture = first.context("no domain given")?;
    let logged: Vec<String> = subjects.iter().map(|s| format!("{}: {}", s.label, refusals(s.sidecar))).collect();
    let calls: Vec<String> = subjects.iter().map(|s| format!("{}: {}", s.label, store_calls(s.sidecar))).collect();
    let section = format!(
        "## 2. Sidecar: cached lookups with a valid key\n\n\
         `GET /api/v1/domain/<domain>?key=<key>` over {keys} pro keys in turn (one key admits 50 requests a second), \
         {threads} server threads each; body {bytes} bytes. Best of {rounds} alternating {secs} s runs, \
         `wrk -t1 -c{conns}`{pin}.\n\n\
         | domain | server | requests/s | p50 | p99 | errors | server CPU / request | CPU vs bare | ratio to bare | target ≥ {TARGET} |\n\
         |---|---|---:|---:|---:|---|---:|---:|---:|---|\n{}\n\n\
         Server CPU / request: user + system time of the serving processes (for the Redis sidecar, \
         redis-server too) during the run, over the requests answered; the least of the rounds.\n\n\
         Lookups not answered 200, from the sidecars' own logs (whole section): {}.\n\n\
         Lease store calls per lookup (whole section, the sidecar's `/metrics` over its logged lookups): {}.\n",
        rows.join("\n"),
        logged.join("; "),
        calls.join("; "),
        keys = count(subjects[0].keys.len() as f64),
        threads = ctx.server_threads,
        bytes = capture.body.len(),
        rounds = ctx.rounds,
        secs = ctx.wrk.seconds,
        conns = ctx.wrk.connections,
        pin = ctx.wrk.cpu.map(|c| format!(" pinned to CPU {c}")).unwrap_or_default(),
    );
    Ok((section, capture))
}

/// The wrk script for `domain` over `keys`.
fn script(ctx: &Ctx, domain: &str, label: &str, keys: &[String]) -> anyhow::Result<std::path::PathBuf> {
    let paths: Vec<String> = keys.iter().map(|k| api_target(domain, k)).collect();
    let name: String = label.chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '-' }).collect();
    write(ctx.dir.path(), &format!("lookup-{domain}-{name}.lua"), &rotating_get_script(&paths))
}

/// The lookups a sidecar logged with a status other than 200, counted by status and code.
fn refusals(sidecar: &Sidecar) -> String {
    let mut counts: std::collections::BTreeMap<String, usize> = Default::default();
    for line in sidecar.stderr_text().lines().filter(|l| l.contains("route=\"lookup\"")) {
        let field = |name: &str| line.split_whitespace().find_map(|w| w.strip_prefix(name)).unwrap_or("");
        let status = field("status=");
        if status != "200" {
            *counts.entry(format!("{status} {}", field("code=").trim_matches('"'))).or_default() += 1;
        }
    }
    if counts.is_empty() {
        return "none".to_owned();
    }
    counts.iter().map(|(k, n)| format!("{n} × {k}")).collect::<Vec<_>>().join(", ")
}

/// The lease calls and give-backs a sidecar made to its store per lookup it logged, from its
/// `/metrics` (a baseline without lease metrics says so).
fn store_calls(sidecar: &Sidecar) -> String {
    let lookups = sidecar.stderr_text().lines().filter(|l| l.contains("route=\"lookup\"")).count();
    let Ok(metrics) = Request::get("/metrics").try_send(sidecar.admin_addr()) else {
        return "no /metrics".to_owned();
    };
    let calls = |kind: &str| -> f64 {
        let prefix = format!("email_verdict_lease_store_calls_total{{kind=\"{kind}\"");
        metrics
            .text()
            .lines()
            .filter(|l| l.starts_with(&prefix))
            .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
            .sum()
    };
    if lookups == 0 {
        return "no lookups".to_owned();
    }
    if !metrics.text().contains("email_verdict_lease_store_calls_total") {
        return "no lease metrics (a build before leases)".to_owned();
    }
    let per = |kind| calls(kind) / lookups as f64;
    format!("{:.3} lease, {:.3} give-back", per("lease"), per("give_back"))
}
