//! The baseline: every list as a plain `Vec` of its entries, scanned entry by entry with an
//! equality or `.`-suffix test, as several popular libraries do. Same entries as the `Catalog`
//! (normalized and filtered by the same rules), so both must agree on every sample.

use email_verdict_core::domain::is_public_suffix;
use email_verdict_core::{Catalog, Domain, MxInfo};

pub struct LinearScan {
    disposable: Vec<String>,
    free: Vec<String>,
    relay: Vec<String>,
    allow: Vec<String>,
    block: Vec<String>,
    /// MX host suffix → provider name.
    shared_mx: Vec<(String, String)>,
}

/// The flags the comparison checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Flags {
    pub disposable: bool,
    pub free: bool,
    pub relay: bool,
    pub allow: bool,
    pub block: bool,
}

impl LinearScan {
    /// `disposable`: the texts of every disposable source (a name is listed when any lists it).
    pub fn new(disposable: &[&str], free: &str, relay: &str, shared_mx: &str) -> Self {
        let names = |text: &str| entries(text).filter_map(normalize).collect::<Vec<_>>();
        let mut all: Vec<String> = disposable.iter().flat_map(|t| names(t)).collect();
        all.sort_unstable();
        all.dedup();
        let shared_mx = entries(shared_mx)
            .filter_map(|l| {
                let (name, value) = l.split_once('\t').unwrap_or((l, l));
                Some((normalize(name)?, value.trim().to_owned()))
            })
            .collect();
        let (allow, block) = (Vec::new(), Vec::new());
        Self { disposable: all, free: names(free), relay: names(relay), allow, block, shared_mx }
    }

    pub fn disposable(&self) -> &[String] {
        &self.disposable
    }

    pub fn free(&self) -> &[String] {
        &self.free
    }

    pub fn shared_mx_suffixes(&self) -> impl Iterator<Item = &str> {
        self.shared_mx.iter().map(|(name, _)| name.as_str())
    }

    /// Every list checked, as `Catalog::signals` checks every list.
    pub fn signals(&self, domain: &str) -> Flags {
        let on = |list: &[String]| list.iter().any(|entry| covers(entry, domain));
        Flags {
            disposable: on(&self.disposable),
            free: on(&self.free),
            relay: on(&self.relay),
            allow: on(&self.allow),
            block: on(&self.block),
        }
    }

    pub fn shared_mx_host(&self, host: &str) -> Option<&str> {
        self.shared_mx.iter().find(|(entry, _)| covers(entry, host)).map(|(_, v)| v.as_str())
    }
}

/// `name` is `entry` or a subdomain of it.
fn covers(entry: &str, name: &str) -> bool {
    name == entry
        || name.len() > entry.len() && name.ends_with(entry) && name.as_bytes()[name.len() - entry.len() - 1] == b'.'
}

/// The entry lines of a list text (the same skipping rules as the core's loader).
fn entries(text: &str) -> impl Iterator<Item = &str> {
    text.lines()
        .map(|l| l.split(" #").next().unwrap_or_default().trim())
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
}

/// An entry as `NameMap::insert` stores it, or `None` where it refuses it.
fn normalize(line: &str) -> Option<String> {
    let name = line.trim();
    let name = name.strip_prefix("*.").or_else(|| name.strip_prefix('.')).unwrap_or(name);
    let domain = Domain::parse(name).ok()?;
    (!is_public_suffix(domain.as_str())).then(|| domain.as_str().to_owned())
}

/// Both sides give the same answer for every sample: otherwise the comparison is meaningless.
pub fn check_agreement(catalog: &Catalog, scan: &LinearScan, domains: &[Domain], hosts: &[String]) {
    for d in domains {
        let s = catalog.signals(d, &MxInfo::NoMx, None);
        let hashed =
            Flags { disposable: s.listing.is_some(), free: s.free, relay: s.relay, allow: false, block: false };
        assert_eq!(hashed, scan.signals(d.as_str()), "catalog and linear scan disagree on {d}");
    }
    // Whether a host is shared infrastructure; the provider name may differ where entries nest
    // (the catalog names the most specific, the scan the first in file order).
    for h in hosts {
        let (hashed, scanned) = (catalog.shared_mx_host(h).is_some(), scan.shared_mx_host(h).is_some());
        assert_eq!(hashed, scanned, "catalog and linear scan disagree on MX host {h}");
    }
}
