//! Section 8: Envoy's resident memory with no filter, with the Wasm filter and with the dynamic
//! module, at each worker count (`--concurrency`): after start, after a warm-up of signups that
//! reached every worker, and (filters) after 100,000 decided names were synced and read by every
//! worker. Then the line through the worker counts (least squares): the cost of one worker more,
//! and a larger count projected from it.
//!
//! The shipped plugin configuration with signup counts on (`envoy/plugin-config.json` as it is,
//! `decision_sync_seconds: 1` so that a sync comes within the second: the period changes no
//! memory), against a sidecar of this section's own. Its operator blocklist (`--blocklist`) is the
//! decision list the filter syncs (`GET /api/v1/decisions`): one name while an Envoy starts and
//! warms up, then 100,000 names (written, then `SIGHUP`), which the filter fetches; its log says
//! how many names it stored. A worker reads the decisions only for a signup the sidecar gave no
//! verdict for, so the Envoy's key is then revoked (`/admin/v1/keys/{id}/revoke`): every signup
//! of the second warm-up gets a 401 and is judged by the kept decisions (a decided name: 403,
//! counted in `email_verdict.local_decisions`). A third warm-up signs up with a name on the
//! embedded strong lists and in no decision, so that every VM reads them (the fallback's path:
//! 403, `local_decisions` again). Every warm-up is checked to have reached every
//! worker (Envoy's per-worker listener counters).
//!
//! Two more rows break the Wasm filter's cost down: an empty proxy-wasm module
//! (`bench/fixtures/empty-wasm`, built here for wasm32-wasip1) in the filter's place, and the
//! filter with `local_fallback: false` (the strong lists never inflated).

mod layout;
mod smaps;
mod table;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{Context, bail, ensure};
use email_verdict_tests::{Envoy, Request, Sidecar, TestDir, workspace_root};
use serde_json::json;

use crate::GATEWAY_PLAN;
use crate::bare::{Bare, write};
use crate::build::Build;
use crate::capture::Captured;
use crate::envoy::BenchEnvoy;
use crate::wrk::{Wrk, post_script};
use table::{Phase, Reading, Row};

/// The decided names of the last phase (the sidecar's bound per list).
const DECIDED: usize = 100_000;
/// How long each warm-up sends signups.
const WARM_SECONDS: u64 = 2;
/// A decided name (the warm-up of the last phase signs up with it: 403 by the kept decisions).
const DECIDED_SIGNUP: &str = r#"{"email":"ann@envmem-99999.example.com","name":"Test User"}"#;
const SIGNUP: &str = r#"{"email":"ann@gmail.com","name":"Test User"}"#;
/// A name on the embedded strong lists and in no decision (the last warm-up: 403 by the lists).
const LISTED_SIGNUP: &str = r#"{"email":"ann@mailinator.com","name":"Test User"}"#;

/// What one row of the section runs.
#[derive(Clone)]
pub enum Kind {
    /// `bench/envoy/no-filter.template.yaml`.
    NoFilter,
    /// A build's filter (Wasm or dynamic module), shipped configuration.
    Filter(Build),
    /// The empty proxy-wasm module where the filter goes.
    EmptyWasm,
    /// The Wasm filter with `local_fallback: false`.
    NoStrongLists(Build),
    /// A build's filter, Envoy returning its allocator's free memory to the system every second
    /// ([`RELEASE`]).
    Released(Build),
}

/// Envoy's bootstrap setting that makes it return free memory of its allocator (tcmalloc) to the
/// system: up to 100 MiB every second (`memory_allocator_manager`; off by default).
const RELEASE: &str = "memory_allocator_manager:\n  bytes_to_release: 104857600\n  memory_release_interval: 1s\n";

impl Kind {
    fn label(&self) -> String {
        match self {
            Kind::NoFilter => "no filter".into(),
            Kind::Filter(b) => filter_name(b).into(),
            Kind::EmptyWasm => "(breakdown) an empty proxy-wasm module in the filter's place".into(),
            Kind::NoStrongLists(_) => "(breakdown) Wasm filter, `local_fallback: false`".into(),
            Kind::Released(b) => format!("(release) {}, Envoy returning free memory every second", filter_name(b)),
        }
    }

    fn syncs_decisions(&self) -> bool {
        matches!(self, Kind::Filter(_) | Kind::Released(_))
    }
}

fn filter_name(build: &Build) -> &'static str {
    match build.filter {
        crate::build::Filter::Wasm(_) => "Wasm filter",
        crate::build::Filter::Module(_) => "dynamic module",
    }
}

/// The sidecar, the app and the scripts every row shares.
struct Fixture {
    sidecar: Sidecar,
    app: Bare,
    blocklist: PathBuf,
    /// Names on the blocklist now.
    listed: usize,
    signup: PathBuf,
    decided: PathBuf,
    listed_signup: PathBuf,
    empty_wasm: Result<PathBuf, String>,
    _dir: TestDir,
}

/// The Envoy of one reading.
enum Running {
    Plain(Box<BenchEnvoy>),
    Filter(Box<Envoy>),
}

impl Running {
    fn pid(&self) -> u32 {
        match self {
            Running::Plain(e) => e.pid(),
            Running::Filter(e) => e.pid(),
        }
    }
    fn addr(&self) -> SocketAddr {
        match self {
            Running::Plain(e) => e.addr(),
            Running::Filter(e) => e.addr(),
        }
    }
    fn admin(&self) -> SocketAddr {
        match self {
            Running::Plain(e) => e.admin_addr(),
            Running::Filter(e) => e.admin_addr(),
        }
    }
}

/// Runs the section for `kinds` at each of `workers`; `project`: the worker count projected.
/// `command`: how to run this section alone with the same settings (printed with it).
pub fn run(dns: SocketAddr, kinds: &[Kind], workers: &[u32], project: u32, command: &str) -> anyhow::Result<String> {
    eprintln!("8. Envoy's memory");
    let load_before = load_average();
    let started = Instant::now();
    let mut fx = Fixture::start(dns, kinds.iter().any(|k| matches!(k, Kind::EmptyWasm)))?;
    let mut rows = Vec::new();
    for kind in kinds {
        let mut row = Row { label: kind.label(), ..Row::default() };
        for &n in workers {
            eprintln!("  {} at {n} worker(s)", row.label);
            if let Err(e) = measure(&mut fx, kind, n, &mut row) {
                row.notes.push(format!("{n} worker(s): {e:#}"));
            }
        }
        rows.push(row);
    }
    // Pss is RSS less the pages shared with other processes: printed only as the largest gap.
    let shared = rows.iter().flat_map(|r| r.readings.values()).filter_map(|r| Some(r.rss.saturating_sub(r.pss?))).max();
    let notes: Vec<String> = rows
        .iter()
        .flat_map(|r| r.notes.iter().map(move |n| format!("- {}: {}", r.label, n.replace('\n', " "))))
        .collect();
    let wasm_size = kinds.iter().find_map(|k| match k {
        Kind::Filter(b) => matches!(b.filter, crate::build::Filter::Wasm(_)).then(|| file_size(&b.filter)),
        _ => None,
    });
    let module_size = kinds.iter().find_map(|k| match k {
        Kind::Filter(b) => matches!(b.filter, crate::build::Filter::Module(_)).then(|| file_size(&b.filter)),
        _ => None,
    });
    let empty_size = fx.empty_wasm.as_ref().ok().and_then(|p| std::fs::metadata(p).ok()).map(|m| m.len());
    Ok(format!(
        "## 8. Envoy's memory\n\n`{command}` (after `make bench` built everything, or `scripts/bench.sh --sections 8 --keys 1`).\n\n\
         Resident memory (`VmRSS` of `/proc/<pid>/status`, MiB) of one Envoy at each worker count \
         (`--concurrency`), the shipped plugin configuration (signup counts on; `decision_sync_seconds: 1`) \
         against a sidecar of its own. Warm-up: {WARM_SECONDS} s of `POST /signup` from wrk with 16 connections \
         a worker, checked to have reached every worker. +100,000 decided names: the sidecar's blocklist grown \
         to 100,000 names, synced by the filter (its log says so; a reading), then the Envoy's key revoked so that every \
         signup of a second warm-up is judged by the kept decisions (403, `local_decisions`). The last three \
         columns: the least-squares line over the worker counts (MiB a worker, the line at 0 workers) and {project} \
         workers from it (projected, not measured). Files: the Wasm filter {}, the dynamic module {}, the empty \
         module {}. \
         Load average {load_before} before, {} after; {:.0} s. `Pss` (`/proc/<pid>/smaps_rollup`) was at most \
         {} MiB below `VmRSS` in any reading.\n\n{}\n\n\
         Anonymous memory (`RssAnon`: the heap, the Wasm VMs' memory; the rest of RSS is the Envoy binary's \
         and the modules' mapped file pages):\n\n{}\n\n\
         Peak resident memory since start (`VmHWM`), what a memory limit must allow:\n\n{}\n\n\
         Envoy's allocator (admin `/memory`, `allocated`: in use; the dynamic module's Rust code allocates \
         through it too; V8's own mappings, such as the Wasm VMs' linear memory, are outside it):\n\n{}\n\n\
         The allocator's heap (`heap_size`: in use, plus freed memory it keeps):\n\n{}\n\n\
         By mapping (`/proc/<pid>/smaps`, resident MiB): each Wasm VM's linear memory is the \
         read-write mapping V8 puts before an 8 GiB guard region, so it is read apart from the rest:\n\n{}\n\n\
         Each VM's linear memory (resident/mapped KiB, smallest first; the number of VMs at each worker \
         count first):\n\n{}\n\n\
         The modules' static layout (from their sections: what every VM's memory holds before it runs):\n\n\
         | module | file bytes | initial memory (64 KiB pages) | stack (initial stack pointer) | data |\n\
         |---|---:|---:|---:|---:|\n{}\n{}",
        wasm_size
            .flatten()
            .map_or_else(|| "not measured".to_owned(), |b| format!("{} bytes", crate::report::count(b as f64))),
        module_size
            .flatten()
            .map_or_else(|| "not measured".to_owned(), |b| format!("{} bytes", crate::report::count(b as f64))),
        empty_size.map_or_else(|| "not measured".to_owned(), |b| format!("{} bytes", crate::report::count(b as f64))),
        load_average(),
        started.elapsed().as_secs_f64(),
        shared.map_or_else(|| "?".to_owned(), |k| format!("{:.1}", k as f64 / 1024.0)),
        table::table(&rows, workers, project, |r| Some(r.rss)),
        table::table(&rows, workers, project, |r| Some(r.anon)),
        table::table(&rows, workers, project, |r| Some(r.peak)),
        table::table(&rows, workers, project, |r| r.allocated),
        table::table(&rows, workers, project, |r| r.heap),
        smaps::parts_table(&rows, workers),
        smaps::vms_table(&rows, workers),
        layouts(kinds, &fx),
        if notes.is_empty() { String::new() } else { format!("\nNot measured:\n{}\n", notes.join("\n")) },
    ))
}

/// One Envoy of `kind` with `workers` workers, its readings added to `row`.
fn measure(fx: &mut Fixture, kind: &Kind, workers: u32, row: &mut Row) -> anyhow::Result<()> {
    fx.list(1)?;
    let (key_id, key) = gateway_key(&fx.sidecar)?;
    let envoy = fx.envoy(kind, workers, &key)?;
    let mut read = |phase: Phase, envoy: &Running| -> anyhow::Result<()> {
        let reading = Reading::of(envoy.pid()).context("the Envoy's /proc files are gone")?;
        let memory = Request::get("/memory").try_send(envoy.admin()).ok().filter(|r| r.status == 200);
        let reading = match memory {
            Some(r) => reading.with_allocator(&r.json()),
            None => reading,
        };
        row.readings.insert((phase, workers), reading);
        Ok(())
    };
    std::thread::sleep(Duration::from_millis(500));
    read(Phase::Started, &envoy)?;
    warm_up(&envoy, workers, &fx.signup, false)?;
    read(Phase::WarmedUp, &envoy)?;
    if !kind.syncs_decisions() {
        return Ok(());
    }
    let Running::Filter(filter) = &envoy else { bail!("a filter row without a filter") };
    fx.list(DECIDED)?;
    let stored = format!("{DECIDED} decided names from the sidecar");
    wait_for(Duration::from_secs(30), || filter.log_text().contains(&stored))
        .with_context(|| format!("the filter did not log \"{stored}\":\n{}", tail(&filter.log_text())))?;
    // The stored list's own cost: the sidecar answers, so no worker has needed the decisions yet.
    std::thread::sleep(Duration::from_millis(500));
    read(Phase::Synced, &envoy)?;
    revoke(&fx.sidecar, &key_id)?;
    // The sidecar honours a revocation within its key cache's freshness (500 ms).
    std::thread::sleep(Duration::from_millis(800));
    let before = filter.counter("email_verdict.local_decisions").unwrap_or(0);
    warm_up(&envoy, workers, &fx.decided, true)?;
    let decided = filter.counter("email_verdict.local_decisions").unwrap_or(0).saturating_sub(before);
    ensure!(decided > 0, "no signup of the second warm-up was judged by the kept decisions");
    read(Phase::Decisions, &envoy)?;
    // A name no decision covers, on the strong lists: every worker's VM reads them.
    let before = filter.counter("email_verdict.local_decisions").unwrap_or(0);
    warm_up(&envoy, workers, &fx.listed_signup, true)?;
    let listed = filter.counter("email_verdict.local_decisions").unwrap_or(0).saturating_sub(before);
    ensure!(listed > 0, "no signup of the third warm-up was judged by the strong lists");
    read(Phase::Lists, &envoy)
}

/// wrk sends signups with 16 connections a worker for [`WARM_SECONDS`]; every worker must have
/// accepted some, and every answer be 2xx (`refused`: 403, the decided name).
fn warm_up(envoy: &Running, workers: u32, script: &Path, refused: bool) -> anyhow::Result<()> {
    let before = per_worker_connections(envoy.admin(), workers)?;
    let wrk = Wrk { seconds: WARM_SECONDS, connections: 16 * workers, cpu: None };
    let run = wrk.run(envoy.addr(), "/signup", Some(script))?;
    let after = per_worker_connections(envoy.admin(), workers)?;
    let idle: Vec<usize> = (0..after.len()).filter(|&w| after[w] <= before[w]).collect();
    ensure!(idle.is_empty(), "workers {idle:?} accepted no connection during the warm-up ({after:?})");
    let expected = if refused { run.non_2xx == run.requests } else { run.non_2xx == 0 };
    ensure!(
        run.requests > 0 && run.socket_errors == 0 && expected,
        "warm-up: {} requests, {} not 2xx, {} socket errors",
        run.requests,
        run.non_2xx,
        run.socket_errors
    );
    Ok(())
}

/// `listener.<address>.worker_<i>.downstream_cx_total` of the signup listener, by worker.
fn per_worker_connections(admin: SocketAddr, workers: u32) -> anyhow::Result<Vec<u64>> {
    let r = Request::get("/stats?filter=worker_.*downstream_cx_total").try_send(admin)?;
    ensure!(r.status == 200, "GET /stats answered {}", r.status);
    let mut counts = vec![0; workers as usize];
    for line in r.text().lines() {
        let Some((name, value)) = line.split_once(": ") else { continue };
        let worker = name.split('.').find_map(|p| p.strip_prefix("worker_")).and_then(|w| w.parse::<usize>().ok());
        if let (Some(w), Ok(v)) = (worker, value.trim().parse::<u64>())
            && name.starts_with("listener.")
            && w < counts.len()
        {
            counts[w] += v;
        }
    }
    Ok(counts)
}

impl Fixture {
    fn start(dns: SocketAddr, empty_wasm: bool) -> anyhow::Result<Fixture> {
        let dir = TestDir::new("bench-envmem");
        let blocklist = write(dir.path(), "blocklist.txt", &names(1))?;
        let list = blocklist.display().to_string();
        let sidecar = Sidecar::builder()
            .dns(dns)
            .settings(GATEWAY_PLAN)
            .args(&["--threads", "2", "--blocklist", &list, "--list-max-shrink", "1"])
            .start();
        let app = Bare::start("bare-app", &Captured::ok(), 1)?;
        let signup = write(dir.path(), "signup.lua", &post_script("application/json", SIGNUP, &[]))?;
        let decided = write(dir.path(), "decided.lua", &post_script("application/json", DECIDED_SIGNUP, &[]))?;
        let listed_signup = write(dir.path(), "listed.lua", &post_script("application/json", LISTED_SIGNUP, &[]))?;
        let empty_wasm = match empty_wasm {
            true => build_empty_wasm().map_err(|e| format!("{e:#}")),
            false => Err("not measured (no Wasm filter in --filters)".to_owned()),
        };
        Ok(Fixture { sidecar, app, blocklist, listed: 1, signup, decided, listed_signup, empty_wasm, _dir: dir })
    }

    /// The sidecar's blocklist holds `n` names, and its decisions endpoint says so.
    fn list(&mut self, n: usize) -> anyhow::Result<()> {
        if self.listed == n {
            return Ok(());
        }
        std::fs::write(&self.blocklist, names(n))?;
        let status = Command::new("kill").args(["-HUP", &self.sidecar.pid().to_string()]).status()?;
        ensure!(status.success(), "kill -HUP the sidecar failed");
        let (_, key) = gateway_key(&self.sidecar)?;
        let decisions = Request::get("/api/v1/decisions").header("authorization", &format!("Bearer {key}"));
        let count = || {
            let r = decisions.clone().timeout(Duration::from_secs(10)).try_send(self.sidecar.addr()).ok()?;
            (r.status == 200).then(|| r.json()["operator"]["block"].as_array().map_or(0, Vec::len))
        };
        wait_for(Duration::from_secs(30), || count() == Some(n))
            .with_context(|| format!("the sidecar's decisions do not hold the {n} names (they hold {:?})", count()))?;
        self.listed = n;
        Ok(())
    }

    fn envoy(&self, kind: &Kind, workers: u32, key: &str) -> anyhow::Result<Running> {
        let (sidecar, app) = (self.sidecar.addr(), self.app.addr());
        let shipped = |build: &Build| {
            build
                .filter_envoy(sidecar, app)
                .counting()
                .api_key(key)
                .set("/decision_sync_seconds", json!(1))
                .concurrency(workers)
        };
        let envoy = match kind {
            Kind::NoFilter => {
                let app_port = ("APP_PORT", app.port().to_string());
                return Ok(Running::Plain(Box::new(BenchEnvoy::start_workers("no-filter", &[app_port], workers)?)));
            }
            Kind::Filter(build) => shipped(build),
            Kind::NoStrongLists(build) => shipped(build).set("/local_fallback", json!(false)),
            Kind::Released(build) => {
                shipped(build).edit_config("\nstatic_resources:", &format!("\n{RELEASE}static_resources:"))
            }
            Kind::EmptyWasm => {
                let wasm = self.empty_wasm.as_ref().map_err(|e| anyhow::anyhow!("no empty module: {e}"))?;
                shipped(&Build::current()).wasm(wasm)
            }
        };
        let envoy =
            envoy.try_start().map_err(|f| anyhow::anyhow!("Envoy did not start: {}\n{}", f.reason, tail(&f.log)))?;
        Ok(Running::Filter(Box::new(envoy)))
    }
}

/// The blocklist's text: `n` names under `example.com`, the one the decided signup uses last.
fn names(n: usize) -> String {
    (100_000 - n..100_000).map(|i| format!("envmem-{i}.example.com\n")).collect()
}

/// A new key on the `gateway` plan: (id, key).
fn gateway_key(sidecar: &Sidecar) -> anyhow::Result<(String, String)> {
    let body = json!({ "plan": "gateway", "name": "bench-envmem" }).to_string();
    let r = Request::new("POST", "/admin/v1/keys")
        .header("Content-Type", "application/json")
        .body(body.as_bytes())
        .try_send(sidecar.admin_addr())?;
    ensure!(r.status == 201, "POST /admin/v1/keys answered\n{r}");
    let v = r.json();
    let field = |name: &str| v[name].as_str().map(str::to_owned).with_context(|| format!("no {name} in\n{r}"));
    Ok((field("id")?, field("key")?))
}

fn revoke(sidecar: &Sidecar, id: &str) -> anyhow::Result<()> {
    let r = Request::new("POST", &format!("/admin/v1/keys/{id}/revoke")).try_send(sidecar.admin_addr())?;
    ensure!(r.status == 200, "revoking the Envoy's key answered\n{r}");
    Ok(())
}

/// Builds `bench/fixtures/empty-wasm` (offline, its own lock file) into `target/bench/empty-wasm`.
fn build_empty_wasm() -> anyhow::Result<PathBuf> {
    let root = workspace_root();
    let target = root.join("target/bench/empty-wasm");
    let out = Command::new("cargo")
        .args(["build", "--offline", "--release", "--quiet", "--target", "wasm32-wasip1", "--manifest-path"])
        .arg(root.join("bench/fixtures/empty-wasm/Cargo.toml"))
        .arg("--target-dir")
        .arg(&target)
        .output()
        .context("cargo")?;
    ensure!(out.status.success(), "building the empty module failed: {}", String::from_utf8_lossy(&out.stderr));
    Ok(target.join("wasm32-wasip1/release/bench_empty_wasm.wasm"))
}

/// The static layout of the Wasm filter and the empty module, a table row each.
fn layouts(kinds: &[Kind], fx: &Fixture) -> String {
    let mut wasm: Vec<(&str, PathBuf)> = kinds
        .iter()
        .find_map(|k| match k {
            Kind::Filter(b) => match &b.filter {
                crate::build::Filter::Wasm(p) => Some(("the Wasm filter", p.clone())),
                crate::build::Filter::Module(_) => None,
            },
            _ => None,
        })
        .into_iter()
        .collect();
    if let Ok(p) = &fx.empty_wasm {
        wasm.push(("the empty module", p.clone()));
    }
    let rows: Vec<String> = wasm
        .iter()
        .map(|(name, path)| match layout::Layout::read(path) {
            Ok(l) => layout::row(name, std::fs::metadata(path).map_or(0, |m| m.len()), &l),
            Err(e) => format!("| {name} | not read: {e:#} | | | |"),
        })
        .collect();
    rows.join("\n")
}

fn file_size(filter: &crate::build::Filter) -> Option<u64> {
    let (crate::build::Filter::Wasm(p) | crate::build::Filter::Module(p)) = filter;
    std::fs::metadata(p).ok().map(|m| m.len())
}

fn wait_for(limit: Duration, mut done: impl FnMut() -> bool) -> anyhow::Result<()> {
    let deadline = Instant::now() + limit;
    while !done() {
        if Instant::now() > deadline {
            bail!("not within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    Ok(())
}

fn load_average() -> String {
    let text = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    text.split_whitespace().take(3).collect::<Vec<_>>().join(" ")
}

/// The last lines of a log, for an error message.
fn tail(log: &str) -> String {
    let lines: Vec<&str> = log.lines().collect();
    lines[lines.len().saturating_sub(20)..].join("\n")
}
