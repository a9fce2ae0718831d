//! Classification in process: lookups per second over the full shipped lists, loaded into the
//! same `Catalog` the sidecar builds, against a linear scan of the same entries (what several
//! popular libraries do). `make bench` runs it; after criterion's own output it prints a summary
//! (lookups/s of both, the ratio, the targets) and writes it to `target/bench/classify.md`.
//!
//! Each iteration classifies the whole sample (see `sample.rs`), so criterion's throughput is
//! in lookups (elements) per second, on one core.

mod sample;
mod scan;
mod summary;

use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, Throughput};
use email_verdict_core::catalog::Tier;
use email_verdict_core::{Catalog, ListKind, MxInfo};

use crate::scan::LinearScan;

/// The shipped disposable sources, embedded as the sidecar embeds them (sidecar/src/lists.rs).
const DISPOSABLE: [(&str, Tier, &str); 3] = [
    ("disposable-email-domains", Tier::Strong, include_str!("../../../data/disposable/disposable-email-domains.txt")),
    ("fakefilter", Tier::Strong, include_str!("../../../data/disposable/fakefilter.txt")),
    ("mailchecker", Tier::Weak, include_str!("../../../data/disposable/mailchecker.txt")),
];

/// The other shipped lists.
const SHIPPED: [(ListKind, &str); 3] = [
    (ListKind::Free, include_str!("../../../data/free.txt")),
    (ListKind::Relay, include_str!("../../../data/relay.txt")),
    (ListKind::SharedMx, include_str!("../../../data/shared_mx.tsv")),
];

/// Domains classified per iteration.
const SAMPLE: usize = 1_000;
/// MX host names matched per iteration.
const HOSTS: usize = 1_000;

fn main() {
    let mut catalog = Catalog::default();
    for (source, tier, text) in DISPOSABLE {
        catalog.load_disposable(source, tier, text).expect("three sources");
    }
    for (kind, text) in SHIPPED {
        catalog.load(kind, text);
    }
    let disposable: Vec<&str> = DISPOSABLE.iter().map(|(_, _, text)| *text).collect();
    let scan = LinearScan::new(&disposable, SHIPPED[0].1, SHIPPED[1].1, SHIPPED[2].1);
    let domains = sample::domains(&scan, SAMPLE);
    let hosts = sample::mx_hosts(&catalog, &scan, &domains, HOSTS);
    scan::check_agreement(&catalog, &scan, &domains, &hosts);

    let out = summary::target_dir();
    let mut c = Criterion::default().output_directory(&out.join("criterion")).configure_from_args();
    let mut group = c.benchmark_group("classify");
    group.sample_size(10).warm_up_time(Duration::from_secs(1)).measurement_time(Duration::from_secs(4));
    group.throughput(Throughput::Elements(domains.len() as u64));
    let no_mx = MxInfo::NoMx;
    group.bench_function("catalog", |b| {
        b.iter(|| {
            domains.iter().map(|d| black_box(catalog.signals(d, &no_mx, None))).filter(|s| s.listing.is_some()).count()
        })
    });
    group.bench_function("linear_scan", |b| {
        b.iter(|| domains.iter().map(|d| black_box(scan.signals(d.as_str()))).filter(|s| s.disposable).count())
    });
    group.finish();

    let mut group = c.benchmark_group("mx_host");
    group.sample_size(10).warm_up_time(Duration::from_secs(1)).measurement_time(Duration::from_secs(3));
    group.throughput(Throughput::Elements(hosts.len() as u64));
    group.bench_function("catalog", |b| b.iter(|| hosts.iter().filter_map(|h| catalog.shared_mx_host(h)).count()));
    group.bench_function("linear_scan", |b| b.iter(|| hosts.iter().filter_map(|h| scan.shared_mx_host(h)).count()));
    group.finish();
    c.final_summary();

    summary::report(&out, &domains, &hosts);
}
