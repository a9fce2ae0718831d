//! The share of a listener's connections kept for requests with a valid API key (the gateway's
//! callouts and ext_authz checks), so that anonymous clients holding every other place (idle
//! page viewers, a flood of idle connections from many addresses) cannot turn the gateway's
//! checks into `503`s, which its `failure_mode` would let through.
//!
//! Once the rest of the listener is full, a new connection is let in on probation into the
//! reserved share: its first request must carry a valid key, else it is answered `503` and
//! closed. While the reserved share is full, a newcomer takes the place of the oldest connection
//! still on probation (it is answered `503`); a connection that has shown a valid key keeps its
//! place for its whole life.

use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use async_trait::async_trait;
use pingora::protocols::http::ServerSession;
use tokio::sync::Notify;

/// The reserved share: `1 / KEY_HOLDER_SHARE` of a listener's connections.
pub const KEY_HOLDER_SHARE: usize = 8;

/// Whether a request presents a valid API key (the HTTP edge that knows keys answers it).
#[async_trait]
pub trait KeyCheck: Send + Sync {
    async fn valid_key(&self, session: &ServerSession) -> bool;
}

/// A connection in the reserved share, on probation until it shows a valid key.
pub struct Probation {
    id: u64,
    /// Told when a newcomer takes its place.
    evicted: Notify,
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
        let probation =
            Arc::new(Probation { id: self.next_id.fetch_add(1, Ordering::Relaxed), evicted: Notify::new() });
        self.probation.push_back(probation.clone());
        self.held += 1;
        Some(probation)
    }

    /// The connection showed a valid key: it keeps its place.
    pub fn proven(&mut self, p: &Probation) {
        self.probation.retain(|q| q.id != p.id);
    }

    /// The connection is gone.
    pub fn release(&mut self, p: &Probation) {
        self.proven(p);
        self.held = self.held.saturating_sub(1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn newcomers_take_the_places_of_the_oldest_on_probation_never_of_key_holders() {
        let mut r = Reserve::new(2);
        let a = r.admit().unwrap();
        let b = r.admit().unwrap();
        r.proven(&b);
        // Full: the newcomer takes a's place (a is told), not b's.
        let c = r.admit().unwrap();
        assert_eq!(r.probation.iter().map(|p| p.id).collect::<Vec<_>>(), [c.id]);
        r.proven(&c);
        assert!(r.admit().is_none(), "every place held by a key holder");
        r.release(&a); // the evicted connection goes (its place was already given)
        r.release(&b);
        assert_eq!(r.held, 1);
        assert!(r.admit().is_some());
    }
}
