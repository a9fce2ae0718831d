//! Judging a domain by its own mail servers (issues 5, 14, 24), and what it teaches the index.
//!
//! The rules (ARCHITECTURE.md, "Mail infrastructure"):
//! - Only the domain's own MX hosts count, never shared multi-tenant infrastructure, which
//!   neither transmits a signal nor hides one beside them (rule 3).
//! - A mail host belongs to the registrable domain it is named under. A domain's own hosts are
//!   never evidence against it, nor is anything taught through them (listed domains pointing at
//!   `mx.victimco.example` do not make `victimco.example` disposable); a host named under a
//!   domain that a strong list or the operator's blocklist calls disposable is disposable
//!   infrastructure (it is that domain's server).
//! - Otherwise a host name counts once `threshold` disposable domains and no legitimate one use
//!   it, unless its owner receives its own mail on it (a company's server: listed names pointed
//!   at it prove nothing about the company's other domains; `Verdicts` asks DNS, through the MX
//!   cache, only for a host that reached the bar); an address needs [`ADDRESS_FACTOR`] times as
//!   many (shared hosting puts thousands of unrelated domains on one address).
//! - Facts count only while fresh ([`FACT_LIFETIME_SECS`]); a domain learned again replaces what
//!   it taught, and one no longer known disposable or legitimate forgets it.
//! - A reviewer's mark on a server decides for every domain on it: `disposable` counts whatever
//!   the facts, `safe` never counts.

use email_verdict_core::{Catalog, Decision, Domain, MxInfo};

use crate::state::{MailServer, ServerEvidence, ServerFact, ServerKind};

/// How long a fact counts after it was last seen (learned by a lookup or the warm-up, which
/// goes over every strong-listed domain again each week).
pub const FACT_LIFETIME_SECS: i64 = 30 * 86_400;

/// An address needs this many times the threshold of disposable domains a host name needs.
pub const ADDRESS_FACTOR: u64 = 2;

/// A domain's MX hosts that are not shared infrastructure, and their addresses.
#[derive(Debug, Clone, Default, Hash)]
pub(crate) struct OwnInfra {
    pub hosts: Vec<String>,
    pub ips: Vec<String>,
    /// What the domain teaches when it is known: each host and address, with the owner of the
    /// host it belongs to.
    facts: Vec<ServerFact>,
    /// Each host's addresses (a host marked safe clears them).
    host_ips: Vec<(String, Vec<String>)>,
}

/// The registrable domain a mail host is named under (the host itself when it has none).
pub fn owner_of(host: &str) -> String {
    Domain::parse(host).ok().and_then(|d| d.registrable().map(str::to_owned)).unwrap_or_else(|| host.to_owned())
}

impl OwnInfra {
    /// The hosts of `mx` that `catalog` does not know as shared, and their addresses. Host names
    /// are compared as DNS does (lower case, no trailing dot), whatever the answer's spelling.
    pub(crate) fn of(catalog: &Catalog, mx: &MxInfo) -> Self {
        let mut own = Self::default();
        for host in mx.hosts() {
            let name = host.name.trim_end_matches('.').to_ascii_lowercase();
            // One parse for both questions (`shared_mx_host` and `owner_of` would each parse).
            let parsed = Domain::parse(&name).ok();
            let shared = parsed.as_ref().is_some_and(|d| catalog.shared_mx.find(d).is_some());
            if name.is_empty() || shared {
                continue;
            }
            let owner = parsed.as_ref().and_then(Domain::registrable).map_or_else(|| name.clone(), str::to_owned);
            // Each address formatted once: the three uses below share its text.
            let ips: Vec<String> = host.ips.iter().map(ToString::to_string).collect();
            for ip in &ips {
                own.ips.push(ip.clone());
                own.facts.push(ServerFact { server: MailServer::address(ip.clone()), via: owner.clone() });
            }
            own.host_ips.push((name.clone(), ips));
            own.facts.push(ServerFact { server: MailServer::host(&name), via: owner });
            if !own.hosts.contains(&name) {
                own.hosts.push(name);
            }
        }
        own.ips.sort();
        own.ips.dedup();
        own.facts.sort();
        own.facts.dedup();
        own
    }

    pub fn is_empty(&self) -> bool {
        self.hosts.is_empty()
    }

    pub fn facts(&self) -> &[ServerFact] {
        &self.facts
    }

    /// The servers to judge: the hosts, then the addresses.
    pub fn servers(&self) -> Vec<MailServer> {
        self.hosts.iter().map(MailServer::host).chain(self.ips.iter().map(MailServer::address)).collect()
    }
}

/// Why one of a domain's own servers is disposable infrastructure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InfraReason {
    /// A reviewer marked it disposable.
    Marked,
    /// It is named under this registrable domain, which a strong list or the operator's
    /// blocklist calls disposable.
    Owner(String),
    /// Enough disposable domains, and no legitimate one, use it.
    Domains,
}

/// One of a domain's own servers that is disposable infrastructure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InfraMatch {
    pub server: MailServer,
    pub reason: InfraReason,
    /// Disposable domains known to use it (other than the judged one and its own servers').
    pub disposable: u64,
}

/// What judging a domain's own servers found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct InfraJudgement {
    /// The servers that make it disposable (`mx_ip_match`).
    pub matches: Vec<InfraMatch>,
    /// The server that came closest without deciding, with its disposable domains: a reason to
    /// look (the review queue weighs it).
    pub nearest: Option<(MailServer, u64)>,
    /// One of its servers is marked safe by a reviewer: nothing else about it needs a look
    /// (its verdict still says `review_required`, as the spec's table does).
    pub cleared: bool,
}

/// Judges `infra`, the own servers of a domain whose registrable domain is `judged`, on the
/// `evidence` the index holds on each of `infra.servers()` (same order).
pub(crate) fn judge(
    catalog: &Catalog,
    judged: &str,
    infra: &OwnInfra,
    evidence: &[ServerEvidence],
    threshold: u64,
) -> InfraJudgement {
    let mut out = InfraJudgement::default();
    let servers = infra.servers();
    // A host marked safe clears its addresses too, for the domains that reach them through it.
    let cleared_ips: Vec<&str> = servers
        .iter()
        .zip(evidence)
        .filter(|(s, ev)| s.kind == ServerKind::Host && ev.mark == Some(Decision::Allow))
        .flat_map(|(s, _)| infra.host_ips.iter().filter(move |(h, _)| *h == s.value).flat_map(|(_, ips)| ips))
        .map(String::as_str)
        .collect();
    for (server, ev) in servers.iter().cloned().zip(evidence) {
        let owner = (server.kind == ServerKind::Host).then(|| owner_of(&server.value));
        out.cleared |= ev.mark == Some(Decision::Allow);
        let cleared = server.kind == ServerKind::Address && cleared_ips.contains(&server.value.as_str());
        let reason = match ev.mark {
            Some(Decision::Allow) => None,
            None if cleared => None,
            Some(Decision::Block) => Some(InfraReason::Marked),
            // Its own server: never evidence against it.
            None if owner.as_deref() == Some(judged) => None,
            None if owner.as_deref().is_some_and(|o| owner_disposable(catalog, o)) => {
                owner.clone().map(InfraReason::Owner)
            }
            None => {
                let bar = match server.kind {
                    ServerKind::Host => threshold,
                    ServerKind::Address => threshold.saturating_mul(ADDRESS_FACTOR),
                };
                (ev.legitimate == 0 && ev.disposable >= bar).then_some(InfraReason::Domains)
            }
        };
        match reason {
            Some(reason) => out.matches.push(InfraMatch { server, reason, disposable: ev.disposable }),
            None if ev.mark.is_none() && ev.disposable > out.nearest.as_ref().map_or(0, |(_, n)| *n) => {
                out.nearest = Some((server, ev.disposable));
            }
            None => {}
        }
    }
    out
}

impl InfraJudgement {
    /// The host names matched by the count of disposable domains on them alone, with their
    /// owners: [`Self::owned_by_a_mail_domain`] takes those back whose owner receives its own
    /// mail on them.
    pub fn counted_hosts(&self) -> Vec<(String, String)> {
        self.matches
            .iter()
            .filter(|m| m.reason == InfraReason::Domains && m.server.kind == ServerKind::Host)
            .map(|m| (m.server.value.clone(), owner_of(&m.server.value)))
            .collect()
    }

    /// `host` is the mail server its owner receives its own mail on: a company's server, which
    /// listed names pointed at it do not make disposable infrastructure for the company's other
    /// domains either (only its owner's standing, or a reviewer's mark, can).
    pub fn owned_by_a_mail_domain(&mut self, host: &str) {
        if let Some(i) = self.matches.iter().position(|m| m.server.kind == ServerKind::Host && m.server.value == host) {
            let m = self.matches.remove(i);
            if self.nearest.as_ref().is_none_or(|(_, n)| m.disposable > *n) {
                self.nearest = Some((m.server, m.disposable));
            }
        }
    }
}

/// Whether `owner` (a registrable domain) is one a strong list or the operator's blocklist
/// calls disposable, and nothing vouches for (free webmail, relay, the operator's allowlist).
fn owner_disposable(catalog: &Catalog, owner: &str) -> bool {
    let Ok(domain) = Domain::parse(owner) else { return false };
    let s = catalog.signals(&domain, &MxInfo::NoMx, None);
    !s.free && !s.relay && (s.decision == Some(Decision::Block) || (s.decision.is_none() && s.listing_decides()))
}

#[cfg(test)]
mod tests {
    use email_verdict_core::catalog::Tier;
    use email_verdict_core::{ListKind, MxHost};

    use super::*;

    fn catalog() -> Catalog {
        let mut c = Catalog::default();
        c.load_disposable("strong", Tier::Strong, "listed.example\n").unwrap();
        c.load_disposable("weak", Tier::Weak, "weak.example\n").unwrap();
        c.load(ListKind::SharedMx, "shared.example\tShared\n");
        c
    }

    fn infra(hosts: &[(&str, &[&str])]) -> OwnInfra {
        let hosts = hosts.iter().map(|(h, ips)| MxHost::new(*h, ips.iter().map(|ip| ip.parse().unwrap()).collect()));
        OwnInfra::of(&catalog(), &MxInfo::Mx { hosts: hosts.collect() })
    }

    fn ev(disposable: u64, legitimate: u64, mark: Option<Decision>) -> ServerEvidence {
        ServerEvidence { disposable, legitimate, mark }
    }

    /// (server, reason) of each match, and the nearest server's value and count.
    type Checked = (Vec<(String, InfraReason)>, Option<(String, u64)>);

    fn check(judged: &str, infra: &OwnInfra, evidence: &[ServerEvidence]) -> Checked {
        let j = judge(&catalog(), judged, infra, evidence, 2);
        let matches = j.matches.into_iter().map(|m| (m.server.value, m.reason)).collect();
        (matches, j.nearest.map(|(s, n)| (s.value, n)))
    }

    #[test]
    fn own_servers_are_the_non_shared_ones_in_dns_spelling() {
        let own = infra(&[("MX.Burner.Example.", &["192.0.2.1"]), ("in.shared.example", &["192.0.2.9"])]);
        assert_eq!(
            (own.hosts.clone(), own.ips.clone()),
            (vec!["mx.burner.example".to_owned()], vec!["192.0.2.1".to_owned()])
        );
        let vias: Vec<_> = own.facts().iter().map(|f| (f.server.value.as_str(), f.via.as_str())).collect();
        assert_eq!(vias, [("mx.burner.example", "burner.example"), ("192.0.2.1", "burner.example")]);
    }

    #[test]
    fn names_need_the_threshold_addresses_twice_as_much() {
        let own = infra(&[("mx.burner.example", &["192.0.2.1"])]);
        let none = Vec::<(String, InfraReason)>::new();
        assert_eq!(
            check("new.example", &own, &[ev(2, 0, None), ev(0, 0, None)]).0,
            [("mx.burner.example".to_owned(), InfraReason::Domains)]
        );
        assert_eq!(check("new.example", &own, &[ev(2, 1, None), ev(0, 0, None)]).0, none, "a legitimate domain on it");
        assert_eq!(
            check("new.example", &own, &[ev(0, 0, None), ev(3, 0, None)]),
            (none.clone(), Some(("192.0.2.1".to_owned(), 3)))
        );
        assert_eq!(
            check("new.example", &own, &[ev(0, 0, None), ev(4, 0, None)]).0,
            [("192.0.2.1".to_owned(), InfraReason::Domains)]
        );
    }

    #[test]
    fn a_server_belongs_to_the_domain_it_is_named_under() {
        // Its own server: whatever points at it, it is not evidence against its owner.
        let own = infra(&[("mx.victim.example", &["192.0.2.2"])]);
        assert_eq!(check("victim.example", &own, &[ev(9, 0, None), ev(0, 0, None)]).0, vec![]);
        // A server named under a strong-listed domain is that domain's: one is enough.
        let theirs = infra(&[("mail.listed.example", &["192.0.2.3"]), ("mail.weak.example", &[])]);
        let (matches, _) = check("new.example", &theirs, &[ev(0, 0, None), ev(0, 0, None), ev(0, 0, None)]);
        assert_eq!(matches, [("mail.listed.example".to_owned(), InfraReason::Owner("listed.example".into()))]);
    }

    #[test]
    fn a_companys_own_server_is_taken_back() {
        let own = infra(&[("mx.victim.example", &["192.0.2.2"])]);
        let mut j = judge(&catalog(), "brand.example", &own, &[ev(2, 0, None), ev(1, 0, None)], 2);
        assert_eq!(j.counted_hosts(), [("mx.victim.example".to_owned(), "victim.example".to_owned())]);
        j.owned_by_a_mail_domain("mx.victim.example");
        assert!(j.matches.is_empty());
        assert_eq!(j.nearest.map(|(s, n)| (s.value, n)), Some(("mx.victim.example".to_owned(), 2)));
    }

    #[test]
    fn a_reviewers_mark_decides_for_every_domain() {
        let own = infra(&[("mx.victim.example", &["192.0.2.2"])]);
        let marked = check("victim.example", &own, &[ev(0, 0, Some(Decision::Block)), ev(0, 0, None)]).0;
        assert_eq!(marked, [("mx.victim.example".to_owned(), InfraReason::Marked)], "its owner too");
        let cleared = check("new.example", &own, &[ev(5, 0, Some(Decision::Allow)), ev(9, 0, Some(Decision::Allow))]);
        assert_eq!(cleared, (vec![], None));
        let j = judge(&catalog(), "new.example", &own, &[ev(5, 0, Some(Decision::Allow)), ev(9, 0, None)], 2);
        assert!(j.cleared && j.matches.is_empty(), "a host marked safe clears its addresses: {j:?}");
    }
}
