//! Writes the strong disposable lists the module embeds for its local fallback
//! (`src/fallback.rs`) as core's list loader reads them: names normalized, invalid and
//! public-suffix entries dropped, sorted. Doing this here keeps the Public Suffix List (the `psl`
//! crate, most of a module's size) out of the module: at run time a sorted list and a parent
//! walk suffice, because no strong name has a public suffix beneath it (checked by
//! `scripts/update-data.py` when the lists are regenerated).

use std::fmt::Write as _;
use std::path::Path;

use email_verdict_core::DomainSet;

const STRONG_LISTS: [&str; 2] = ["disposable-email-domains.txt", "fakefilter.txt"];

fn main() {
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("../data/disposable");
    let mut set = DomainSet::default();
    let mut out = String::from("# The strong lists of data/disposable/ as loaded by core (filter/build.rs).\n");
    for file in STRONG_LISTS {
        let path = data.join(file);
        println!("cargo::rerun-if-changed={}", path.display());
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        set.load_text(&text);
    }
    let mut names: Vec<&str> = set.iter().map(|(name, _)| name).collect();
    names.sort_unstable();
    for name in names {
        let _ = writeln!(out, "{name}");
    }
    let dest = Path::new(&std::env::var("OUT_DIR").expect("OUT_DIR")).join("strong.txt");
    std::fs::write(&dest, out).unwrap_or_else(|e| panic!("{}: {e}", dest.display()));
}
