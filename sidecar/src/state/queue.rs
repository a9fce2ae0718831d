//! The review queue as a reviewer works it (issue 24): ordered by how likely a name is to be
//! disposable times how much it is used, grouped by mail server, filtered and paged, bounded.
//! Pure functions over [`ReviewItem`]s, shared by both backends (which keep and bound the items)
//! and by every edge (admin API, CLI, dashboard), so they all show the same queue.
//!
//! **Likelihood** (per mille) from what the lookup saw: a weak-only listing, a parent's listing,
//! a mail server of its own (a name on shared infrastructure only, or without mail, is rarely
//! disposable), and how close one of its servers came to being disposable infrastructure (the
//! disposable domains known on it, under the bar), and, with `--rdap`, how young its registered
//! domain is ([`with_age`]: disposable names are mostly days or weeks old; an age not known yet
//! adds nothing, and a later lookup that knows it updates the entry). **Use**: the bit length of
//! its lookup count, so ten times the lookups weighs about three times more. **Priority** = likelihood × use. The
//! bound drops decided entries first, then the lowest priority (the oldest among equals), and
//! counts what it dropped by reason. Whatever the queue holds, the verdict's `review_required`
//! stays the spec's: the queue is the reviewer's, not the API's.
//!
//! **Waves** (issue 32, item 4): grouped by mail server, a server on which at least
//! [`WAVE_THRESHOLD`] never-seen domains signed up in the last hour (`state::signups`, "Waves")
//! comes first, the biggest wave first, whatever the other groups weigh: many new domains on
//! one server at once is one reviewer's step (one mark on the server), and the most urgent one.

use std::collections::{BTreeMap, HashMap};

use super::{ReviewItem, ReviewReason};

/// Entries the queue keeps (each backend bounds it at this unless told otherwise).
pub const QUEUE_CAPACITY: usize = 10_000;

/// Distinct never-seen domains signed up on one mail server within an hour that make a wave.
/// A small business's server sees a new domain now and then, a hosting company's a few an hour;
/// ten distinct never-seen domains in an hour, every one signing up, is a campaign.
pub const WAVE_THRESHOLD: u64 = 10;

/// Own mail servers kept per entry (host names first, then addresses).
pub const SERVERS_KEPT: usize = 8;

/// How likely a queued name is to be disposable, per mille: by `reason`, `own_servers` (it has a
/// mail server of its own, not only shared infrastructure), and `near` (disposable domains known
/// on the closest of its servers, under the bar that would have decided).
pub fn likelihood(reason: ReviewReason, near: u64, own_servers: bool) -> u32 {
    let base = match reason {
        ReviewReason::WeakListing => 500,
        ReviewReason::ParentListing => 300,
        ReviewReason::Ambiguous if own_servers => 100,
        ReviewReason::Ambiguous => 10,
        ReviewReason::NoMx => 20,
    };
    (base + 150 * near.min(4) as u32).min(1000)
}

/// `likelihood` raised for a young registered domain (RDAP's registration date, when known):
/// +300 under 30 days, +100 under a year, nothing older or unknown; at most 1000. So among names
/// queued for the same reason, the young ones come first, and a young name with its own mail
/// server comes before an older weak listing.
pub fn with_age(likelihood: u32, age_days: Option<u32>) -> u32 {
    let bonus = match age_days {
        Some(days) if days < 30 => 300,
        Some(days) if days < 365 => 100,
        _ => 0,
    };
    (likelihood + bonus).min(1000)
}

/// Likelihood × use (the bit length of `lookups`). The Redis side computes the same in Lua.
pub fn priority(likelihood: u32, lookups: u64) -> u64 {
    u64::from(likelihood) * u64::from(u64::BITS - lookups.leading_zeros())
}

/// The order of the queue a reviewer asks for.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Sort {
    /// Likelihood × use, highest first (then the most recently seen).
    #[default]
    Priority,
    /// First seen, oldest first (the operator contract's order of `review list`).
    Oldest,
}

impl Sort {
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "priority" => Some(Self::Priority),
            "oldest" => Some(Self::Oldest),
            _ => None,
        }
    }
}

/// What part of the queue to show.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Query {
    pub reason: Option<ReviewReason>,
    /// Entries whose own servers include this host name or address.
    pub server: Option<String>,
    /// Entries whose domain contains this text.
    pub text: Option<String>,
    pub sort: Sort,
    pub offset: usize,
    pub limit: usize,
}

/// One page of the queue.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Page {
    pub items: Vec<ReviewItem>,
    /// Entries the query matches, all pages.
    pub matching: usize,
    /// Entries waiting, whatever the query.
    pub waiting: usize,
}

impl Query {
    fn keeps(&self, item: &ReviewItem) -> bool {
        self.reason.is_none_or(|r| item.reason == r)
            && self.server.as_deref().is_none_or(|s| item.servers.iter().any(|v| v == s))
            && self.text.as_deref().is_none_or(|t| item.domain.contains(t))
    }
}

/// Orders `items` by `sort`: priority (then last seen, newest first) or first seen.
pub fn order(items: &mut [ReviewItem], sort: Sort) {
    match sort {
        Sort::Priority => items.sort_by(|a, b| {
            b.priority().cmp(&a.priority()).then(b.last_seen.cmp(&a.last_seen)).then_with(|| a.domain.cmp(&b.domain))
        }),
        Sort::Oldest => items.sort_by(|a, b| a.first_seen.cmp(&b.first_seen).then_with(|| a.domain.cmp(&b.domain))),
    }
}

/// The page of `items` (the whole queue) that `query` asks for.
pub fn page(mut items: Vec<ReviewItem>, query: &Query) -> Page {
    let waiting = items.len();
    items.retain(|i| query.keeps(i));
    order(&mut items, query.sort);
    let matching = items.len();
    let items = items.into_iter().skip(query.offset).take(query.limit).collect();
    Page { items, matching, waiting }
}

/// The queued domains that one mail server (their first own host) receives mail for.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Group {
    /// The host name; `""` for the entries without a mail server of their own.
    pub server: String,
    pub domains: usize,
    pub lookups: u64,
    /// The sum of its entries' priorities: the groups' order after the waves.
    pub priority: u64,
    /// Distinct never-seen domains signed up on it in the last hour (0 when not known).
    pub new_domains_last_hour: u64,
    pub reasons: BTreeMap<&'static str, usize>,
    /// Its entries, highest priority first, at most `sample` of them.
    pub sample: Vec<String>,
}

/// Whether a group is a wave: [`WAVE_THRESHOLD`] new domains or more in the last hour.
pub fn is_wave(new_domains_last_hour: u64) -> bool {
    new_domains_last_hour >= WAVE_THRESHOLD
}

/// The queue grouped by mail server, one page of them: the waves first, biggest first (`waves`:
/// a server's distinct new domains signed up in the last hour), then the groups that weigh most.
pub fn groups(
    mut items: Vec<ReviewItem>,
    waves: &HashMap<String, u64>,
    offset: usize,
    limit: usize,
    sample: usize,
) -> (Vec<Group>, usize) {
    order(&mut items, Sort::Priority);
    let mut by_server: BTreeMap<String, Group> = BTreeMap::new();
    for item in &items {
        let g = by_server
            .entry(item.server().to_owned())
            .or_insert_with(|| Group { server: item.server().to_owned(), ..Group::default() });
        g.domains += 1;
        g.lookups += item.lookups;
        g.priority += item.priority();
        *g.reasons.entry(item.reason.as_str()).or_default() += 1;
        if g.sample.len() < sample {
            g.sample.push(item.domain.clone());
        }
    }
    let mut all: Vec<Group> = by_server.into_values().collect();
    for g in &mut all {
        g.new_domains_last_hour = if g.server.is_empty() { 0 } else { waves.get(&g.server).copied().unwrap_or(0) };
    }
    let wave = |g: &Group| if is_wave(g.new_domains_last_hour) { g.new_domains_last_hour } else { 0 };
    all.sort_by(|a, b| wave(b).cmp(&wave(a)).then(b.priority.cmp(&a.priority)).then_with(|| a.server.cmp(&b.server)));
    let total = all.len();
    (all.into_iter().skip(offset).take(limit).collect(), total)
}

/// The queued domains whose own servers include `server` (host name or address).
pub fn on_server<'a>(items: &'a [ReviewItem], server: &'a str) -> impl Iterator<Item = &'a ReviewItem> {
    items.iter().filter(move |i| i.servers.iter().any(|s| s == server))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(domain: &str, reason: ReviewReason, likelihood: u32, lookups: u64, servers: &[&str]) -> ReviewItem {
        ReviewItem {
            domain: domain.into(),
            reason,
            sources: vec![],
            listed_as: String::new(),
            first_seen: lookups as i64,
            last_seen: 100,
            lookups,
            likelihood,
            servers: servers.iter().map(|s| s.to_string()).collect(),
        }
    }

    #[test]
    fn likelihood_times_use() {
        use ReviewReason::*;
        assert_eq!(likelihood(WeakListing, 0, true), 500);
        assert_eq!(likelihood(Ambiguous, 0, false), 10, "shared infrastructure only: a business, most likely");
        assert_eq!(likelihood(Ambiguous, 1, true), 250, "a near-match to disposable infrastructure");
        assert_eq!(likelihood(WeakListing, 9, true), 1000);
        assert_eq!([1, 2, 3, 4, 1000].map(|n| priority(100, n)), [100, 200, 200, 300, 1000]);
    }

    #[test]
    fn young_domains_come_first() {
        use ReviewReason::*;
        let own = likelihood(Ambiguous, 0, true);
        assert_eq!(
            [None, Some(5000), Some(364), Some(29), Some(0)].map(|a| with_age(own, a)),
            [100, 100, 200, 400, 400]
        );
        assert_eq!(with_age(likelihood(WeakListing, 4, true), Some(1)), 1000, "capped");
        // Queued for the same reason and looked up as often, the young one first.
        let items = vec![
            item("old.example", Ambiguous, with_age(own, Some(4000)), 8, &["mx.old.example"]),
            item("young.example", Ambiguous, with_age(own, Some(3)), 8, &["mx.young.example"]),
            item("unknown.example", Ambiguous, with_age(own, None), 8, &["mx.unknown.example"]),
            item("year.example", Ambiguous, with_age(own, Some(200)), 8, &["mx.year.example"]),
        ];
        let order: Vec<String> =
            page(items, &Query { limit: 10, ..Query::default() }).items.into_iter().map(|i| i.domain).collect();
        assert_eq!(order, ["young.example", "year.example", "old.example", "unknown.example"]);
    }

    #[test]
    fn pages_filters_and_groups() {
        use ReviewReason::*;
        let items = vec![
            item("shop.example", Ambiguous, 10, 1000, &[]),
            item("weak.example", WeakListing, 500, 1, &["mx.burn.example", "192.0.2.1"]),
            item("near.example", Ambiguous, 250, 1, &["mx.burn.example"]),
            item("own.example", Ambiguous, 50, 1, &["mx.own.example"]),
        ];
        let q =
            |query: Query| -> Vec<String> { page(items.clone(), &query).items.into_iter().map(|i| i.domain).collect() };
        let all = Query { limit: 10, ..Query::default() };
        assert_eq!(q(all.clone()), ["weak.example", "near.example", "shop.example", "own.example"]);
        assert_eq!(q(Query { offset: 1, limit: 2, ..all.clone() }), ["near.example", "shop.example"]);
        assert_eq!(
            q(Query { reason: Some(Ambiguous), ..all.clone() }),
            ["near.example", "shop.example", "own.example"]
        );
        assert_eq!(q(Query { server: Some("192.0.2.1".into()), ..all.clone() }), ["weak.example"]);
        assert_eq!(q(Query { text: Some("own".into()), ..all.clone() }), ["own.example"]);
        assert_eq!(q(Query { sort: Sort::Oldest, ..all.clone() })[0], "near.example", "first seen 1, by name");
        let p = page(items.clone(), &Query { reason: Some(NoMx), ..all });
        assert_eq!((p.items.len(), p.matching, p.waiting), (0, 0, 4));
        let (groups, total) = groups(items.clone(), &HashMap::new(), 0, 10, 1);
        let summary: Vec<_> = groups.iter().map(|g| (g.server.as_str(), g.domains, g.sample.clone())).collect();
        assert_eq!(total, 3);
        assert_eq!(
            summary,
            [
                ("mx.burn.example", 2, vec!["weak.example".to_owned()]),
                ("", 1, vec!["shop.example".to_owned()]),
                ("mx.own.example", 1, vec!["own.example".to_owned()])
            ]
        );
        assert_eq!(on_server(&items, "mx.burn.example").count(), 2);
    }

    #[test]
    fn a_wave_comes_first_whatever_the_others_weigh() {
        use ReviewReason::*;
        // Sixty names on one server, each looked up four times; four on another, once each.
        let mut items: Vec<ReviewItem> =
            (0..60).map(|i| item(&format!("f{i}.flood.example"), Ambiguous, 100, 4, &["mx.flood.example"])).collect();
        items.extend((0..4).map(|i| item(&format!("w{i}.waves"), Ambiguous, 100, 1, &["mx.wave.waves"])));
        items.push(item("weak.example", WeakListing, 500, 1, &["mx.weak.example"]));
        let order = |waves: &[(&str, u64)]| -> Vec<(String, u64)> {
            let waves = waves.iter().map(|(s, n)| (s.to_string(), *n)).collect();
            groups(items.clone(), &waves, 0, 10, 1).0.into_iter().map(|g| (g.server, g.new_domains_last_hour)).collect()
        };
        let servers = |o: Vec<(String, u64)>| o.into_iter().map(|(s, _)| s).collect::<Vec<_>>();
        assert_eq!(servers(order(&[])), ["mx.flood.example", "mx.weak.example", "mx.wave.waves"]);
        let under = order(&[("mx.wave.waves", WAVE_THRESHOLD - 1), ("mx.weak.example", 1)]);
        assert_eq!(under[2], ("mx.wave.waves".to_owned(), WAVE_THRESHOLD - 1), "under the bar: shown, not raised");
        assert_eq!(under[1], ("mx.weak.example".to_owned(), 1));
        let wave = order(&[("mx.wave.waves", 50), ("mx.weak.example", WAVE_THRESHOLD)]);
        assert_eq!(
            wave,
            [
                ("mx.wave.waves".to_owned(), 50),
                ("mx.weak.example".to_owned(), WAVE_THRESHOLD),
                ("mx.flood.example".to_owned(), 0)
            ]
        );
    }
}
