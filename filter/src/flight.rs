//! One callout per domain at a time, per worker: the streams of one worker (one Wasm VM, one
//! thread of the dynamic module) that miss the cache for a domain whose callout is already in
//! flight wait for that callout instead of making their own (`CONFIG.md`, "The cache").
//!
//! The first stream to miss leads: it calls out as before. Later ones join as waiters. When the
//! leader's answer comes (the sidecar's, or Envoy's own for a timeout or a refused connection),
//! every waiter gets a copy in its mailbox and the host wakes it ([`crate::Host::wake`]); each
//! waiter reads the answer exactly as the leader does (a failure follows `failure_mode`), but
//! does not write the cache again. The leader's stream can end first (the client went away, or
//! the signup was refused for another address): its callout goes with it, so the flight is
//! handed to the first waiter, which calls out itself, when the host can run a woken stream's
//! own callout (the dynamic module: the waiter is woken through its own scheduler); otherwise
//! (Wasm: a woken stream runs inside the leader's callback, and a callout made there would be
//! answered to the leader) the flight is orphaned, and the worker's root context calls out for
//! it at its next tick (made due at once) and leads it; should that callout not even start,
//! every waiter gets a failure, which follows `failure_mode`.
//!
//! A flight carries the decisions' version its callout was made under (`cache.rs`): a stream
//! whose lookup read another version (a decision synced meanwhile) does not join it, since its
//! answer may predate the decision; it calls out itself and leads the flight from then on, the
//! waiters already there getting its newer answer.
//!
//! Only the streams of one worker share: workers run on their own threads (or VMs) and cannot
//! wake each other. Across workers, the cache's stale window keeps an expiry from sending a
//! burst (`cache.rs`).

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

use email_verdict_core::Domain;

use crate::cache::Version;
use crate::host::CalloutResponse;

/// A stream of this worker, as the host numbers them.
pub type StreamId = u64;

/// What a waiter finds in its mailbox.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Delivery {
    /// The answer to the shared callout.
    Answer(Rc<CalloutResponse>),
    /// The leader is gone: this stream calls out now, and leads.
    Lead,
}

/// The flights of one worker (per filter configuration).
#[derive(Debug, Default)]
pub struct Flights {
    inner: RefCell<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    flights: HashMap<Domain, Flight>,
    mail: Vec<(StreamId, Domain, Delivery)>,
    /// Flights whose leader ended while no waiter can call out in its place (Wasm): the root
    /// context leads them ([`Flights::take_orphans`]).
    orphans: Vec<Domain>,
}

/// The leader of an orphaned flight until the root context takes it (no stream has this id).
const NO_LEADER: StreamId = StreamId::MAX;

#[derive(Debug)]
struct Flight {
    leader: StreamId,
    /// The leader's callout; `None` while a new leader has not called out yet.
    token: Option<u32>,
    /// The decisions' version the leader's lookup read (`cache.rs`).
    version: Version,
    waiters: Vec<StreamId>,
}

/// The answer waiters get when no callout can answer them: no status, a sidecar error.
fn failed() -> Rc<CalloutResponse> {
    Rc::new(CalloutResponse::plain(None, Vec::new()))
}

impl Flights {
    /// True when another stream than `me` leads a flight for `domain` under `version`.
    pub fn led_by_another(&self, domain: &Domain, me: StreamId, version: Version) -> bool {
        self.inner.borrow().flights.get(domain).is_some_and(|f| f.leader != me && f.version == version)
    }

    /// Joins the flight of `domain` when another stream leads one under `version`: true (then
    /// wait for mail).
    pub fn join(&self, domain: &Domain, me: StreamId, version: Version) -> bool {
        let mut inner = self.inner.borrow_mut();
        match inner.flights.get_mut(domain) {
            Some(flight) if flight.leader != me && flight.version == version => {
                if !flight.waiters.contains(&me) {
                    flight.waiters.push(me);
                }
                true
            }
            _ => false,
        }
    }

    /// `me` called out for `domain` (`token`) under `version`: it leads the flight (a new one,
    /// one handed to it, or one of an older version, whose waiters now get `me`'s answer).
    pub fn lead(&self, domain: &Domain, me: StreamId, token: u32, version: Version) {
        let mut inner = self.inner.borrow_mut();
        let new = Flight { leader: me, token: None, version, waiters: vec![] };
        let flight = inner.flights.entry(domain.clone()).or_insert(new);
        flight.leader = me;
        flight.token = Some(token);
        flight.version = version;
    }

    /// The answer to `me`'s callout `token`: when it led a flight, the flight lands; every waiter
    /// gets `response` and is returned, to be woken.
    pub fn land(&self, me: StreamId, token: u32, response: &CalloutResponse) -> Vec<StreamId> {
        let mut inner = self.inner.borrow_mut();
        let Some(domain) =
            inner.flights.iter().find(|(_, f)| f.leader == me && f.token == Some(token)).map(|(d, _)| d.clone())
        else {
            return Vec::new();
        };
        let response = Rc::new(response.clone());
        inner.deliver(&domain, |_| Delivery::Answer(Rc::clone(&response)))
    }

    /// `me` led `domain`'s flight but cannot call out (the dispatch failed, or it no longer
    /// waits for the answer): handed to the next waiter (`hand_over`), else every waiter fails.
    pub fn give_up(&self, domain: &Domain, me: StreamId, hand_over: bool) -> Vec<StreamId> {
        let mut inner = self.inner.borrow_mut();
        if inner.flights.get(domain).is_none_or(|f| f.leader != me) {
            return Vec::new();
        }
        inner.hand_over(domain, hand_over)
    }

    /// `me` ends: it leaves every flight it waits on, its mail is dropped, and each flight it led
    /// is handed over (or fails its waiters, see [`Flights::give_up`]). Returns who to wake.
    pub fn leave(&self, me: StreamId, hand_over: bool) -> Vec<StreamId> {
        let mut inner = self.inner.borrow_mut();
        if inner.flights.is_empty() && inner.mail.is_empty() {
            return Vec::new(); // what nearly every stream finds
        }
        inner.mail.retain(|(to, _, _)| *to != me);
        inner.flights.values_mut().for_each(|f| f.waiters.retain(|w| *w != me));
        let led: Vec<Domain> = inner.flights.iter().filter(|(_, f)| f.leader == me).map(|(d, _)| d.clone()).collect();
        led.iter().flat_map(|domain| inner.hand_over(domain, hand_over)).collect()
    }

    /// The orphaned flights, for the root context to call out for and lead ([`Flights::lead`]).
    pub fn take_orphans(&self) -> Vec<Domain> {
        std::mem::take(&mut self.inner.borrow_mut().orphans)
    }

    /// True while an orphaned flight waits for the root context.
    pub fn has_orphans(&self) -> bool {
        !self.inner.borrow().orphans.is_empty()
    }

    /// `domain`'s flight cannot be answered (the root's callout could not be made): every waiter
    /// gets a failure; returns them, to be woken.
    pub fn fail(&self, domain: &Domain) -> Vec<StreamId> {
        let failure = failed();
        self.inner.borrow_mut().deliver(domain, |_| Delivery::Answer(Rc::clone(&failure)))
    }

    /// `me`'s mail, taken.
    pub fn take_mail(&self, me: StreamId) -> Vec<(Domain, Delivery)> {
        let mut inner = self.inner.borrow_mut();
        let (mine, rest) = std::mem::take(&mut inner.mail).into_iter().partition(|(to, _, _)| *to == me);
        inner.mail = rest;
        mine.into_iter().map(|(_, domain, delivery)| (domain, delivery)).collect()
    }

    /// Flights in the air (tests, and a bound on what a worker keeps).
    pub fn len(&self) -> usize {
        self.inner.borrow().flights.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl Inner {
    /// Ends `domain`'s flight, mailing each waiter what `what` says; returns them.
    fn deliver(&mut self, domain: &Domain, what: impl Fn(StreamId) -> Delivery) -> Vec<StreamId> {
        let Some(flight) = self.flights.remove(domain) else { return Vec::new() };
        for &waiter in &flight.waiters {
            self.mail.push((waiter, domain.clone(), what(waiter)));
        }
        flight.waiters
    }

    /// The leader is gone: the first waiter leads (told by mail), or the flight waits for the
    /// root context (`hand_over` false).
    fn hand_over(&mut self, domain: &Domain, hand_over: bool) -> Vec<StreamId> {
        let Some(flight) = self.flights.get_mut(domain) else { return Vec::new() };
        if flight.waiters.is_empty() {
            self.flights.remove(domain);
            return Vec::new();
        }
        if !hand_over {
            flight.leader = NO_LEADER;
            flight.token = None;
            self.orphans.push(domain.clone());
            return Vec::new();
        }
        let next = flight.waiters.remove(0);
        flight.leader = next;
        flight.token = None;
        self.mail.push((next, domain.clone(), Delivery::Lead));
        vec![next]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(s: &str) -> Domain {
        Domain::parse(s).unwrap()
    }

    const NONE: Vec<StreamId> = Vec::new();

    fn ok() -> CalloutResponse {
        CalloutResponse::plain(Some(200), b"{}".to_vec())
    }

    #[test]
    fn waiters_share_the_leaders_answer() {
        let flights = Flights::default();
        let domain = d("new.example");
        assert!(!flights.join(&domain, 1, None), "nobody leads yet");
        flights.lead(&domain, 1, 7, None);
        assert!(!flights.join(&domain, 1, None), "the leader does not wait on itself");
        assert!(flights.join(&domain, 2, None));
        assert!(flights.join(&domain, 3, None));
        assert!(flights.join(&domain, 3, None), "joining twice waits once");
        assert!(!flights.join(&d("other.example"), 2, None));
        assert_eq!(flights.land(1, 8, &ok()), Vec::<StreamId>::new(), "another callout of the leader");
        assert_eq!(flights.land(1, 7, &ok()), vec![2, 3]);
        assert!(flights.is_empty());
        assert_eq!(flights.take_mail(2), vec![(domain.clone(), Delivery::Answer(Rc::new(ok())))]);
        assert_eq!(flights.take_mail(2), vec![], "taken once");
        assert_eq!(flights.take_mail(3).len(), 1);
        assert!(!flights.join(&domain, 4, None), "landed: the next miss leads again");
    }

    #[test]
    fn a_leader_that_ends_hands_over_or_fails_its_waiters() {
        let flights = Flights::default();
        let domain = d("new.example");
        flights.lead(&domain, 1, 7, None);
        flights.join(&domain, 2, None);
        flights.join(&domain, 3, None);
        assert_eq!(flights.leave(1, true), vec![2], "the first waiter leads");
        assert_eq!(flights.take_mail(2), vec![(domain.clone(), Delivery::Lead)]);
        assert!(flights.join(&domain, 4, None), "still in flight");
        flights.lead(&domain, 2, 9, None);
        assert_eq!(flights.land(2, 9, &ok()), vec![3, 4]);

        flights.lead(&domain, 5, 1, None);
        flights.join(&domain, 6, None);
        assert_eq!(flights.leave(5, false), NONE, "no hand-over: orphaned");
        assert!(flights.join(&domain, 7, None), "an orphaned flight is still waited on");
        assert_eq!(flights.take_orphans(), vec![domain.clone()]);
        flights.lead(&domain, 100, 3, None); // the root context
        assert_eq!(flights.land(100, 3, &ok()), vec![6, 7]);
        flights.lead(&domain, 5, 1, None);
        flights.join(&domain, 6, None);
        flights.leave(5, false);
        assert_eq!(flights.fail(&domain), vec![6], "the root could not call out");
        let failure = Delivery::Answer(Rc::new(CalloutResponse::plain(None, vec![])));
        assert_eq!(flights.take_mail(6).last(), Some(&(domain.clone(), failure)));
        assert!(flights.is_empty());
    }

    #[test]
    fn a_waiter_that_ends_is_forgotten() {
        let flights = Flights::default();
        let domain = d("new.example");
        flights.lead(&domain, 1, 7, None);
        flights.join(&domain, 2, None);
        assert_eq!(flights.leave(2, true), NONE);
        assert_eq!(flights.land(1, 7, &ok()), NONE, "nobody left to wake");
        flights.lead(&domain, 1, 8, None);
        assert_eq!(flights.leave(1, true), NONE, "no waiter: the flight ends");
        assert!(flights.is_empty());
    }

    #[test]
    fn a_leader_that_gives_up_passes_the_flight_on() {
        let flights = Flights::default();
        let domain = d("new.example");
        flights.lead(&domain, 1, 7, None);
        flights.join(&domain, 2, None);
        assert_eq!(flights.give_up(&domain, 2, true), NONE, "only the leader can");
        assert_eq!(flights.give_up(&domain, 1, true), vec![2]);
        assert_eq!(flights.give_up(&domain, 2, true), NONE, "the last one: the flight ends");
        assert!(flights.is_empty());
    }

    #[test]
    fn a_miss_under_newer_decisions_does_not_wait_for_an_older_callout() {
        let flights = Flights::default();
        let domain = d("new.example");
        flights.lead(&domain, 1, 7, Some(3));
        assert!(flights.join(&domain, 2, Some(3)), "same decisions: shares the callout");
        assert!(!flights.led_by_another(&domain, 4, Some(9)), "a decision synced since");
        assert!(!flights.join(&domain, 4, Some(9)));
        // Stream 4 calls out itself and leads: the waiter gets its newer answer, not the old one.
        flights.lead(&domain, 4, 8, Some(9));
        assert_eq!(flights.land(1, 7, &ok()), NONE, "the older callout answers its own stream only");
        assert!(flights.join(&domain, 5, Some(9)));
        assert_eq!(flights.land(4, 8, &ok()), vec![2, 5]);
        assert!(flights.is_empty());
    }
}
