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
//!
//! With the sidecar's decisions synced (`decided.rs`, [`VerdictCache::versioned`]) each entry
//! also holds the version of the decisions the gateway knew when the callout that produced it
//! was dispatched (read by the lookup that missed, so a sync landing during the callout leaves
//! the entry on the older version). A lookup reads the current version first (one small
//! shared-data read) and an entry of another version is a plain miss, never served stale: a
//! decision reaches every cached verdict with the sync that brings it, not `ttl_seconds` later.
//! The sidecar applies a decision (on the name or a parent) to its very next lookup, so the
//! answer that replaces the entry has it.

use email_verdict_core::{Domain, Mail, VerdictSource};

use crate::decided;
use crate::host::HostError;
use email_verdict_core::signup::{Flags, VerdictSummary};

const KEY_PREFIX: &str = "email_verdict:slot:";
/// `ev5` added the deciding source and where the mail goes, `ev4` the decisions' version (`ev3` the refresh claim, `ev2` the suggestion); an older
/// entry is a miss: it may predate a decision, and it costs one callout per name once.
const FORMAT: &str = "ev5";
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
    /// The decisions are synced: an entry of another version than theirs is a miss.
    versioned: bool,
}

/// The version of the synced decisions ([`decided::version`]); `None`: none stored yet.
pub type Version = Option<u32>;

/// What a miss hands on to the write of its answer ([`VerdictCache::store`]): the slot's CAS
/// token and the decisions' version, both as the lookup read them, before the callout.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Ticket {
    pub cas: Option<u32>,
    pub version: Version,
}

/// The result of a lookup.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Lookup {
    Hit(VerdictSummary),
    /// To write the answer back: conditionally on the slot as read, with the version read.
    Miss(Ticket),
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
            versioned: false,
        })
    }

    /// The same cache, its entries tied to the synced decisions' version when `synced`.
    pub fn versioned(self, synced: bool) -> Self {
        Self { versioned: synced, ..self }
    }

    /// The decisions' version to record for a callout made now (`None` when not versioned).
    pub fn version(&self, store: &impl SharedData) -> Result<Version, HostError> {
        if self.versioned { decided::version(store) } else { Ok(None) }
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

    /// A fresh entry of the current decisions' version hits; one of another version is a miss.
    /// A stale one hits too while another signup refreshes it; the first lookup to find it
    /// unclaimed claims it and misses (`cas: None`: its answer overwrites the slot, whose token
    /// the claim just changed).
    pub fn lookup(&self, store: &mut impl SharedData, domain: &Domain, now_ms: u64) -> Result<Lookup, HostError> {
        // Before the slot: the version a callout after this miss is dispatched under.
        let version = self.version(store)?;
        let key = self.slot_key(domain);
        let (value, cas) = store.shared_data_get(&key)?;
        let miss = |cas| Ok(Lookup::Miss(Ticket { cas, version }));
        let Some(entry) = value.as_deref().and_then(decode).filter(|e| e.domain == domain.as_str()) else {
            return miss(cas);
        };
        if self.versioned && entry.stamp.version != version {
            return miss(cas); // judged before a decision the gateway now knows: never served
        }
        if now_ms < entry.stamp.expires_ms {
            return Ok(Lookup::Hit(entry.summary));
        }
        if now_ms >= entry.stamp.expires_ms.saturating_add(self.stale_ms()) {
            return miss(cas);
        }
        if now_ms < entry.stamp.refresh_until_ms {
            return Ok(Lookup::Hit(entry.summary)); // another signup is asking
        }
        let claimed = Stamp { refresh_until_ms: now_ms.saturating_add(self.claim_ms), ..entry.stamp };
        let claim = encode(entry.domain, &entry.summary, claimed);
        match store.shared_data_set(&key, claim.as_bytes(), cas) {
            Ok(()) => miss(None),
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
        ticket: Ticket,
    ) -> Result<Stored, HostError> {
        let version = if self.versioned { ticket.version } else { None };
        let stamp = Stamp { expires_ms: now_ms.saturating_add(self.ttl_ms), refresh_until_ms: 0, version };
        let value = encode(domain.as_str(), summary, stamp);
        match store.shared_data_set(&self.slot_key(domain), value.as_bytes(), ticket.cas) {
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
    stamp: Stamp,
}

/// When an entry expires, whether its refresh is claimed, and under which decisions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stamp {
    expires_ms: u64,
    /// Until when a claimed refresh keeps other signups on this (stale) entry; 0: unclaimed.
    refresh_until_ms: u64,
    /// The decisions' version its callout was dispatched under; `None` when not versioned.
    version: Version,
}

/// `ev5|<expires ms>|<refreshing until ms>|<version or nothing>|<d or s>|<flag bits>|<source or
/// nothing>|<mail or nothing>|<suggested domain or nothing>|<domain>`; a domain never holds `|`.
fn encode(domain: &str, summary: &VerdictSummary, stamp: Stamp) -> String {
    let Stamp { expires_ms, refresh_until_ms, version } = stamp;
    let version = version.map_or_else(String::new, |v| v.to_string());
    let verdict = if summary.disposable { 'd' } else { 's' };
    let suggestion = summary.suggestion.as_ref().map_or("", Domain::as_str);
    let flags = summary.flags.bits();
    let source = summary.source.map_or("", VerdictSource::as_str);
    let mail = summary.mail.map_or("", Mail::as_str);
    format!(
        "{FORMAT}|{expires_ms}|{refresh_until_ms}|{version}|{verdict}|{flags}|{source}|{mail}|{suggestion}|{domain}"
    )
}

fn decode(bytes: &[u8]) -> Option<Entry<'_>> {
    let text = std::str::from_utf8(bytes).ok()?;
    let mut fields = text.splitn(10, '|');
    if fields.next()? != FORMAT {
        return None;
    }
    let expires_ms = fields.next()?.parse().ok()?;
    let refresh_until_ms = fields.next()?.parse().ok()?;
    let version = match fields.next()? {
        "" => None,
        v => Some(v.parse().ok()?),
    };
    let disposable = match fields.next()? {
        "d" => true,
        "s" => false,
        _ => return None,
    };
    let flags = Flags::from_bits(fields.next()?.parse().ok()?)?;
    // Empty: not told. A name this build does not know makes the entry a miss.
    let source = match fields.next()? {
        "" => None,
        name => Some(VerdictSource::parse(name.as_bytes())?),
    };
    let mail = match fields.next()? {
        "" => None,
        name => Some(Mail::parse(name.as_bytes())?),
    };
    let suggestion = match fields.next()? {
        "" => None,
        name => Some(Domain::parse(name).ok()?),
    };
    let domain = fields.next()?;
    let stamp = Stamp { expires_ms, refresh_until_ms, version };
    Some(Entry { domain, summary: VerdictSummary { disposable, flags, suggestion, source, mail }, stamp })
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

    /// The write of a new entry, without a version (decisions not synced).
    const NEW: Ticket = Ticket { cas: None, version: None };

    fn miss(cas: Option<u32>) -> Lookup {
        Lookup::Miss(Ticket { cas, version: None })
    }

    fn summary(disposable: bool, flags: &[Flag]) -> VerdictSummary {
        let flags = flags.iter().copied().collect();
        VerdictSummary { disposable, flags, suggestion: None, source: None, mail: None }
    }

    #[test]
    fn stores_and_hits_until_expiry() {
        let cache = VerdictCache::new(300, 100).unwrap();
        let mut store = Store::default();
        let domain = d("mailinator.com");
        let s = summary(true, &[Flag::HasMx, Flag::SharedMx]);
        assert_eq!(cache.lookup(&mut store, &domain, 1_000).unwrap(), miss(None));
        assert_eq!(cache.store(&mut store, &domain, &s, 1_000, NEW).unwrap(), Stored::Written);
        assert_eq!(cache.lookup(&mut store, &domain, 1_000).unwrap(), Lookup::Hit(s.clone()));
        assert_eq!(cache.lookup(&mut store, &domain, 300_999).unwrap(), Lookup::Hit(s.clone()));
        // Past the stale window (60 s at most): a plain miss.
        assert!(matches!(
            cache.lookup(&mut store, &domain, 361_000).unwrap(),
            Lookup::Miss(Ticket { cas: Some(1), version: None })
        ));
    }

    #[test]
    fn an_expired_entry_is_refreshed_by_one_lookup_while_the_others_get_it() {
        let cache = VerdictCache::new(300, 100).unwrap().claiming(std::time::Duration::from_millis(2_000));
        let mut store = Store::default();
        let domain = d("mailinator.com");
        let s = summary(true, &[]);
        cache.store(&mut store, &domain, &s, 0, NEW).unwrap();
        assert_eq!(cache.lookup(&mut store, &domain, 300_000).unwrap(), miss(None), "claims");
        for now in [300_000, 301_999] {
            assert_eq!(cache.lookup(&mut store, &domain, now).unwrap(), Lookup::Hit(s.clone()), "stale at {now}");
        }
        // The refresh did not answer within its timeout: the next lookup claims again.
        assert_eq!(cache.lookup(&mut store, &domain, 302_000).unwrap(), miss(None));
        assert_eq!(cache.lookup(&mut store, &domain, 302_001).unwrap(), Lookup::Hit(s.clone()));
        // The new answer ends the stale window.
        let fresh = summary(false, &[]);
        cache.store(&mut store, &domain, &fresh, 302_500, NEW).unwrap();
        assert_eq!(cache.lookup(&mut store, &domain, 302_600).unwrap(), Lookup::Hit(fresh));
    }

    #[test]
    fn an_answer_without_mx_data_expires_after_five_seconds() {
        let cache = VerdictCache::new(300, 100).unwrap().briefly();
        let mut store = Store::default();
        let (domain, s) = (d("mailinator.com"), summary(true, &[]));
        cache.store(&mut store, &domain, &s, 1_000, NEW).unwrap();
        assert_eq!(cache.lookup(&mut store, &domain, 5_999).unwrap(), Lookup::Hit(s));
        assert!(matches!(cache.lookup(&mut store, &domain, 11_000).unwrap(), Lookup::Miss(_)));
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
        cache.store(&mut store, &a, &summary(false, &[]), 0, NEW).unwrap();
        let Lookup::Miss(ticket) = cache.lookup(&mut store, &b, 0).unwrap() else { panic!("expected a miss") };
        assert_eq!(ticket.cas, Some(1));
        // Writing b with that token replaces a; a now misses.
        assert_eq!(cache.store(&mut store, &b, &summary(true, &[]), 0, ticket).unwrap(), Stored::Written);
        assert!(matches!(cache.lookup(&mut store, &a, 0).unwrap(), Lookup::Miss(_)));
        assert_eq!(cache.lookup(&mut store, &b, 0).unwrap(), Lookup::Hit(summary(true, &[])));
    }

    #[test]
    fn a_cas_mismatch_is_ignored() {
        let cache = VerdictCache::new(60, 1).unwrap();
        let mut store = Store::default();
        let domain = d("gmail.com");
        cache.store(&mut store, &domain, &summary(false, &[]), 0, NEW).unwrap();
        let stale = Ticket { cas: Some(1), version: None };
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
            b"ev4",
            b"ev2|999|d|0||a.example",   // the format before refresh claims
            b"ev3|999|0|d|0||a.example", // the format before the decisions' version
            b"ev4|999|0||d|0|a.example",
            b"ev4|x|0||d|0||a.example",
            b"ev4|999|x||d|0||a.example",
            b"ev4|999|0|v1|d|0||a.example",
            b"ev4|999|0|-1|d|0||a.example",
            b"ev4|999|0||q|0||a.example",
            b"ev4|999|0||d|99999||a.example",
            b"ev4|999|0||d|0|not a domain|a.example",
            b"ev4|999|0||d|0|",
        ] {
            let mut store = Store::default();
            store.data.insert(cache.slot_key(&domain), (junk.to_vec(), 5));
            assert_eq!(cache.lookup(&mut store, &domain, 0).unwrap(), miss(Some(5)), "{junk:?}");
        }
    }

    #[test]
    fn round_trips_every_flag_and_the_suggestion() {
        let all = summary(false, &Flag::ALL);
        let stamp = Stamp { expires_ms: 42, refresh_until_ms: 7, version: Some(u32::MAX) };
        let text = encode("a.example", &all, stamp);
        let entry = Entry { domain: "a.example", summary: all, stamp };
        assert_eq!(decode(text.as_bytes()), Some(entry));
        let typo = VerdictSummary { suggestion: Some(d("gmail.com")), ..summary(false, &[]) };
        let stamp = Stamp { expires_ms: 42, refresh_until_ms: 0, version: None };
        let text = encode("gmial.com", &typo, stamp);
        assert_eq!(text, "ev5|42|0||s|0|||gmail.com|gmial.com");
        let entry = Entry { domain: "gmial.com", summary: typo, stamp };
        assert_eq!(decode(text.as_bytes()), Some(entry));
    }

    #[test]
    fn round_trips_every_source_and_mail() {
        let stamp = Stamp { expires_ms: 1, refresh_until_ms: 0, version: None };
        for source in VerdictSource::ALL {
            for mail in [Mail::Mx, Mail::Implicit, Mail::None] {
                let s = VerdictSummary { source: Some(source), mail: Some(mail), ..summary(true, &[]) };
                let text = encode("x.example", &s, stamp);
                assert_eq!(decode(text.as_bytes()), Some(Entry { domain: "x.example", summary: s, stamp }), "{text}");
            }
        }
        assert_eq!(decode(b"ev5|1|0||d|0|a_new_source||||x.example"), None, "an unknown source is a miss");
        assert_eq!(decode(b"ev4|42|0||s|0|gmail.com|gmial.com"), None, "an older entry is a miss");
    }

    #[test]
    fn disabled_by_zero_ttl_and_host_errors_surface() {
        assert_eq!(VerdictCache::new(0, 10), None);
        let cache = VerdictCache::new(1, 10).unwrap();
        let mut store = Store { fail: true, ..Store::default() };
        assert!(cache.lookup(&mut store, &d("a.example"), 0).is_err());
    }

    // ---- the decisions' version (`decided.rs`) --------------------------------------------

    /// A sync of the decisions: a new `ETag` stored, a new version.
    fn sync(store: &mut Store) -> Version {
        store.shared_data_set(decided::VERSION_KEY, b"\"etag\"", None).unwrap();
        decided::version(store).unwrap()
    }

    fn versioned() -> VerdictCache {
        VerdictCache::new(300, 100).unwrap().versioned(true)
    }

    #[test]
    fn a_verdict_cached_before_a_decision_is_a_miss_once_it_is_synced() {
        let cache = versioned();
        let mut store = Store::default();
        let domain = d("mailinator.com");
        let v1 = sync(&mut store);
        let Lookup::Miss(ticket) = cache.lookup(&mut store, &domain, 0).unwrap() else { panic!("a miss") };
        assert_eq!(ticket, Ticket { cas: None, version: v1 });
        cache.store(&mut store, &domain, &summary(true, &[]), 0, ticket).unwrap();
        assert_eq!(cache.lookup(&mut store, &domain, 1_000).unwrap(), Lookup::Hit(summary(true, &[])), "same version");
        let v2 = sync(&mut store); // a reviewer's "safe" arrives
        assert_ne!(v1, v2);
        let fresh = Lookup::Miss(Ticket { cas: Some(1), version: v2 });
        assert_eq!(cache.lookup(&mut store, &domain, 1_000).unwrap(), fresh, "newer decisions: asked again");
        assert_eq!(cache.lookup(&mut store, &domain, 1_000).unwrap(), fresh, "by every signup until answered");
        let Lookup::Miss(ticket) = fresh else { unreachable!() };
        cache.store(&mut store, &domain, &summary(false, &[]), 1_000, ticket).unwrap();
        assert_eq!(cache.lookup(&mut store, &domain, 1_000).unwrap(), Lookup::Hit(summary(false, &[])));
    }

    #[test]
    fn an_answer_to_a_callout_made_before_a_sync_is_kept_under_the_older_version() {
        let cache = versioned();
        let mut store = Store::default();
        let domain = d("shopco.example");
        sync(&mut store);
        let Lookup::Miss(ticket) = cache.lookup(&mut store, &domain, 0).unwrap() else { panic!("a miss") };
        let v2 = sync(&mut store); // lands while the callout is in flight
        assert_eq!(cache.store(&mut store, &domain, &summary(false, &[]), 0, ticket).unwrap(), Stored::Written);
        let again = cache.lookup(&mut store, &domain, 0).unwrap();
        assert_eq!(again, Lookup::Miss(Ticket { cas: Some(1), version: v2 }), "its answer may predate the decision");
    }

    #[test]
    fn an_expired_verdict_of_older_decisions_is_not_served_while_refreshed() {
        let cache = versioned();
        let mut store = Store::default();
        let domain = d("mailinator.com");
        let v1 = sync(&mut store);
        cache.store(&mut store, &domain, &summary(true, &[]), 0, Ticket { cas: None, version: v1 }).unwrap();
        let claimed = Lookup::Miss(Ticket { cas: None, version: v1 });
        assert_eq!(cache.lookup(&mut store, &domain, 300_000).unwrap(), claimed, "same version: claims the refresh");
        assert_eq!(cache.lookup(&mut store, &domain, 300_001).unwrap(), Lookup::Hit(summary(true, &[])), "stale");
        let v2 = sync(&mut store);
        for now in [300_002, 300_003] {
            let got = cache.lookup(&mut store, &domain, now).unwrap();
            assert_eq!(got, Lookup::Miss(Ticket { cas: Some(2), version: v2 }), "no stale verdict past a decision");
        }
    }

    #[test]
    fn entries_without_a_version() {
        let cache = versioned();
        let mut store = Store::default();
        let domain = d("mailinator.com");
        // Nothing synced yet: no version, and entries without one hit.
        assert_eq!(cache.lookup(&mut store, &domain, 0).unwrap(), miss(None));
        cache.store(&mut store, &domain, &summary(true, &[]), 0, NEW).unwrap();
        assert_eq!(cache.lookup(&mut store, &domain, 0).unwrap(), Lookup::Hit(summary(true, &[])));
        // The first sync: an entry from before it (or from a lookup that failed) is a miss.
        let v1 = sync(&mut store);
        assert_eq!(cache.lookup(&mut store, &domain, 0).unwrap(), Lookup::Miss(Ticket { cas: Some(1), version: v1 }));
        // An older build's entry (`ev3`, no version field) is a miss too, whatever is synced.
        let old = b"ev3|999999|0|d|0||mailinator.com".to_vec();
        store.data.insert(cache.slot_key(&domain), (old, 7));
        assert_eq!(cache.lookup(&mut store, &domain, 0).unwrap(), Lookup::Miss(Ticket { cas: Some(7), version: v1 }));
    }

    #[test]
    fn without_the_sync_versions_are_neither_read_nor_written() {
        let unversioned = VerdictCache::new(300, 100).unwrap();
        let mut store = Store::default();
        let domain = d("mailinator.com");
        let v1 = sync(&mut store);
        assert_eq!(unversioned.lookup(&mut store, &domain, 0).unwrap(), miss(None), "no version read");
        assert_eq!(unversioned.version(&store).unwrap(), None);
        let ticket = Ticket { cas: None, version: v1 };
        unversioned.store(&mut store, &domain, &summary(true, &[]), 0, ticket).unwrap();
        let (value, _) = store.shared_data_get(&unversioned.slot_key(&domain)).unwrap();
        assert_eq!(decode(&value.unwrap()).unwrap().stamp.version, None, "written without");
        sync(&mut store);
        assert_eq!(unversioned.lookup(&mut store, &domain, 0).unwrap(), Lookup::Hit(summary(true, &[])), "as before");
        // A versioned entry (another configuration of the vm_id) hits here too.
        versioned()
            .store(&mut store, &domain, &summary(false, &[]), 0, Ticket { cas: None, version: Some(1) })
            .unwrap();
        assert_eq!(unversioned.lookup(&mut store, &domain, 0).unwrap(), Lookup::Hit(summary(false, &[])));
    }
}
