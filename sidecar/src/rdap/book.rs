//! What the sidecar knows of registration dates, and of the RDAP servers it asks: the bounded
//! cache of answers with their lifetimes, the domains queued or being asked (one request per
//! domain at a time), and per server its turn (one request at a time, [`MIN_INTERVAL`] apart)
//! and how long it asked to be left alone. Pure bookkeeping under the caller's lock; every
//! time is passed in, so the lifetimes are tested without waiting.

use std::collections::{HashMap, HashSet};
use std::num::NonZeroUsize;
use std::sync::Arc;
use std::time::{Duration, Instant};

use lru::LruCache;

use crate::outbound::Refusal;

/// How long a registration date is used before it is asked again (it is still served while
/// the new answer comes: registrations rarely change).
pub const ANSWER_TTL: Duration = Duration::from_secs(7 * 86_400);
/// How long "the server knows the domain but gives no registration date" is kept.
pub const NO_REGISTRATION_TTL: Duration = Duration::from_secs(86_400);
/// How long a `404` is kept (the name may be registered since).
pub const NOT_FOUND_TTL: Duration = Duration::from_secs(6 * 3600);
/// How long a failure (timeout, an unreadable answer, another status) is kept.
pub const FAILURE_TTL: Duration = Duration::from_secs(15 * 60);
/// The least time between the starts of two requests to one server.
pub const MIN_INTERVAL: Duration = Duration::from_millis(500);
/// How long a server that failed (timeout, connection, 5xx, 403) is left alone.
pub const UNAVAILABLE_BACKOFF: Duration = Duration::from_secs(30);
/// How long a server that answered `429` without `Retry-After` is left alone.
pub const RATE_LIMIT_BACKOFF: Duration = Duration::from_secs(60);
/// The longest wait a `Retry-After` is honoured for (a larger one is cut to this).
pub const MAX_BACKOFF: Duration = Duration::from_secs(86_400);

/// What one RDAP request came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Registered at this Unix time.
    Registered(i64),
    /// The server knows the domain but gives no (readable) registration event.
    NoRegistration,
    /// `404`: the server does not know the domain.
    NotFound,
    /// `429` (or `503` with `Retry-After`): wait this long, if it said.
    RateLimited(Option<Duration>),
    /// The server did not answer well: timeout, connection failure, `5xx`, `403`.
    Unavailable(String),
    /// An answer that says nothing usable: another status, a body that is not a domain object.
    Unusable(String),
    /// Not asked, or a redirect not followed: the server has no public address, or redirected
    /// out of its origin (`outbound`).
    Refused(Refusal),
}

impl Outcome {
    /// Its label in the `rdap_requests` metric (`metrics::RDAP_OUTCOMES`).
    pub fn label(&self) -> &'static str {
        match self {
            Outcome::Registered(_) => "registered",
            Outcome::NoRegistration => "no_registration",
            Outcome::NotFound => "not_found",
            Outcome::RateLimited(_) => "rate_limited",
            Outcome::Unavailable(_) => "unavailable",
            Outcome::Unusable(_) => "unusable",
            Outcome::Refused(_) => "refused",
        }
    }
}

/// What is known of a domain's registration now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Known {
    /// Known until it expires: registered then, or (`None`) not to be had for now.
    Fresh(Option<i64>),
    /// Registered then, due to be asked again.
    Stale(i64),
    /// Never asked, or what was known has expired.
    Unknown,
}

/// Why a server cannot be asked now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    /// It asked to be left alone (or failed) until then.
    BackedOff(Instant),
    /// A request to it is under way.
    Busy,
}

#[derive(Debug, Clone, Copy)]
struct Entry {
    registered: Option<i64>,
    expires: Instant,
}

#[derive(Debug, Clone, Copy)]
struct Server {
    busy: bool,
    next_slot: Instant,
    not_before: Instant,
}

pub struct Book {
    entries: LruCache<Box<str>, Entry>,
    /// Domains queued or being asked: a domain is asked once at a time.
    pending: HashSet<Box<str>>,
    /// One per base URL of the bootstrap file, so bounded by it.
    servers: HashMap<Arc<str>, Server>,
}

impl Book {
    pub fn new(capacity: NonZeroUsize) -> Self {
        Self { entries: LruCache::new(capacity), pending: HashSet::new(), servers: HashMap::new() }
    }

    /// What is known of `domain` at `now`.
    pub fn known(&mut self, domain: &str, now: Instant) -> Known {
        match self.entries.get(domain) {
            Some(e) if now < e.expires => Known::Fresh(e.registered),
            Some(Entry { registered: Some(t), .. }) => Known::Stale(*t),
            _ => Known::Unknown,
        }
    }

    /// Whether `domain` should be queued for `server` now: it is not queued or being asked
    /// already, and the server has not asked to be left alone. When it should, it counts as
    /// pending until [`settle`](Self::settle) or [`unclaim`](Self::unclaim).
    pub fn claim(&mut self, domain: &str, server: &Arc<str>, now: Instant) -> bool {
        if self.pending.contains(domain) || self.servers.get(server).is_some_and(|s| now < s.not_before) {
            return false;
        }
        self.pending.insert(domain.into());
        true
    }

    /// `domain` was not asked after all (the queue was full, the server backed off meanwhile):
    /// a later lookup may queue it again.
    pub fn unclaim(&mut self, domain: &str) {
        self.pending.remove(domain);
    }

    /// `server`'s next turn: when its request may start (its last one started at least
    /// [`MIN_INTERVAL`] before), the server then counting as busy until [`settle`](Self::settle).
    pub fn reserve(&mut self, server: &Arc<str>, now: Instant) -> Result<Instant, Refused> {
        let s = self.servers.entry(server.clone()).or_insert(Server { busy: false, next_slot: now, not_before: now });
        if now < s.not_before {
            return Err(Refused::BackedOff(s.not_before));
        }
        if s.busy {
            return Err(Refused::Busy);
        }
        let start = s.next_slot.max(now);
        s.busy = true;
        s.next_slot = start + MIN_INTERVAL;
        Ok(start)
    }

    /// Records what asking `server` about `domain` came to at `now`: the answer with its
    /// lifetime, the server free again and, when it failed or asked for it, left alone for a
    /// while. A registration date already known survives a failure to renew it.
    pub fn settle(&mut self, domain: &str, server: &Arc<str>, outcome: &Outcome, now: Instant) {
        self.pending.remove(domain);
        let backoff = match outcome {
            Outcome::RateLimited(wait) => Some(wait.unwrap_or(RATE_LIMIT_BACKOFF).min(MAX_BACKOFF)),
            Outcome::Unavailable(_) | Outcome::Refused(_) => Some(UNAVAILABLE_BACKOFF),
            _ => None,
        };
        if let Some(s) = self.servers.get_mut(server) {
            s.busy = false;
            if let Some(wait) = backoff {
                s.not_before = s.not_before.max(now + wait);
            }
        }
        let known = self.entries.peek(domain).and_then(|e| e.registered);
        let (registered, ttl) = match outcome {
            Outcome::Registered(t) => (Some(*t), ANSWER_TTL),
            Outcome::NoRegistration => (None, NO_REGISTRATION_TTL),
            Outcome::NotFound => (None, NOT_FOUND_TTL),
            // Asked again once the server allows it (the next lookup after its wait).
            Outcome::RateLimited(_) => return,
            Outcome::Unavailable(_) | Outcome::Unusable(_) | Outcome::Refused(_) => (known, FAILURE_TTL),
        };
        self.entries.put(domain.into(), Entry { registered, expires: now + ttl });
    }

    /// Domains queued or being asked.
    pub fn pending(&self) -> usize {
        self.pending.len()
    }

    /// Domains with an answer kept.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn book(capacity: usize) -> (Book, Arc<str>, Instant) {
        (Book::new(NonZeroUsize::new(capacity).unwrap()), Arc::from("https://rdap.example/"), Instant::now())
    }

    fn ask(b: &mut Book, domain: &str, server: &Arc<str>, outcome: Outcome, at: Instant) {
        assert!(b.claim(domain, server, at), "{domain} could be claimed");
        let start = b.reserve(server, at).expect("a turn");
        b.settle(domain, server, &outcome, start);
    }

    #[test]
    fn answers_live_for_their_ttl_and_a_date_is_served_stale_while_it_is_renewed() {
        let (mut b, s, t0) = book(10);
        assert_eq!(b.known("a.example", t0), Known::Unknown);
        ask(&mut b, "a.example", &s, Outcome::Registered(1_000), t0);
        assert_eq!(b.known("a.example", t0 + ANSWER_TTL - Duration::from_secs(1)), Known::Fresh(Some(1_000)));
        let later = t0 + ANSWER_TTL + Duration::from_secs(1);
        assert_eq!(b.known("a.example", later), Known::Stale(1_000));
        // Renewing fails: the date is kept, for the failure's lifetime.
        ask(&mut b, "a.example", &s, Outcome::Unusable("HTTP 400".into()), later);
        assert_eq!(b.known("a.example", later + FAILURE_TTL - Duration::from_secs(1)), Known::Fresh(Some(1_000)));
        assert_eq!(b.known("a.example", later + FAILURE_TTL + Duration::from_secs(1)), Known::Stale(1_000));
    }

    #[test]
    fn absences_and_failures_live_shorter_than_answers() {
        let (mut b, s, t0) = book(10);
        let mut at = t0;
        for (domain, outcome, ttl) in [
            ("none.example", Outcome::NoRegistration, NO_REGISTRATION_TTL),
            ("gone.example", Outcome::NotFound, NOT_FOUND_TTL),
            ("bad.example", Outcome::Unusable("not JSON".into()), FAILURE_TTL),
        ] {
            at += MIN_INTERVAL;
            ask(&mut b, domain, &s, outcome, at);
            assert!(ttl < ANSWER_TTL);
            assert_eq!(b.known(domain, at + ttl - Duration::from_secs(1)), Known::Fresh(None), "{domain}");
            assert_eq!(b.known(domain, at + ttl), Known::Unknown, "{domain}");
        }
        assert!(NOT_FOUND_TTL < NO_REGISTRATION_TTL && FAILURE_TTL < NOT_FOUND_TTL);
    }

    #[test]
    fn a_domain_is_asked_once_at_a_time() {
        let (mut b, s, t0) = book(10);
        assert!(b.claim("a.example", &s, t0));
        assert!(!b.claim("a.example", &s, t0), "already queued");
        assert!(b.claim("b.example", &s, t0));
        assert_eq!(b.pending(), 2);
        b.unclaim("b.example");
        b.settle("a.example", &s, &Outcome::NotFound, t0);
        assert_eq!(b.pending(), 0);
        assert!(b.claim("a.example", &s, t0), "asked again once settled (the caller checks the cache first)");
    }

    #[test]
    fn one_request_per_server_at_a_time_and_spaced() {
        let (mut b, s, t0) = book(10);
        let other: Arc<str> = Arc::from("https://other.example/");
        assert_eq!(b.reserve(&s, t0), Ok(t0));
        assert_eq!(b.reserve(&s, t0), Err(Refused::Busy));
        assert_eq!(b.reserve(&other, t0), Ok(t0), "servers are independent");
        b.settle("a.example", &s, &Outcome::Registered(1), t0 + Duration::from_millis(100));
        assert_eq!(b.reserve(&s, t0 + Duration::from_millis(100)), Ok(t0 + MIN_INTERVAL), "the next turn waits");
        b.settle("b.example", &s, &Outcome::Registered(1), t0 + MIN_INTERVAL);
        let late = t0 + Duration::from_secs(10);
        assert_eq!(b.reserve(&s, late), Ok(late), "no waiting after a quiet spell");
    }

    #[test]
    fn a_rate_limited_server_is_left_alone_for_its_retry_after() {
        let (mut b, s, t0) = book(10);
        let wait = Duration::from_secs(120);
        ask(&mut b, "a.example", &s, Outcome::RateLimited(Some(wait)), t0);
        assert_eq!(b.known("a.example", t0), Known::Unknown, "nothing cached: asked again after the wait");
        assert!(!b.claim("b.example", &s, t0 + wait - Duration::from_secs(1)), "nothing queued meanwhile");
        assert_eq!(b.reserve(&s, t0 + Duration::from_secs(1)), Err(Refused::BackedOff(t0 + wait)));
        assert!(b.claim("b.example", &s, t0 + wait));
        assert_eq!(b.reserve(&s, t0 + wait), Ok(t0 + wait));
        // Without Retry-After: the default; a huge one: cut to a day.
        let (mut b, s, t0) = book(10);
        ask(&mut b, "a.example", &s, Outcome::RateLimited(None), t0);
        assert_eq!(b.reserve(&s, t0), Err(Refused::BackedOff(t0 + RATE_LIMIT_BACKOFF)));
        let (mut b, s, t0) = book(10);
        ask(&mut b, "a.example", &s, Outcome::RateLimited(Some(Duration::from_secs(u64::MAX / 4))), t0);
        assert_eq!(b.reserve(&s, t0), Err(Refused::BackedOff(t0 + MAX_BACKOFF)));
    }

    #[test]
    fn a_failing_server_is_left_alone_a_little() {
        let (mut b, s, t0) = book(10);
        ask(&mut b, "a.example", &s, Outcome::Unavailable("timed out".into()), t0);
        assert_eq!(b.known("a.example", t0), Known::Fresh(None));
        assert_eq!(b.reserve(&s, t0), Err(Refused::BackedOff(t0 + UNAVAILABLE_BACKOFF)));
        // A 404 or an unusable answer is the domain's, not the server's trouble.
        let (mut b, s, t0) = book(10);
        ask(&mut b, "a.example", &s, Outcome::Unusable("HTTP 400".into()), t0);
        ask(&mut b, "b.example", &s, Outcome::NotFound, t0 + MIN_INTERVAL);
        assert!(b.reserve(&s, t0 + 2 * MIN_INTERVAL).is_ok());
    }

    #[test]
    fn the_cache_is_bounded() {
        let (mut b, s, t0) = book(3);
        for (i, d) in ["a.example", "b.example", "c.example", "d.example"].into_iter().enumerate() {
            ask(&mut b, d, &s, Outcome::Registered(i as i64), t0 + MIN_INTERVAL * i as u32);
        }
        assert_eq!(b.len(), 3);
        assert_eq!(b.known("a.example", t0), Known::Unknown, "the least recently used went");
        assert_eq!(b.known("d.example", t0), Known::Fresh(Some(3)));
    }
}
