//! The local decision when the sidecar gives no verdict (`local_fallback` in `CONFIG.md`).
//!
//! A sidecar that refuses the gateway's key (burst or quota spent: 429/402; 401), errs, times
//! out or is down must not turn into a bypass for names the filter can judge itself: the
//! *strong* disposable lists (reviewed or observed sources; `data/README.md`) are embedded in
//! the module, and a domain they list, or a subdomain of one, is `disposable`. Everything else
//! still falls to `failure_mode`.
//!
//! The lists are loaded by core at build time (`build.rs`: normalized, public-suffix entries
//! dropped), so the module carries no Public Suffix List. The sidecar walks parents only up to
//! the registrable domain; walking every parent here matches the same names because no strong
//! name has a public suffix beneath it (`scripts/update-data.py` refuses a list where one does;
//! the tests below compare both walks over every name).
//!
//! The set is built once per Wasm VM, on the first configuration that enables it, and shared by
//! every later configuration of that VM. The names are embedded deflated (`build.rs`): inflated
//! then, they cost the module a quarter of their size.

use std::sync::OnceLock;

use email_verdict_core::Domain;

/// The strong sources as core loads them, one name a line, sorted, deflated (`build.rs`).
const STRONG: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/strong.txt.deflate"));

/// An embedded list of names (the strong lists here, the relay list in `relay.rs`): sorted, a
/// binary search per parent, no hashing, 16 bytes a name beside the text.
#[derive(Debug)]
pub struct NameSet(Vec<&'static str>);

static SET: OnceLock<NameSet> = OnceLock::new();

/// The embedded strong lists, loaded on first use. The bytes are the build's own, checked by the
/// tests; were they ever unreadable, the set would be empty and every name fall to
/// `failure_mode`, as without `local_fallback`.
pub fn strong() -> &'static NameSet {
    SET.get_or_init(|| {
        let text = miniz_oxide::inflate::decompress_to_vec(STRONG).ok().and_then(|b| String::from_utf8(b).ok());
        NameSet::from_text(text.unwrap_or_default().leak())
    })
}

impl NameSet {
    /// One name a line as `build.rs` writes them; `#` comments and empty lines skipped.
    pub fn from_text(text: &'static str) -> Self {
        let mut names: Vec<&str> = text.lines().filter(|l| !l.is_empty() && !l.starts_with('#')).collect();
        names.sort_unstable(); // already sorted by build.rs; cheap, and no reliance on it
        Self(names)
    }

    /// The names, sorted.
    pub fn names(&self) -> &[&'static str] {
        &self.0
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    fn contains_name(&self, name: &str) -> bool {
        self.0.binary_search(&name).is_ok()
    }

    /// True when the set names `domain` or one of its parents.
    pub fn is_listed(&self, domain: &Domain) -> bool {
        let mut name = domain.as_str();
        loop {
            if self.contains_name(name) {
                return true;
            }
            match name.split_once('.') {
                Some((_, parent)) => name = parent,
                None => return false,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use email_verdict_core::DomainSet;
    use email_verdict_core::domain::is_public_suffix;

    use super::*;

    const SOURCES: [&str; 2] = [
        include_str!("../../data/disposable/disposable-email-domains.txt"),
        include_str!("../../data/disposable/fakefilter.txt"),
    ];

    /// The sidecar's view of the same lists: core's loader and its registrable-bounded walk.
    fn sidecar_view() -> DomainSet {
        let mut set = DomainSet::default();
        SOURCES.iter().for_each(|t| drop(set.load_text(t)));
        set
    }

    fn check(name: &str, listed: bool) {
        assert_eq!(strong().is_listed(&Domain::parse(name).unwrap()), listed, "{name}");
    }

    #[test]
    fn the_embedded_strong_lists_decide_listed_names_and_their_subdomains() {
        // Both files' entries: thousands of names, none lost beyond what core's loader drops.
        assert_eq!(strong().len(), sidecar_view().len());
        assert!(strong().len() > 10_000, "{} names", strong().len());
        for (name, listed) in [
            ("mailinator.com", true),
            ("MAILINATOR.COM.", true),
            ("x7.mailinator.com", true),
            ("gmail.com", false),
            ("shopco.example", false),
            ("co.uk", false),
        ] {
            check(name, listed);
        }
        // fakefilter's own names are in too.
        let fakefilter = SOURCES[1].lines().find(|l| !l.starts_with('#') && !l.trim().is_empty()).unwrap();
        check(fakefilter, true);
    }

    /// For every strong name, itself, a child, a grandchild and its parent: the same answer as
    /// the sidecar's registrable-bounded walk, and no public suffix in the set.
    #[test]
    fn the_unbounded_walk_matches_the_sidecars_on_every_name() {
        let sidecar = sidecar_view();
        for &name in strong().names() {
            assert!(!is_public_suffix(name), "{name} is a public suffix");
            let parent = name.split_once('.').map(|(_, p)| p).unwrap_or(name);
            for probe in [name.to_owned(), format!("x.{name}"), format!("a.b.{name}"), parent.to_owned()] {
                let Ok(domain) = Domain::parse(&probe) else { continue };
                assert_eq!(strong().is_listed(&domain), sidecar.contains(&domain), "{probe}");
            }
        }
    }
}
