//! CPU time of the servers under test, per request: a steadier figure than requests/s on a
//! shared 2-core machine, where wrk, the server and whatever else runs compete for the cores.
//! `utime + stime` of every thread of a process, from `/proc/<pid>/stat`.

use std::sync::OnceLock;

/// Clock ticks per second of `/proc/<pid>/stat` times (`getconf CLK_TCK`; 100 on Linux).
fn ticks_per_second() -> f64 {
    static TICKS: OnceLock<f64> = OnceLock::new();
    *TICKS.get_or_init(|| {
        let out = std::process::Command::new("getconf").arg("CLK_TCK").output().ok();
        let text = out.map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned()).unwrap_or_default();
        text.parse().unwrap_or(100.0)
    })
}

/// CPU seconds `pid` has used so far, user and system, all threads.
pub fn seconds(pid: u32) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    parse_stat(&stat).map(|ticks| ticks as f64 / ticks_per_second())
}

/// `utime + stime` (fields 14 and 15) of a `/proc/<pid>/stat` line; the command name (field 2)
/// may hold spaces and parentheses, so fields are counted after its last `)`.
fn parse_stat(stat: &str) -> Option<u64> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut fields = rest.split_whitespace().skip(11);
    Some(fields.next()?.parse::<u64>().ok()? + fields.next()?.parse::<u64>().ok()?)
}

/// The CPU seconds of all of `pids` together (`None` when one cannot be read).
pub fn total(pids: &[u32]) -> Option<f64> {
    pids.iter().map(|&pid| seconds(pid)).sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_utime_and_stime_after_the_command_name() {
        let line = "4242 (we) ird (name)) S 1 2 3 4 5 6 7 8 9 10 250 17 0 0 20 0 3 0 100 0 0";
        assert_eq!(parse_stat(line), Some(267));
        assert_eq!(parse_stat("no parenthesis"), None);
    }

    #[test]
    fn reads_this_process() {
        assert!(seconds(std::process::id()).is_some_and(|s| s >= 0.0));
        assert_eq!(total(&[std::process::id(), u32::MAX]), None);
    }
}
