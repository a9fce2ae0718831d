//! Any input string: parsing never panics, and whatever parses holds the `Domain` and
//! `EmailAddress` invariants, and parsing is idempotent on the normalized form. A typo suggestion
//! for its domain (the shipped providers) never panics and is a provider other than the domain.
#![no_main]

use std::sync::OnceLock;

use email_verdict_core::{Domain, LookupInput, Providers};
use libfuzzer_sys::fuzz_target;

fn providers() -> &'static Providers {
    static PROVIDERS: OnceLock<Providers> = OnceLock::new();
    PROVIDERS.get_or_init(|| {
        let mut p = Providers::default();
        p.load_text(include_str!("../../../data/popular.txt"));
        p
    })
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let Ok(input) = LookupInput::parse(text) else { return };
    let domain = input.domain().as_str();
    assert!(domain.is_ascii() && !domain.ends_with('.') && domain.len() <= 253);
    assert_eq!(domain, domain.to_ascii_lowercase());
    assert!(domain.split('.').count() >= 2 && domain.split('.').all(|l| (1..=63).contains(&l.len())));
    // The normalized domain parses to itself.
    assert_eq!(Domain::parse(domain).map(|d| d.as_str().to_owned()), Ok(domain.to_owned()));
    if let LookupInput::Email(e) = &input {
        assert!(e.to_string().len() <= 254 && (1..=64).contains(&e.local().len()));
        assert_eq!(LookupInput::parse(&e.to_string()).map(|i| i.email_string()), Ok(e.to_string()));
    }
    let _ = input.domain().parents_to_registrable().count();
    if let Some(suggested) = providers().closest(input.domain()) {
        assert!(providers().contains(suggested) && suggested != domain, "{domain} -> {suggested}");
    }
});
