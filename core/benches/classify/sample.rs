//! The sample classified: a fixed, seeded mix of listed domains, subdomains of listed domains
//! and unlisted domains; and MX host names, on shared infrastructure or the domain's own.

use email_verdict_core::{Catalog, Domain};

use crate::scan::LinearScan;

/// xorshift64*: deterministic, so every run classifies the same sample.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn pick<'a>(&mut self, items: &'a [String]) -> &'a str {
        &items[(self.next() % items.len() as u64) as usize]
    }
}

const TLDS: [&str; 8] = ["com", "net", "org", "de", "co.uk", "io", "com.br", "fr"];

/// `n` domains: 30% on the disposable list, 15% subdomains of those, 25% on the free-webmail
/// list, 30% on no list (`mail.` in front of a third of them).
pub fn domains(scan: &LinearScan, n: usize) -> Vec<Domain> {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut out = Vec::with_capacity(n);
    while out.len() < n {
        let name = match out.len() * 100 / n {
            0..30 => rng.pick(scan.disposable()).to_owned(),
            30..45 => format!("mx1.{}", rng.pick(scan.disposable())),
            45..70 => rng.pick(scan.free()).to_owned(),
            _ => unlisted(&mut rng),
        };
        let listed = scan.signals(&name);
        let wanted_unlisted = out.len() * 100 / n >= 70;
        if wanted_unlisted && (listed.disposable || listed.free || listed.relay) {
            continue;
        }
        if let Ok(d) = Domain::parse(&name) {
            out.push(d);
        }
    }
    out
}

fn unlisted(rng: &mut Rng) -> String {
    let tld = TLDS[(rng.next() % TLDS.len() as u64) as usize];
    let sub = if rng.next().is_multiple_of(3) { "mail." } else { "" };
    format!("{sub}acme-{:x}.{tld}", rng.next() % 1_000_000)
}

/// `n` MX host names: half under a shared-infrastructure suffix (`acme-com.<suffix>`), half the
/// domain's own (`mx.<domain>`). Suffixes under which such a name is itself a public suffix
/// (wildcard rules such as `*.user.fm`) are left out: there the catalog, bounded by the Public
/// Suffix List, rightly matches nothing while a scan would match, so they would not be doing
/// the same job.
pub fn mx_hosts(catalog: &Catalog, scan: &LinearScan, domains: &[Domain], n: usize) -> Vec<String> {
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    let suffixes: Vec<String> = scan
        .shared_mx_suffixes()
        .filter(|s| catalog.shared_mx_host(&format!("acme-com.{s}")).is_some())
        .map(str::to_owned)
        .collect();
    (0..n)
        .map(|i| match i % 2 {
            0 => format!("acme-com.{}", rng.pick(&suffixes)),
            _ => format!("mx.{}", domains[i % domains.len()]),
        })
        .collect()
}
