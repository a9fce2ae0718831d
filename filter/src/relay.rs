//! The relay list (`data/relay.txt`: privacy relay / alias services such as duck.com) embedded
//! in the module, for the relay detail header (`CONFIG.md`, "Detail headers").
//!
//! The filter asks the sidecar about the domain alone, and a verdict may come from the cache or
//! the local fallback, so the details are computed here, in every case, by core's own functions
//! and from the same shipped list as the sidecar's `details.relay` (there is no operator relay
//! list). Loaded at build time by core (`build.rs`), so no Public Suffix List is needed: the
//! sidecar walks parents up to the registrable domain, this set walks every parent, and both
//! match the same names because no relay name has a public suffix beneath it (the tests below
//! compare both walks over every name).

use std::sync::OnceLock;

use email_verdict_core::Domain;

use crate::fallback::NameSet;

/// `data/relay.txt` as core loads it, one name a line, sorted (`build.rs`).
const RELAY: &str = include_str!(concat!(env!("OUT_DIR"), "/relay.txt"));

static SET: OnceLock<NameSet> = OnceLock::new();

/// The embedded relay list, loaded on first use.
pub fn relay() -> &'static NameSet {
    SET.get_or_init(|| NameSet::from_text(RELAY))
}

/// True when `domain` or one of its parents is a relay service.
pub fn is_relay(domain: &Domain) -> bool {
    relay().is_listed(domain)
}

#[cfg(test)]
mod tests {
    use email_verdict_core::DomainSet;
    use email_verdict_core::domain::is_public_suffix;

    use super::*;

    /// The sidecar's view: core's loader and its registrable-bounded walk.
    fn sidecar_view() -> DomainSet {
        let mut set = DomainSet::default();
        set.load_text(include_str!("../../data/relay.txt"));
        set
    }

    #[test]
    fn the_embedded_relay_list_is_the_sidecars() {
        assert_eq!(relay().len(), sidecar_view().len());
        assert!(relay().len() >= 20, "{} names", relay().len());
        for (name, listed) in [
            ("duck.com", true),
            ("DUCK.COM.", true),
            ("privaterelay.appleid.com", true),
            ("x.privaterelay.appleid.com", true),
            ("appleid.com", false),
            ("mozmail.com", true),
            ("gmail.com", false),
            ("mailinator.com", false),
        ] {
            assert_eq!(is_relay(&Domain::parse(name).unwrap()), listed, "{name}");
        }
    }

    #[test]
    fn the_unbounded_walk_matches_the_sidecars_on_every_name() {
        let sidecar = sidecar_view();
        for name in relay().names() {
            assert!(!is_public_suffix(name), "{name} is a public suffix");
            let parent = name.split_once('.').map(|(_, p)| p).unwrap_or(name);
            for probe in [name.to_owned(), format!("x.{name}"), format!("a.b.{name}"), parent.to_owned()] {
                let Ok(domain) = Domain::parse(&probe) else { continue };
                assert_eq!(is_relay(&domain), sidecar.contains(&domain), "{probe}");
            }
        }
    }
}
