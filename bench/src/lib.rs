//! Benchmarks of email-verdict against baselines measured side by side in the same run
//! (`make bench`; figures and how to read them in BENCHMARKS.md).
//!
//! The runner (`email-verdict-bench`, `src/main.rs`) starts NSD, a counting DNS forwarder, the
//! sidecar and Envoys through the test harness (`email-verdict-tests`), drives `wrk` against
//! each case and its baseline in alternation, and prints one table per section. `bench-bare`
//! (`src/bin/bench-bare.rs`) is the baseline server: Pingora answering fixed bytes.
//!
//! Invariants: every figure printed was measured in this run; a case whose requests did not all
//! get the intended answer (non-2xx, socket errors, a filter counter that says otherwise) is
//! reported as such, never silently averaged in.

pub mod bare;
pub mod build;
pub mod bulk;
pub mod capture;
pub mod cold;
pub mod cpu;
pub mod envmem;
pub mod envoy;
pub mod flood;
pub mod footprint;
pub mod gateway;
pub mod keys;
pub mod quality;
pub mod report;
pub mod sidecar;
pub mod wrk;

use email_verdict_tests::TestDir;

/// The plan a gateway's key takes (`docs/api.md`, "Plans and limits"): the gateway cases of section 4
/// are not capped by a key's burst.
pub const GATEWAY_PLAN: &str = "[plans.gateway]\ndaily-quota = \"unlimited\"\nburst-per-second = \"unlimited\"\n";

/// What every section shares.
pub struct Ctx {
    pub wrk: wrk::Wrk,
    /// Each case and its baseline are run this many times, alternating; the best run counts.
    pub rounds: usize,
    /// `--threads` of the sidecar, and so of the bare server it is compared with.
    pub server_threads: usize,
    /// The CPU the Envoys are pinned to (wrk has the other one).
    pub envoy_cpu: Option<usize>,
    /// API keys (pro plan) to rotate over: one key admits 50 requests a second.
    pub keys: Vec<String>,
    /// One key of the unlimited `gateway` plan (the settings file of the bench's sidecar): what
    /// a gateway calls the sidecar with.
    pub gateway_key: String,
    /// Scripts and captures.
    pub dir: TestDir,
    /// The rows of section 4 to run (1-based); empty: all.
    pub envoy_rows: Vec<usize>,
}

/// One case of a comparison: where wrk sends its load, and which processes serve it (their CPU
/// time per request is measured beside the throughput).
pub struct Case {
    pub name: String,
    pub addr: std::net::SocketAddr,
    pub path: &'static str,
    pub script: Option<std::path::PathBuf>,
    pub pids: Vec<u32>,
    /// The verdict service the gateway calls (sidecar or bare server), measured apart.
    pub service_pids: Vec<u32>,
}

impl Case {
    pub fn new(
        name: &str,
        addr: std::net::SocketAddr,
        path: &'static str,
        script: Option<&std::path::Path>,
        pids: Vec<u32>,
    ) -> Self {
        let script = script.map(std::path::Path::to_path_buf);
        Self { name: name.to_owned(), addr, path, script, pids, service_pids: Vec::new() }
    }

    /// The verdict service this case calls, whose CPU time per request is shown apart.
    pub fn service(mut self, pids: Vec<u32>) -> Self {
        self.service_pids = pids;
        self
    }
}

impl Ctx {
    /// Runs `wrk` on each of `cases` in turn, `rounds` times, and keeps each case's best run
    /// (the most requests per second: on a shared machine noise only ever slows a run down),
    /// with the least server CPU time per request of its rounds (noise only ever adds to it).
    pub fn alternate(&self, cases: &[Case]) -> anyhow::Result<Vec<wrk::Run>> {
        let mut best: Vec<Option<wrk::Run>> = vec![None; cases.len()];
        let mut cpu: Vec<Option<f64>> = vec![None; cases.len()];
        let mut service_cpu: Vec<Option<f64>> = vec![None; cases.len()];
        for round in 1..=self.rounds {
            for (i, case) in cases.iter().enumerate() {
                eprintln!("  round {round}/{}: {}", self.rounds, case.name);
                let before = (cpu::total(&case.pids), cpu::total(&case.service_pids));
                let run = self.wrk.run(case.addr, case.path, case.script.as_deref())?;
                let after = (cpu::total(&case.pids), cpu::total(&case.service_pids));
                let per_request = |b: Option<f64>, a: Option<f64>| {
                    b.zip(a).map(|(b, a)| a - b).filter(|_| run.requests > 0).map(|s| s * 1e6 / run.requests as f64)
                };
                least(&mut cpu[i], per_request(before.0, after.0));
                if !case.service_pids.is_empty() {
                    least(&mut service_cpu[i], per_request(before.1, after.1));
                }
                if best[i].as_ref().is_none_or(|b| run.rps > b.rps) {
                    best[i] = Some(run);
                }
            }
        }
        let runs = best.into_iter().zip(cpu).zip(service_cpu);
        Ok(runs
            .map(|((run, cpu_us), service_cpu_us)| wrk::Run { cpu_us, service_cpu_us, ..run.unwrap_or_default() })
            .collect())
    }
}

/// Keeps the least of the rounds' CPU figures (noise only ever adds to them).
fn least(kept: &mut Option<f64>, new: Option<f64>) {
    *kept = match (*kept, new) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    };
}
