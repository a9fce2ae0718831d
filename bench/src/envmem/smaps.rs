//! Section 8's attribution by mapping (`/proc/<pid>/smaps`): where an Envoy's resident memory
//! lies, so that a worker's cost is read off its parts instead of a slope alone.
//!
//! V8 gives each Wasm VM's linear memory its own reservation: the accessible part (`rw-p`, the
//! memory's current size) followed at once by a guard region (`---p`) that brings the whole to
//! 8 GiB, so that bounds checks are left to the MMU. Nothing else in Envoy reserves gigabytes
//! that way, so such a pair is one VM's linear memory and its `Rss` is that VM's own.

use super::table::{PHASES, Row, least_squares, mib};

/// A Wasm VM's linear memory: resident and mapped (its current size), in KiB.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Vm {
    pub rss: u64,
    pub size: u64,
}

/// An Envoy's resident memory by kind of mapping, in KiB.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Maps {
    /// Every VM's linear memory, smallest resident first.
    pub vms: Vec<Vm>,
    /// Anonymous executable mappings: V8's compiled code.
    pub code: u64,
    /// Anonymous read-write mappings of [`HEAP_MIN_KIB`] or more that are no linear memory:
    /// Envoy's allocator's heap (its size follows admin `/memory`'s `heap_size`).
    pub heap: u64,
    /// The rest of the anonymous memory: V8's own heaps (one per VM), thread stacks, the rest.
    pub other_anon: u64,
    /// File-backed pages: the Envoy binary, shared libraries, the modules' files.
    pub file: u64,
}

/// A guard region this large after a read-write mapping marks a Wasm linear memory.
const GUARD_MIN_KIB: u64 = 4 << 20;
/// Envoy's allocator takes its heap from the system in large mappings; V8's heap pages and the
/// threads' stacks are smaller.
const HEAP_MIN_KIB: u64 = 16 << 10;

impl Maps {
    pub fn of(pid: u32) -> Option<Maps> {
        std::fs::read_to_string(format!("/proc/{pid}/smaps")).ok().map(|t| Maps::parse(&t))
    }

    pub fn parse(smaps: &str) -> Maps {
        let regions = regions(smaps);
        let mut maps = Maps::default();
        for (i, r) in regions.iter().enumerate() {
            let anonymous = r.path.is_empty() || r.path.starts_with('[');
            let guarded = regions.get(i + 1).is_some_and(|g| {
                g.path.is_empty() && g.perms == "---p" && g.start == r.end && (g.end - g.start) / 1024 >= GUARD_MIN_KIB
            });
            let size = (r.end - r.start) / 1024;
            if !anonymous {
                maps.file += r.rss;
            } else if r.path.is_empty() && r.perms == "rw-p" && guarded {
                maps.vms.push(Vm { rss: r.rss, size });
            } else if r.perms.contains('x') {
                maps.code += r.rss;
            } else if r.path.is_empty() && r.perms == "rw-p" && size >= HEAP_MIN_KIB {
                maps.heap += r.rss;
            } else {
                maps.other_anon += r.rss;
            }
        }
        maps.vms.sort();
        maps
    }

    /// The linear memories' resident total.
    pub fn linear(&self) -> u64 {
        self.vms.iter().map(|v| v.rss).sum()
    }
}

struct Region<'a> {
    start: u64,
    end: u64,
    perms: &'a str,
    path: &'a str,
    rss: u64,
}

/// The mappings of an smaps text: a header line (`start-end perms offset dev inode [path]`) and
/// its fields, of which `Rss`.
fn regions(smaps: &str) -> Vec<Region<'_>> {
    let mut out: Vec<Region> = Vec::new();
    for line in smaps.lines() {
        if let Some(v) = line.strip_prefix("Rss:") {
            if let (Some(last), Some(kib)) = (out.last_mut(), v.split_whitespace().next().and_then(|k| k.parse().ok()))
            {
                last.rss = kib;
            }
            continue;
        }
        let mut fields = line.split_whitespace();
        let (Some(range), Some(perms)) = (fields.next(), fields.next()) else { continue };
        let Some((start, end)) = range.split_once('-') else { continue };
        let (Ok(start), Ok(end)) = (u64::from_str_radix(start, 16), u64::from_str_radix(end, 16)) else { continue };
        // offset, device, inode, then the path (which may hold spaces).
        let path = line.splitn(6, char::is_whitespace).nth(5).map_or("", str::trim);
        out.push(Region { start, end, perms, path, rss: 0 });
    }
    out
}

/// The parts, each a line per row and phase: the value at each worker count, then the slope.
/// A part's name and how to read it.
type Part = (&'static str, fn(&Maps) -> u64);

const PARTS: [Part; 6] = [
    ("Wasm linear memories, every VM", |m| m.linear()),
    ("the largest linear memory", |m| m.vms.last().map_or(0, |v| v.rss)),
    ("V8's compiled code (anonymous `r-x`/`rwx`)", |m| m.code),
    ("Envoy's allocator heap (anonymous `rw-p` ≥ 16 MiB)", |m| m.heap),
    ("other anonymous (V8's heaps, stacks)", |m| m.other_anon),
    ("file-backed", |m| m.file),
];

/// Resident MiB by part at each worker count, and the least-squares MiB a worker.
pub fn parts_table(rows: &[Row], workers: &[u32]) -> String {
    let mut lines = vec![header(workers, "part", " per worker (least squares) |"), rule(workers, "---", 1)];
    for row in rows {
        for phase in PHASES {
            let maps: Vec<Option<&Maps>> =
                workers.iter().map(|w| row.readings.get(&(phase, *w)).and_then(|r| r.maps.as_ref())).collect();
            if maps.iter().all(Option::is_none) {
                continue;
            }
            for (part, value) in PARTS {
                let mut line = format!("| {} | {} | {part} |", row.label, phase.describe());
                let mut points = Vec::new();
                for (w, m) in workers.iter().zip(&maps) {
                    match m {
                        Some(m) => {
                            line.push_str(&format!(" {:.2} |", mib(value(m))));
                            points.push((f64::from(*w), mib(value(m))));
                        }
                        None => line.push_str(" — |"),
                    }
                }
                match least_squares(&points) {
                    Some((slope, _)) => line.push_str(&format!(" {slope:+.2} |")),
                    None => line.push_str(" |"),
                }
                lines.push(line);
            }
        }
    }
    lines.join("\n")
}

/// Each VM's linear memory, resident of mapped KiB, smallest first, at each worker count.
pub fn vms_table(rows: &[Row], workers: &[u32]) -> String {
    let mut lines = vec![header(workers, "VMs", ""), rule(workers, "---:", 0)];
    for row in rows {
        for phase in PHASES {
            let cells: Vec<Option<String>> = workers
                .iter()
                .map(|w| {
                    let m = row.readings.get(&(phase, *w))?.maps.as_ref()?;
                    Some(m.vms.iter().map(|v| format!("{}/{}", v.rss, v.size)).collect::<Vec<_>>().join(", "))
                })
                .collect();
            if cells.iter().all(|c| c.as_deref().is_none_or(str::is_empty)) {
                continue;
            }
            let count = workers
                .iter()
                .map(|w| row.readings.get(&(phase, *w)).and_then(|r| r.maps.as_ref()).map_or(0, |m| m.vms.len()));
            let mut line = format!(
                "| {} | {} | {} |",
                row.label,
                phase.describe(),
                count.map(|c| c.to_string()).collect::<Vec<_>>().join(" / ")
            );
            for c in cells {
                line.push_str(&format!(" {} |", c.unwrap_or_else(|| "—".into())));
            }
            lines.push(line);
        }
    }
    lines.join("\n")
}

fn header(workers: &[u32], third: &str, tail: &str) -> String {
    let mut head = format!("| Envoy | when | {third} |");
    for w in workers {
        head.push_str(&format!(" {w} worker{} |", if *w == 1 { "" } else { "s" }));
    }
    head.push_str(tail);
    head
}

/// The rule under [`header`]: `third` aligns the third column; `extra` right-aligned columns follow
/// the workers'.
fn rule(workers: &[u32], third: &str, extra: usize) -> String {
    format!("|---|---|{third}|{}", "---:|".repeat(workers.len() + extra))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn linear_memories_heap_code_and_files_are_told_apart() {
        let smaps = "\
32113d600000-321140000000 rw-p 00000000 00:00 0 \nRss:               40624 kB\n\
374caa953000-374caac10000 rwxp 00000000 00:00 0 \nRss:                2724 kB\n\
55cf65a97000-55cf67b14000 r--p 00000000 08:01 123 /usr/bin/envoy\nRss:               16224 kB\n\
7f7fe2970000-7f7fe2b40000 rw-p 00000000 00:00 0 \nRss:                 828 kB\n\
7f7fe2b40000-7f81e2970000 ---p 00000000 00:00 0 \nRss:                   0 kB\n\
7f8213980000-7f8213b50000 rw-p 00000000 00:00 0 \nRss:                 304 kB\n\
7f8213b60000-7f8413980000 ---p 00000000 00:00 0 \nRss:                   0 kB\n\
7ffd0000000-7ffd0021000 rw-p 00000000 00:00 0                          [stack]\nRss:                  12 kB\n";
        let m = Maps::parse(smaps);
        assert_eq!(m.vms, vec![Vm { rss: 828, size: 1856 }]);
        assert_eq!((m.code, m.heap, m.file), (2724, 40624, 16224));
        // Not adjacent to its guard: not counted as a linear memory.
        assert_eq!(m.other_anon, 304 + 12);
        assert!(Maps::of(std::process::id()).is_some_and(|m| m.file > 0));
    }
}
