//! The operator lists' metrics: per list, labelled by its position among the operator lists
//! and its kind (never its path or URL, which may be long or carry secrets).

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::{Registry, Unit};

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub(super) struct ListLabels {
    /// The list's index among the operator lists, as configured: bounded by the configuration.
    list: u16,
    kind: &'static str,
}

#[derive(Debug, Default)]
pub(super) struct ListMetrics {
    entries: Family<ListLabels, Gauge>,
    last_success: Family<ListLabels, Gauge>,
    failures: Family<ListLabels, Counter>,
    refresh: Family<ListLabels, Gauge>,
}

impl ListMetrics {
    pub(super) fn register(&self, r: &mut Registry) {
        r.register("list_entries", "Distinct names in the copy of each operator list in use", self.entries.clone());
        let success_help = "Unix time of each operator list's last successful load (or kept copy's fetch)";
        r.register_with_unit("list_last_success_timestamp", success_help, Unit::Seconds, self.last_success.clone());
        let failures_help = "Loads of each operator list that failed (the last good copy stayed)";
        r.register("list_failures", failures_help, self.failures.clone());
        // What a staleness alert compares the last success with (`time() - last_success > 3 *
        // refresh`), so one rule fits every list whatever its --list-refresh.
        let refresh_help = "Seconds between two fetches of each operator list (--list-refresh; 0: a file, re-read \
            when it changes, or a URL fetched on SIGHUP only)";
        r.register_with_unit("list_refresh", refresh_help, Unit::Seconds, self.refresh.clone());
    }

    pub(super) fn known(&self, index: usize, kind: &'static str, refresh_secs: u64) {
        let labels = labels(index, kind);
        self.entries.get_or_create_owned(&labels);
        self.last_success.get_or_create_owned(&labels);
        self.failures.get_or_create_owned(&labels);
        self.refresh.get_or_create(&labels).set(i64::try_from(refresh_secs).unwrap_or(i64::MAX));
    }

    pub(super) fn loaded(&self, index: usize, kind: &'static str, entries: usize, at: Option<i64>) {
        let labels = labels(index, kind);
        self.entries.get_or_create(&labels).set(i64::try_from(entries).unwrap_or(i64::MAX));
        if let Some(at) = at {
            self.last_success.get_or_create(&labels).set(at);
        }
    }

    pub(super) fn failed(&self, index: usize, kind: &'static str) {
        self.failures.get_or_create(&labels(index, kind)).inc();
    }
}

fn labels(index: usize, kind: &'static str) -> ListLabels {
    ListLabels { list: u16::try_from(index).unwrap_or(u16::MAX), kind }
}
