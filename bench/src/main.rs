//! `email-verdict-bench`: sections 2–8 of `make bench` (section 1, criterion, runs before it and
//! leaves its table in `target/bench/classify.md`). Prints the results and writes them to
//! `target/bench/results.md`. Needs the release sidecar, the filter (`make filter`), NSD, Envoy
//! and wrk; `make bench` provides them.

use std::path::PathBuf;

use anyhow::Context;
use clap::Parser;
use email_verdict_bench::build::Build;
use email_verdict_bench::capture::Captured;
use email_verdict_bench::report::Report;
use email_verdict_bench::sidecar::Subject;
use email_verdict_bench::wrk::Wrk;
use email_verdict_bench::{Ctx, GATEWAY_PLAN, cold, envmem, flood, footprint, gateway, keys, sidecar};
use email_verdict_tests::{DnsCounter, Nsd, Redis, Sidecar, TestDir, workspace_root};

#[derive(Parser)]
struct Args {
    /// Seconds per wrk run.
    #[arg(long, default_value_t = 10)]
    seconds: u64,
    /// Runs per case (alternating with its baseline); the best counts.
    #[arg(long, default_value_t = 2)]
    rounds: usize,
    /// wrk connections.
    #[arg(long, default_value_t = 32)]
    connections: u32,
    /// Pro keys the lookup load rotates over (each admits 50 requests a second, so N keys admit
    /// at most 50 × N requests a second in all).
    #[arg(long, default_value_t = 2000)]
    keys: usize,
    /// The sidecar's --threads (and the bare server's).
    #[arg(long, default_value_t = 2)]
    server_threads: usize,
    /// Where the results go (also printed).
    #[arg(long)]
    out: Option<PathBuf>,
    /// Sections to run, of 2 (cached lookups), 3 (cold lookups), 4 (Envoy), 6 (bulk check
    /// against dnsperf), 7 (cached lookups during a new-name flood), 8 (Envoy's memory); 5
    /// (footprint) always.
    #[arg(long, value_delimiter = ',', default_values_t = [2, 3, 4, 6, 7, 8])]
    sections: Vec<u8>,
    /// Section 8's worker counts (`--concurrency`), each measured.
    #[arg(long, value_delimiter = ',', default_values_t = [1, 2, 4])]
    memory_workers: Vec<u32>,
    /// Section 8: the worker count projected from the line through the measured ones.
    #[arg(long, default_value_t = 8)]
    memory_project: u32,
    /// Review queue bounds of section 7 (each filled before its flood).
    #[arg(long, value_delimiter = ',', default_values_t = [10_000, 1_000_000])]
    flood_queues: Vec<usize>,
    /// New names a second of section 7's flood.
    #[arg(long, default_value_t = 500)]
    flood_rate: u32,
    /// Distinct domains of section 6.
    #[arg(long, default_value_t = 100_000)]
    bulk_domains: usize,
    /// An older build to measure beside this one (`make bench BASELINE=DIR`): a checkout after
    /// `make build filter`, or what `scripts/baseline.sh COMMIT` prepares. Section 4 runs every
    /// row for both builds, alternating, each with its own configuration files, and adds a table
    /// of both builds' rows with their ratios.
    #[arg(long, value_name = "DIR")]
    baseline: Option<PathBuf>,
    /// The filter builds section 4 runs, each beside the others case by case: `wasm` (`make
    /// filter`), `module` (the dynamic module, `make module`). The first gives table 4; with more,
    /// table 4b has every build's rows and their ratios.
    #[arg(long, value_delimiter = ',', default_values_t = [FilterArg::Wasm, FilterArg::Module])]
    filters: Vec<FilterArg>,
    /// Only these rows of section 4 (numbered as in its table; default: every row). The rows
    /// others are compared with must be among them for their ratios.
    #[arg(long, value_delimiter = ',')]
    rows: Vec<usize>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum FilterArg {
    Wasm,
    Module,
}

impl std::fmt::Display for FilterArg {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            FilterArg::Wasm => "wasm",
            FilterArg::Module => "module",
        })
    }
}

impl FilterArg {
    fn build(self) -> Build {
        match self {
            FilterArg::Wasm => Build::current(),
            FilterArg::Module => Build::current_module(),
        }
    }
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let target = workspace_root().join("target");
    let out = args.out.clone().unwrap_or_else(|| target.join("bench/results.md"));
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let (wrk_cpu, envoy_cpu) = if cpus > 1 { (Some(cpus - 1), Some(0)) } else { (None, None) };

    let mut report = Report::default();
    report.add(&header(&args, cpus));
    report.add(&classify_section(&target));

    let nsd = Nsd::start();
    let dns = DnsCounter::start(nsd.addr());
    let threads = args.server_threads.to_string();
    let sidecar = Sidecar::builder().dns(dns.addr()).settings(GATEWAY_PLAN).args(&["--threads", &threads]).start();
    let pid = sidecar.pid();
    let at_start = footprint::rss_kib(pid);
    let ctx = Ctx {
        wrk: Wrk { seconds: args.seconds, connections: args.connections, cpu: wrk_cpu },
        rounds: args.rounds.max(1),
        server_threads: args.server_threads,
        envoy_cpu,
        keys: keys::create(&sidecar, args.keys.max(1))?,
        gateway_key: keys::create_on_plan(&sidecar, "gateway", 1)?.remove(0),
        dir: TestDir::new("bench"),
        envoy_rows: args.rows.clone(),
    };
    let run = |section: u8| args.sections.contains(&section);
    let baseline = match &args.baseline {
        Some(dir) if run(2) || run(4) => {
            Some(Baseline::start(dir, &args, dns.addr(), if run(2) { ctx.keys.len() } else { 1 })?)
        }
        _ => None,
    };
    // Cold first: nothing may have looked its domain up before.
    let cold = if run(3) { Some(cold::run(&ctx, &sidecar, &dns)?) } else { None };
    if !run(2) && !run(4) {
        report.add(&cold.unwrap_or_default());
        report.add(&footprint::section(at_start, footprint::rss_kib(pid)));
        later_sections(&args, &ctx, dns.addr(), &mut report)?;
        return finish(&report, &out);
    }
    let capture = if run(2) {
        let (lookups, capture) = lookups(&ctx, &dns, &sidecar, &threads, baseline.as_ref())?;
        report.add(&lookups);
        capture
    } else {
        // Section 4 calls an endpoint answering a cached lookup's bytes: capture one.
        let own =
            Subject { label: "sidecar".into(), sidecar: &sidecar, keys: &ctx.keys, pids: vec![pid], versus: None };
        sidecar::capture_cached(&own, "gmail.com")?
    };
    report.add(&cold.unwrap_or_default());
    if run(4) {
        report.add(&envoy_section(&ctx, dns.addr(), &sidecar, &capture, &args.filters, baseline.as_ref())?);
    }
    report.add(&footprint::section(at_start, footprint::rss_kib(pid)));
    later_sections(&args, &ctx, dns.addr(), &mut report)?;
    finish(&report, &out)
}

/// Sections 6–8, which need nothing of the earlier ones.
fn later_sections(args: &Args, ctx: &Ctx, dns: std::net::SocketAddr, report: &mut Report) -> anyhow::Result<()> {
    let run = |section: u8| args.sections.contains(&section);
    if run(6) {
        report.add(&email_verdict_bench::bulk::run(args.bulk_domains)?);
    }
    if run(7) {
        report.add(&flood::run(ctx, dns, &args.flood_queues, args.flood_rate)?);
    }
    if run(8) {
        let list = |v: &[String]| v.join(",");
        let command = format!(
            "target/release/email-verdict-bench --sections 8 --keys 1 --filters {} --memory-workers {} --memory-project {}",
            list(&args.filters.iter().map(ToString::to_string).collect::<Vec<_>>()),
            list(&args.memory_workers.iter().map(ToString::to_string).collect::<Vec<_>>()),
            args.memory_project
        );
        let kinds = memory_kinds(&args.filters);
        report.add(&envmem::run(dns, &kinds, &args.memory_workers, args.memory_project, &command)?);
    }
    Ok(())
}

/// Section 8's rows: no filter, each filter of `--filters`, and with the Wasm filter the rows that
/// break its cost down.
fn memory_kinds(filters: &[FilterArg]) -> Vec<envmem::Kind> {
    let mut kinds = vec![envmem::Kind::NoFilter];
    kinds.extend(filters.iter().map(|f| envmem::Kind::Filter(f.build())));
    if filters.contains(&FilterArg::Wasm) {
        kinds.push(envmem::Kind::EmptyWasm);
        kinds.push(envmem::Kind::NoStrongLists(Build::current()));
    }
    kinds.extend(filters.iter().map(|f| envmem::Kind::Released(f.build())));
    kinds
}

/// The older build of `--baseline`, its sidecar started beside this build's (same settings), with
/// keys of its own.
struct Baseline {
    build: Build,
    sidecar: Sidecar,
    keys: Vec<String>,
    gateway_key: String,
}

impl Baseline {
    fn start(dir: &std::path::Path, args: &Args, dns: std::net::SocketAddr, keys: usize) -> anyhow::Result<Baseline> {
        let build = Build::baseline(dir)?;
        eprintln!("baseline: {} ({})", build.label, build.tree.display());
        let threads = args.server_threads.to_string();
        let sidecar = build.sidecar().dns(dns).settings(GATEWAY_PLAN).args(&["--threads", &threads]).start();
        let keys = keys::create(&sidecar, keys.max(1))?;
        let gateway_key = keys::create_on_plan(&sidecar, "gateway", 1)?.remove(0);
        Ok(Baseline { build, sidecar, keys, gateway_key })
    }
}

/// Section 4, for this build and, with `--baseline`, the older one (its own sidecar, keys and
/// cached lookup).
fn envoy_section(
    ctx: &Ctx,
    dns: std::net::SocketAddr,
    sidecar: &Sidecar,
    capture: &Captured,
    filters: &[FilterArg],
    baseline: Option<&Baseline>,
) -> anyhow::Result<String> {
    let builds: Vec<Build> = filters.iter().map(|f| f.build()).collect();
    let mut sides: Vec<gateway::Side> = builds
        .iter()
        .enumerate()
        .map(|(i, build)| gateway::Side {
            build,
            sidecar,
            pro_key: &ctx.keys[0],
            gateway_key: &ctx.gateway_key,
            lookup: capture,
            filter_only: i > 0,
        })
        .collect();
    let Some(old) = baseline else {
        return gateway::run(ctx, dns, &sides);
    };
    let subject = Subject {
        label: old.build.label.clone(),
        sidecar: &old.sidecar,
        keys: &old.keys,
        pids: vec![old.sidecar.pid()],
        versus: None,
    };
    let lookup = sidecar::capture_cached(&subject, "gmail.com")?;
    sides.push(gateway::Side {
        build: &old.build,
        sidecar: &old.sidecar,
        pro_key: &old.keys[0],
        gateway_key: &old.gateway_key,
        lookup: &lookup,
        filter_only: false,
    });
    // The baseline's dynamic module too, when it has one and this run measures the module.
    let old_module = old.build.baseline_module().filter(|_| filters.contains(&FilterArg::Module));
    if let Some(build) = &old_module {
        sides.push(gateway::Side {
            build,
            sidecar: &old.sidecar,
            pro_key: &old.keys[0],
            gateway_key: &old.gateway_key,
            lookup: &lookup,
            filter_only: true,
        });
    }
    gateway::run(ctx, dns, &sides)
}

/// Section 2: the SQLite sidecar, and the same sidecar with its state in Redis (which shows how
/// much of a lookup the state store costs); also the capture of a cached `gmail.com` lookup.
/// With a baseline, its sidecars are measured too, each right after this build's: SQLite, and
/// Redis on a Redis of its own.
fn lookups(
    ctx: &Ctx,
    dns: &DnsCounter,
    sidecar: &Sidecar,
    threads: &str,
    baseline: Option<&Baseline>,
) -> anyhow::Result<(String, Captured)> {
    let redis = Redis::start();
    let on_redis = Sidecar::builder().dns(dns.addr()).state(&redis.url()).args(&["--threads", threads]).start();
    let redis_keys = keys::create(&on_redis, ctx.keys.len())?;
    let mut subjects = vec![Subject {
        label: "sidecar (state: SQLite, the default)".into(),
        sidecar,
        keys: &ctx.keys,
        pids: vec![sidecar.pid()],
        versus: None,
    }];
    if let Some(old) = baseline {
        subjects.push(Subject {
            label: format!("sidecar (state: SQLite, the default), {}", old.build.label),
            sidecar: &old.sidecar,
            keys: &old.keys,
            pids: vec![old.sidecar.pid()],
            versus: Some(0),
        });
    }
    let redis_at = subjects.len();
    subjects.push(Subject {
        label: "sidecar (state: Redis)".into(),
        sidecar: &on_redis,
        keys: &redis_keys,
        pids: [Some(on_redis.pid()), redis.pid()].into_iter().flatten().collect(),
        versus: None,
    });
    let old_on_redis = match baseline {
        Some(old) => {
            let redis = Redis::start();
            let sidecar = old.build.sidecar().dns(dns.addr()).state(&redis.url()).args(&["--threads", threads]);
            let sidecar = sidecar.start();
            let keys = keys::create(&sidecar, ctx.keys.len())?;
            Some((old, redis, sidecar, keys))
        }
        None => None,
    };
    if let Some((old, redis, sidecar, keys)) = &old_on_redis {
        subjects.push(Subject {
            label: format!("sidecar (state: Redis), {}", old.build.label),
            sidecar,
            keys,
            pids: [Some(sidecar.pid()), redis.pid()].into_iter().flatten().collect(),
            versus: Some(redis_at),
        });
    }
    sidecar::run(ctx, &subjects, &["gmail.com", "mailinator.com"])
}

fn finish(report: &Report, out: &std::path::Path) -> anyhow::Result<()> {
    report.write(out)?;
    eprintln!("written to {}", out.display());
    Ok(())
}

fn header(args: &Args, cpus: usize) -> String {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let model =
        cpuinfo.lines().find_map(|l| l.strip_prefix("model name")).map(|m| m.trim_start_matches([' ', '\t', ':']));
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let load: Vec<&str> = load.split_whitespace().take(3).collect();
    format!(
        "# email-verdict benchmarks\n\n\
         {} UTC, commit {}; {cpus} × {} (/proc/cpuinfo); load average at start {}.\n\
         `make bench` (runner: `email-verdict-bench --seconds {} --rounds {} --connections {} --keys {} --server-threads {}{}`).\n\
         Client and servers share the machine: compare the ratios, measured side by side, not the absolute figures.\n",
        command("date", &["-u", "+%Y-%m-%d %H:%M"]),
        command("git", &["rev-parse", "--short", "HEAD"]),
        model.unwrap_or("unknown CPU"),
        load.join(" "),
        args.seconds,
        args.rounds,
        args.connections,
        args.keys,
        args.server_threads,
        args.baseline.as_ref().map(|d| format!(" --baseline {}", d.display())).unwrap_or_default(),
    )
}

fn command(name: &str, args: &[&str]) -> String {
    std::process::Command::new(name)
        .args(args)
        .current_dir(workspace_root())
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "unknown".into())
}

/// Section 1, as the criterion bench left it.
fn classify_section(target: &std::path::Path) -> String {
    let file = target.join("bench/classify.md");
    let table = std::fs::read_to_string(&file)
        .with_context(|| format!("{} is missing: cargo bench -p email-verdict-core --bench classify", file.display()));
    let body = table.unwrap_or_else(|e| format!("{e:#}\n"));
    format!(
        "## 1. Classification in process (criterion, one core)\n\n\
         The shipped lists in the sidecar's `Catalog` against a linear scan of the same entries \
         (`core/benches/classify`).\n\n{body}"
    )
}
