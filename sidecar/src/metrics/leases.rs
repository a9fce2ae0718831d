//! The leases' metrics (issue 46): how often this replica calls the store for leases and
//! give-backs and what they moved (counted as they happen), and what it holds unspent and still
//! owes the store (read from `Leases` at each scrape).

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct CallLabels {
    /// `lease` or `give_back`.
    kind: &'static str,
    /// `ok` or `error`.
    outcome: &'static str,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct JournalLabels {
    /// Only `sqlite`: a store without a journal (Redis) has no series.
    store: &'static str,
}

/// The counters `Leases` bumps: handles on the registered series, so that counting is one
/// relaxed atomic add, with no lookup, lock or allocation. The default is unregistered (tests).
#[derive(Debug, Clone, Default)]
pub struct LeaseCounters {
    pub lease_ok: Counter,
    pub lease_error: Counter,
    pub give_back_ok: Counter,
    pub give_back_error: Counter,
    pub units_granted: Counter,
    pub places_granted: Counter,
    pub units_given_back: Counter,
}

/// What this replica's leases hold at a scrape (see `Leases::held`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LeaseHeld {
    /// Keys holding units or a place block.
    pub keys: u64,
    pub units: u64,
    pub places: u64,
    /// Give-backs the store has not confirmed, sent again every sweep.
    pub pending: u64,
    /// The crash journal: `None` when the store keeps none (Redis), else whether it is on.
    pub journal: Option<bool>,
}

#[derive(Debug, Default)]
pub(super) struct LeaseMetrics {
    calls: Family<CallLabels, Counter>,
    counters: LeaseCounters,
    keys: Gauge,
    units: Gauge,
    places: Gauge,
    pending: Gauge,
    journal: Family<JournalLabels, Gauge>,
}

impl LeaseMetrics {
    pub(super) fn new() -> Self {
        let calls: Family<CallLabels, Counter> = Family::default();
        let call = |kind, outcome| calls.get_or_create_owned(&CallLabels { kind, outcome });
        let counters = LeaseCounters {
            lease_ok: call("lease", "ok"),
            lease_error: call("lease", "error"),
            give_back_ok: call("give_back", "ok"),
            give_back_error: call("give_back", "error"),
            ..LeaseCounters::default()
        };
        Self { calls, counters, ..Self::default() }
    }

    pub(super) fn register(&self, r: &mut Registry) {
        let calls_help = "State store calls this replica's leases made, by kind (lease: units and burst places taken \
            in a block; give_back: what a lease did not spend, or a lost lease settled) and outcome";
        r.register("lease_store_calls", calls_help, self.calls.clone());
        let c = &self.counters;
        let granted_help = "Daily quota units the store granted this replica's leases (per lease: the block size)";
        r.register("lease_units_granted", granted_help, c.units_granted.clone());
        let places_help = "Burst places the store granted this replica's leases";
        r.register("lease_places_granted", places_help, c.places_granted.clone());
        let back_help = "Unspent quota units this replica gave back to the store (confirmed)";
        r.register("lease_units_given_back", back_help, c.units_given_back.clone());
        let keys_help = "Keys this replica holds a lease of (units or burst places), as of the last scrape";
        r.register("lease_keys", keys_help, self.keys.clone());
        let units_help = "Daily quota units this replica holds leased and unspent, as of the last scrape";
        r.register("lease_units_held", units_help, self.units.clone());
        let held_places_help =
            "Burst places this replica's place blocks still give in the current second, as of the last scrape";
        r.register("lease_places_held", held_places_help, self.places.clone());
        let pending_help = "Give-backs the store has not confirmed, sent again every 100 ms (their units stay \
            counted meanwhile: keys may be refused early)";
        r.register("lease_give_backs_pending", pending_help, self.pending.clone());
        let journal_help = "Whether the lease crash journal is on (1) or off after a failed open or write (0); \
            SQLite only";
        r.register("lease_journal_enabled", journal_help, self.journal.clone());
    }

    pub(super) fn counters(&self) -> LeaseCounters {
        self.counters.clone()
    }

    pub(super) fn held(&self, held: &LeaseHeld) {
        let set = |gauge: &Gauge, n: u64| gauge.set(i64::try_from(n).unwrap_or(i64::MAX));
        set(&self.keys, held.keys);
        set(&self.units, held.units);
        set(&self.places, held.places);
        set(&self.pending, held.pending);
        if let Some(on) = held.journal {
            self.journal.get_or_create(&JournalLabels { store: "sqlite" }).set(i64::from(on));
        }
    }
}
