//! `Catalog`: every list the verdict consults, and the [`Signals`] it gives for a domain.
//!
//! Disposable names come from several sources, each with a [`Tier`]; a name keeps the set of
//! sources that list it ([`SourceSet`]), so a verdict can weigh them and say why.

use crate::Domain;
use crate::lists::{DomainSet, LoadReport, NameMap, ParsedList};

use crate::suggest::Providers;
#[cfg(test)]
use crate::verdict::MxHost;
use crate::verdict::{Decision, Listing, MxInfo, Signals};

/// How much a disposable source's listing is worth on its own (`data/README.md` gives each
/// shipped source's tier and why).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tier {
    /// Reviewed or actively observed: a listing decides `disposable`.
    Strong,
    /// Unreviewed aggregate: a listing alone is a reason to review, not a verdict.
    Weak,
}

impl Tier {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Strong => "strong",
            Self::Weak => "weak",
        }
    }
}

/// A set of disposable sources, one bit per source of a [`Catalog`] (in the order they were added).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct SourceSet(u16);

impl SourceSet {
    /// The most sources a catalog holds.
    pub const MAX: usize = 16;

    pub fn one(index: usize) -> Self {
        Self(1u16.checked_shl(index as u32).unwrap_or(0))
    }

    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    pub fn intersects(self, other: Self) -> bool {
        self.0 & other.0 != 0
    }

    pub fn union(self, other: Self) -> Self {
        Self(self.0 | other.0)
    }

    /// The indexes of the sources in the set, in order.
    pub fn indexes(self) -> impl Iterator<Item = usize> {
        (0..Self::MAX).filter(move |i| self.0 & (1 << i) != 0)
    }
}

/// One disposable source: its name (e.g. `mailchecker`, `operator`) and tier.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Source {
    pub name: Box<str>,
    pub tier: Tier,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("more than {} disposable sources", SourceSet::MAX)]
pub struct TooManySources;

/// The lists a verdict consults. Read-only once built: a reload builds a new one beside it.
#[derive(Debug, Default, Clone)]
pub struct Catalog {
    /// Disposable names, each with the sources that list it.
    pub disposable: NameMap<SourceSet>,
    sources: Vec<Source>,
    strong: SourceSet,
    pub free: DomainSet,
    pub relay: DomainSet,
    /// MX host suffix → provider name.
    pub shared_mx: NameMap<Box<str>>,
    /// Operator decisions from files: names forced `safe` / `disposable`.
    pub allow: DomainSet,
    pub block: DomainSet,
    /// Popular mail providers: the only names a typo suggestion may point to.
    pub popular: Providers,
}

/// Which non-disposable list of a [`Catalog`] a text is loaded into (disposable sources go
/// through [`Catalog::load_disposable`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ListKind {
    Free,
    Relay,
    SharedMx,
    Allow,
    Block,
    Popular,
}

/// A disposable listing as found for a name, for explaining a verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ListedAs<'a> {
    /// The list entry that matched: the name itself or a parent.
    pub entry: &'a str,
    pub sources: SourceSet,
}

impl Catalog {
    pub fn load(&mut self, kind: ListKind, text: &str) -> LoadReport {
        match kind {
            ListKind::Free => self.free.load_text(text),
            ListKind::Relay => self.relay.load_text(text),
            ListKind::SharedMx => self.shared_mx.load_tsv(text),
            ListKind::Allow => self.allow.load_text(text),
            ListKind::Block => self.block.load_text(text),
            ListKind::Popular => self.popular.load_text(text),
        }
    }

    /// Loads a disposable list from `source` (texts loaded under one name share its bit; the
    /// tier given first stays).
    pub fn load_disposable(&mut self, source: &str, tier: Tier, text: &str) -> Result<LoadReport, TooManySources> {
        let bit = self.source_bit(source, tier)?;
        Ok(self.disposable.load_merging(text, bit, |have, new| *have = have.union(new)))
    }

    /// Like [`load`](Self::load) for a list already read (an operator's list reloaded at run
    /// time).
    pub fn load_parsed(&mut self, kind: ListKind, list: &ParsedList) {
        let set = match kind {
            ListKind::Free => &mut self.free,
            ListKind::Relay => &mut self.relay,
            ListKind::Allow => &mut self.allow,
            ListKind::Block => &mut self.block,
            // Shared-MX lists carry values, and the providers are shipped only: loaded from text.
            ListKind::SharedMx | ListKind::Popular => return,
        };
        set.extend_parsed(list, (), |_, _| {});
    }

    /// Like [`load_disposable`](Self::load_disposable) for a list already read.
    pub fn load_disposable_parsed(
        &mut self,
        source: &str,
        tier: Tier,
        list: &ParsedList,
    ) -> Result<(), TooManySources> {
        let bit = self.source_bit(source, tier)?;
        self.disposable.extend_parsed(list, bit, |have, new| *have = have.union(new));
        Ok(())
    }

    /// The bit of `source`, added with `tier` when it is new.
    fn source_bit(&mut self, source: &str, tier: Tier) -> Result<SourceSet, TooManySources> {
        let index = match self.sources.iter().position(|s| &*s.name == source) {
            Some(i) => i,
            None if self.sources.len() < SourceSet::MAX => {
                self.sources.push(Source { name: source.into(), tier });
                self.sources.len() - 1
            }
            None => return Err(TooManySources),
        };
        let bit = SourceSet::one(index);
        if self.sources[index].tier == Tier::Strong {
            self.strong = self.strong.union(bit);
        }
        Ok(bit)
    }

    /// The disposable sources, in bit order.
    pub fn sources(&self) -> &[Source] {
        &self.sources
    }

    /// The sources of `set`, by name and tier.
    pub fn sources_of(&self, set: SourceSet) -> impl Iterator<Item = &Source> {
        set.indexes().filter_map(|i| self.sources.get(i))
    }

    /// Whether any source of `set` is strong.
    pub fn is_strong(&self, set: SourceSet) -> bool {
        set.intersects(self.strong)
    }

    /// The disposable listing that covers `domain` (the most specific entry), if any.
    pub fn disposable_listing(&self, domain: &Domain) -> Option<ListedAs<'_>> {
        self.disposable.find(domain).map(|(entry, sources)| ListedAs { entry, sources: *sources })
    }

    /// The provider name when `host` is shared multi-tenant mail infrastructure.
    pub fn shared_mx_host(&self, host: &str) -> Option<&str> {
        self.shared_mx.find_name(host).map(|(_, v)| &**v)
    }

    /// The provider name of the first MX host on shared infrastructure, if any.
    pub fn shared_mx_provider<'a>(&'a self, mx: &MxInfo) -> Option<&'a str> {
        mx.hosts().iter().find_map(|h| self.shared_mx_host(&h.name))
    }

    /// Whether a decision fixes `domain`'s verdict whatever DNS says: the reviewer's
    /// `decision`, else the operator's allow/block files, on the name or a covering parent;
    /// never for free webmail (rule 2: a block does not apply there).
    pub fn decision_fixes_verdict(&self, domain: &Domain, decision: Option<Decision>) -> bool {
        let s = self.signals(domain, &MxInfo::NoMx, decision);
        s.decision.is_some() && !s.free
    }

    /// The list signals for `domain` given its MX answer. `decision` is a reviewer's, which
    /// wins over the operator's allow/block files. A listing through a parent starts with
    /// `parent_mail: false`: the caller compares the name's mail with the parent's.
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
        let listing = self.disposable.find_in(names.clone()).map(|(entry, sources)| Listing {
            sources: *sources,
            strong: self.is_strong(*sources),
            via_parent: entry != domain.as_str(),
        });
        Signals {
            free: on(&self.free),
            listing,
            parent_mail: false,
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

    fn d(s: &str) -> Domain {
        Domain::parse(s).unwrap()
    }

    fn catalog() -> Catalog {
        let mut c = Catalog::default();
        c.load_disposable("ded", Tier::Strong, "mailinator.com\ngmail.com\n").unwrap();
        c.load_disposable("mailchecker", Tier::Weak, "mailinator.com\nweak.example\n").unwrap();
        c.load_disposable("operator", Tier::Strong, "op.example\n").unwrap();
        c.load_disposable("operator", Tier::Strong, "op2.example\n").unwrap();
        c.load(ListKind::Free, "gmail.com\n");
        c.load(ListKind::SharedMx, "mail.protection.outlook.com\tMicrosoft 365\n");
        c.load(ListKind::Block, "bad.example\n");
        c
    }

    /// The sources (by name) and tier of the listing that covers `name`, and whether it is
    /// through a parent.
    fn check(c: &Catalog, name: &str, expected: Option<(&[&str], bool, bool)>) {
        let s = c.signals(&d(name), &MxInfo::NoMx, None);
        let got = s.listing.map(|l| {
            let names: Vec<&str> = c.sources_of(l.sources).map(|s| &*s.name).collect();
            (names, l.strong, l.via_parent)
        });
        assert_eq!(got, expected.map(|(n, strong, via)| (n.to_vec(), strong, via)), "{name}");
    }

    #[test]
    fn provenance_per_name() {
        let c = catalog();
        check(&c, "mailinator.com", Some((&["ded", "mailchecker"], true, false)));
        check(&c, "x7.mailinator.com", Some((&["ded", "mailchecker"], true, true)));
        check(&c, "weak.example", Some((&["mailchecker"], false, false)));
        check(&c, "sub.weak.example", Some((&["mailchecker"], false, true)));
        check(&c, "op2.example", Some((&["operator"], true, false)));
        check(&c, "unlisted.example", None);
        assert_eq!(c.sources().len(), 3, "texts under one name share a bit");
        let listed = c.disposable_listing(&d("a.b.mailinator.com")).unwrap();
        assert_eq!(listed.entry, "mailinator.com");
    }

    #[test]
    fn signals_from_lists() {
        let c = catalog();
        let mx = MxInfo::Mx { hosts: vec![MxHost::new("shop.mail.protection.outlook.com", vec![])] };
        let gmail = c.signals(&d("gmail.com"), &mx, None);
        assert!(gmail.free && gmail.listing.is_some() && gmail.shared_mx);
        assert_eq!(c.shared_mx_provider(&mx), Some("Microsoft 365"));
        assert_eq!(c.signals(&d("bad.example"), &mx, None).decision, Some(Decision::Block));
        assert_eq!(c.signals(&d("bad.example"), &mx, Some(Decision::Allow)).decision, Some(Decision::Allow));
    }

    #[test]
    fn parsed_lists_load_like_texts() {
        let mut c = catalog();
        let list = ParsedList::parse("weak.example\nnew.example\n");
        c.load_disposable_parsed("operator", Tier::Strong, &list).unwrap();
        check(&c, "weak.example", Some((&["mailchecker", "operator"], true, false)));
        check(&c, "x.new.example", Some((&["operator"], true, true)));
        c.load_parsed(ListKind::Allow, &ParsedList::parse("ok.example\n"));
        assert_eq!(c.signals(&d("a.ok.example"), &MxInfo::NoMx, None).decision, Some(Decision::Allow));
    }

    #[test]
    fn at_most_sixteen_sources() {
        let mut c = Catalog::default();
        for i in 0..SourceSet::MAX {
            c.load_disposable(&format!("s{i}"), Tier::Weak, "").unwrap();
        }
        assert_eq!(c.load_disposable("one-more", Tier::Weak, ""), Err(TooManySources));
        c.load_disposable("s15", Tier::Weak, "last.example\n").unwrap();
        let listed = c.disposable_listing(&d("last.example")).unwrap();
        assert_eq!(c.sources_of(listed.sources).map(|s| &*s.name).collect::<Vec<_>>(), ["s15"]);
    }
}
