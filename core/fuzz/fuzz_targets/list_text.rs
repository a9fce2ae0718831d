//! Any list text loads without panicking, never keeps a public suffix, and every loaded entry
//! matches itself; read as a `ParsedList` (what a reloaded list is), it holds exactly the
//! set's entries, and compares with itself as unchanged.
#![no_main]

use email_verdict_core::lists::ParsedList;
use email_verdict_core::{Domain, DomainSet};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let mut set = DomainSet::default();
    let report = set.load_text(text);
    assert!(set.len() <= report.loaded);
    for line in text.lines() {
        if let Ok(d) = Domain::parse(line.trim()) {
            let _ = set.find(&d);
        }
    }
    let parsed = ParsedList::parse(text);
    assert_eq!(parsed.len(), set.len());
    assert_eq!(parsed.refused().len(), report.refused.len());
    assert_eq!(parsed.diff(&parsed), (0, 0));
    assert_eq!(parsed.diff(&ParsedList::default()), (parsed.len(), 0));
    let mut from_parsed = DomainSet::default();
    from_parsed.extend_parsed(&parsed, (), |_, _| {});
    assert!(parsed.names().iter().all(|n| from_parsed.find_name(n).is_some_and(|(k, _)| k == &**n)));
});
