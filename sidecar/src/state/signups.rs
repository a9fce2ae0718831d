//! Signup counts (issue 32): how many signups each counter — a canonical mailbox, a client
//! network, a registrable domain, a mail server — saw in the last hour and the last 24 hours.
//!
//! **Time buckets.** The hour is 12 five-minute buckets, the day 24 one-hour buckets; a count
//! adds the buckets of its window, the current one included, so the window slides a bucket at a
//! time: "the last hour" is the last 55 to 60 minutes, "the last day" the last 23 to 24 hours.
//! A counter keeps at most [`SLOTS`] buckets (a ring: bucket `n` in slot `n mod 12`, resp.
//! `n mod 24`), so counting costs the same whatever the counter's traffic and whatever else the
//! store holds; a counter no signup touched for a day is gone (Redis: its key expires; SQLite:
//! each count deletes a few expired buckets, more than it can create).
//!
//! **No address is stored.** A counter is named by [`Counter`]: SHA-256 over its scope and value
//! (the mailbox already arrives as a keyed hash), so the store holds no mailbox, client address,
//! domain or server name in the clear.

use async_trait::async_trait;
use sha2::{Digest, Sha256};

use email_verdict_core::signup::velocity::{Scope, Window};

use super::StateError;

/// The hour's buckets: their width (seconds) and how many.
pub const HOUR_BUCKET: i64 = 300;
pub const HOUR_BUCKETS: i64 = 12;
/// The day's buckets.
pub const DAY_BUCKET: i64 = 3600;
pub const DAY_BUCKETS: i64 = 24;
/// Buckets a counter keeps: the hour's, then the day's.
pub const SLOTS: i64 = HOUR_BUCKETS + DAY_BUCKETS;
/// How long a counter outlives its last signup: the day, and the bucket it is in.
pub const COUNTER_TTL: i64 = DAY_BUCKET * (DAY_BUCKETS + 1);

/// One counter: a scope and the hash of what it counts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Counter {
    scope: Scope,
    id: String,
}

impl Counter {
    /// The counter of `value` (a mailbox hash, a client network, a domain, a server name) in
    /// `scope`: SHA-256 of both, hex.
    pub fn new(scope: Scope, value: &str) -> Self {
        let mut hash = Sha256::new();
        hash.update(b"email-verdict signup counter\0");
        hash.update(scope.as_str().as_bytes());
        hash.update(b"\0");
        hash.update(value.as_bytes());
        Self { scope, id: hex::encode(hash.finalize()) }
    }

    pub fn scope(&self) -> Scope {
        self.scope
    }

    /// `<scope>:<hash>`: the name the backends store it under.
    pub fn name(&self) -> String {
        format!("{}:{}", self.scope.as_str(), self.id)
    }
}

/// The buckets a signup at `now` (Unix seconds) falls in: the hour's, the day's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Buckets {
    pub hour: i64,
    pub day: i64,
}

impl Buckets {
    pub fn at(now: i64) -> Self {
        Self { hour: now.div_euclid(HOUR_BUCKET), day: now.div_euclid(DAY_BUCKET) }
    }
}

/// Signup counts, shared by every replica on the store.
#[async_trait]
pub trait SignupStore: Send + Sync + 'static {
    /// Counts one signup at `now` (Unix seconds) in each of `counters` and answers each one's
    /// signups in the last hour and day, this one included, in order: one round trip to the
    /// store, each counter one atomic step (concurrent signups on any replica are all counted).
    async fn count_signup(&self, counters: &[Counter], now: i64) -> Result<Vec<Window>, StateError>;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_are_hashes_per_scope() {
        let a = Counter::new(Scope::Client, "203.0.113.7");
        assert_eq!(a, Counter::new(Scope::Client, "203.0.113.7"));
        assert_ne!(a.name(), Counter::new(Scope::Domain, "203.0.113.7").name());
        assert!(a.name().starts_with("client:") && !a.name().contains("203"));
        assert_eq!(a.name().len(), "client:".len() + 64);
    }

    #[test]
    fn buckets() {
        assert_eq!(Buckets::at(0), Buckets { hour: 0, day: 0 });
        assert_eq!(Buckets::at(3599), Buckets { hour: 11, day: 0 });
        assert_eq!(Buckets::at(3600), Buckets { hour: 12, day: 1 });
    }
}
