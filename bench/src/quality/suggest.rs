//! `make quality`, typo suggestions (`did_you_mean`, issue 18): a labelled set of typos and of
//! real names, served by NSD, looked up through the API; how many suggestions are right, how
//! many typos get one, and how many real names get one they should not.
//!
//! Typos (each labelled with the provider it should be corrected to), served as NXDOMAIN:
//! - published: `bench/quality/typos.tsv`, copied from the named package versions;
//! - generated: every one-edit variant of the five largest providers (letters swapped, one
//!   missing, one doubled or a neighbouring key added, one replaced by a neighbouring key) and
//!   slips of `.com` (to no TLD, `.con`...; to a real one, `.co`, `.cm`, `.om`).
//!
//! A typo that a shipped list carries (typosquatters register the common ones, and lists carry
//! them) is counted apart: on a disposable list, still a typo to correct when it has no mail; on
//! a free-webmail or relay list, vouched for and never corrected.
//!
//! Real names that must get no suggestion: every free-webmail name and an academic sample with
//! their own MX; another academic sample without mail (half with an address and no MX, half
//! with the null MX); the other disposable-listed names within one edit of a provider, served
//! with their own MX as typosquatters run them.

use std::collections::{BTreeMap, HashSet};
use std::fmt::Write;

use email_verdict_core::{Domain, Providers};

use super::labels::rank;

/// The providers the generated typos are made from.
pub const GENERATED_FROM: [&str; 5] = ["gmail.com", "yahoo.com", "hotmail.com", "outlook.com", "icloud.com"];
/// Slips of `.com` that are no TLD, and slips to a real TLD (never corrected alone).
const COM_SLIPS: [&str; 10] = ["con", "cmo", "comm", "vom", "xom", "cpm", "ocm", "coom", "cim", "c0m"];
const COM_SLIPS_REAL: [&str; 3] = ["co", "cm", "om"];

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Kind {
    /// A published typo; expected: the provider the source names (or none: "-").
    Published,
    /// A generated one-edit typo of a provider's name.
    NameEdit,
    /// A generated slip of `.com` to something that is no TLD.
    SuffixSlip,
    /// A generated slip of `.com` to a real TLD: by the rules, no suggestion.
    SuffixSlipReal,
    /// A typo (published or generated) that a disposable list carries, without mail: corrected.
    DisposableTypo,
    /// A name a free-webmail or relay list carries, within one edit of a provider (typos above
    /// included): vouched for, by the rules none.
    Vouched,
    /// Another disposable-listed name within one edit of a provider, with its own MX: never.
    ListedWithMx,
    /// A real name with its own MX (free webmail, academic, published non-typos): never.
    RealWithMx,
    /// A real name without mail (academic, no MX or null MX): none expected.
    RealNoMx,
}

impl Kind {
    pub const ALL: [Kind; 9] = [
        Kind::Published,
        Kind::NameEdit,
        Kind::SuffixSlip,
        Kind::SuffixSlipReal,
        Kind::DisposableTypo,
        Kind::Vouched,
        Kind::ListedWithMx,
        Kind::RealWithMx,
        Kind::RealNoMx,
    ];

    pub fn title(self) -> &'static str {
        match self {
            Kind::Published => "published typos (`bench/quality/typos.tsv`), on no list",
            Kind::NameEdit => "generated: one edit of a provider's name",
            Kind::SuffixSlip => "generated: `.com` slipped to no TLD (`.con`, `.cmo`...)",
            Kind::SuffixSlipReal => "generated: `.com` slipped to a real TLD (`.co`, `.cm`, `.om`): none by design",
            Kind::DisposableTypo => "typos above that a disposable list carries (no mail)",
            Kind::Vouched => "free-webmail or relay names within one edit of a provider: none by design",
            Kind::ListedWithMx => "other disposable-listed names within one edit of a provider, with MX: never",
            Kind::RealWithMx => "real domains with their own MX (free webmail, academic)",
            Kind::RealNoMx => "real domains without mail (academic; no MX or null MX)",
        }
    }

    /// Whether a suggestion is wanted at all (the typos the rules are meant to catch).
    pub fn wants_suggestion(self) -> bool {
        matches!(self, Kind::Published | Kind::NameEdit | Kind::SuffixSlip | Kind::DisposableTypo)
    }
}

/// How a name is served.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dns {
    NxDomain,
    NoMx,
    NullMx,
    OwnMx,
}

#[derive(Debug, Clone)]
pub struct Case {
    pub name: String,
    pub kind: Kind,
    /// The provider it should be corrected to (None: no suggestion wanted).
    pub expected: Option<String>,
    pub dns: Dns,
    /// From `bench/quality/typos.tsv`.
    pub published: bool,
}

/// What the set is built from.
pub struct Inputs<'a> {
    pub published: &'a str,
    pub providers: &'a Providers,
    /// Every name of the shipped disposable lists.
    pub disposable: &'a HashSet<String>,
    /// Every name of the shipped free-webmail and relay lists.
    pub vouched: &'a HashSet<String>,
    pub free: &'a [String],
    pub academic: &'a [String],
    pub academic_sample: usize,
    pub seed: u64,
}

pub fn build(i: &Inputs<'_>) -> Vec<Case> {
    let mut cases: BTreeMap<String, Case> = BTreeMap::new();
    let mut add = |name: String, kind: Kind, expected: Option<String>, dns: Dns| {
        let published = kind == Kind::Published;
        let kind = match kind {
            k if !k.wants_suggestion() => k,
            _ if i.vouched.contains(&name) => Kind::Vouched,
            _ if i.disposable.contains(&name) => Kind::DisposableTypo,
            k => k,
        };
        let name_ok = Domain::parse(&name).is_ok() && !i.providers.contains(&name);
        if name_ok {
            cases.entry(name.clone()).or_insert(Case { name, kind, expected, dns, published });
        }
    };
    for line in i.published.lines().filter(|l| !l.starts_with('#') && !l.trim().is_empty()) {
        let mut fields = line.split('\t');
        let (Some(typed), Some(expected)) = (fields.next(), fields.next()) else { continue };
        match expected {
            "-" => add(typed.to_owned(), Kind::RealWithMx, None, Dns::OwnMx),
            provider => add(typed.to_owned(), Kind::Published, Some(provider.to_owned()), Dns::NxDomain),
        }
    }
    for provider in GENERATED_FROM {
        let (name, suffix) = provider.split_once('.').unwrap_or((provider, ""));
        for typo in one_edit(name) {
            add(format!("{typo}.{suffix}"), Kind::NameEdit, Some(provider.to_owned()), Dns::NxDomain);
        }
        for slip in COM_SLIPS {
            add(format!("{name}.{slip}"), Kind::SuffixSlip, Some(provider.to_owned()), Dns::NxDomain);
        }
        for slip in COM_SLIPS_REAL {
            add(format!("{name}.{slip}"), Kind::SuffixSlipReal, None, Dns::NxDomain);
        }
    }
    let near_provider = |set: &HashSet<String>| {
        let mut names: Vec<String> =
            set.iter().filter(|n| Domain::parse(n).is_ok_and(|d| i.providers.closest(&d).is_some())).cloned().collect();
        names.sort();
        names
    };
    for name in near_provider(i.vouched) {
        add(name, Kind::Vouched, None, Dns::NxDomain);
    }
    for name in near_provider(i.disposable) {
        add(name, Kind::ListedWithMx, None, Dns::OwnMx);
    }
    for name in i.free {
        add(name.clone(), Kind::RealWithMx, None, Dns::OwnMx);
    }
    let mut academic: Vec<&String> = i.academic.iter().collect();
    academic.sort_by_key(|n| rank(i.seed, n));
    for (n, name) in academic.into_iter().take(i.academic_sample * 2).enumerate() {
        let (kind, dns) = match n % 4 {
            0 | 1 => (Kind::RealWithMx, Dns::OwnMx),
            2 => (Kind::RealNoMx, Dns::NoMx),
            _ => (Kind::RealNoMx, Dns::NullMx),
        };
        add(name.clone(), kind, None, dns);
    }
    cases.into_values().collect()
}

/// The QWERTY rows, each shifted right of the one above by part of a key.
const ROWS: [&[u8]; 4] = [b"1234567890-", b"qwertyuiop", b"asdfghjkl", b"zxcvbnm"];

/// The keys next to `c` on a QWERTY keyboard.
pub fn neighbours(c: u8) -> Vec<u8> {
    let Some((r, col)) = ROWS.iter().enumerate().find_map(|(r, k)| k.iter().position(|&x| x == c).map(|i| (r, i)))
    else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let mut push = |row: usize, col: Option<usize>| {
        if let Some(&k) = col.and_then(|c| ROWS.get(row)?.get(c)) {
            out.push(k);
        }
    };
    push(r, col.checked_sub(1));
    push(r, Some(col + 1));
    if r > 0 {
        push(r - 1, Some(col));
        push(r - 1, Some(col + 1));
    }
    push(r + 1, col.checked_sub(1));
    push(r + 1, Some(col));
    out
}

/// Every variant of `name` one edit away: neighbours swapped, one letter missing, one doubled
/// or a neighbouring key added after it, one replaced by a neighbouring key.
pub fn one_edit(name: &str) -> Vec<String> {
    let b = name.as_bytes();
    let mut out = Vec::new();
    let text = |v: Vec<u8>| String::from_utf8(v).unwrap_or_default();
    for i in 0..b.len() {
        if i + 1 < b.len() && b[i] != b[i + 1] {
            let mut v = b.to_vec();
            v.swap(i, i + 1);
            out.push(text(v));
        }
        let mut v = b.to_vec();
        v.remove(i);
        out.push(text(v));
        for extra in std::iter::once(b[i]).chain(neighbours(b[i])) {
            let mut v = b.to_vec();
            v.insert(i + 1, extra);
            out.push(text(v));
        }
        for k in neighbours(b[i]) {
            let mut v = b.to_vec();
            v[i] = k;
            out.push(text(v));
        }
    }
    out.sort();
    out.dedup();
    out.retain(|v| v != name && !v.is_empty());
    out
}

/// The set as one root zone: every name not in it is NXDOMAIN.
pub fn root_zone(cases: &[Case]) -> String {
    let mut z = String::from(
        "$ORIGIN .\n$TTL 86400\n\
         .\tIN SOA ns.quality.test. hostmaster.quality.test. 1 3600 600 86400 60\n\
         .\tIN NS ns.quality.test.\n\
         ns.quality.test.\tIN A 127.0.0.1\n",
    );
    for (n, c) in cases.iter().enumerate() {
        let ip = format!("2001:db8:5::{:x}", n + 1);
        let _ = match c.dns {
            Dns::NxDomain => Ok(()),
            Dns::NoMx => writeln!(z, "{}.\tIN AAAA {ip}", c.name),
            Dns::NullMx => writeln!(z, "{}.\tIN MX 0 .", c.name),
            Dns::OwnMx => writeln!(z, "{0}.\tIN MX 10 mx.{0}.\nmx.{0}.\tIN AAAA {ip}", c.name),
        };
    }
    z
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_variants_are_one_edit() {
        let v = one_edit("gmail");
        for typo in ["gmial", "gmai", "gmaill", "gmaik", "fmail", "gmaikl", "mgail"] {
            assert!(v.contains(&typo.to_owned()), "{typo}");
        }
        assert!(!v.contains(&"gmail".to_owned()) && !v.contains(&"gnial".to_owned()));
        assert_eq!(neighbours(b'g').len(), 6);
        assert!(neighbours(b'q').contains(&b'a') && neighbours(b'a').contains(&b'q'));
    }
}
