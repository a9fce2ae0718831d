//! What the gateway's copy of the sidecar's decisions costs (`filter/CONFIG.md`,
//! `decision_sync_seconds`): the answer's size per name, the fetching root context's parse of it
//! into the 256 parts it stores (`PartsBuilder::from_json`, once per change of the list), and one
//! lookup (once per request the sidecar gave no verdict for). Prints a summary after criterion's
//! own output.
//!
//! `cargo bench -p email-verdict-core --bench decided`

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::Criterion;
use email_verdict_core::decided::PartsBuilder;
use email_verdict_core::{DecidedNames, DecidedSet, DecisionList, Domain};

/// `n` decided names shaped like real ones: a quarter reviewers' blocks, a quarter reviewers'
/// allows, half on the operator's blocklist.
fn list(n: usize) -> DecisionList {
    let names = |prefix: &str, count: usize| -> Vec<String> {
        (0..count).map(|i| format!("{prefix}{i:06}-mail.example-{}.com", i % 97)).collect()
    };
    DecisionList {
        reviewer: DecidedNames { block: names("rb", n / 4), allow: names("ra", n / 4) },
        operator: DecidedNames { block: names("ob", n / 2), allow: Vec::new() },
        complete: true,
    }
}

fn main() {
    let mut c = Criterion::default().configure_from_args().measurement_time(Duration::from_secs(3));
    let mut summary = Vec::new();
    for n in [1_000usize, 10_000, 100_000] {
        let body = serde_json::to_vec(&list(n)).unwrap_or_default();
        // What the sync does: the answer read as a stream into 256 parts, each built.
        let parse = || {
            let parts = PartsBuilder::from_json(black_box(&body[..]), 256).map(PartsBuilder::into_parts);
            parts.map(|parts| parts.map(|p| p.len()).sum::<usize>()).unwrap_or(0)
        };
        c.bench_function(&format!("decided/parse/{n}"), |b| b.iter(parse));
        assert_eq!(parse(), n, "every name stored");
        let set = DecidedSet::new(&list(n));
        let hit = Domain::parse(&format!("fresh.rb{:06}-mail.example-{}.com", n / 8, (n / 8) % 97)).unwrap();
        let miss = Domain::parse("a.b.c.unrelated-name.example.com").unwrap();
        c.bench_function(&format!("decided/lookup/{n}"), |b| {
            b.iter(|| (set.decision(black_box(&hit)), set.decision(black_box(&miss))))
        });
        let started = Instant::now();
        let rounds = 20;
        for _ in 0..rounds {
            black_box(parse());
        }
        let per_parse = started.elapsed() / rounds;
        summary.push(format!(
            "| {n} | {} bytes ({:.1} per name) | {:.2} ms |",
            body.len(),
            body.len() as f64 / n as f64,
            per_parse.as_secs_f64() * 1000.0
        ));
    }
    c.final_summary();
    println!(
        "\n| decided names | answer / shared data | parse into 256 parts (the fetching root context, once per change) |"
    );
    println!("|---|---|---|");
    for line in summary {
        println!("{line}");
    }
}
