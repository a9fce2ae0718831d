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
//!
//! **Waves** (issue 32, item 4): a never-seen domain (queued for review) signing up on its own
//! mail server is counted in that server's set of new domains ([`NewDomain`]): domain hashes by
//! the time of their last signup, those older than [`WAVE_WINDOW`] dropped, at most
//! [`WAVE_DOMAINS_KEPT`] (the oldest go first), so its size is the distinct new domains on the
//! server in the last hour, and 50 signups of one domain are one.
//!
//! **The busiest** ([`Board`]): per board, at most [`BOARD_KEPT`] values with the highest count,
//! each as of its last signup and gone when that leaves the board's window (a day; an hour for
//! waves). These are the only values kept in the clear, for the dashboard and the review queue:
//! mailboxes as the gateway's keyed hash, client networks, mail server names. A signup ranks its
//! values in one more store call, off the request's path, and only those that can enter.

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

/// A wave's window: distinct new domains on a server whose last signup is at most this old.
pub const WAVE_WINDOW: i64 = 3600;
/// New domains a server's set keeps: past it the oldest go, so no caller grows it without bound.
pub const WAVE_DOMAINS_KEPT: u64 = 1000;
/// Values a board keeps (the dashboard shows the first ten).
pub const BOARD_KEPT: usize = 50;

/// A never-seen domain signed up on its own mail server: counted in the server's set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewDomain {
    /// The server's counter (the set lives beside it, under its name).
    server: Counter,
    /// SHA-256 of the registrable domain (as its counter names it).
    domain: String,
}

impl NewDomain {
    /// `registrable` (a registrable domain) new on `server` (a host name).
    pub fn new(server: &str, registrable: &str) -> Self {
        Self { server: Counter::new(Scope::Server, server), domain: Counter::new(Scope::Domain, registrable).id }
    }

    /// The server's counter.
    pub fn server(&self) -> &Counter {
        &self.server
    }

    /// The set's name in SQLite: `new:<server counter's hash>`.
    pub fn set(&self) -> String {
        format!("new:{}", self.server.id)
    }

    /// The member: the domain's hash.
    pub fn member(&self) -> &str {
        &self.domain
    }
}

/// A server's wave after a signup of a new domain on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Wave {
    /// Distinct new domains signed up on the server in the last hour, this one included.
    pub new_domains: u64,
    /// This domain was not in that set before (its first signup within the hour).
    pub added: bool,
}

/// What a board ranks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Board {
    /// Mailbox hashes by signups in the last day.
    Mailboxes,
    /// Client networks by signups in the last day.
    Clients,
    /// Mail servers by signups in the last day.
    Servers,
    /// Mail servers by distinct new domains signed up on them in the last hour.
    Waves,
}

impl Board {
    pub const ALL: [Board; 4] = [Board::Mailboxes, Board::Clients, Board::Servers, Board::Waves];

    pub fn as_str(self) -> &'static str {
        match self {
            Board::Mailboxes => "mailboxes",
            Board::Clients => "clients",
            Board::Servers => "servers",
            Board::Waves => "waves",
        }
    }

    /// How long a value stays after its last count (its count's window).
    pub fn lifetime(self) -> i64 {
        match self {
            Board::Waves => WAVE_WINDOW,
            _ => DAY_BUCKET * DAY_BUCKETS,
        }
    }

    /// Within one bucket of its window a count only grows, so a smaller one (a replica's
    /// answer overtaken by another's) does not replace it; an older one does.
    pub fn bucket(self) -> i64 {
        match self {
            Board::Waves => HOUR_BUCKET,
            _ => DAY_BUCKET,
        }
    }
}

/// A value to rank on a board, with its count now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub board: Board,
    pub value: String,
    pub count: u64,
}

/// A value on a board: its count as of its last signup (Unix seconds `at`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ranked {
    pub value: String,
    pub count: u64,
    pub at: i64,
}

/// A board's values as read: the live ones (`at` within the lifetime before `now`), highest
/// count first (then the latest, then by value), at most `limit`.
pub fn live(board: Board, mut values: Vec<Ranked>, now: i64, limit: usize) -> Vec<Ranked> {
    values.retain(|r| r.at > now - board.lifetime());
    values.sort_by(|a, b| b.count.cmp(&a.count).then(b.at.cmp(&a.at)).then_with(|| a.value.cmp(&b.value)));
    values.truncate(limit);
    values
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

    /// Counts a never-seen domain signed up at `now` on its own mail server, in one atomic step:
    /// the server's wave (see the module's "Waves").
    async fn count_new_domain(&self, new: &NewDomain, now: i64) -> Result<Wave, StateError>;

    /// Ranks each entry on its board at `now`, in one round trip: its count replaces the value's
    /// (unless smaller within one [`Board::bucket`]), values gone from their window leave, and
    /// past [`BOARD_KEPT`] the lowest counts go. Answers each entry's board floor: the lowest
    /// count on it when full, else 0 (a count not above it cannot enter).
    async fn rank(&self, entries: &[Entry], now: i64) -> Result<Vec<u64>, StateError>;

    /// Each counter's signups in the last hour and day at `now`, counting nothing (what
    /// `explain` shows); a counter the store does not hold counts 0.
    async fn signup_counts(&self, counters: &[Counter], now: i64) -> Result<Vec<Window>, StateError>;

    /// The board's live values at `now`, highest count first, at most `limit`.
    async fn busiest(&self, board: Board, now: i64, limit: usize) -> Result<Vec<Ranked>, StateError>;
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
    fn new_domains_are_hashes_beside_their_server() {
        let new = NewDomain::new("mx.wave.example", "a.example");
        let server = Counter::new(Scope::Server, "mx.wave.example");
        assert_eq!(new.set(), format!("new:{}", server.id));
        assert_eq!(new.member(), Counter::new(Scope::Domain, "a.example").id);
        assert!(!new.set().contains("wave") && !new.member().contains("example"));
    }

    #[test]
    fn boards_show_the_live_values_busiest_first() {
        let r = |value: &str, count, at| Ranked { value: value.into(), count, at };
        let now = 100_000;
        let values = vec![r("a", 3, now - 10), r("b", 9, now - 86_400), r("c", 3, now - 5), r("d", 7, now - 3_000)];
        let day: Vec<String> = live(Board::Clients, values.clone(), now, 10).into_iter().map(|r| r.value).collect();
        assert_eq!(day, ["d", "c", "a"], "b's count left the day; equal counts: the latest first");
        let hour: Vec<String> = live(Board::Waves, values, now, 2).into_iter().map(|r| r.value).collect();
        assert_eq!(hour, ["d", "c"]);
    }

    #[test]
    fn buckets() {
        assert_eq!(Buckets::at(0), Buckets { hour: 0, day: 0 });
        assert_eq!(Buckets::at(3599), Buckets { hour: 11, day: 0 });
        assert_eq!(Buckets::at(3600), Buckets { hour: 12, day: 1 });
    }
}
