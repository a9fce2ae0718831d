//! Writes the lists the module embeds as core's list loader reads them: names normalized,
//! invalid and public-suffix entries dropped, sorted. The strong disposable lists for the local
//! fallback (`src/fallback.rs`), and the relay list for the relay detail header (`src/relay.rs`).
//! Doing this here keeps the Public Suffix List (the `psl` crate, most of a module's size) out
//! of the module: at run time a sorted list and a parent walk suffice, because no listed name
//! has a public suffix beneath it (checked by `scripts/update-data.py` when the lists are
//! regenerated, and by the tests of both modules).

use std::fmt::Write as _;
use std::path::Path;

use email_verdict_core::DomainSet;

const STRONG_LISTS: [&str; 2] = ["disposable/disposable-email-domains.txt", "disposable/fakefilter.txt"];
const RELAY_LIST: &str = "relay.txt";

fn main() {
    write_names("strong.txt", "The strong lists of data/disposable/", &STRONG_LISTS);
    write_names("relay.txt", "data/relay.txt", &[RELAY_LIST]);
}

/// `OUT_DIR/<out>`: the names of the `files` of `data/`, as core loads them, one a line, sorted.
fn write_names(out: &str, what: &str, files: &[&str]) {
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("../data");
    let mut set = DomainSet::default();
    let mut text = format!("# {what} as loaded by core (filter/build.rs).\n");
    for file in files {
        let path = data.join(file);
        println!("cargo::rerun-if-changed={}", path.display());
        let list = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        set.load_text(&list);
    }
    let mut names: Vec<&str> = set.iter().map(|(name, _)| name).collect();
    names.sort_unstable();
    for name in names {
        let _ = writeln!(text, "{name}");
    }
    let dest = Path::new(&std::env::var("OUT_DIR").expect("OUT_DIR")).join(out);
    std::fs::write(&dest, text).unwrap_or_else(|e| panic!("{}: {e}", dest.display()));
}
