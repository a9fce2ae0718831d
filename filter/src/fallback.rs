//! The local decision when the sidecar gives no verdict (`local_fallback` in `CONFIG.md`).
//!
//! A sidecar that refuses the gateway's key (burst or quota spent: 429/402; 401), errs, times
//! out or is down must not turn into a bypass for names the filter can judge itself: the
//! *strong* disposable lists (reviewed or observed sources; `data/README.md`) are embedded in
//! the module, and a domain they list, or whose parent up to the registrable domain they list,
//! is `disposable`. Matching is core's `DomainSet` (public-suffix entries refused), the same as
//! the sidecar's lists. Everything else still falls to `failure_mode`.
//!
//! The set is built once per Wasm VM, on the first configuration that enables it, and shared by
//! every later configuration of that VM.

use std::sync::OnceLock;

use email_verdict_core::{Domain, DomainSet};

/// The strong sources, as `scripts/update-data.py` writes them (`#` header, one name a line).
const STRONG_LISTS: [&str; 2] = [
    include_str!("../../data/disposable/disposable-email-domains.txt"),
    include_str!("../../data/disposable/fakefilter.txt"),
];

static STRONG: OnceLock<DomainSet> = OnceLock::new();

/// The embedded strong lists, loaded on first use.
pub fn strong() -> &'static DomainSet {
    STRONG.get_or_init(|| load(&STRONG_LISTS))
}

/// A set from list texts (public-suffix and invalid lines are refused by the loader).
pub fn load(texts: &[&str]) -> DomainSet {
    let mut set = DomainSet::default();
    for text in texts {
        set.load_text(text);
    }
    set
}

/// True when a strong list names `domain` or one of its parents up to the registrable domain.
pub fn is_listed(set: &DomainSet, domain: &Domain) -> bool {
    set.contains(domain)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(set: &DomainSet, name: &str, listed: bool) {
        assert_eq!(is_listed(set, &Domain::parse(name).unwrap()), listed, "{name}");
    }

    #[test]
    fn the_embedded_strong_lists_decide_listed_names_and_their_subdomains() {
        let set = strong();
        // Both files' entries: thousands of names, none lost to the loader beyond public suffixes.
        assert!(set.len() > 10_000, "{} names", set.len());
        for (name, listed) in [
            ("mailinator.com", true),
            ("MAILINATOR.COM.", true),
            ("x7.mailinator.com", true),
            ("gmail.com", false),
            ("shopco.example", false),
            ("co.uk", false),
        ] {
            check(set, name, listed);
        }
        // fakefilter's own names are in too.
        let fakefilter = STRONG_LISTS[1].lines().find(|l| !l.starts_with('#') && !l.trim().is_empty()).unwrap();
        check(set, fakefilter, true);
    }

    #[test]
    fn public_suffix_entries_never_match() {
        let set = load(&["# header\npp.ua\nshop.pp.ua\nmailinator.com\n"]);
        check(&set, "other.pp.ua", false);
        check(&set, "shop.pp.ua", true);
        check(&set, "a.b.mailinator.com", true);
        check(&set, "notmailinator.com", false);
    }
}
