//! The decisions' JSON walked as a stream (`PartsBuilder::from_json`, read the first byte's
//! number of bytes at a time) against serde_json's derived `DecisionList`: the same answers
//! refused, the same parts built from the others. Only the sequence form `[reviewer, operator,
//! complete]`, which the derived parse takes and no sidecar writes, is refused by the walk alone.
#![no_main]

use std::io::Read;

use email_verdict_core::DecisionList;
use email_verdict_core::decided::PartsBuilder;
use libfuzzer_sys::fuzz_target;

/// Hands out at most `.1` bytes a read.
struct Trickle<'a>(&'a [u8], usize);

impl Read for Trickle<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = buf.len().min(self.1).min(self.0.len());
        buf[..n].copy_from_slice(&self.0[..n]);
        self.0 = &self.0[n..];
        Ok(n)
    }
}

fn parts(builder: PartsBuilder) -> Vec<Vec<u8>> {
    builder.into_parts().map(|p| p.as_bytes().to_vec()).collect()
}

fuzz_target!(|data: &[u8]| {
    let Some((&step, body)) = data.split_first() else { return };
    let walked = PartsBuilder::from_json(Trickle(body, usize::from(step).max(1)), 7).ok().map(parts);
    let derived = serde_json::from_slice::<DecisionList>(body).ok().map(|list| {
        let mut builder = PartsBuilder::new(7);
        builder.extend(&list);
        parts(builder)
    });
    if body.trim_ascii_start().first() == Some(&b'[') {
        assert!(walked.is_none());
    } else {
        assert_eq!(walked, derived);
    }
});
