//! The summary of a corpus run: per gateway, how many cases reached the app, and per family and
//! per reader how many of those gave a framework a disposable address; then the first failures,
//! dumped readably.

use std::collections::BTreeMap;
use std::fmt;

use email_verdict_tests::Recorded;
use email_verdict_tests::frameworks::Reading;

use super::corpus::Case;
use super::{Trip, Via, is_disposable};

/// How many failures are dumped in full.
const DUMPED: usize = 6;

pub struct Failure {
    pub via: Via,
    pub family: &'static str,
    pub what: String,
    /// (reader, the disposable values it read)
    pub readers: Vec<(String, Vec<String>)>,
    pub recorded: Recorded,
}

pub struct Report {
    text: String,
    pub failures: Vec<Failure>,
}

impl Report {
    pub fn new<'a>(
        cases: &[Case],
        runs: &'a [(Via, Vec<Trip>)],
        read: impl Fn(&Recorded) -> &'a Vec<Reading>,
    ) -> Report {
        let mut text = String::new();
        let mut failures = Vec::new();
        // (reader) -> (via) -> (family) -> cases
        let mut by_reader: BTreeMap<String, BTreeMap<&str, BTreeMap<&str, usize>>> = BTreeMap::new();
        // (family) -> (via) -> (cases, reached, leaked)
        let mut by_family: BTreeMap<&str, BTreeMap<&str, (usize, usize, usize)>> = BTreeMap::new();
        for (via, trips) in runs {
            let mut statuses: BTreeMap<u16, usize> = BTreeMap::new();
            for t in trips {
                *statuses.entry(t.status).or_default() += 1;
                let case = &cases[t.case];
                let fam = by_family.entry(case.family).or_default().entry(via.name()).or_default();
                fam.0 += 1;
                let Some(rec) = &t.recorded else { continue };
                fam.1 += 1;
                let mut leaked = Vec::new();
                for (reader, result) in read(rec) {
                    let bad: Vec<String> = result.iter().flatten().filter(|v| is_disposable(v)).cloned().collect();
                    if !bad.is_empty() {
                        *by_reader
                            .entry(reader.clone())
                            .or_default()
                            .entry(via.name())
                            .or_default()
                            .entry(case.family)
                            .or_default() += 1;
                        leaked.push((reader.clone(), bad));
                    }
                }
                if !leaked.is_empty() {
                    fam.2 += 1;
                    let what = case.what.clone();
                    failures.push(Failure {
                        via: *via,
                        family: case.family,
                        what,
                        readers: leaked,
                        recorded: rec.clone(),
                    });
                }
            }
            let reached = trips.iter().filter(|t| t.recorded.is_some()).count();
            text += &format!(
                "{}: {} cases, {reached} reached the app; gateway statuses {statuses:?}\n",
                via.name(),
                trips.len()
            );
        }
        text += "\nfamily             | gateway   | cases | reached the app | a reader read a disposable address\n";
        for (family, vias) in &by_family {
            for (via, (n, reached, leaked)) in vias {
                text += &format!("{family:<18} | {via:<9} | {n:>5} | {reached:>15} | {leaked:>5}\n");
            }
        }
        text += "\nreader (cases in which it read a disposable address, by gateway and family)\n";
        for (reader, vias) in &by_reader {
            for (via, fams) in vias {
                let total: usize = fams.values().sum();
                let list: Vec<String> = fams.iter().map(|(f, n)| format!("{f} {n}")).collect();
                text += &format!("  {reader:<30} {via:<9} {total:>5}: {}\n", list.join(", "));
            }
        }
        // Which variants walked through: always for the framing families, all with the variable set.
        let all = std::env::var_os("FRAMEWORK_DIFFERENTIALS_VARIANTS").is_some();
        let mut variants: BTreeMap<(&str, &str, &str), usize> = BTreeMap::new();
        for x in failures.iter().filter(|x| all || matches!(x.family, "multipart-framing" | "form-charsets")) {
            *variants.entry((x.family, x.via.name(), x.what.as_str())).or_default() += 1;
        }
        text += "\nvariants that gave a framework a disposable address (FRAMEWORK_DIFFERENTIALS_VARIANTS=1: every family)\n";
        for ((family, via, what), n) in &variants {
            text += &format!("  {family} {via}: {what} ({n})\n");
        }
        Report { text, failures }
    }
}

/// The request as the app received it, with the body's bytes escaped.
fn dump(r: &Recorded) -> String {
    let mut out = format!("{} {}\n", r.method, r.target);
    for (n, v) in &r.headers {
        out += &format!("{n}: {v}\n");
    }
    let body: String = r.body.iter().take(800).flat_map(|&b| std::ascii::escape_default(b)).map(char::from).collect();
    out + &format!("\n{body}{}\n", if r.body.len() > 800 { " [...]" } else { "" })
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "{}", self.text)?;
        for x in self.failures.iter().take(DUMPED) {
            writeln!(f, "----- through the {} ({}: {}), the app got:", x.via.name(), x.family, x.what)?;
            writeln!(f, "{}", dump(&x.recorded))?;
            for (reader, values) in &x.readers {
                writeln!(f, "  {reader} read {values:?}")?;
            }
        }
        Ok(())
    }
}
