//! Writes the lists the module embeds as core's list loader reads them: names normalized,
//! invalid and public-suffix entries dropped, sorted. The strong disposable lists for the local
//! fallback (`src/fallback.rs`), and the relay list for the relay detail header (`src/relay.rs`).
//! Doing this here keeps the Public Suffix List (the `psl` crate, most of a module's size) out
//! of the module: at run time a sorted list and a parent walk suffice, because no listed name
//! has a public suffix beneath it (checked by `scripts/update-data.py` when the lists are
//! regenerated, and by the tests of both modules).
//!
//! The strong lists are deflated (about 200 KB of names, a quarter of that deflated): the module
//! inflates them once, on first use (`src/fallback.rs`), and stays under 1 MiB. Their length
//! comes first (4 bytes, little-endian).

use std::fmt::Write as _;
use std::path::Path;

use email_verdict_core::DomainSet;

const STRONG_LISTS: [&str; 2] = ["disposable/disposable-email-domains.txt", "disposable/fakefilter.txt"];
const RELAY_LIST: &str = "relay.txt";

/// The strongest deflate level: the build pays once, the module is smaller.
const LEVEL: u8 = 10;

fn main() {
    let strong = names("The strong lists of data/disposable/", &STRONG_LISTS);
    // Its length first, so that the module inflates it into a buffer of exactly that size.
    let len = u32::try_from(strong.len()).expect("the strong lists under 4 GiB");
    let mut embedded = len.to_le_bytes().to_vec();
    embedded.extend(miniz_oxide::deflate::compress_to_vec(strong.as_bytes(), LEVEL));
    write("strong.txt.deflate", &embedded);
    write("relay.txt", names("data/relay.txt", &[RELAY_LIST]).as_bytes());
}

fn write(out: &str, bytes: &[u8]) {
    let dest = Path::new(&std::env::var("OUT_DIR").expect("OUT_DIR")).join(out);
    std::fs::write(&dest, bytes).unwrap_or_else(|e| panic!("{}: {e}", dest.display()));
}

/// The names of the `files` of `data/`, as core loads them, one a line, sorted.
fn names(what: &str, files: &[&str]) -> String {
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
    text
}
