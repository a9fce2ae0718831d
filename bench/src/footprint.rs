//! Section 5: the sidecar's resident memory and the filter module's size.

use email_verdict_tests::envoy::filter_wasm;

use crate::report::{count, met};

const RSS_TARGET_MB: f64 = 150.0;
const WASM_TARGET_BYTES: u64 = 1024 * 1024;

/// `VmRSS` and `VmHWM` (peak) of a process, in KiB.
pub fn rss_kib(pid: u32) -> Option<(u64, u64)> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let field = |name: &str| {
        status.lines().find_map(|l| l.strip_prefix(name)).and_then(|v| v.split_whitespace().next()?.parse().ok())
    };
    Some((field("VmRSS:")?, field("VmHWM:")?))
}

fn mb(kib: u64) -> f64 {
    kib as f64 / 1024.0
}

/// `at_start`: (VmRSS, VmHWM) once the sidecar answered `/healthz` (every list and the IP
/// databases loaded); `after`: the same after the load of sections 2–4.
pub fn section(at_start: Option<(u64, u64)>, after: Option<(u64, u64)>) -> String {
    let mut rows = Vec::new();
    if let Some((rss, _)) = at_start {
        rows.push(format!(
            "| sidecar RSS after start (all data loaded) | {:.1} MB | < 150 MB: {} |",
            mb(rss),
            met(mb(rss) < RSS_TARGET_MB)
        ));
    }
    if let Some((rss, peak)) = after {
        rows.push(format!(
            "| sidecar RSS after the load runs | {:.1} MB | < 150 MB: {} |",
            mb(rss),
            met(mb(rss) < RSS_TARGET_MB)
        ));
        rows.push(format!(
            "| sidecar peak RSS (VmHWM) | {:.1} MB | < 150 MB: {} |",
            mb(peak),
            met(mb(peak) < RSS_TARGET_MB)
        ));
    }
    let wasm = filter_wasm();
    match std::fs::metadata(&wasm) {
        Ok(m) => rows.push(format!(
            "| filter `{}` | {} bytes ({:.0} KiB) | < 1 MiB: {} |",
            wasm.file_name().and_then(|n| n.to_str()).unwrap_or("module"),
            count(m.len() as f64),
            m.len() as f64 / 1024.0,
            met(m.len() < WASM_TARGET_BYTES)
        )),
        Err(e) => rows.push(format!("| filter module | cannot read {}: {e} | |", wasm.display())),
    }
    format!("## 5. Footprint\n\n| what | size | target |\n|---|---:|---|\n{}\n", rows.join("\n"))
}
