//! The address-validator phase: what an app would STORE from a request that reached it. Apps keep
//! what their email validator returns, not the bytes a parser handed them; each adapter runs its
//! language's validators on every value its readers exposed (`tests/frameworks/*/validators.*`).
//!
//! The oracle: a stored address is at a disposable domain when mail to it would go to one of
//! [`TARGETS`] or a subdomain: the domain after its last `@` as Python's mail stack (IDNA 2003:
//! `ß`→`ss`, joiners dropped), UTS-46 (transitional and not) or the raw text give it, trailing dots
//! removed (`Frameworks::delivery`, computed by the Python adapter). Any of these counts.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Mutex;

use email_verdict_tests::Recorded;
use email_verdict_tests::frameworks::{Frameworks, Stored};

use super::addresses::TARGETS;
use super::corpus::Case;
use super::{Key, Trip, Via, reading_key, straight};

/// How many leaks are dumped in full.
const DUMPED: usize = 8;

/// What the validators would store from each distinct request, and where its mail would go.
pub struct Validated<'a> {
    frameworks: &'a Frameworks,
    stored: HashMap<Key, Vec<Stored>>,
    disposable: HashMap<String, bool>,
}

fn at_target(domain: &str) -> bool {
    TARGETS.iter().any(|t| domain == *t || domain.strip_suffix(t).is_some_and(|rest| rest.ends_with('.')))
}

impl<'a> Validated<'a> {
    pub fn new(frameworks: &'a Frameworks) -> Validated<'a> {
        Validated { frameworks, stored: HashMap::new(), disposable: HashMap::new() }
    }

    /// Runs the validators on every request not seen yet (4 at a time), then asks where the mail
    /// of every new stored address would go.
    pub fn add<'r>(&mut self, requests: impl IntoIterator<Item = &'r Recorded>) {
        let mut todo: Vec<(Key, &Recorded)> = Vec::new();
        let mut seen: HashSet<Key> = self.stored.keys().cloned().collect();
        for r in requests {
            let key = reading_key(r);
            if seen.insert(key.clone()) {
                todo.push((key, r));
            }
        }
        let frameworks = self.frameworks;
        let out = Mutex::new(Vec::new());
        let next = std::sync::atomic::AtomicUsize::new(0);
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| {
                    while let Some((key, r)) = todo.get(next.fetch_add(1, std::sync::atomic::Ordering::SeqCst)) {
                        let (_, stored) = frameworks.validate_all(r);
                        out.lock().expect("lock").push((key.clone(), stored));
                    }
                });
            }
        });
        for (key, stored) in out.into_inner().expect("lock") {
            self.stored.insert(key, stored);
        }
        let new: Vec<String> = self
            .stored
            .values()
            .flatten()
            .map(|(_, _, s)| s.clone())
            .filter(|s| !self.disposable.contains_key(s))
            .collect::<HashSet<_>>()
            .into_iter()
            .collect();
        for chunk in new.chunks(500) {
            for (s, domains) in chunk.iter().zip(self.frameworks.delivery(chunk)) {
                self.disposable.insert(s.clone(), domains.iter().any(|d| at_target(d)));
            }
        }
    }

    /// The (validator, value, stored) of this request whose mail would go to a disposable domain.
    pub fn leaks(&self, r: &Recorded) -> Vec<&Stored> {
        let stored = self.stored.get(&reading_key(r)).expect("validated before");
        stored.iter().filter(|(_, _, s)| self.disposable[s]).collect()
    }
}

/// Not vacuous: sent straight to the app (no gateway), every family makes some validator store an
/// address at a disposable domain. Returns the problems.
pub fn every_family_fools_a_validator_without_the_gateway(v: &mut Validated, cases: &[Case]) -> Vec<String> {
    let direct: Vec<Recorded> = cases.iter().map(straight).collect();
    v.add(&direct);
    let mut fooled: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
    for (c, r) in cases.iter().zip(&direct) {
        let e = fooled.entry(c.family).or_default();
        e.0 += 1;
        e.1 += usize::from(!v.leaks(r).is_empty());
    }
    println!("address corpus straight to the app, cases in which a validator stored a disposable address:");
    for (family, (n, bad)) in &fooled {
        println!("  {family:<20} {bad:>4} of {n}");
    }
    fooled
        .iter()
        .filter(|(_, (_, bad))| *bad == 0)
        .map(|(f, _)| format!("no case of the address family {f} makes any validator store a disposable address"))
        .collect()
}

/// The phase's report: per family and gateway, per validator; the first leaks dumped. Returns the
/// number of requests that reached the app and made a validator store a disposable address.
pub fn report(v: &Validated, cases: &[Case], runs: &[(Via, Vec<Trip>)]) -> usize {
    let mut by_family: BTreeMap<&str, BTreeMap<&str, (usize, usize, usize)>> = BTreeMap::new();
    let mut by_validator: BTreeMap<&str, BTreeMap<&str, usize>> = BTreeMap::new();
    // (family, value) -> gateway -> placements in which a validator stored a disposable address
    let mut by_value: BTreeMap<(&str, &str), BTreeMap<&str, usize>> = BTreeMap::new();
    let mut dumped = Vec::new();
    let mut leaked = 0;
    for (via, trips) in runs {
        for t in trips {
            let case = &cases[t.case];
            let value = case.what.rsplit_once(" in ").map_or(case.what.as_str(), |(v, _)| v);
            let n = by_value.entry((case.family, value)).or_default().entry(via.name()).or_default();
            let e = by_family.entry(case.family).or_default().entry(via.name()).or_default();
            e.0 += 1;
            let Some(r) = &t.recorded else { continue };
            e.1 += 1;
            let leaks = v.leaks(r);
            if leaks.is_empty() {
                continue;
            }
            e.2 += 1;
            *n += 1;
            leaked += 1;
            for name in leaks.iter().map(|(n, _, _)| n.as_str()).collect::<HashSet<_>>() {
                *by_validator.entry(name).or_default().entry(via.name()).or_default() += 1;
            }
            if dumped.len() < DUMPED {
                let l: Vec<String> = leaks.iter().take(4).map(|(n, x, s)| format!("{n}: {x:?} -> {s:?}")).collect();
                dumped.push(format!(
                    "  {} [{}] {} (status {}):\n    {}",
                    via.name(),
                    case.family,
                    case.what,
                    t.status,
                    l.join("\n    ")
                ));
            }
        }
    }
    println!(
        "\naddress family       | gateway                 | cases | reached the app | a validator stored a disposable address"
    );
    for (family, vias) in &by_family {
        for (via, (n, reached, bad)) in vias {
            println!("{family:<20} | {via:<23} | {n:>5} | {reached:>15} | {bad:>5}");
        }
    }
    println!("\nvalidator (cases it stored a disposable address from, by gateway)");
    for (name, vias) in &by_validator {
        let list: Vec<String> = vias.iter().map(|(via, n)| format!("{via} {n}")).collect();
        println!("  {name:<50} {}", list.join(", "));
    }
    println!("\nvalue (placements, of 8, in which a validator stored a disposable address, by gateway)");
    for ((family, value), vias) in &by_value {
        let list: Vec<String> = vias.iter().map(|(via, n)| format!("{via} {n}")).collect();
        let shown: String = value.chars().take(60).collect();
        println!("  {family:<20} {shown:<62} {}", list.join(", "));
    }
    if !dumped.is_empty() {
        println!("\nfirst leaks:\n{}", dumped.join("\n"));
    }
    leaked
}
