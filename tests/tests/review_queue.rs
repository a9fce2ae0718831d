//! Issue 24 section 3: a review queue a person can work, through the admin API and the CLI, on
//! SQLite and on Redis: ordered by likelihood × use, filtered and paged, grouped by mail server;
//! the verdict's `review_required` stays the spec's whatever the queue holds. (The bound and its
//! drop counts are the state store suite's `review_bound` test, against every backend.)

use std::time::Duration;

use email_verdict_tests::{Nsd, Redis, Request, Sidecar, wait_for};
use serde_json::Value;

/// What each name is, and how many times it is looked up: a weak-only listing on a server of its
/// own (likelihood 500), three never-listed names on servers of their own (100 each; looked up
/// four times: × 3, twice: × 2), a business on Microsoft 365 only (10, four lookups: 10 × 3), a
/// name without MX (20).
const LOOKUPS: [(&str, usize); 6] = [
    ("shopco.example", 4),
    ("nomx.example", 1),
    ("victimco.test", 2),
    ("firemail.cc", 1),
    ("neighbour.test", 1),
    ("ownmail.example", 4),
];

fn admin(sc: &Sidecar, target: &str) -> Value {
    let r = Request::get(target).send(sc.admin_addr());
    assert_eq!(r.status, 200, "{target}: {r}");
    r.json()
}

fn domains(page: &Value) -> Vec<String> {
    page["queue"]
        .as_array()
        .map(|q| q.iter().map(|i| i["domain"].as_str().unwrap_or("").to_owned()).collect())
        .unwrap_or_default()
}

/// The queue as the admin API and the CLI show it, after the lookups of [`LOOKUPS`] on `sc`.
fn check_the_queue(sc: &Sidecar, key: &str) {
    for (name, n) in LOOKUPS {
        for _ in 0..n {
            let r = sc.lookup_with_key(name, key).json();
            // Whatever the queue holds, the verdict is the spec's row.
            let expected = name != "nomx.example";
            assert_eq!(r["result"]["review_required"], expected, "{name}: {r}");
        }
    }
    let all = wait_for("every lookup queued", Duration::from_secs(5), || {
        let page = admin(sc, "/admin/v1/reviews");
        let counted: u64 = page["queue"].as_array()?.iter().filter_map(|i| i["lookups"].as_u64()).sum();
        (counted == 13).then_some(page)
    });
    assert_eq!(
        domains(&all),
        ["firemail.cc", "ownmail.example", "victimco.test", "neighbour.test", "shopco.example", "nomx.example"],
        "likelihood × use, then the most recently seen: {all:#}"
    );
    assert_eq!(
        (all["waiting"].as_u64(), all["matching"].as_u64(), all["capacity"].as_u64()),
        (Some(6), Some(6), Some(10_000))
    );
    let first = &all["queue"][0];
    assert_eq!(
        (first["reason"].as_str(), first["likelihood"].as_u64(), first["server"].as_str()),
        (Some("weak_listing"), Some(500), Some("mail.cock.li"))
    );
    assert_eq!(all["queue"][4]["priority"], 30, "shared infrastructure only: 10 × the bit length of 4");
    // Filtered and paged.
    let page = admin(sc, "/admin/v1/reviews?limit=2&offset=1");
    assert_eq!(
        (domains(&page), page["matching"].as_u64()),
        (vec!["ownmail.example".to_owned(), "victimco.test".to_owned()], Some(6))
    );
    assert_eq!(domains(&admin(sc, "/admin/v1/reviews?reason=no_mx")), ["nomx.example"]);
    assert_eq!(domains(&admin(sc, "/admin/v1/reviews?server=203.0.113.25")), ["victimco.test", "neighbour.test"]);
    assert_eq!(domains(&admin(sc, "/admin/v1/reviews?q=own&sort=oldest")), ["ownmail.example"]);
    assert_eq!(Request::get("/admin/v1/reviews?limit=0").send(sc.admin_addr()).status, 400);
    // Grouped by mail server: a decision on one covers its domains.
    let groups = admin(sc, "/admin/v1/reviews/servers");
    let servers: Vec<&str> =
        groups["servers"].as_array().unwrap().iter().map(|g| g["server"].as_str().unwrap_or("?")).collect();
    assert_eq!(
        servers,
        ["mail.cock.li", "mx1.ownmail.example", "mx.victimco.test", "mail.neighbour.test", ""],
        "{groups:#}"
    );
    assert_eq!(groups["servers"][4]["domains"], 2, "shopco.example and nomx.example have no server of their own");
    // The CLI: the contract's order by default (oldest first), the priority order on asking.
    let cli = |args: &[&str]| -> Vec<String> {
        let out = sc.cli().run(args);
        out.expect_code(0, "review list");
        out.stdout.lines().skip(1).map(|l| l.split('\t').next().unwrap_or("").to_owned()).collect()
    };
    let oldest = cli(&["review", "list"]);
    assert_eq!(
        (oldest.len(), oldest[0].as_str()),
        (6, "firemail.cc"),
        "first seen (the same second here), then by name"
    );
    assert_eq!(cli(&["review", "list", "--sort", "priority", "--limit", "2"]), ["firemail.cc", "ownmail.example"]);
    assert_eq!(cli(&["review", "list", "--reason", "weak_listing"]), ["firemail.cc"]);
    assert_eq!(cli(&["review", "list", "--by-server", "--limit", "1"]), ["mail.cock.li"]);
    let out = sc.cli().run(&["review", "list", "--sort", "priority"]);
    let header = out.stdout.lines().next().unwrap_or("");
    assert_eq!(header, "DOMAIN\tREASON\tFIRST_SEEN\tLAST_SEEN\tLOOKUPS\tSOURCES\tLISTED_AS\tSERVER\tPRIORITY");
    assert!(out.stderr.contains("6 shown of 6 matching; 6 waiting"), "{}", out.stderr);
    sc.cli().run(&["review", "list", "--sort", "newest"]).expect_code(2, "a bad order is a usage error");
}

#[test]
fn the_queue_is_ordered_filtered_paged_and_grouped() {
    let nsd = Nsd::start();
    let sc = Sidecar::builder().dns(nsd.addr()).start();
    let key = sc.key().to_owned();
    lookups_that_learn_nothing(&sc, &key);
    check_the_queue(&sc, &key);
}

/// `learn=false` (a gateway's lookup of a name found in free text): the same verdict, nothing
/// queued: were any of these queued, the queue would count more than its 13 lookups.
fn lookups_that_learn_nothing(sc: &Sidecar, key: &str) {
    for (name, _) in LOOKUPS {
        for _ in 0..2 {
            let r = sc.send_retrying_429(&Request::get(&format!("/api/v1/domain/{name}?learn=false&key={key}")));
            assert_eq!(
                (r.status, r.json()["result"]["review_required"].clone()),
                (200, Value::Bool(name != "nomx.example")),
                "{name}: {r}"
            );
        }
    }
    let r = sc.send_retrying_429(&Request::get(&format!("/api/v1/domain/nomx.example?learn=no&key={key}")));
    assert_eq!((r.status, r.json()["error"]["code"].clone()), (400, Value::from("invalid_input")), "{r}");
}

/// `--review-queue-capacity` reaches the store (the bound itself is the state store suite's
/// `review_bound`, on every backend) and what the admin API and the dashboard report.
#[test]
fn the_bound_is_the_operators() {
    let nsd = Nsd::start();
    for (args, capacity) in [(&[][..], 10_000), (&["--review-queue-capacity", "250"][..], 250)] {
        let sc = Sidecar::builder().dns(nsd.addr()).args(args).start();
        assert_eq!(admin(&sc, "/admin/v1/reviews")["capacity"], capacity, "{args:?}");
        let page = Request::get("/dashboard/reviews").send(sc.admin_addr());
        assert!(page.text().contains(&format!("the queue keeps the {capacity} most useful")), "{args:?}: {page}");
    }
}

#[test]
fn the_queue_is_the_same_on_redis() {
    let (redis, nsd) = (Redis::start(), Nsd::start());
    let sc = Sidecar::builder().dns(nsd.addr()).state(&redis.url()).start();
    let key = sc.key().to_owned();
    check_the_queue(&sc, &key);
}
