//! Against the built binary: `GET /metrics` on the admin listener counts what the
//! requests did (statuses and codes, refusals by plan, latency, MX cache, DNS queries and
//! failures, verdicts, the review queue's size, the leases' store calls and holdings),
//! exactly, and the whole exposition is well-formed.

use std::collections::BTreeMap;
use std::time::Duration;

use email_verdict_tests::dns::BlackHole;
use email_verdict_tests::verdict::check_error;
use email_verdict_tests::{Nsd, Redis, Request, Response, Sidecar, api_target, start, start_with, wait_for};

/// One sample line of the exposition: `name{label="value",...} value`.
#[derive(Debug)]
struct Sample {
    name: String,
    labels: BTreeMap<String, String>,
    value: f64,
}

/// A scrape of `/metrics`, parsed.
struct Scrape {
    text: String,
    samples: Vec<Sample>,
}

impl Scrape {
    fn of(sc: &Sidecar) -> Scrape {
        let resp = Request::get("/metrics").send(sc.admin_addr());
        assert_eq!(resp.status, 200, "GET /metrics\n{resp}");
        let content_type = resp.header("content-type").unwrap_or_default();
        assert!(content_type.starts_with("application/openmetrics-text"), "content type {content_type:?}");
        let text = resp.text();
        assert!(text.ends_with("# EOF\n"), "the exposition ends with # EOF\n{text}");
        let samples = text
            .lines()
            .filter(|l| !l.starts_with('#'))
            .map(|l| parse_sample(l).unwrap_or_else(|e| panic!("malformed sample line {l:?}: {e}\n{text}")))
            .collect();
        Scrape { text, samples }
    }

    /// The value of the sample `name` with exactly these labels.
    fn value(&self, name: &str, labels: &[(&str, &str)]) -> f64 {
        let want: BTreeMap<String, String> = labels.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        let found = self.samples.iter().find(|s| s.name == name && s.labels == want);
        found.unwrap_or_else(|| panic!("no sample {name} {want:?}\n{}", self.text)).value
    }

    /// The samples named `name` whose labels include `labels`.
    fn matching<'a>(&'a self, name: &'a str, labels: &'a [(&str, &str)]) -> impl Iterator<Item = &'a Sample> {
        self.samples.iter().filter(move |s| {
            s.name == name && labels.iter().all(|(k, v)| s.labels.get(*k).map(String::as_str) == Some(v))
        })
    }

    fn sum(&self, name: &str, labels: &[(&str, &str)]) -> f64 {
        self.matching(name, labels).map(|s| s.value).sum()
    }
}

/// Parses `name{k="v",...} value` (labels optional), as the text format writes it.
fn parse_sample(line: &str) -> Result<Sample, String> {
    let name_end = line.find(['{', ' ']).ok_or("no value")?;
    let name = &line[..name_end];
    let mut chars = name.chars();
    let first_ok = chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == ':');
    if !first_ok || !chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':') {
        return Err(format!("bad metric name {name:?}"));
    }
    let mut rest = &line[name_end..];
    let mut labels = BTreeMap::new();
    if let Some(body) = rest.strip_prefix('{') {
        rest = body;
        while !rest.starts_with('}') {
            let (key, after) = rest.split_once("=\"").ok_or("label without =\"")?;
            if key.is_empty() || !key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                return Err(format!("bad label name {key:?}"));
            }
            let end = after.find('"').ok_or("unterminated label value")?;
            labels.insert(key.to_string(), after[..end].to_string());
            rest = after[end + 1..].strip_prefix(',').unwrap_or(&after[end + 1..]);
        }
        rest = &rest[1..];
    }
    let value = rest.strip_prefix(' ').ok_or("no space before the value")?;
    let value = value.parse::<f64>().map_err(|e| format!("value {value:?}: {e}"))?;
    Ok(Sample { name: name.to_string(), labels, value })
}

/// Requests on the lookup route and what they were answered: (status, code or "ok") → count.
#[derive(Default)]
struct Tally(BTreeMap<(u16, String), u64>);

impl Tally {
    fn send(&mut self, sc: &Sidecar, target: &str) -> Response {
        let resp = sc.send(&Request::get(target));
        let code = match resp.status {
            200 => "ok".to_string(),
            _ => resp.json()["error"]["code"].as_str().unwrap_or("?").to_string(),
        };
        *self.0.entry((resp.status, code)).or_default() += 1;
        resp
    }

    fn count(&self, status: u16) -> u64 {
        self.0.iter().filter(|((s, _), _)| *s == status).map(|(_, n)| n).sum()
    }

    fn total(&self) -> u64 {
        self.0.values().sum()
    }
}

const REQUESTS: &str = "email_verdict_requests_total";
const DNS_ERRORS: &str = "email_verdict_dns_errors_total";

/// Every lookup-route series equals what the tally saw (0 when it saw none), and the tally saw
/// nothing the metrics do not have.
fn assert_requests_match(scrape: &Scrape, tally: &Tally) {
    for s in scrape.matching(REQUESTS, &[("route", "lookup")]) {
        let status: u16 = s.labels["status"].parse().expect("numeric status label");
        let seen = tally.0.get(&(status, s.labels["code"].clone())).copied().unwrap_or(0);
        assert_eq!(s.value, seen as f64, "{s:?}\n{}", scrape.text);
    }
    for ((status, code), n) in &tally.0 {
        let labels = [("route", "lookup"), ("status", &status.to_string()), ("code", code.as_str())];
        assert_eq!(scrape.value(REQUESTS, &labels), *n as f64, "{labels:?}");
    }
}

/// The histogram counts every lookup-route request; buckets are cumulative up to `+Inf`.
fn assert_latency_counts(scrape: &Scrape, lookups: u64) {
    let count = scrape.value("email_verdict_lookup_duration_seconds_count", &[]);
    assert_eq!(count, lookups as f64, "one observation per lookup-route request");
    let buckets: Vec<f64> =
        scrape.matching("email_verdict_lookup_duration_seconds_bucket", &[]).map(|s| s.value).collect();
    assert_eq!(buckets.len(), 16, "15 bounds and +Inf\n{}", scrape.text);
    assert!(buckets.windows(2).all(|w| w[0] <= w[1]), "buckets not cumulative: {buckets:?}");
    assert_eq!(scrape.value("email_verdict_lookup_duration_seconds_bucket", &[("le", "+Inf")]), count);
}

#[test]
fn lookups_rejections_and_cache_are_counted_exactly() {
    let (sc, _nsd) = start_with(|b| b.keys(&["pro", "free"]).args(&["--admin-token", "s3cret"]));
    let (pro, free) = (sc.keys()[0].clone(), sc.keys()[1].clone());
    let before = Scrape::of(&sc);
    assert_eq!(before.sum(REQUESTS, &[]), 0.0, "nothing counted before any request");
    let mut tally = Tally::default();

    let cold = tally.send(&sc, &api_target("ownmail.example", &pro));
    assert_eq!((cold.status, &cold.json()["result"]["cached"]), (200, &false.into()), "{cold}");
    let warm = tally.send(&sc, &api_target("ownmail.example", &pro));
    assert_eq!((warm.status, &warm.json()["result"]["cached"]), (200, &true.into()), "{warm}");
    let disposable = tally.send(&sc, &api_target("mailinator.com", &pro));
    assert_eq!(disposable.json()["result"]["verdict"], "disposable", "{disposable}");
    check_error(&tally.send(&sc, "/api/v1/domain/ownmail.example"), 401, "missing_api_key", "no key");
    check_error(&tally.send(&sc, &api_target("not%20valid", &pro)), 400, "invalid_input", "bad input");
    // Free plan: one request per second (a second one at once is 429), three a day (then 402).
    tally.send(&sc, &api_target("ownmail.example", &free));
    tally.send(&sc, &api_target("ownmail.example", &free));
    for _ in 0..5 {
        std::thread::sleep(Duration::from_millis(1050));
        if tally.send(&sc, &api_target("ownmail.example", &free)).status == 402 {
            break;
        }
    }
    assert!(tally.count(429) >= 1 && tally.count(402) == 1, "a 429 and a 402 were provoked: {:?}", tally.0);
    assert_eq!(sc.get("/no/such/path").status, 404);

    let scrape = Scrape::of(&sc);
    assert_requests_match(&scrape, &tally);
    assert_eq!(scrape.value(REQUESTS, &[("route", "other"), ("status", "404"), ("code", "not_found")]), 1.0);
    // The same refusals by plan and limit; every configured plan's series from the start.
    let rejections = |plan: &str, limit: &str| {
        scrape.value("email_verdict_plan_rejections_total", &[("plan", plan), ("limit", limit)])
    };
    assert_eq!((rejections("free", "burst"), rejections("free", "quota")), (tally.count(429) as f64, 1.0));
    assert_eq!((rejections("pro", "burst"), rejections("gateway", "quota")), (0.0, 0.0));
    assert_latency_counts(&scrape, tally.total());
    // Two domains resolved once each; every other verdict came from the cache.
    let answered = tally.count(200) as f64;
    assert_eq!(scrape.value("email_verdict_mx_cache_misses_total", &[]), 2.0);
    assert_eq!(scrape.value("email_verdict_mx_cache_hits_total", &[]), answered - 2.0);
    assert_eq!(scrape.value("email_verdict_mx_cache_joins_total", &[]), 0.0);
    assert_eq!(scrape.value("email_verdict_mx_cache_stale_served_total", &[]), 0.0);
    // mailinator.com by the strong list; ownmail.example by the rules (unlisted, own mail).
    let verdicts = |verdict: &str, source: &str| {
        scrape.value("email_verdict_verdicts_total", &[("verdict", verdict), ("source", source)])
    };
    assert_eq!(verdicts("disposable", "strong_list"), 1.0);
    assert_eq!(verdicts("safe", "rules"), answered - 1.0);
    assert_eq!(scrape.sum("email_verdict_verdicts_total", &[]), answered, "no other source");
    // ownmail.example: MX, then A and AAAA of mx1 and mx2; mailinator.com: MX, A and AAAA of one host.
    let queries = |t: &str| scrape.value("email_verdict_dns_queries_total", &[("type", t)]);
    assert_eq!([queries("mx"), queries("a"), queries("aaaa"), queries("ptr")], [2.0, 3.0, 3.0, 0.0]);
    assert_eq!(scrape.sum(DNS_ERRORS, &[]), 0.0);
    assert_eq!(scrape.value("email_verdict_store_errors_total", &[]), 0.0);
    // ownmail.example has its own mail servers and no listing: queued for review.
    assert_eq!(scrape.value("email_verdict_review_queue_capacity", &[]), 10_000.0);
    assert!(scrape.value("email_verdict_review_queue_entries", &[]) >= 1.0, "{}", scrape.text);
    let ids: Vec<String> = sc.cli().list().into_iter().map(|row| row.id).collect();
    for secret in ids.iter().chain(sc.keys()).map(String::as_str).chain(["ownmail", "mailinator"]) {
        assert!(!scrape.text.contains(secret), "{secret:?} in the exposition\n{}", scrape.text);
    }
    // The admin token guards the admin API, not the scrape endpoint.
    assert_eq!(Request::get("/admin/v1/keys").send(sc.admin_addr()).status, 401);
}

#[test]
fn refused_queries_and_stale_answers_are_counted() {
    let (sc, mut nsd) =
        start_with(|b| b.args(&["--cache-min-ttl", "1", "--cache-max-ttl", "1", "--dns-timeout-ms", "500"]));
    let mut tally = Tally::default();
    // NXDOMAIN and no data are answers, not failures.
    for domain in ["ownmail.example", "doesnotexist.example", "nomx.example"] {
        assert_eq!(tally.send(&sc, &api_target(domain, sc.key())).status, 200, "{domain}");
    }
    // Outside every fixture zone: NSD answers REFUSED.
    let refused = tally.send(&sc, &api_target("not-served.org", sc.key()));
    check_error(&refused, 500, "internal_error", "a refused query");
    let scrape = Scrape::of(&sc);
    assert_eq!(scrape.value(DNS_ERRORS, &[("type", "mx"), ("kind", "refused")]), 1.0);
    assert_eq!(scrape.sum(DNS_ERRORS, &[]), 1.0);

    nsd.stop();
    std::thread::sleep(Duration::from_millis(2200)); // past the 1 s TTL
    let stale = tally.send(&sc, &api_target("ownmail.example", sc.key()));
    assert_eq!((stale.status, &stale.json()["result"]["cached"]), (200, &true.into()), "{stale}");

    let scrape = Scrape::of(&sc);
    assert_requests_match(&scrape, &tally);
    assert_latency_counts(&scrape, 5);
    assert_eq!(scrape.value("email_verdict_mx_cache_stale_served_total", &[]), 1.0);
    assert_eq!(scrape.value("email_verdict_mx_cache_misses_total", &[]), 5.0);
    assert_eq!(scrape.value("email_verdict_mx_cache_hits_total", &[]), 0.0);
    assert_eq!(scrape.sum(DNS_ERRORS, &[("type", "mx")]), 2.0, "the refused query and the outage");
    assert_eq!(scrape.value("email_verdict_dns_queries_total", &[("type", "mx")]), 5.0);
}

#[test]
fn a_silent_nameserver_counts_a_timeout() {
    let hole = BlackHole::start();
    let sc = Sidecar::builder().dns(hole.addr()).args(&["--dns-timeout-ms", "300"]).start();
    let mut tally = Tally::default();
    check_error(&tally.send(&sc, &api_target("ownmail.example", sc.key())), 500, "internal_error", "silent DNS");
    let scrape = Scrape::of(&sc);
    assert_requests_match(&scrape, &tally);
    assert_eq!(scrape.value(DNS_ERRORS, &[("type", "mx"), ("kind", "timeout")]), 1.0, "{}", scrape.text);
    assert_eq!(scrape.sum(DNS_ERRORS, &[]), 1.0);
    assert_eq!(scrape.value("email_verdict_mx_cache_misses_total", &[]), 1.0);
    assert_eq!(scrape.sum("email_verdict_verdicts_total", &[]), 0.0);
}

#[test]
fn a_state_store_outage_counts_a_store_error() {
    let mut redis = Redis::start();
    let nsd = Nsd::start();
    let sc = Sidecar::builder().dns(nsd.addr()).state(&redis.url()).start();
    let mut tally = Tally::default();
    assert_eq!(tally.send(&sc, &api_target("ownmail.example", sc.key())).status, 200);
    // Past the 0.5 s key cache, and the lookup's review-queue write long done.
    std::thread::sleep(Duration::from_millis(600));
    redis.kill();
    check_error(&tally.send(&sc, &api_target("ownmail.example", sc.key())), 500, "internal_error", "Redis down");
    let scrape = Scrape::of(&sc);
    assert_requests_match(&scrape, &tally);
    assert_eq!(scrape.value("email_verdict_store_errors_total", &[]), 1.0, "the key check failed once");
}

const LEASE_CALLS: &str = "email_verdict_lease_store_calls_total";
const GRANTED: &str = "email_verdict_lease_units_granted_total";
const GIVEN_BACK: &str = "email_verdict_lease_units_given_back_total";
const UNITS_HELD: &str = "email_verdict_lease_units_held";
const PENDING: &str = "email_verdict_lease_give_backs_pending";

/// Lookups with the sidecar's (limited) key, one after another, until a scrape finds units held
/// unspent: a lease sized by what the key spent in the last second. The number of 200s, and
/// that scrape.
fn lookups_until_units_are_held(sc: &Sidecar) -> (u64, Scrape) {
    let mut answered = 0;
    let scrape = wait_for("a scrape finding units leased and unspent", Duration::from_secs(10), || {
        assert_eq!(sc.send(&Request::get(&api_target("ownmail.example", sc.key()))).status, 200);
        answered += 1;
        Some(Scrape::of(sc)).filter(|s| s.value(UNITS_HELD, &[]) > 0.0)
    });
    (answered, scrape)
}

fn calls(scrape: &Scrape, kind: &str, outcome: &str) -> f64 {
    scrape.value(LEASE_CALLS, &[("kind", kind), ("outcome", outcome)])
}

/// Issue 46: what the leases took from the store and gave back, and what they hold, add up
/// to the answers: granted = answered + held + given back, at any scrape between requests.
#[test]
fn leases_count_their_store_calls_and_what_they_hold() {
    let (sc, _nsd) = start();
    let before = Scrape::of(&sc);
    assert_eq!(before.sum(LEASE_CALLS, &[]), 0.0);
    assert_eq!(before.value("email_verdict_lease_keys", &[]), 0.0);
    assert_eq!(before.value("email_verdict_lease_journal_enabled", &[("store", "sqlite")]), 1.0, "SQLite: on");

    let (answered, held) = lookups_until_units_are_held(&sc);
    assert_eq!(held.value("email_verdict_lease_keys", &[]), 1.0, "{}", held.text);
    let (granted, units) = (held.value(GRANTED, &[]), held.value(UNITS_HELD, &[]));
    assert_eq!(granted, answered as f64 + units + held.value(GIVEN_BACK, &[]), "{}", held.text);
    let leases = calls(&held, "lease", "ok");
    assert!((1.0..=answered as f64).contains(&leases) && leases < granted, "blocks of more than one: {leases}");
    assert_eq!((calls(&held, "lease", "error"), calls(&held, "give_back", "error")), (0.0, 0.0));
    assert!(held.value("email_verdict_lease_places_granted_total", &[]) >= leases);

    // A second without requests ends the lease: what was not spent goes back.
    let ended = wait_for("the lease to end", Duration::from_secs(5), || {
        Some(Scrape::of(&sc)).filter(|s| s.value("email_verdict_lease_keys", &[]) == 0.0)
    });
    assert_eq!(ended.value(GRANTED, &[]) - ended.value(GIVEN_BACK, &[]), answered as f64, "{}", ended.text);
    for gauge in [UNITS_HELD, "email_verdict_lease_places_held", PENDING] {
        assert_eq!(ended.value(gauge, &[]), 0.0, "{gauge}");
    }
    assert!(calls(&ended, "give_back", "ok") >= 1.0);
}

/// Give-backs Redis does not confirm stay owed (and counted) until it returns, then go.
#[test]
fn give_backs_pending_while_the_store_is_down_go_once_it_returns() {
    let mut redis = Redis::start();
    let nsd = Nsd::start();
    let sc = Sidecar::builder().dns(nsd.addr()).state(&redis.url()).start();
    let (answered, held) = lookups_until_units_are_held(&sc);
    redis.kill(); // within the lease's idle second: its give-back finds Redis gone
    assert!(!held.text.contains("email_verdict_lease_journal_enabled{"), "no journal on Redis\n{}", held.text);
    let down = wait_for("a give-back pending", Duration::from_secs(10), || {
        Some(Scrape::of(&sc)).filter(|s| s.value(PENDING, &[]) > 0.0)
    });
    assert!(calls(&down, "give_back", "error") >= 1.0, "{}", down.text);
    assert_eq!(down.value(UNITS_HELD, &[]), 0.0, "owed, no longer held");
    std::thread::sleep(Duration::from_millis(500));
    assert!(Scrape::of(&sc).value(PENDING, &[]) > 0.0, "still owed while Redis is down");

    redis.restart();
    let settled = wait_for("the give-backs confirmed", Duration::from_secs(15), || {
        Some(Scrape::of(&sc)).filter(|s| s.value(PENDING, &[]) == 0.0)
    });
    assert_eq!(settled.value(GRANTED, &[]) - settled.value(GIVEN_BACK, &[]), answered as f64, "{}", settled.text);
}

#[test]
fn the_parser_refuses_malformed_lines() {
    for bad in ["", "no_value", "x{a=\"1\"}", "x{a=1} 2", "x 1 2 3", "1x 2", "x{a=\"1\" 2", "x{=\"1\"} 2"] {
        assert!(parse_sample(bad).is_err(), "{bad:?} accepted");
    }
    let s = parse_sample(r#"a_b{le="+Inf",code=""} 3"#).expect("well-formed");
    assert_eq!(
        (s.name.as_str(), s.labels["le"].as_str(), s.labels["code"].as_str(), s.value),
        ("a_b", "+Inf", "", 3.0)
    );
}
