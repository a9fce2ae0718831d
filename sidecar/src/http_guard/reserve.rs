//! The share of a listener's connections kept for callers in good standing (the gateway's
//! callouts and ext_authz checks), so that anonymous clients holding every other place (idle
//! page viewers, a flood of idle connections from many addresses) cannot turn the gateway's
//! checks into `503`s, which its `failure_mode` would let through.
//!
//! Once the rest of the listener is full, a new connection is let in on probation into the
//! reserved share: its first request must carry a key in good standing — a `gateway` key, or a
//! customer's key under its daily quota ([`Standing`]) — else it is answered `503` and closed.
//! Merely valid is not enough: a spent free key's idle connections would hold the share as
//! well as the gateway's. And no one key holds more than its share of the places
//! ([`Standing::most_places`]): a customer's key an eighth, a gateway key a half, so neither
//! a fresh customer key nor one leaked gateway key fills it. While the reserved share is full,
//! a newcomer takes the place of the oldest connection still on probation (it is answered
//! `503`); a connection that has shown a key keeps its place for its whole life.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use pingora::protocols::http::ServerSession;
use tokio::sync::Notify;

/// The reserved share: `1 / KEY_HOLDER_SHARE` of a listener's connections.
pub const KEY_HOLDER_SHARE: usize = 8;

/// Whether a request presents a key in good standing, and whose (the HTTP edge that knows keys
/// answers it).
#[async_trait]
pub trait KeyCheck: Send + Sync {
    async fn standing(&self, session: &ServerSession) -> Option<Standing>;
}

/// A key in good standing: the key's id, and whether it is the gateway's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Standing {
    pub key_id: String,
    pub gateway: bool,
}

/// The most of the reserved share one customer key holds: `1 / CUSTOMER_SHARE` of it.
const CUSTOMER_SHARE: usize = 8;
/// The most one gateway key holds: `1 / GATEWAY_SHARE` (every proxy of a mesh may share it).
const GATEWAY_SHARE: usize = 2;

impl Standing {
    /// How many of `places` this key may hold (at least one).
    pub fn most_places(&self, places: usize) -> usize {
        (places / if self.gateway { GATEWAY_SHARE } else { CUSTOMER_SHARE }).max(1)
    }
}

/// A connection in the reserved share, on probation until it shows a key in good standing.
pub struct Probation {
    id: u64,
    /// Told when a newcomer takes its place.
    evicted: Notify,
    /// The key it showed (set once proven), released with it.
    holder: Mutex<Option<String>>,
}

impl Probation {
    /// Resolves when a newcomer takes this connection's place (only while on probation).
    pub async fn evicted(&self) {
        self.evicted.notified().await;
    }
}

/// The reserved share's book: how many places it has and holds, and who is on probation,
/// oldest first.
#[derive(Default)]
pub struct Reserve {
    pub places: usize,
    /// Connections in the share now (an evicted one until it is gone).
    pub held: usize,
    probation: VecDeque<Arc<Probation>>,
    /// Places held per key that proved a connection.
    per_key: HashMap<String, usize>,
    next_id: AtomicU64,
}

impl Reserve {
    pub fn new(places: usize) -> Self {
        Self { places, ..Self::default() }
    }

    /// Whether [`admit`](Self::admit) would let a newcomer in.
    pub fn has_room(&self) -> bool {
        self.held < self.places || !self.probation.is_empty()
    }

    /// A place on probation, taking the oldest probationer's when the share is full; `None`
    /// when every place is held by a connection that showed a key.
    pub fn admit(&mut self) -> Option<Arc<Probation>> {
        if self.held >= self.places {
            let oldest = self.probation.pop_front()?;
            oldest.evicted.notify_one();
        }
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let probation = Arc::new(Probation { id, evicted: Notify::new(), holder: Mutex::default() });
        self.probation.push_back(probation.clone());
        self.held += 1;
        Some(probation)
    }

    /// The connection showed a key in good standing: it keeps its place, unless that key already
    /// holds its share (`false`: the connection is refused like one without a key).
    pub fn proven(&mut self, p: &Probation, standing: &Standing) -> bool {
        let most = standing.most_places(self.places);
        let mut holder = p.holder.lock().unwrap_or_else(|e| e.into_inner());
        if holder.is_none() {
            let held = self.per_key.entry(standing.key_id.clone()).or_default();
            if *held >= most {
                return false;
            }
            *held += 1;
            *holder = Some(standing.key_id.clone());
        }
        self.probation.retain(|q| q.id != p.id);
        true
    }

    /// The connection is gone.
    pub fn release(&mut self, p: &Probation) {
        self.probation.retain(|q| q.id != p.id);
        let holder = p.holder.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(key) = holder
            && let Some(held) = self.per_key.get_mut(&key)
        {
            *held -= 1;
            if *held == 0 {
                self.per_key.remove(&key);
            }
        }
        self.held = self.held.saturating_sub(1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gateway(id: &str) -> Standing {
        Standing { key_id: id.to_owned(), gateway: true }
    }

    #[test]
    fn newcomers_take_the_places_of_the_oldest_on_probation_never_of_key_holders() {
        let mut r = Reserve::new(2);
        let a = r.admit().unwrap();
        let b = r.admit().unwrap();
        assert!(r.proven(&b, &gateway("g1")));
        // Full: the newcomer takes a's place (a is told), not b's.
        let c = r.admit().unwrap();
        assert_eq!(r.probation.iter().map(|p| p.id).collect::<Vec<_>>(), [c.id]);
        assert!(r.proven(&c, &gateway("g2")));
        assert!(r.admit().is_none(), "every place held by a key holder");
        r.release(&a); // the evicted connection goes (its place was already given)
        r.release(&b);
        assert_eq!(r.held, 1);
        assert!(r.admit().is_some());
    }

    #[test]
    fn no_key_holds_more_than_its_share() {
        let mut r = Reserve::new(16);
        let customer = Standing { key_id: "free".to_owned(), gateway: false };
        let mine: Vec<_> = (0..3).map(|_| r.admit().unwrap()).collect();
        assert!(r.proven(&mine[0], &customer) && r.proven(&mine[1], &customer));
        assert!(!r.proven(&mine[2], &customer), "a customer key: an eighth (2 of 16)");
        assert!(r.proven(&mine[0], &customer), "proving again takes no second place");
        let gw: Vec<_> = (0..9).map(|_| r.admit().unwrap()).collect();
        assert_eq!(gw.iter().filter(|p| r.proven(p, &gateway("g"))).count(), 8, "a gateway key: a half");
        r.release(&mine[0]);
        let again = r.admit().unwrap();
        assert!(r.proven(&again, &customer), "a released place is the key's again");
    }
}
