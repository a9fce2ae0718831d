//! Admission from leased quota (issue 46): each replica takes a key's daily quota units and its
//! burst places from the shared store in blocks ([`KeyStore::lease`]), spends them in memory,
//! and gives back what it did not spend when the lease ends.
//!
//! Never over a limit: a block is counted in the store (units in the day's usage, places in the
//! burst window as taken at the end of their hold) before any of it is answered, and a replica
//! spends a place only before that end, and at most the block's places in any window
//! ([`spends`]). A crash loses only what was leased and not answered: the units stay counted
//! for the day, the places occupy the window until their hold ends and one window more. The
//! burst window counts a block's places while its end is less than a window ago; a block closes
//! as the places spent in the window before its last spend, taken then (its other places leave
//! the window), and is renewed in place: replaced by the new block, counted as at least what it
//! spent in that window, its spends before the renewal still counted here against the new
//! block's places. Any second holds at most the burst spent, across every replica (the proof:
//! ARCHITECTURE.md, "Why never over").
//!
//! Block sizes: what this replica spent of the key in about the last second (places a window,
//! twice it; in its first 100 ms, the rate so far) and in [`HOLD_MS`] at that rate
//! (units), or the requests waiting for the
//! key now if more (a store call about once a hold per replica under load); the store grants
//! at most a quarter of the day's remainder and half the free places (a renewal: what it spent
//! and half the free places beyond; never less than the request needs), so a free key's 3 a day
//! go one at a time. Every call renews the block and tops up the units, whichever ran out. Leases
//! end: places [`IDLE_MS`] unused (spent from only within [`HOLD_MS`] of their grant, then
//! renewed by the key's next request); units [`IDLE_MS`] after the
//! key's last request here, at midnight UTC, and at graceful shutdown (from the start of a
//! graceful upgrade: [`close_at_upgrade`]).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use pingora::server::{ExecutionPhase, ShutdownWatch};
use pingora::services::background::BackgroundService;

mod journal;
mod spends;

use crate::clock::{Clock, utc_day};
use crate::metrics::{LeaseCounters, LeaseHeld};
use crate::state::{Closing, GiveBack, LeaseAsk, Leased, Limits, StateError, StateStore, spot};
use journal::Journal;
use spends::Spends;

/// How long after its grant a place block may be spent (its places per window).
pub const HOLD_MS: i64 = 3_000;
/// A lease unused this long ends: its unspent units and places go back.
pub const IDLE_MS: i64 = 1_000;
/// How often leases are looked at for their end.
pub const SWEEP: Duration = Duration::from_millis(100);
/// Spending is measured in slots of this many ms; a block covers the last [`RATE_SLOTS`] - 1
/// (the current one is left out, so the requests of a burst that is going on do not size it).
const RATE_SLOT_MS: i64 = 100;
const RATE_SLOTS: usize = 11;

/// The outcome of [`Leases::admit`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Spent from a lease; `used`: the day's count as this replica knows it (units leased by
    /// others included), `day` the UTC day its units count on.
    Admitted {
        used: u64,
        day: String,
    },
    QuotaExceeded {
        used: u64,
    },
    RateLimited {
        retry_after_ms: u64,
    },
}

/// Every key's lease held by this replica.
pub struct Leases {
    store: Arc<dyn StateStore>,
    clock: Arc<dyn Clock>,
    keys: Mutex<HashMap<String, Arc<Slot>, foldhash::fast::RandomState>>,
    /// Set at graceful shutdown or upgrade: leases are taken for one request and given back at once.
    closing: AtomicBool,
    /// Give-backs the store did not confirm, and leases whose answer was lost: sent again every
    /// sweep until the store confirms (each is applied once) or its day is over.
    pending: Mutex<Vec<(String, GiveBack)>>,
    /// How many give-backs are owed: those in `pending` and those a retry has taken out and not
    /// yet had confirmed (a scrape during a retry still sees them).
    owed: AtomicU64,
    /// This process's prefix of lease and give-back ids, and the counter after it.
    ids: (u64, AtomicU64),
    /// When the last "not confirmed" line was logged (one a second at most).
    warned_ms: AtomicI64,
    /// What this process holds unspent, kept where a restart finds it (SQLite's file's side).
    journal: Option<Journal>,
    /// Whether the store keeps a journal (SQLite): the metric tells "off" from "none".
    journal_wanted: bool,
    counters: LeaseCounters,
}

/// The most give-backs kept for another try; beyond, the oldest is dropped with a log line
/// (its units stay counted for their day: refused early, never over).
const MAX_PENDING: usize = 10_000;
/// The most lease ids a key's lease remembers (older ones end by their record's expiry).
const MAX_IDS: usize = 16;

struct Slot {
    /// Requests for the key waiting for (or holding) its lease.
    waiting: AtomicU64,
    held: tokio::sync::Mutex<Held>,
}

/// One key's lease on this replica.
#[derive(Default)]
struct Held {
    /// The UTC day `units` count on.
    day: String,
    units: u64,
    /// The place block ("" none), its places a window, what was spent of it, and when it must
    /// stop.
    block: String,
    places: u64,
    spends: Spends,
    until_ms: i64,
    /// The last request admitted (ms).
    last_ms: i64,
    /// The day's count the store gave with the last grant.
    used: u64,
    /// The leases `units` came from (ended at the give-back, or once all is spent).
    ids: Vec<String>,
    /// Units spent per [`RATE_SLOT_MS`] slot, by slot number modulo [`RATE_SLOTS`].
    rate: [(i64, u64); RATE_SLOTS],
}

impl Held {
    fn note(&mut self, now_ms: i64, units: u64) {
        let slot = now_ms.div_euclid(RATE_SLOT_MS);
        let cell = &mut self.rate[slot.rem_euclid(RATE_SLOTS as i64) as usize];
        if cell.0 != slot {
            *cell = (slot, 0);
        }
        cell.1 += units;
    }

    /// Units spent a second at the rate of about the last second, the current slot left out:
    /// over the slots since the first one spent from when that is less (a key's first second
    /// is sized from its first 100 ms, not from a second it was idle for most of). In that first
    /// slot, before any other, the rate so far in it, over half a slot at least: a key's second
    /// request sizes a lease for a hold, where it took one for itself and its next ones one
    /// call each until the slot was over (three calls in the first 100 ms of a key at 30 a second,
    /// two now: `tests::a_busy_key_s_first_slot_costs_two_store_calls`).
    fn recent(&self, now_ms: i64) -> u64 {
        let slot = now_ms.div_euclid(RATE_SLOT_MS);
        let counted = self.rate.iter().filter(|(s, n)| *s < slot && *s > slot - RATE_SLOTS as i64 && *n > 0);
        let (spent, oldest) = counted.fold((0, slot), |(sum, oldest), (s, n)| (sum + n, oldest.min(*s)));
        if spent > 0 {
            return spent * (RATE_SLOTS as u64 - 1) / (slot - oldest) as u64;
        }
        let (s, now) = self.rate[slot.rem_euclid(RATE_SLOTS as i64) as usize];
        let into_slot = (now_ms - slot * RATE_SLOT_MS).max(RATE_SLOT_MS / 2);
        if s == slot { now * 1_000 / into_slot as u64 } else { 0 }
    }

    /// The place block as it ends or is renewed: the places spent in the window before its
    /// last spend.
    fn closing(&self) -> Option<Closing> {
        (!self.block.is_empty()).then(|| Closing {
            block: self.block.clone(),
            spent: self.spends.in_window(self.last_ms),
            last_ms: self.last_ms,
        })
    }

    /// The place block is over (closed in the store, or its fate unknown): its spends counted
    /// there, none here.
    fn end_block(&mut self) {
        (self.block, self.places) = (String::new(), 0);
        self.spends.clear();
    }

    fn close(&mut self) -> Option<Closing> {
        let closing = self.closing();
        self.end_block();
        closing
    }

    /// Whether the place block allows a place now.
    fn has_place(&self, now_ms: i64) -> bool {
        !self.block.is_empty() && now_ms < self.until_ms && self.spends.in_window(now_ms) < self.places
    }

    fn holds_nothing(&self) -> bool {
        self.units == 0 && self.block.is_empty()
    }

    /// Whether the place block and the units are due to end at `now_ms` (`today`: its UTC day).
    fn due(&self, now_ms: i64, closing: bool, today: &str) -> (bool, bool) {
        let idle = now_ms - self.last_ms >= IDLE_MS;
        // A busy key's block past its hold is left for its next request to renew in place
        // (its spends carried): closed here, the next block would be counted beside them. The
        // store counts it a window past its end either way; unused, it closes as idle.
        let places = !self.block.is_empty() && (closing || idle);
        let units = self.units > 0 && (closing || idle || self.day != today);
        (places, units)
    }

    /// Holding nothing and unused for twice the rate's memory: the key's slot can go.
    fn forgettable(&self, now_ms: i64) -> bool {
        self.holds_nothing() && now_ms - self.last_ms >= 2 * RATE_SLOT_MS * RATE_SLOTS as i64
    }
}

impl Leases {
    pub fn new(store: Arc<dyn StateStore>, clock: Arc<dyn Clock>, counters: LeaseCounters) -> Self {
        let mut prefix = [0u8; 8];
        // A clash between two processes' ids needs the same random prefix: without one, a
        // counter from the clock is as good.
        let prefix = match getrandom::fill(&mut prefix) {
            Ok(()) => u64::from_le_bytes(prefix),
            Err(_) => clock.now_ms() as u64,
        };
        let journal_dir = store.lease_journal_dir();
        let journal_wanted = journal_dir.is_some();
        let (journal, owed) = match journal_dir.map(|dir| Journal::open(&dir)) {
            Some(Ok((journal, owed))) => (Some(journal), owed),
            Some(Err(e)) => {
                tracing::warn!(error = %e, "no lease journal: after a crash, the units this process held stay counted for the day");
                (None, Vec::new())
            }
            None => (None, Vec::new()),
        };
        if !owed.is_empty() {
            tracing::info!(keys = owed.len(), "giving back the units a process that ended had leased and not answered");
        }
        Self {
            store,
            clock,
            keys: Mutex::default(),
            closing: AtomicBool::new(false),
            owed: AtomicU64::new(owed.len() as u64),
            pending: Mutex::new(owed),
            ids: (prefix, AtomicU64::new(0)),
            warned_ms: AtomicI64::new(0),
            journal,
            journal_wanted,
            counters,
        }
    }

    /// Sends what is owed now (at start, before serving: what an ended process held).
    pub async fn settle(&self) {
        self.retry_pending(self.clock.now_ms()).await;
    }

    /// Records `units` of `key_id` held unspent on `day` in the journal (if any).
    fn journal(&self, key_id: &str, day: &str, units: u64) {
        if let Some(journal) = &self.journal {
            journal.write(key_id, day, units);
        }
    }

    /// Whether a crash would give back what `key_id` holds (no journal: the store's side has
    /// no restart to give back to; a journal with no slot for it: no).
    fn journaled(&self, key_id: &str) -> bool {
        self.journal.as_ref().is_none_or(|j| j.covers(key_id))
    }

    /// A new lease or give-back id, unique across processes.
    fn new_id(&self) -> String {
        format!("{:016x}.{:x}", self.ids.0, self.ids.1.fetch_add(1, Ordering::Relaxed))
    }

    fn slot(&self, key_id: &str) -> Arc<Slot> {
        let mut keys = self.keys.lock().unwrap_or_else(|p| p.into_inner());
        // Looked up before `entry`, which would copy the id on every request.
        if let Some(slot) = keys.get(key_id) {
            return slot.clone();
        }
        keys.entry(key_id.to_owned())
            .or_insert_with(|| Arc::new(Slot { waiting: AtomicU64::new(0), held: Default::default() }))
            .clone()
    }

    /// Admits one request worth `units` of `key_id`'s quota and one burst place (none when the
    /// burst is unlimited) at `now_ms`, from the lease or from a new one.
    pub async fn admit(&self, key_id: &str, limits: Limits, units: u64, now_ms: i64) -> Result<Outcome, StateError> {
        let slot = self.slot(key_id);
        slot.waiting.fetch_add(1, Ordering::SeqCst);
        let mut held = slot.held.lock().await;
        let waiting = slot.waiting.fetch_sub(1, Ordering::SeqCst).max(1);
        let day = utc_day(now_ms.div_euclid(1000));
        if held.day != day {
            // Midnight: yesterday's unspent units go back to yesterday.
            let (old, units) = (std::mem::replace(&mut held.day, day.clone()), std::mem::take(&mut held.units));
            self.journal(key_id, &old, 0);
            let ended = std::mem::take(&mut held.ids);
            self.give_back(key_id, GiveBack { day: old, units, ended, ..GiveBack::default() }).await;
            held.used = 0;
        }
        let limited = limits.burst_per_second != Limits::UNLIMITED;
        let need_place = limited && !held.has_place(now_ms);
        // A place granted alone, spent by this request and already ended in the store.
        let mut spot_taken = false;
        if held.units < units || need_place {
            let closing = self.closing.load(Ordering::Relaxed);
            let recent = if closing { 0 } else { held.recent(now_ms) };
            let units_min = units.saturating_sub(held.units);
            // Units for a hold at this rate. A call tops them up and renews the place block
            // whatever started it, so both run out together and the next call serves both
            // (topped up only under half, a key's units and block drifted apart: a call each).
            let target = recent.saturating_mul(HOLD_MS as u64) / 1_000;
            let top_up = target.saturating_sub(held.units);
            // Renewed in place (its spends go on counting against the new block's places, and
            // it grows by half the free places beyond them), except when closing: then it ends
            // and a spot serves this request.
            let renew = limited;
            let close = if renew { held.closing() } else { None };
            let in_place = close.is_some() && !closing;
            let places_min = match (renew, in_place) {
                (false, _) => 0,
                (true, false) => 1,
                (true, true) => held.spends.in_window(now_ms) + 1,
            };
            let ended = if held.units == 0 { std::mem::take(&mut held.ids) } else { Vec::new() };
            // The requests queued behind this one need units too: one call for all of them
            // rather than one after another (a key's first moment under load, before `recent`).
            let queued = waiting.saturating_mul(units).saturating_sub(held.units);
            let ask = LeaseAsk {
                id: self.new_id(),
                ended,
                units_min,
                // An unjournaled key (the journal full) holds nothing it has not answered.
                units_want: if closing || !self.journaled(key_id) {
                    units_min
                } else {
                    units_min.max(top_up).max(queued)
                },
                places_min,
                places_want: match (renew, closing) {
                    (false, _) => 0,
                    (true, true) => 1,
                    // Twice the rate: with a quarter more, a key's rate moving by a tenth filled
                    // its block's window (counted by whole slots, up to 1.1 s) and cost a call;
                    // with half more, a key whose rate climbs (each bench run's first seconds)
                    // still ran out every 0.8 s (9,596 calls for 2,000 keys in a run's first
                    // 3 s, 8,161 with twice). The store's share rule bounds what it holds.
                    (true, false) => (places_min + waiting - 1).max(2 * recent),
                },
                hold_ms: HOLD_MS,
                close,
                renew: in_place,
            };
            let leased = match self.store.lease(key_id, limits, &ask, now_ms).await {
                Ok(leased) => {
                    self.counters.lease_ok.inc();
                    leased
                }
                Err(e) => {
                    self.counters.lease_error.inc();
                    // It may have run: whatever it granted comes back at the next sweep, and
                    // the block it closed or renewed is the store's to end.
                    if ask.close.is_some() {
                        held.end_block();
                    }
                    let lost = GiveBack { id: self.new_id(), day, lost: vec![ask.id], ..GiveBack::default() };
                    self.retry_later(key_id, lost);
                    return Err(e);
                }
            };
            if ask.close.is_some() && !matches!(leased, Leased::Granted { places: 1.., .. } if ask.renew) {
                // Closed in the store (refused, or a spot taken while closing).
                held.end_block();
            }
            match leased {
                Leased::Granted { units: got, places, block, used } => {
                    self.counters.units_granted.inc_by(got);
                    self.counters.places_granted.inc_by(places);
                    if got > 0 {
                        if held.ids.len() == MAX_IDS {
                            held.ids.remove(0);
                        }
                        held.ids.push(ask.id.clone());
                    }
                    held.units += got;
                    self.journal(key_id, &held.day, held.units);
                    held.used = used;
                    if spot(&ask, places) {
                        spot_taken = true;
                    } else if places > 0 {
                        if !ask.renew {
                            held.spends.clear();
                        }
                        (held.block, held.places, held.until_ms) = (block, places, now_ms + HOLD_MS);
                    }
                }
                Leased::QuotaExceeded { used } => {
                    return Ok(Outcome::QuotaExceeded { used: used.saturating_sub(held.units) });
                }
                Leased::RateLimited { retry_after_ms } => return Ok(Outcome::RateLimited { retry_after_ms }),
            }
        }
        if held.units < units || (limited && !spot_taken && !held.has_place(now_ms)) {
            return Err(StateError::Invalid("the store granted less than the request needs".into()));
        }
        held.units -= units;
        // Before the answer: a crash from here on keeps this unit counted.
        self.journal(key_id, &held.day, held.units);
        if limited && !spot_taken {
            held.spends.add(now_ms);
        }
        held.last_ms = now_ms;
        held.note(now_ms, units);
        Ok(Outcome::Admitted { used: held.used.saturating_sub(held.units), day })
    }

    /// `units` of `day` were refunded in the store: the count this replica reports drops too.
    pub async fn refunded(&self, key_id: &str, day: &str, units: u64) {
        let Some(slot) = self.keys.lock().unwrap_or_else(|p| p.into_inner()).get(key_id).cloned() else { return };
        let mut held = slot.held.lock().await;
        if held.day == day {
            held.used = held.used.saturating_sub(units);
        }
    }

    /// Whether this replica's lease of `key_id` has a unit and a place to spend now.
    pub fn could_admit(&self, key_id: &str, limits: Limits, now_ms: i64) -> bool {
        let Some(slot) = self.keys.lock().unwrap_or_else(|p| p.into_inner()).get(key_id).cloned() else { return false };
        let Ok(held) = slot.held.try_lock() else { return false };
        held.units > 0 && (limits.burst_per_second == Limits::UNLIMITED || held.has_place(now_ms))
    }

    /// Ends the leases that are due (all of them when shutting down).
    pub async fn sweep(&self) {
        let now_ms = self.clock.now_ms();
        self.retry_pending(now_ms).await;
        let closing = self.closing.load(Ordering::Relaxed);
        let today = utc_day(now_ms.div_euclid(1000));
        // Only the keys with something to do are taken out (a busy replica holds thousands,
        // looked at ten times a second); a key being admitted now is not due.
        let slots: Vec<(String, Arc<Slot>)> = {
            let keys = self.keys.lock().unwrap_or_else(|p| p.into_inner());
            let wanted = |slot: &Slot| {
                slot.held.try_lock().is_ok_and(|held| {
                    let (places_due, units_due) = held.due(now_ms, closing, &today);
                    places_due || units_due || held.forgettable(now_ms)
                })
            };
            keys.iter().filter(|(_, slot)| wanted(slot)).map(|(k, s)| (k.clone(), s.clone())).collect()
        };
        for (key_id, slot) in slots {
            let Ok(mut held) = slot.held.try_lock() else { continue };
            let (places_due, units_due) = held.due(now_ms, closing, &today);
            if places_due || units_due {
                let units = if units_due { std::mem::take(&mut held.units) } else { 0 };
                if units_due {
                    // Zeroed first: a crash before the store has them keeps them counted.
                    self.journal(&key_id, &held.day, 0);
                }
                let ended = if units_due { std::mem::take(&mut held.ids) } else { Vec::new() };
                let close = if places_due { held.close() } else { None };
                let back = GiveBack { day: held.day.clone(), units, ended, close, ..GiveBack::default() };
                self.give_back(&key_id, back).await;
            }
            let forget = held.forgettable(now_ms);
            drop(held);
            if forget && slot.waiting.load(Ordering::SeqCst) == 0 {
                let mut keys = self.keys.lock().unwrap_or_else(|p| p.into_inner());
                // Only when no request took the slot meanwhile (it holds the Arc while waiting).
                if keys.get(&key_id).is_some_and(|s| Arc::ptr_eq(s, &slot) && Arc::strong_count(s) == 2) {
                    keys.remove(&key_id);
                }
            }
        }
    }

    /// Sends `back` (named here); one the store does not confirm is sent again every sweep.
    async fn give_back(&self, key_id: &str, mut back: GiveBack) {
        if back.is_empty() {
            return;
        }
        back.id = self.new_id();
        if self.send(key_id, &back).await.is_err() {
            self.retry_later(key_id, back);
        }
    }

    /// One give-back call to the store, counted.
    async fn send(&self, key_id: &str, back: &GiveBack) -> Result<(), StateError> {
        let sent = self.store.give_back(key_id, back).await;
        if sent.is_ok() {
            self.counters.give_back_ok.inc();
            self.counters.units_given_back.inc_by(back.units);
        } else {
            self.counters.give_back_error.inc();
        }
        sent
    }

    fn retry_later(&self, key_id: &str, back: GiveBack) {
        let mut pending = self.pending.lock().unwrap_or_else(|p| p.into_inner());
        if pending.len() == MAX_PENDING {
            pending.remove(0);
            tracing::warn!(
                "too many lease give-backs waiting for the store: the oldest dropped (its units stay counted)"
            );
        } else {
            self.owed.fetch_add(1, Ordering::Relaxed);
        }
        pending.push((key_id.to_owned(), back));
    }

    /// The give-backs still owed, sent again (each applied once whatever happened before). One
    /// whose day is over is dropped: its units no longer admit anything.
    async fn retry_pending(&self, now_ms: i64) {
        let owed = std::mem::take(&mut *self.pending.lock().unwrap_or_else(|p| p.into_inner()));
        if owed.is_empty() {
            return;
        }
        let today = utc_day(now_ms.div_euclid(1000));
        let taken = owed.len();
        let mut owed = owed.into_iter().filter(|(_, back)| back.day >= today);
        while let Some((key_id, back)) = owed.next() {
            if let Err(e) = self.send(&key_id, &back).await {
                // The store is not answering: the rest waits for the next sweep.
                let failed: Vec<_> = std::iter::once((key_id, back)).chain(owed).collect();
                if now_ms - self.warned_ms.swap(now_ms, Ordering::Relaxed) >= 1_000 {
                    tracing::warn!(error = %e, waiting = failed.len(), "lease give-backs not confirmed by the store; trying again");
                }
                let settled = taken - failed.len();
                let over = requeue(&mut self.pending.lock().unwrap_or_else(|p| p.into_inner()), failed);
                if over > 0 {
                    tracing::warn!(
                        dropped = over,
                        "too many lease give-backs waiting for the store: the oldest dropped (their units stay counted)"
                    );
                }
                self.owed.fetch_sub((settled + over) as u64, Ordering::Relaxed);
                return;
            }
        }
        self.owed.fetch_sub(taken as u64, Ordering::Relaxed);
    }

    /// From now on leases are taken for one request and given back at the next sweep.
    pub fn start_closing(&self) {
        self.closing.store(true, Ordering::Relaxed);
    }

    /// What this replica holds, for `/metrics`: a walk of the keys that waits for none (a key
    /// being admitted or swept at that instant is left out) and holds no lock across an await.
    pub fn held(&self) -> LeaseHeld {
        let mut held = LeaseHeld {
            pending: self.owed.load(Ordering::Relaxed),
            journal: self.journal_wanted.then(|| self.journal.as_ref().is_some_and(Journal::on)),
            ..LeaseHeld::default()
        };
        let now_ms = self.clock.now_ms();
        let keys = self.keys.lock().unwrap_or_else(|p| p.into_inner());
        for slot in keys.values() {
            let Ok(key) = slot.held.try_lock() else { continue };
            if key.holds_nothing() {
                continue;
            }
            held.keys += 1;
            held.units += key.units;
            if key.has_place(now_ms) {
                // What the block still gives in this window.
                held.places += key.places - key.spends.in_window(now_ms);
            }
        }
        held
    }
}

/// Puts `failed` (taken out for a retry, oldest first) back before what was added to `pending`
/// meanwhile, keeping at most [`MAX_PENDING`]: the oldest go, as in `Leases::retry_later`.
/// Returns how many went.
fn requeue<T>(pending: &mut Vec<T>, mut failed: Vec<T>) -> usize {
    failed.append(pending);
    let over = failed.len().saturating_sub(MAX_PENDING);
    failed.drain(..over);
    *pending = failed;
    over
}

#[cfg(test)]
mod tests;

/// Puts `leases` in closing as soon as a graceful upgrade starts (SIGQUIT): Pingora's old
/// process goes on accepting for 5 s beside the new one before its shutdown begins, and a place
/// block it held at its full rate for [`HOLD_MS`] would leave the new process short of the key's
/// burst places meanwhile (a 429 under a rate well within the burst).
pub fn close_at_upgrade(leases: Arc<Leases>, mut phases: tokio::sync::broadcast::Receiver<ExecutionPhase>) {
    use tokio::sync::broadcast::error::RecvError;
    std::thread::spawn(move || {
        loop {
            match phases.blocking_recv() {
                Ok(ExecutionPhase::GracefulUpgradeTransferringFds | ExecutionPhase::GracefulUpgradeCloseTimeout) => {
                    leases.start_closing();
                    return;
                }
                Ok(_) | Err(RecvError::Lagged(_)) => {}
                Err(RecvError::Closed) => return,
            }
        }
    });
}

/// The background service that ends leases: every [`SWEEP`], and all of them at shutdown.
pub struct LeaseSweeper(pub Arc<Leases>);

#[async_trait]
impl BackgroundService for LeaseSweeper {
    async fn start(&self, mut shutdown: ShutdownWatch) {
        let mut tick = tokio::time::interval(SWEEP);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut stopping = false;
        loop {
            tokio::select! {
                _ = tick.tick() => {}
                _ = shutdown.changed(), if !stopping => {
                    stopping = true;
                    self.0.start_closing();
                }
            }
            // While the grace period lasts, requests may still come: keep giving back.
            self.0.sweep().await;
        }
    }
}
