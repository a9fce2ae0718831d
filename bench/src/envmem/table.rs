//! Section 8's figures: one reading of a process's memory, the least-squares line over the
//! worker counts, and the tables.

use std::collections::BTreeMap;

/// One reading of an Envoy's memory, in KiB: `VmRSS` and its anonymous part (`RssAnon`) from
/// `/proc/<pid>/status`, and `Pss` from `/proc/<pid>/smaps_rollup` (what is this process's
/// own once the pages it shares with other processes are divided among them).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Reading {
    pub rss: u64,
    pub anon: u64,
    /// `VmHWM`: the most `VmRSS` has been since the process started.
    pub peak: u64,
    pub pss: Option<u64>,
    /// Envoy's allocator (admin `/memory`): bytes allocated and in use, and the heap it holds
    /// from the system (allocated, freed and cached, or not yet returned). Memory Envoy's V8
    /// maps itself (Wasm linear memories, compiled code) is outside both.
    pub allocated: Option<u64>,
    pub heap: Option<u64>,
    /// The same memory by mapping (`/proc/<pid>/smaps`): each Wasm VM's linear memory apart.
    pub maps: Option<super::smaps::Maps>,
}

impl Reading {
    pub fn of(pid: u32) -> Option<Reading> {
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
        let rollup = std::fs::read_to_string(format!("/proc/{pid}/smaps_rollup")).unwrap_or_default();
        Some(Reading {
            rss: kib(&status, "VmRSS:")?,
            anon: kib(&status, "RssAnon:")?,
            peak: kib(&status, "VmHWM:")?,
            pss: kib(&rollup, "Pss:"),
            allocated: None,
            heap: None,
            maps: super::smaps::Maps::of(pid),
        })
    }

    /// Adds the allocator's figures from the JSON of Envoy's admin `/memory` (decimal strings of
    /// bytes).
    pub fn with_allocator(mut self, memory: &serde_json::Value) -> Reading {
        let bytes = |name: &str| memory[name].as_str().and_then(|v| v.parse::<u64>().ok()).map(|b| b / 1024);
        self.allocated = bytes("allocated");
        self.heap = bytes("heap_size");
        self
    }
}

/// The value of the `name` line (`VmRSS:    123 kB`), in KiB.
fn kib(text: &str, name: &str) -> Option<u64> {
    text.lines().find_map(|l| l.strip_prefix(name)).and_then(|v| v.split_whitespace().next()?.parse().ok())
}

/// When a reading is taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Phase {
    /// Admin `/ready` said LIVE.
    Started,
    /// After signups on every worker.
    WarmedUp,
    /// 100,000 decided names synced (stored once per proxy), no worker has parsed them yet: a
    /// worker parses them on its first signup the sidecar gives no verdict for.
    Synced,
    /// After 100,000 decided names were synced and read by every worker.
    Decisions,
    /// Then a signup on the strong lists on every worker, the sidecar still refusing: the lists
    /// inflated in every VM (the local fallback's path; no decision covers the name).
    Lists,
}

impl Phase {
    pub fn describe(self) -> &'static str {
        match self {
            Phase::Started => "after start",
            Phase::WarmedUp => "after warm-up (every worker served signups)",
            Phase::Synced => "+100,000 decided names synced, not yet read by a worker",
            Phase::Decisions => "+100,000 decided names, read by every worker",
            Phase::Lists => "then the strong lists read by every worker (the sidecar still refusing)",
        }
    }
}

/// Every phase, in order.
pub const PHASES: [Phase; 5] = [Phase::Started, Phase::WarmedUp, Phase::Synced, Phase::Decisions, Phase::Lists];

/// One kind of Envoy and its readings, by phase and worker count.
#[derive(Debug, Default)]
pub struct Row {
    pub label: String,
    pub readings: BTreeMap<(Phase, u32), Reading>,
    /// Why a phase has no reading (it does not apply, or what failed).
    pub notes: Vec<String>,
}

/// Slope and intercept of the least-squares line through `points` (x, y); `None` with fewer than
/// two distinct x.
pub fn least_squares(points: &[(f64, f64)]) -> Option<(f64, f64)> {
    let n = points.len() as f64;
    let (mx, my) = (points.iter().map(|p| p.0).sum::<f64>() / n, points.iter().map(|p| p.1).sum::<f64>() / n);
    let sxx: f64 = points.iter().map(|p| (p.0 - mx).powi(2)).sum();
    if points.len() < 2 || sxx == 0.0 {
        return None;
    }
    let sxy: f64 = points.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    let slope = sxy / sxx;
    Some((slope, my - slope * mx))
}

pub fn mib(kib: u64) -> f64 {
    kib as f64 / 1024.0
}

/// One table: a line per row and phase, a column per worker count, then the slope (MiB a worker)
/// and `project` workers from the line, marked projected. `value` picks the figure.
pub fn table(rows: &[Row], workers: &[u32], project: u32, value: fn(&Reading) -> Option<u64>) -> String {
    let mut head = String::from("| Envoy | when |");
    let mut rule = String::from("|---|---|");
    for w in workers {
        head.push_str(&format!(" {w} worker{} |", if *w == 1 { "" } else { "s" }));
        rule.push_str("---:|");
    }
    head.push_str(&format!(" per worker (least squares) | base (0 workers, from the line) | {project} workers |"));
    rule.push_str("---:|---:|---:|");
    let mut lines = vec![head, rule];
    for row in rows {
        for phase in PHASES {
            let cells: Vec<Option<u64>> =
                workers.iter().map(|w| row.readings.get(&(phase, *w)).and_then(value)).collect();
            if cells.iter().all(Option::is_none) {
                continue;
            }
            let mut line = format!("| {} | {} |", row.label, phase.describe());
            for c in &cells {
                line.push_str(&c.map_or_else(|| " — |".to_owned(), |k| format!(" {:.1} |", mib(k))));
            }
            let points: Vec<(f64, f64)> =
                workers.iter().zip(&cells).filter_map(|(w, c)| Some((f64::from(*w), mib((*c)?)))).collect();
            match least_squares(&points) {
                Some((slope, base)) => line.push_str(&format!(
                    " {slope:+.2} | {base:.1} | {:.1} (projected) |",
                    base + slope * f64::from(project)
                )),
                None => line.push_str(" | | |"),
            }
            lines.push(line);
        }
    }
    lines.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_line_through_exact_points_is_found() {
        let (slope, base) = least_squares(&[(1.0, 12.0), (2.0, 14.0), (4.0, 18.0)]).unwrap();
        assert!((slope - 2.0).abs() < 1e-9 && (base - 10.0).abs() < 1e-9, "{slope} {base}");
        assert_eq!(least_squares(&[(1.0, 3.0)]), None);
        assert_eq!(least_squares(&[(2.0, 3.0), (2.0, 5.0)]), None);
    }

    #[test]
    fn status_fields_are_read_in_kib() {
        let status = "Name:\tenvoy\nVmRSS:\t  117764 kB\nRssAnon:\t   60000 kB\n";
        assert_eq!(kib(status, "VmRSS:"), Some(117_764));
        assert_eq!(kib(status, "RssAnon:"), Some(60_000));
        assert_eq!(kib(status, "RssFile:"), None);
        assert!(Reading::of(std::process::id()).is_some_and(|r| r.rss > 0 && r.anon <= r.rss));
        let memory = serde_json::json!({ "allocated": "2097152", "heap_size": "4194304" });
        let r = Reading::default().with_allocator(&memory);
        assert_eq!((r.allocated, r.heap), (Some(2048), Some(4096)));
    }

    #[test]
    fn the_table_projects_from_the_slope_and_skips_empty_phases() {
        let mut row = Row { label: "Wasm".into(), ..Row::default() };
        for (w, mb) in [(1u32, 100u64), (2, 110), (4, 130)] {
            row.readings.insert((Phase::WarmedUp, w), Reading { rss: mb * 1024, ..Reading::default() });
        }
        let text = table(&[row], &[1, 2, 4], 8, |r| Some(r.rss));
        assert!(text.contains("| Wasm | after warm-up (every worker served signups) | 100.0 | 110.0 | 130.0 | +10.00 | 90.0 | 170.0 (projected) |"), "{text}");
        assert!(!text.contains("after start"), "{text}");
    }
}
