//! `make quality`, infrastructure section (issue 24): never-listed disposable names on learned
//! disposable mail servers, plainly and with each cheap evasion (recall), and legitimate names
//! an attacker or shared hosting puts next to listed ones (false positives), as one generated
//! root zone with the listed names given to the sidecar as an operator list (tier strong).
//!
//! Every name is directly under `test` (each its own registrable domain). Per disposable server
//! `s`: `mx.srv<s>.test` (198.18.x.y, 2001:db8:24::/48), [`LISTED_PER_SERVER`] listed names on
//! it, and one never-listed name per evasion. Per poisoned company `p`: its own server, two
//! listed names pointed at it by name, one listed name whose own host has its address, and the
//! company, a neighbour on the address only, and a sibling domain of the company on its server.
//! Per hosting server `h`: two listed names and customers, each with a host name of its own on
//! the hosting address (cPanel style). Self-hosted names with nothing near them. Per shared
//! provider of `data/shared_mx.tsv`: a business on it and two listed names on the same address.

use std::collections::BTreeMap;
use std::fmt::Write;

/// Listed domains per disposable server: twice the default threshold, so its address counts too.
pub const LISTED_PER_SERVER: usize = 4;

/// The groups measured, in the report's order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Group {
    Plain,
    SharedBackup,
    NewName,
    NewNameSharedBackup,
    Ipv6Only,
    DeadFirst,
    PoisonedOwner,
    PoisonedNeighbour,
    PoisonedSibling,
    Hosting,
    SelfHosted,
    SharedProvider,
}

impl Group {
    pub const ALL: [Group; 12] = [
        Group::Plain,
        Group::SharedBackup,
        Group::NewName,
        Group::NewNameSharedBackup,
        Group::Ipv6Only,
        Group::DeadFirst,
        Group::PoisonedOwner,
        Group::PoisonedNeighbour,
        Group::PoisonedSibling,
        Group::Hosting,
        Group::SelfHosted,
        Group::SharedProvider,
    ];

    pub fn disposable(self) -> bool {
        self <= Group::DeadFirst
    }

    pub fn title(self) -> &'static str {
        match self {
            Group::Plain => "never-listed, on a learned disposable server",
            Group::SharedBackup => "... with a shared backup MX (Google Workspace)",
            Group::NewName => "... a new host name of its own on the server's address",
            Group::NewNameSharedBackup => "... a new host name on the address and a shared backup",
            Group::Ipv6Only => "... an IPv6-only host on the server's IPv6 address",
            Group::DeadFirst => "... the server second, behind a first MX that does not resolve",
            Group::PoisonedOwner => {
                "a company whose server two listed names point at (and a third's host has its address)"
            }
            Group::PoisonedNeighbour => "a neighbour sharing only that company's address",
            Group::PoisonedSibling => "the company's other domain on the same server",
            Group::Hosting => "customers of generic hosting that also carries two listed names",
            Group::SelfHosted => "self-hosted, nothing listed near it",
            Group::SharedProvider => "a business on each shared provider of data/shared_mx.tsv, listed names beside it",
        }
    }
}

/// One name to look up and the group it measures.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Case {
    pub name: String,
    pub group: Group,
}

/// The generated set: the zone, the operator list and the names measured.
#[derive(Debug, Default)]
pub struct Set {
    /// Zone records, by owner name (without the trailing dot): `(type, data)`.
    pub records: BTreeMap<String, Vec<(&'static str, String)>>,
    /// The listed names (the operator list), looked up first so the index learns them.
    pub listed: Vec<String>,
    pub cases: Vec<Case>,
}

/// How many of each.
#[derive(Debug, Clone, Copy)]
pub struct Sizes {
    pub servers: usize,
    pub poisoned: usize,
    pub hosting: usize,
    pub customers: usize,
    pub self_hosted: usize,
}

impl Set {
    fn add(&mut self, owner: &str, kind: &'static str, data: impl Into<String>) {
        self.records.entry(owner.to_owned()).or_default().push((kind, data.into()));
    }

    fn mx(&mut self, domain: &str, hosts: &[&str]) {
        for (i, h) in hosts.iter().enumerate() {
            self.add(domain, "MX", format!("{} {h}.", 10 * (i + 1)));
        }
    }

    fn case(&mut self, name: String, group: Group) {
        self.cases.push(Case { name, group });
    }

    /// The zone text: an apex that makes every other name NXDOMAIN, then every record.
    pub fn zone(&self) -> String {
        let mut z = String::from(
            "$ORIGIN .\n$TTL 86400\n\
             .\tIN SOA ns.quality.test. hostmaster.quality.test. 1 3600 600 86400 60\n\
             .\tIN NS ns.quality.test.\n\
             ns.quality.test.\tIN A 127.0.0.1\n",
        );
        for (owner, records) in &self.records {
            for (kind, data) in records {
                let _ = writeln!(z, "{owner}.\tIN {kind} {data}");
            }
        }
        z
    }
}

fn v4(net: u8, i: usize) -> String {
    format!("198.{net}.{}.{}", (i / 250) % 250, i % 250 + 1)
}

fn v6(net: u16, i: usize) -> String {
    format!("2001:db8:{net:x}::{:x}", i + 1)
}

/// Builds the set; `shared` is `data/shared_mx.tsv` (host suffix, tab, provider name).
pub fn build(sizes: &Sizes, shared: &str) -> Set {
    let mut set = Set::default();
    let google = "aspmx.l.google.com";
    set.add(google, "A", "192.0.2.13");
    for s in 0..sizes.servers {
        let host = format!("mx.srv{s}.test");
        let (a, aaaa) = (v4(18, s), v6(0x24, s));
        set.add(&host, "A", &a);
        set.add(&host, "AAAA", &aaaa);
        for i in 0..LISTED_PER_SERVER {
            let listed = format!("l{s}x{i}.test");
            set.mx(&listed, &[&host]);
            set.listed.push(listed);
        }
        let name = |p: &str| format!("{p}{s}.test");
        set.mx(&name("n"), &[&host]);
        set.case(name("n"), Group::Plain);
        set.mx(&name("sb"), &[&host, google]);
        set.case(name("sb"), Group::SharedBackup);
        let own = format!("mail.nn{s}.test");
        set.mx(&name("nn"), &[&own]);
        set.add(&own, "A", &a);
        set.case(name("nn"), Group::NewName);
        let own = format!("in.ns{s}.test");
        set.mx(&name("ns"), &[&own, google]);
        set.add(&own, "A", &a);
        set.case(name("ns"), Group::NewNameSharedBackup);
        let own = format!("mx.v6x{s}.test");
        set.mx(&name("v6x"), &[&own]);
        set.add(&own, "AAAA", &aaaa);
        set.case(name("v6x"), Group::Ipv6Only);
        set.mx(&name("df"), &[&format!("dead.df{s}.test"), &host]);
        set.case(name("df"), Group::DeadFirst);
    }
    for p in 0..sizes.poisoned {
        let (victim, host, ip) = (format!("victim{p}.test"), format!("mx.victim{p}.test"), v4(19, p));
        set.add(&host, "A", &ip);
        set.mx(&victim, &[&host]);
        set.case(victim, Group::PoisonedOwner);
        for j in 0..2 {
            let attacker = format!("lapsed{p}x{j}.test");
            set.mx(&attacker, &[&host]);
            set.listed.push(attacker);
        }
        let (attacker, own) = (format!("lapsed{p}x2.test"), format!("mx.lapsed{p}x2.test"));
        set.mx(&attacker, &[&own]);
        set.add(&own, "A", &ip);
        set.listed.push(attacker);
        let (neighbour, own) = (format!("neighbour{p}.test"), format!("mail.neighbour{p}.test"));
        set.mx(&neighbour, &[&own]);
        set.add(&own, "A", &ip);
        set.case(neighbour, Group::PoisonedNeighbour);
        let sibling = format!("victim{p}brand.test");
        set.mx(&sibling, &[&host]);
        set.case(sibling, Group::PoisonedSibling);
    }
    for h in 0..sizes.hosting {
        let ip = v4(20, h);
        let on_it = |set: &mut Set, domain: String| {
            let own = format!("mail.{domain}");
            set.mx(&domain, &[&own]);
            set.add(&own, "A", &ip);
        };
        for j in 0..2 {
            let listed = format!("hosted{h}x{j}.test");
            on_it(&mut set, listed.clone());
            set.listed.push(listed);
        }
        for c in 0..sizes.customers {
            let customer = format!("customer{h}x{c}.test");
            on_it(&mut set, customer.clone());
            set.case(customer, Group::Hosting);
        }
    }
    for k in 0..sizes.self_hosted {
        let (domain, own) = (format!("selfhosted{k}.test"), format!("mx.selfhosted{k}.test"));
        set.mx(&domain, &[&own]);
        set.add(&own, "A", v4(21, k));
        set.case(domain, Group::SelfHosted);
    }
    let suffixes = shared.lines().filter_map(|l| l.split('\t').next()).map(str::trim);
    for (i, suffix) in suffixes.filter(|s| !s.is_empty() && !s.starts_with('#')).enumerate() {
        let ip = v4(22, i);
        let on_it = |set: &mut Set, domain: String, label: &str| {
            let host = format!("{label}.{suffix}");
            set.mx(&domain, &[&host]);
            set.add(&host, "A", &ip);
        };
        for j in 0..2 {
            let listed = format!("onshared{i}x{j}.test");
            on_it(&mut set, listed.clone(), &format!("q24l{i}x{j}"));
            set.listed.push(listed);
        }
        let business = format!("business{i}.test");
        on_it(&mut set, business.clone(), &format!("q24b{i}"));
        set.case(business, Group::SharedProvider);
    }
    set
}

/// One run's answers for the cases: blocked (`disposable`), and whether it answered 200.
#[derive(Debug, Clone, Copy, Default)]
pub struct Answer {
    pub status: u16,
    pub disposable: bool,
}

/// The table: per group, names, then blocked per run (recall for disposable groups, false
/// positives for the others).
pub fn table(set: &Set, runs: &[(String, Vec<Answer>)]) -> String {
    let mut out = String::from("| group | names |");
    for (label, _) in runs {
        let _ = write!(out, " blocked: {label} |");
    }
    out.push_str("\n|---|---:|");
    out.push_str(&"---:|".repeat(runs.len()));
    out.push('\n');
    let mut kind = None;
    for g in Group::ALL {
        if kind != Some(g.disposable()) {
            kind = Some(g.disposable());
            let what = if g.disposable() { "**recall** (disposable)" } else { "**false positives** (legitimate)" };
            let _ = writeln!(out, "| {what} | |{}", " |".repeat(runs.len()));
        }
        let idx: Vec<usize> = set.cases.iter().enumerate().filter(|(_, c)| c.group == g).map(|(i, _)| i).collect();
        let _ = write!(out, "| {} | {} |", g.title(), idx.len());
        for (_, answers) in runs {
            let blocked = idx.iter().filter(|&&i| answers[i].disposable).count();
            let missing = idx.iter().filter(|&&i| answers[i].status != 200).count();
            let pct = if idx.is_empty() { 0.0 } else { blocked as f64 * 100.0 / idx.len() as f64 };
            let note = if missing > 0 { format!(" ({missing} not answered 200)") } else { String::new() };
            let _ = write!(out, " {blocked} ({pct:.1} %){note} |");
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn small() -> Set {
        let sizes = Sizes { servers: 2, poisoned: 1, hosting: 1, customers: 3, self_hosted: 2 };
        build(&sizes, "google.com\tGoogle Workspace\n# a comment\nmail.protection.outlook.com\tMicrosoft 365\n")
    }

    #[test]
    fn every_group_has_names_and_the_zone_every_record() {
        let set = small();
        for g in Group::ALL {
            assert!(set.cases.iter().any(|c| c.group == g), "{g:?}");
        }
        assert_eq!(set.cases.iter().filter(|c| c.group == Group::Plain).count(), 2);
        assert_eq!(set.cases.iter().filter(|c| c.group == Group::SharedProvider).count(), 2);
        assert_eq!(set.listed.len(), 2 * LISTED_PER_SERVER + 3 + 2 + 2 * 2);
        let z = set.zone();
        assert!(z.contains("sb0.test.\tIN MX 10 mx.srv0.test.\nsb0.test.\tIN MX 20 aspmx.l.google.com."), "{z}");
        assert!(z.contains("mx.v6x1.test.\tIN AAAA 2001:db8:24::2"), "{z}");
        assert!(z.contains("q24b1.mail.protection.outlook.com.\tIN A 198.22.0.2"), "{z}");
        assert!(z.contains("df0.test.\tIN MX 10 dead.df0.test.") && !z.contains("dead.df0.test.\tIN A"), "{z}");
        assert!(
            z.contains("mail.neighbour0.test.\tIN A 198.19.0.1") && z.contains("mx.lapsed0x2.test.\tIN A 198.19.0.1")
        );
    }

    #[test]
    fn the_table_counts_blocked_names_per_group() {
        let set = small();
        let all = |b: bool| set.cases.iter().map(|_| Answer { status: 200, disposable: b }).collect::<Vec<_>>();
        let t = table(&set, &[("before".into(), all(false)), ("after".into(), all(true))]);
        assert!(t.contains("| never-listed, on a learned disposable server | 2 | 0 (0.0 %) | 2 (100.0 %) |"), "{t}");
        assert!(t.contains("| **false positives** (legitimate) |"), "{t}");
    }
}
