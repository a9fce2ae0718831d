//! The verdict cache, in the proxy's shared data (one store for all workers of a `vm_id`).
//!
//! Shared data has no TTL, no eviction and no key listing, so the cache is bounded by
//! construction: a domain hashes (FNV-1a, stable across workers and builds) into one of
//! `max_entries` slots, key `email_verdict:slot:<n>`. The value holds the domain, the verdict
//! summary and its expiry; a slot holding another domain, an expired entry or anything
//! unreadable is a miss. Writes carry the CAS token of the read that missed: when another worker
//! wrote the slot in between, the write loses, which is fine for a cache.
//!
//! An expired entry is not dropped at once: for a stale window after its expiry
//! ([`VerdictCache::stale_ms`]) the first lookup claims its refresh (a compare-and-swap write of
//! the entry with "refreshing until now + the callout's timeout"), so that one signup, on one
//! worker, asks the sidecar again, while every other signup of every worker keeps getting the
//! old verdict until the new one is written or the claim runs out. An expiry therefore sends
//! one callout, not one per signup that arrives before the answer.

use email_verdict_core::Domain;

use crate::host::HostError;
use email_verdict_core::signup::{Flags, VerdictSummary};

const KEY_PREFIX: &str = "email_verdict:slot:";
/// `ev3` added the refresh claim (`ev2` the suggestion); an older entry is a miss.
const FORMAT: &str = "ev3";
/// The stale window is the entry's lifetime, at most this long.
const MAX_STALE_MS: u64 = 60_000;
/// How long an answer without MX data is kept at most ([`VerdictCache::briefly`]).
pub const BRIEF_TTL_MS: u64 = 5_000;

/// Why a shared-data write did not happen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SharedDataError {
    /// The value changed since the CAS token was read.
    CasMismatch,
    Host(HostError),
}

/// The proxy's shared key-value store, with compare-and-swap tokens.
pub trait SharedData {
    /// The value and its CAS token; `(None, None)` when the key does not exist.
    fn shared_data_get(&self, key: &str) -> Result<(Option<Vec<u8>>, Option<u32>), HostError>;
    /// Writes `value`; with `Some(cas)`, only if the key is still at that version.
    fn shared_data_set(&mut self, key: &str, value: &[u8], cas: Option<u32>) -> Result<(), SharedDataError>;
}

/// Cache parameters: how long an entry lives, and how many slots there are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VerdictCache {
    ttl_ms: u64,
    slots: u64,
    /// How long a claimed refresh keeps others on the stale verdict: the callout's timeout.
    claim_ms: u64,
}

/// The result of a lookup.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Lookup {
    Hit(VerdictSummary),
    /// The CAS token of the slot as read, to write it back conditionally.
    Miss {
        cas: Option<u32>,
    },
}

/// The result of a write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stored {
    Written,
    /// Another worker wrote the slot first; ignored.
    Lost,
}

impl VerdictCache {
    /// `None` when `ttl_seconds` is 0 (cache disabled) or there are no slots.
    pub fn new(ttl_seconds: u64, max_entries: u64) -> Option<Self> {
        (ttl_seconds > 0 && max_entries > 0).then(|| Self {
            ttl_ms: ttl_seconds.saturating_mul(1000),
            slots: max_entries,
            claim_ms: 1000,
        })
    }

    /// The same cache, a refresh claim lasting `timeout` (the sidecar callout's).
    pub fn claiming(self, timeout: std::time::Duration) -> Self {
        Self { claim_ms: u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX), ..self }
    }

    /// How long after its expiry an entry is still served while one signup refreshes it.
    pub fn stale_ms(&self) -> u64 {
        self.ttl_ms.min(MAX_STALE_MS)
    }

    /// The same cache for an answer without MX data (the sidecar's `mx_unavailable`): kept
    /// [`BRIEF_TTL_MS`] at most, so the full answer replaces it once DNS answers again.
    pub fn briefly(self) -> Self {
        Self { ttl_ms: self.ttl_ms.min(BRIEF_TTL_MS), ..self }
    }

    /// The shared-data key of the slot `domain` hashes to.
    pub fn slot_key(&self, domain: &Domain) -> String {
        format!("{KEY_PREFIX}{}", fnv1a(domain.as_str().as_bytes()).checked_rem(self.slots).unwrap_or(0))
    }

    /// A fresh entry hits. A stale one hits too while another signup refreshes it; the first
    /// lookup to find it unclaimed claims it and misses (`cas: None`: its answer overwrites the
    /// slot, whose token the claim just changed).
    pub fn lookup(&self, store: &mut impl SharedData, domain: &Domain, now_ms: u64) -> Result<Lookup, HostError> {
        let key = self.slot_key(domain);
        let (value, cas) = store.shared_data_get(&key)?;
        let Some(entry) = value.as_deref().and_then(decode).filter(|e| e.domain == domain.as_str()) else {
            return Ok(Lookup::Miss { cas });
        };
        if now_ms < entry.expires_ms {
            return Ok(Lookup::Hit(entry.summary));
        }
        if now_ms >= entry.expires_ms.saturating_add(self.stale_ms()) {
            return Ok(Lookup::Miss { cas });
        }
        if now_ms < entry.refresh_until_ms {
            return Ok(Lookup::Hit(entry.summary)); // another signup is asking
        }
        let claim = encode(entry.domain, &entry.summary, entry.expires_ms, now_ms.saturating_add(self.claim_ms));
        match store.shared_data_set(&key, claim.as_bytes(), cas) {
            Ok(()) => Ok(Lookup::Miss { cas: None }),
            Err(SharedDataError::CasMismatch) => Ok(Lookup::Hit(entry.summary)), // claimed by another
            Err(SharedDataError::Host(e)) => Err(e),
        }
    }

    pub fn store(
        &self,
        store: &mut impl SharedData,
        domain: &Domain,
        summary: &VerdictSummary,
        now_ms: u64,
        cas: Option<u32>,
    ) -> Result<Stored, HostError> {
        let value = encode(domain.as_str(), summary, now_ms.saturating_add(self.ttl_ms), 0);
        match store.shared_data_set(&self.slot_key(domain), value.as_bytes(), cas) {
            Ok(()) => Ok(Stored::Written),
            Err(SharedDataError::CasMismatch) => Ok(Stored::Lost),
            Err(SharedDataError::Host(e)) => Err(e),
        }
    }
}

#[derive(Debug, PartialEq, Eq)]
struct Entry<'a> {
    domain: &'a str,
    summary: VerdictSummary,
    expires_ms: u64,
    /// Until when a claimed refresh keeps other signups on this (stale) entry; 0: unclaimed.
    refresh_until_ms: u64,
}

/// `ev3|<expires ms>|<refreshing until ms>|<d or s>|<flag bits>|<suggested domain or
/// nothing>|<domain>`; a domain never holds `|`.
fn encode(domain: &str, summary: &VerdictSummary, expires_ms: u64, refresh_until_ms: u64) -> String {
    let verdict = if summary.disposable { 'd' } else { 's' };
    let suggestion = summary.suggestion.as_ref().map_or("", Domain::as_str);
    format!("{FORMAT}|{expires_ms}|{refresh_until_ms}|{verdict}|{}|{suggestion}|{domain}", summary.flags.bits())
}

fn decode(bytes: &[u8]) -> Option<Entry<'_>> {
    let text = std::str::from_utf8(bytes).ok()?;
    let mut fields = text.splitn(7, '|');
    if fields.next()? != FORMAT {
        return None;
    }
    let expires_ms = fields.next()?.parse().ok()?;
    let refresh_until_ms = fields.next()?.parse().ok()?;
    let disposable = match fields.next()? {
        "d" => true,
        "s" => false,
        _ => return None,
    };
    let flags = Flags::from_bits(fields.next()?.parse().ok()?)?;
    let suggestion = match fields.next()? {
        "" => None,
        name => Some(Domain::parse(name).ok()?),
    };
    let domain = fields.next()?;
    Some(Entry { domain, summary: VerdictSummary { disposable, flags, suggestion }, expires_ms, refresh_until_ms })
}

/// 64-bit FNV-1a: deterministic everywhere, unlike `std`'s hasher, which is free to change.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| (h ^ u64::from(*b)).wrapping_mul(0x0000_0100_0000_01b3))
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;
    use email_verdict_core::signup::Flag;

    /// Shared data as Envoy keeps it: a version per key, bumped on every write.
    #[derive(Default)]
    struct Store {
        data: HashMap<String, (Vec<u8>, u32)>,
        fail: bool,
    }

    impl SharedData for Store {
        fn shared_data_get(&self, key: &str) -> Result<(Option<Vec<u8>>, Option<u32>), HostError> {
            if self.fail {
                return Err(HostError::new("proxy_get_shared_data", 10));
            }
            Ok(self.data.get(key).map_or((None, None), |(v, cas)| (Some(v.clone()), Some(*cas))))
        }

        fn shared_data_set(&mut self, key: &str, value: &[u8], cas: Option<u32>) -> Result<(), SharedDataError> {
            let current = self.data.get(key).map(|(_, c)| *c);
            if let Some(cas) = cas
                && current != Some(cas)
            {
                return Err(SharedDataError::CasMismatch);
            }
            let next = current.unwrap_or(0) + 1;
            self.data.insert(key.to_owned(), (value.to_vec(), next));
            Ok(())
        }
    }

    fn d(s: &str) -> Domain {
        Domain::parse(s).unwrap()
    }

    fn summary(disposable: bool, flags: &[Flag]) -> VerdictSummary {
        VerdictSummary { disposable, flags: flags.iter().copied().collect(), suggestion: None }
    }

    #[test]
    fn stores_and_hits_until_expiry() {
        let cache = VerdictCache::new(300, 100).unwrap();
        let mut store = Store::default();
        let domain = d("mailinator.com");
        let s = summary(true, &[Flag::HasMx, Flag::SharedMx]);
        assert_eq!(cache.lookup(&mut store, &domain, 1_000).unwrap(), Lookup::Miss { cas: None });
        assert_eq!(cache.store(&mut store, &domain, &s, 1_000, None).unwrap(), Stored::Written);
        assert_eq!(cache.lookup(&mut store, &domain, 1_000).unwrap(), Lookup::Hit(s.clone()));
        assert_eq!(cache.lookup(&mut store, &domain, 300_999).unwrap(), Lookup::Hit(s.clone()));
        // Past the stale window (60 s at most): a plain miss.
        assert!(matches!(cache.lookup(&mut store, &domain, 361_000).unwrap(), Lookup::Miss { cas: Some(1) }));
    }

    #[test]
    fn an_expired_entry_is_refreshed_by_one_lookup_while_the_others_get_it() {
        let cache = VerdictCache::new(300, 100).unwrap().claiming(std::time::Duration::from_millis(2_000));
        let mut store = Store::default();
        let domain = d("mailinator.com");
        let s = summary(true, &[]);
        cache.store(&mut store, &domain, &s, 0, None).unwrap();
        assert_eq!(cache.lookup(&mut store, &domain, 300_000).unwrap(), Lookup::Miss { cas: None }, "claims");
        for now in [300_000, 301_999] {
            assert_eq!(cache.lookup(&mut store, &domain, now).unwrap(), Lookup::Hit(s.clone()), "stale at {now}");
        }
        // The refresh did not answer within its timeout: the next lookup claims again.
        assert_eq!(cache.lookup(&mut store, &domain, 302_000).unwrap(), Lookup::Miss { cas: None });
        assert_eq!(cache.lookup(&mut store, &domain, 302_001).unwrap(), Lookup::Hit(s.clone()));
        // The new answer ends the stale window.
        let fresh = summary(false, &[]);
        cache.store(&mut store, &domain, &fresh, 302_500, None).unwrap();
        assert_eq!(cache.lookup(&mut store, &domain, 302_600).unwrap(), Lookup::Hit(fresh));
    }

    #[test]
    fn an_answer_without_mx_data_expires_after_five_seconds() {
        let cache = VerdictCache::new(300, 100).unwrap().briefly();
        let mut store = Store::default();
        let (domain, s) = (d("mailinator.com"), summary(true, &[]));
        cache.store(&mut store, &domain, &s, 1_000, None).unwrap();
        assert_eq!(cache.lookup(&mut store, &domain, 5_999).unwrap(), Lookup::Hit(s));
        assert!(matches!(cache.lookup(&mut store, &domain, 11_000).unwrap(), Lookup::Miss { .. }));
        let short = VerdictCache::new(2, 100).unwrap();
        assert_eq!(short.briefly(), short, "a shorter ttl_seconds stays");
    }

    #[test]
    fn a_slot_holding_another_domain_is_a_miss() {
        // One slot: every domain collides.
        let cache = VerdictCache::new(60, 1).unwrap();
        let mut store = Store::default();
        let (a, b) = (d("a.example"), d("b.example"));
        assert_eq!(cache.slot_key(&a), "email_verdict:slot:0");
        cache.store(&mut store, &a, &summary(false, &[]), 0, None).unwrap();
        let Lookup::Miss { cas } = cache.lookup(&mut store, &b, 0).unwrap() else { panic!("expected a miss") };
        assert_eq!(cas, Some(1));
        // Writing b with that token replaces a; a now misses.
        assert_eq!(cache.store(&mut store, &b, &summary(true, &[]), 0, cas).unwrap(), Stored::Written);
        assert!(matches!(cache.lookup(&mut store, &a, 0).unwrap(), Lookup::Miss { .. }));
        assert_eq!(cache.lookup(&mut store, &b, 0).unwrap(), Lookup::Hit(summary(true, &[])));
    }

    #[test]
    fn a_cas_mismatch_is_ignored() {
        let cache = VerdictCache::new(60, 1).unwrap();
        let mut store = Store::default();
        let domain = d("gmail.com");
        cache.store(&mut store, &domain, &summary(false, &[]), 0, None).unwrap();
        let stale = Some(1);
        cache.store(&mut store, &d("other.example"), &summary(true, &[]), 0, stale).unwrap();
        assert_eq!(cache.store(&mut store, &domain, &summary(false, &[]), 0, stale).unwrap(), Stored::Lost);
        assert_eq!(cache.lookup(&mut store, &d("other.example"), 0).unwrap(), Lookup::Hit(summary(true, &[])));
    }

    #[test]
    fn slots_are_bounded_and_stable() {
        let cache = VerdictCache::new(60, 7).unwrap();
        for name in ["a.example", "b.example", "mailinator.com", "gmail.com", "xn--bcher-kva.example"] {
            let key = cache.slot_key(&d(name));
            let n: u64 = key.strip_prefix(KEY_PREFIX).unwrap().parse().unwrap();
            assert!(n < 7);
            assert_eq!(key, cache.slot_key(&d(name)));
        }
        // Pinned, so a change of hash (which would orphan every worker's slots) is deliberate.
        assert_eq!(fnv1a(b"mailinator.com"), 0xe389_2fe6_ced9_5df6);
    }

    #[test]
    fn garbage_in_a_slot_is_a_miss() {
        let cache = VerdictCache::new(60, 1).unwrap();
        let domain = d("a.example");
        for junk in [
            &b""[..],
            b"\xff\xfe",
            b"ev3",
            b"ev2|999|d|0||a.example", // the format before refresh claims
            b"ev3|999|0|d|0|a.example",
            b"ev3|x|0|d|0||a.example",
            b"ev3|999|x|d|0||a.example",
            b"ev3|999|0|q|0||a.example",
            b"ev3|999|0|d|99999||a.example",
            b"ev3|999|0|d|0|not a domain|a.example",
            b"ev3|999|0|d|0|",
        ] {
            let mut store = Store::default();
            store.data.insert(cache.slot_key(&domain), (junk.to_vec(), 5));
            assert_eq!(cache.lookup(&mut store, &domain, 0).unwrap(), Lookup::Miss { cas: Some(5) }, "{junk:?}");
        }
    }

    #[test]
    fn round_trips_every_flag_and_the_suggestion() {
        let all = summary(false, &Flag::ALL);
        let text = encode("a.example", &all, 42, 7);
        let entry = Entry { domain: "a.example", summary: all, expires_ms: 42, refresh_until_ms: 7 };
        assert_eq!(decode(text.as_bytes()), Some(entry));
        let typo = VerdictSummary { suggestion: Some(d("gmail.com")), ..summary(false, &[]) };
        let text = encode("gmial.com", &typo, 42, 0);
        assert_eq!(text, "ev3|42|0|s|0|gmail.com|gmial.com");
        let entry = Entry { domain: "gmial.com", summary: typo, expires_ms: 42, refresh_until_ms: 0 };
        assert_eq!(decode(text.as_bytes()), Some(entry));
    }

    #[test]
    fn disabled_by_zero_ttl_and_host_errors_surface() {
        assert_eq!(VerdictCache::new(0, 10), None);
        let cache = VerdictCache::new(1, 10).unwrap();
        let mut store = Store { fail: true, ..Store::default() };
        assert!(cache.lookup(&mut store, &d("a.example"), 0).is_err());
    }
}
