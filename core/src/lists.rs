//! Domain lists and how a name is matched against them.
//!
//! A list entry matches a name when it equals the name or one of its parents up to the name's
//! registrable domain. Entries that are themselves public suffixes (`com.ar`, `pp.ua`, ...) are
//! refused at load: honouring them would block whole zones of legitimate users.

use std::collections::HashMap;

use crate::Domain;
use crate::domain::is_public_suffix;

/// Why a list line was not loaded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EntryError {
    #[error("not a valid domain name")]
    Invalid,
    #[error("is a public suffix")]
    PublicSuffix,
    #[error("is not a registrable domain under a known public suffix")]
    NotRegistrable,
    #[error("is over the list's bound")]
    OverLimit,
}

/// What loading a list text did: how many entries it took and which lines it refused.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct LoadReport {
    pub loaded: usize,
    pub refused: Vec<(String, EntryError)>,
}

/// A list text read into its entries: normalized like any input, sorted, without duplicates;
/// with the lines it refused. What a list reloaded at run time is compared and loaded by.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct ParsedList {
    names: Vec<Box<str>>,
    refused: Vec<(String, EntryError)>,
}

impl ParsedList {
    /// Reads `text` like [`DomainSet::load_text`] does.
    pub fn parse(text: &str) -> Self {
        let mut names = Vec::new();
        let report = load_lines(text, |line| entry_key(line).map(|k| names.push(k)));
        names.sort_unstable();
        names.dedup();
        Self { names, refused: report.refused }
    }

    /// The distinct entries, sorted.
    pub fn names(&self) -> &[Box<str>] {
        &self.names
    }

    /// The lines that were not loaded, and why.
    pub fn refused(&self) -> &[(String, EntryError)] {
        &self.refused
    }

    pub fn len(&self) -> usize {
        self.names.len()
    }

    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }

    /// `(added, removed)`: entries of `self` that `old` lacks, and entries of `old` that `self` lacks.
    pub fn diff(&self, old: &ParsedList) -> (usize, usize) {
        let (mut added, mut removed) = (0, 0);
        let (mut a, mut b) = (self.names.iter().peekable(), old.names.iter().peekable());
        loop {
            match (a.peek(), b.peek()) {
                (Some(x), Some(y)) => match x.cmp(y) {
                    std::cmp::Ordering::Less => {
                        added += 1;
                        a.next();
                    }
                    std::cmp::Ordering::Greater => {
                        removed += 1;
                        b.next();
                    }
                    std::cmp::Ordering::Equal => {
                        a.next();
                        b.next();
                    }
                },
                (Some(_), None) => return (added + a.count(), removed),
                (None, _) => return (added, removed + b.count()),
            }
        }
    }
}

/// A map from normalized domain names to a value, matched by parent walk.
///
/// Hashed with foldhash (per-map random seed) rather than SipHash: hashing was a large part of a lookup.
/// Entries come from lists, never from requests, so a caller cannot grow a bucket.
#[derive(Debug, Clone)]
pub struct NameMap<V> {
    entries: HashMap<Box<str>, V, foldhash::fast::RandomState>,
}

/// A set of domain names, matched by parent walk.
pub type DomainSet = NameMap<()>;

impl<V> Default for NameMap<V> {
    fn default() -> Self {
        Self { entries: HashMap::default() }
    }
}

impl<V> NameMap<V> {
    /// Normalizes `name` like any input (a leading `*.` or `.` wildcard marker is dropped: every
    /// entry already covers its subdomains) and inserts it, unless it is invalid or a public suffix.
    pub fn insert(&mut self, name: &str, value: V) -> Result<(), EntryError> {
        self.entries.insert(entry_key(name)?, value);
        Ok(())
    }

    /// Like [`insert`](Self::insert), but an entry already there is updated by `merge` (e.g. a
    /// name listed by several sources gathers them all).
    pub fn upsert(&mut self, name: &str, value: V, merge: impl FnOnce(&mut V, V)) -> Result<(), EntryError> {
        match self.entries.entry(entry_key(name)?) {
            std::collections::hash_map::Entry::Occupied(mut e) => merge(e.get_mut(), value),
            std::collections::hash_map::Entry::Vacant(e) => {
                e.insert(value);
            }
        }
        Ok(())
    }

    /// Inserts every entry of `list` (already normalized), merging into an entry already
    /// there with `merge`.
    pub fn extend_parsed(&mut self, list: &ParsedList, value: V, merge: impl Fn(&mut V, V))
    where
        V: Clone,
    {
        self.entries.reserve(list.names.len());
        for name in &list.names {
            match self.entries.get_mut(name) {
                Some(have) => merge(have, value.clone()),
                None => {
                    self.entries.insert(name.clone(), value.clone());
                }
            }
        }
    }

    /// The most specific entry that covers `domain`, with its value.
    pub fn find(&self, domain: &Domain) -> Option<(&str, &V)> {
        self.find_in(domain.parents_to_registrable())
    }

    /// The first of `names` that is an entry, with its value: for a walk from
    /// [`Domain::parents_to_registrable`] made once and matched against several lists.
    pub fn find_in<'a>(&self, mut names: impl Iterator<Item = &'a str>) -> Option<(&str, &V)> {
        if self.entries.is_empty() {
            return None;
        }
        names.find_map(|name| self.entries.get_key_value(name)).map(|(k, v)| (&**k, v))
    }

    /// Like [`find`](Self::find) for a name that is not a validated `Domain` (e.g. an MX host
    /// name from DNS); a name that does not parse matches nothing.
    pub fn find_name(&self, name: &str) -> Option<(&str, &V)> {
        Domain::parse(name).ok().and_then(|d| self.find(&d))
    }

    pub fn contains(&self, domain: &Domain) -> bool {
        self.find(domain).is_some()
    }

    /// Every entry with its value, in no particular order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &V)> {
        self.entries.iter().map(|(k, v)| (&**k, v))
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

impl DomainSet {
    /// Loads a list text: one name per line; blank lines and `#` comments are skipped.
    pub fn load_text(&mut self, text: &str) -> LoadReport {
        load_lines(text, |line| self.insert(line, ()).map(|_| ()))
    }
}

impl NameMap<Box<str>> {
    /// Loads `name<TAB>value` lines (e.g. an MX host suffix and its provider's name); a line
    /// without a value maps to the name itself.
    pub fn load_tsv(&mut self, text: &str) -> LoadReport {
        load_lines(text, |line| {
            let (name, value) = line.split_once('\t').unwrap_or((line, line));
            self.insert(name, value.trim().into())
        })
    }
}

/// A list line as it is stored: normalized like any input, without a leading `*.` or `.`.
fn entry_key(name: &str) -> Result<Box<str>, EntryError> {
    let name = name.trim();
    let name = name.strip_prefix("*.").or_else(|| name.strip_prefix('.')).unwrap_or(name);
    let domain = Domain::parse(name).map_err(|_| EntryError::Invalid)?;
    if is_public_suffix(domain.as_str()) {
        return Err(EntryError::PublicSuffix);
    }
    Ok(domain.as_str().into())
}

impl<V> NameMap<V> {
    /// Loads a list text, one name per line (blank lines and `#` comments skipped), each with
    /// `value`, merged into an entry already there by `merge`.
    pub fn load_merging(&mut self, text: &str, value: V, merge: impl Fn(&mut V, V)) -> LoadReport
    where
        V: Clone,
    {
        load_lines(text, |line| self.upsert(line, value.clone(), &merge))
    }
}

pub(crate) fn load_lines(text: &str, mut insert: impl FnMut(&str) -> Result<(), EntryError>) -> LoadReport {
    let mut report = LoadReport::default();
    for line in text.lines() {
        let line = line.split(" #").next().unwrap_or_default().trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        match insert(line) {
            Ok(()) => report.loaded += 1,
            Err(e) => report.refused.push((line.to_owned(), e)),
        }
    }
    report
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(text: &str) -> DomainSet {
        let mut s = DomainSet::default();
        s.load_text(text);
        s
    }

    fn check(list: &DomainSet, name: &str, expected: Option<&str>) {
        let d = Domain::parse(name).unwrap();
        assert_eq!(list.find(&d).map(|(k, _)| k), expected, "name {name:?}");
    }

    #[test]
    fn matches_name_and_subdomains_within_registrable_domain() {
        let s = set("# comment\nmailinator.com\n\nTempMail.Example.\n*.wild.example\nbücher.example # idn\n");
        check(&s, "mailinator.com", Some("mailinator.com"));
        check(&s, "a.b.mailinator.com", Some("mailinator.com"));
        check(&s, "notmailinator.com", None);
        check(&s, "mailinator.com.evil.example", None);
        check(&s, "tempmail.example", Some("tempmail.example"));
        check(&s, "x.wild.example", Some("wild.example"));
        check(&s, "xn--bcher-kva.example", Some("xn--bcher-kva.example"));
        check(&s, "other.example", None);
    }

    #[test]
    fn refuses_public_suffix_entries() {
        let mut s = DomainSet::default();
        let report = s.load_text("com.ar\npp.ua\nshop.pp.ua\nnot a domain\n");
        assert_eq!(report.loaded, 1);
        assert_eq!(
            report.refused,
            vec![
                ("com.ar".to_owned(), EntryError::PublicSuffix),
                ("pp.ua".to_owned(), EntryError::PublicSuffix),
                ("not a domain".to_owned(), EntryError::Invalid),
            ]
        );
        check(&s, "other.pp.ua", None);
        check(&s, "shop.pp.ua", Some("shop.pp.ua"));
        check(&s, "example.com.ar", None);
    }

    #[test]
    fn parsed_lists_are_normalized_sorted_and_compared() {
        let old = ParsedList::parse("b.example\nA.example\n*.c.example\npp.ua\nb.example\n");
        let names: Vec<&str> = old.names().iter().map(|n| &**n).collect();
        assert_eq!(names, ["a.example", "b.example", "c.example"]);
        assert_eq!(old.refused(), [("pp.ua".to_owned(), EntryError::PublicSuffix)]);
        let new = ParsedList::parse("a.example\nd.example\ne.example\n");
        assert_eq!(new.diff(&old), (2, 2));
        assert_eq!(old.diff(&new), (2, 2));
        assert_eq!(new.diff(&ParsedList::default()), (3, 0));
        assert_eq!(ParsedList::default().diff(&new), (0, 3));
        assert_eq!(new.diff(&new), (0, 0));
        let mut set = DomainSet::default();
        set.extend_parsed(&old, (), |_, _| {});
        check(&set, "x.c.example", Some("c.example"));
        assert_eq!(set.len(), 3);
    }

    #[test]
    fn tsv_maps_suffix_to_value() {
        let mut m = NameMap::<Box<str>>::default();
        m.load_tsv("mail.protection.outlook.com\tMicrosoft 365\ngoogle.com\tGoogle Workspace\n");
        let hit = m.find_name("ACME-com.mail.protection.outlook.com.").map(|(_, v)| &**v);
        assert_eq!(hit, Some("Microsoft 365"));
        assert_eq!(m.find_name("aspmx.l.google.com").map(|(_, v)| &**v), Some("Google Workspace"));
        assert_eq!(m.find_name("outlook.com"), None);
        assert_eq!(m.find_name("not valid"), None);
    }
}
