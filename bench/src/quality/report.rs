//! The quality table: per label set, how many names each build blocked (`disposable`), the
//! false-positive rate on legitimate names and the recall per source tier, with the change.

use std::fmt::Write;

use super::Run;
use super::labels::{Labelled, Set};
use crate::report::count;

/// Blocked and answered counts of one run over the entries `keep` selects.
#[derive(Clone, Copy, Default)]
struct Tally {
    names: usize,
    /// Names a per-source file lists (themselves or a parent).
    listed: usize,
    answered: usize,
    blocked: usize,
    mx_ip_match: usize,
    review: usize,
}

fn tally(set: &Labelled, run: &Run, keep: impl Fn(Set) -> bool) -> Tally {
    let mut t = Tally::default();
    for (e, o) in set.entries.iter().zip(&run.outcomes) {
        if !keep(e.set) {
            continue;
        }
        t.names += 1;
        t.listed += usize::from(e.sources != 0);
        if o.ok() {
            t.answered += 1;
            t.blocked += usize::from(o.disposable);
            t.mx_ip_match += usize::from(o.disposable && o.mx_ip_match);
            t.review += usize::from(!o.disposable && o.review_required);
        }
    }
    t
}

fn pct(part: usize, whole: usize) -> f64 {
    if whole == 0 { 0.0 } else { part as f64 * 100.0 / whole as f64 }
}

fn cell(t: &Tally) -> String {
    let missing = t.names - t.answered;
    let errors = if missing > 0 { format!(" ({missing} not answered 200)") } else { String::new() };
    format!("{} ({:.2} %){errors}", count(t.blocked as f64), pct(t.blocked, t.answered))
}

/// The row of one selection: names, then each run's blocked cell, then the change in points.
fn row(out: &mut String, title: &str, set: &Labelled, runs: &[Run], keep: impl Fn(Set) -> bool + Copy) {
    let tallies: Vec<Tally> = runs.iter().map(|r| tally(set, r, keep)).collect();
    let (names, listed) = tallies.first().map_or((0, 0), |t| (t.names, t.listed));
    let _ = write!(out, "| {title} | {} | {} |", count(names as f64), count(listed as f64));
    for t in &tallies {
        let _ = write!(out, " {} |", cell(t));
    }
    if let [a, b] = tallies.as_slice() {
        let _ = write!(out, " {:+.2} |", pct(b.blocked, b.answered) - pct(a.blocked, a.answered));
    }
    out.push('\n');
}

pub fn table(set: &Labelled, runs: &[Run]) -> String {
    let mut out = String::from("| label set | names | in data/disposable/ |");
    for r in runs {
        let _ = write!(out, " blocked: {} |", r.label);
    }
    out.push_str(if runs.len() == 2 { " change (points) |\n|---|---:|---:|" } else { "\n|---|---:|---:|" });
    out.push_str(&"---:|".repeat(runs.len() + usize::from(runs.len() == 2)));
    out.push('\n');
    for s in Set::ALL.into_iter().filter(|s| s.legitimate()) {
        row(&mut out, s.title(), set, runs, |x| x == s);
    }
    row(&mut out, "**all legitimate: false-positive rate**", set, runs, Set::legitimate);
    row(&mut out, "**strong-listed: recall**", set, runs, |x| x == Set::Strong);
    row(&mut out, Set::SubdomainOnParentMx.title(), set, runs, |x| x == Set::SubdomainOnParentMx);
    row(&mut out, "weak-only, own mail servers: recall", set, runs, |x| x == Set::WeakOnly);
    row(&mut out, "**weak-only on disposable mail servers: recall**", set, runs, |x| x == Set::WeakOnDisposableMx);
    out.push_str(
        "\n\"in data/disposable/\": names a per-source file lists (the name or a parent up to its registrable \
         domain); those files leave out free and relay names, so a free name only a weak source carried shows 0.\n\n",
    );
    out.push_str(&details(set, runs));
    out
}

/// Per run: the targets of issue 14, how the weak-only names were decided, and the legitimate
/// names blocked (first 20).
fn details(set: &Labelled, runs: &[Run]) -> String {
    let mut out = String::new();
    for r in runs {
        let legit = tally(set, r, Set::legitimate);
        let strong = tally(set, r, |x| x == Set::Strong);
        let riders = tally(set, r, |x| x == Set::WeakOnDisposableMx);
        let weak = tally(set, r, |x| x == Set::WeakOnly);
        let met = |ok: bool| if ok { "met" } else { "NOT met" };
        let _ = writeln!(
            out,
            "**{}** (warm-up: {}; lookups: {:.0} s): no legitimate name blocked: {}; strong-listed recall 100 %: {}; \
             weak-only on disposable mail servers all caught: {} ({} of them with `mx_ip_match`). \
             Weak-only names on their own servers answered `safe` with `review_required`: {} of {}.\n",
            r.label,
            r.warm_up,
            r.seconds,
            met(legit.blocked == 0 && legit.answered == legit.names),
            met(strong.blocked == strong.names),
            met(riders.blocked == riders.names),
            count(riders.mx_ip_match as f64),
            count(weak.review as f64),
            count(weak.names as f64),
        );
        out.push_str(&blocked_legitimate(set, r));
    }
    out
}

/// The legitimate names `run` blocked, the first 20 of each set.
fn blocked_legitimate(set: &Labelled, run: &Run) -> String {
    let mut out = String::new();
    for s in Set::ALL.into_iter().filter(|s| s.legitimate()) {
        let blocked: Vec<String> = set
            .entries
            .iter()
            .zip(&run.outcomes)
            .filter(|(e, o)| e.set == s && o.disposable)
            .map(|(e, _)| format!("`{}`", e.name))
            .collect();
        if blocked.is_empty() {
            continue;
        }
        let more = blocked.len().saturating_sub(20);
        let tail = if more > 0 { format!(" and {more} more") } else { String::new() };
        let names = blocked[..blocked.len().min(20)].join(", ");
        let _ = writeln!(out, "Blocked by {}, {}: {names}{tail}.\n", run.label, s.title());
    }
    out
}

#[cfg(test)]
mod tests {
    use std::net::Ipv6Addr;

    use super::*;
    use crate::quality::labels::Entry;
    use crate::quality::measure::Outcome;

    fn entry(name: &str, set: Set) -> Entry {
        Entry { name: name.into(), set, mx: format!("mx.{name}"), ip: Ipv6Addr::LOCALHOST, sources: 0 }
    }

    fn run(label: &str, blocked: &[bool]) -> Run {
        let outcomes = blocked.iter().map(|&b| Outcome { status: 200, disposable: b, ..Outcome::default() }).collect();
        Run { label: label.into(), outcomes, seconds: 1.0, warm_up: "none".into() }
    }

    #[test]
    fn rows_count_blocked_names_per_set_and_the_change() {
        let set = Labelled {
            entries: vec![
                entry("uni.edu", Set::Academic),
                entry("hush.com", Set::HardCase),
                entry("s.com", Set::Strong),
            ],
            notes: vec![],
        };
        let t = table(&set, &[run("before", &[false, true, true]), run("after", &[false, false, true])]);
        let line = |start: &str| t.lines().find(|l| l.starts_with(start)).unwrap_or_else(|| panic!("{start}\n{t}"));
        assert_eq!(
            line("| **all legitimate"),
            "| **all legitimate: false-positive rate** | 2 | 0 | 1 (50.00 %) | 0 (0.00 %) | -50.00 |"
        );
        assert_eq!(
            line("| **strong-listed"),
            "| **strong-listed: recall** | 1 | 0 | 1 (100.00 %) | 1 (100.00 %) | +0.00 |"
        );
        assert!(t.contains("**before** (warm-up: none; lookups: 1 s): no legitimate name blocked: NOT met"), "{t}");
        assert!(t.contains("**after** (warm-up: none; lookups: 1 s): no legitimate name blocked: met"), "{t}");
        assert!(t.contains("Blocked by before, legitimate: named hard cases (issue 14, cock.li): `hush.com`."), "{t}");
    }

    #[test]
    fn a_name_not_answered_200_is_not_counted_as_met() {
        let set = Labelled { entries: vec![entry("s.com", Set::Strong)], notes: vec![] };
        let mut r = run("after", &[false]);
        r.outcomes[0].status = 0;
        let t = table(&set, &[r]);
        assert!(t.contains("0 (0.00 %) (1 not answered 200)"), "{t}");
        assert!(t.contains("strong-listed recall 100 %: NOT met"), "{t}");
    }
}
