//! `Catalog`: every list the verdict consults, and the [`Signals`] it gives for a domain.

use crate::Domain;
use crate::lists::{DomainSet, LoadReport, NameMap};
#[cfg(test)]
use crate::verdict::MxHost;
use crate::verdict::{Decision, MxInfo, Signals};

/// The lists a verdict consults. Built once at start-up; read-only afterwards.
#[derive(Debug, Default, Clone)]
pub struct Catalog {
    pub disposable: DomainSet,
    pub free: DomainSet,
    pub relay: DomainSet,
    /// MX host suffix → provider name.
    pub shared_mx: NameMap<Box<str>>,
    /// Operator decisions from files: names forced `safe` / `disposable`.
    pub allow: DomainSet,
    pub block: DomainSet,
}

/// Which list of a [`Catalog`] a text is loaded into.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ListKind {
    Disposable,
    Free,
    Relay,
    SharedMx,
    Allow,
    Block,
}

impl Catalog {
    pub fn load(&mut self, kind: ListKind, text: &str) -> LoadReport {
        match kind {
            ListKind::Disposable => self.disposable.load_text(text),
            ListKind::Free => self.free.load_text(text),
            ListKind::Relay => self.relay.load_text(text),
            ListKind::SharedMx => self.shared_mx.load_tsv(text),
            ListKind::Allow => self.allow.load_text(text),
            ListKind::Block => self.block.load_text(text),
        }
    }

    /// The provider name when `host` is shared multi-tenant mail infrastructure.
    pub fn shared_mx_host(&self, host: &str) -> Option<&str> {
        self.shared_mx.find_name(host).map(|(_, v)| &**v)
    }

    /// The provider name of the first MX host on shared infrastructure, if any.
    pub fn shared_mx_provider<'a>(&'a self, mx: &MxInfo) -> Option<&'a str> {
        mx.hosts().iter().find_map(|h| self.shared_mx_host(&h.name))
    }

    /// The list signals for `domain` given its MX answer. `decision` is a reviewer's, which
    /// wins over the operator's allow/block files.
    pub fn signals(&self, domain: &Domain, mx: &MxInfo, decision: Option<Decision>) -> Signals {
        // One walk (one Public Suffix List lookup) for every list.
        let names = domain.parents_to_registrable();
        let on = |list: &DomainSet| list.find_in(names.clone()).is_some();
        let operator = if on(&self.block) {
            Some(Decision::Block)
        } else if on(&self.allow) {
            Some(Decision::Allow)
        } else {
            None
        };
        Signals {
            free: on(&self.free),
            disposable: on(&self.disposable),
            relay: on(&self.relay),
            shared_mx: self.shared_mx_provider(mx).is_some(),
            mx_ip_match: false,
            decision: decision.or(operator),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signals_from_lists() {
        let mut c = Catalog::default();
        c.load(ListKind::Disposable, "mailinator.com\ngmail.com\n");
        c.load(ListKind::Free, "gmail.com\n");
        c.load(ListKind::SharedMx, "mail.protection.outlook.com\tMicrosoft 365\n");
        c.load(ListKind::Block, "bad.example\n");
        let mx = MxInfo::Mx { hosts: vec![MxHost::new("shop.mail.protection.outlook.com", vec![])] };
        let d = |s: &str| Domain::parse(s).unwrap();
        assert!(c.signals(&d("x.mailinator.com"), &mx, None).disposable);
        let gmail = c.signals(&d("gmail.com"), &mx, None);
        assert!(gmail.free && gmail.disposable && gmail.shared_mx);
        assert_eq!(c.shared_mx_provider(&mx), Some("Microsoft 365"));
        assert_eq!(c.signals(&d("bad.example"), &mx, None).decision, Some(Decision::Block));
        assert_eq!(c.signals(&d("bad.example"), &mx, Some(Decision::Allow)).decision, Some(Decision::Allow));
    }
}
