//! After criterion has run: lookups per second from its estimates, the ratio to the linear scan
//! and the targets, printed and written to `target/bench/classify.md` (which the
//! benchmark runner puts in its results).

use std::path::{Path, PathBuf};

use email_verdict_core::Domain;

/// The catalog must be at least this many times faster than the linear scan.
const TARGET_RATIO: f64 = 1_000.0;
/// Lookups per second on one core for the list part.
const TARGET_RATE: f64 = 5_000_000.0;

/// The workspace's target directory (`CARGO_TARGET_DIR` when set).
pub fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../target"))
}

/// Median time of one iteration of `group/id`, in nanoseconds, from criterion's estimates (the
/// median rather than the mean: on a shared machine a few preempted samples drag the mean).
fn median_ns(out: &Path, group: &str, id: &str) -> Option<f64> {
    let file = out.join("criterion").join(group).join(id).join("new/estimates.json");
    let json: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(file).ok()?).ok()?;
    json["median"]["point_estimate"].as_f64()
}

fn rate(out: &Path, group: &str, id: &str, elements: usize) -> Option<f64> {
    median_ns(out, group, id).map(|ns| elements as f64 / (ns / 1e9))
}

fn verdict(met: bool) -> &'static str {
    if met { "met" } else { "NOT met" }
}

pub fn report(out: &Path, domains: &[Domain], hosts: &[String]) {
    let rows = [("classify", "domain lists", domains.len()), ("mx_host", "shared-MX host suffixes", hosts.len())];
    let mut text = String::from(
        "| what | catalog (lookups/s) | linear scan (lookups/s) | ratio | target |\n|---|---:|---:|---:|---|\n",
    );
    for (group, what, n) in rows {
        let (Some(hashed), Some(scan)) = (rate(out, group, "catalog", n), rate(out, group, "linear_scan", n)) else {
            text.push_str(&format!("| {what} | no estimate | no estimate | | |\n"));
            continue;
        };
        let ratio = hashed / scan;
        let target = if group == "classify" {
            let (r, f) = (ratio >= TARGET_RATIO, hashed >= TARGET_RATE);
            format!("≥ 1,000× scan: {}; ≥ 5 M/s: {}", verdict(r), verdict(f))
        } else {
            "(no target)".to_owned()
        };
        text.push_str(&format!(
            "| {what} | {} | {} | {ratio:.0}× | {target} |\n",
            group_digits(hashed),
            group_digits(scan)
        ));
    }
    println!(
        "\nClassification in process (one core, {} domains, {} MX hosts per iteration):\n{text}",
        domains.len(),
        hosts.len()
    );
    let dir = out.join("bench");
    if let Err(e) = std::fs::create_dir_all(&dir).and_then(|_| std::fs::write(dir.join("classify.md"), &text)) {
        eprintln!("cannot write {}: {e}", dir.join("classify.md").display());
    }
}

/// 1234567.8 → "1,234,568".
fn group_digits(v: f64) -> String {
    let s = format!("{:.0}", v);
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}
