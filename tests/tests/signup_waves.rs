//! Issue 32, item 4: a wave of never-seen domains signing up on one mail server within the hour
//! is one reviewer's step. Against the built binary and NSD (`waves.zone`: every `<name>.waves` a
//! registrable domain of its own, all on `mx.wavemail.waves`; `flood.example.zone`: any name
//! under it on `mx.flood.example`), on SQLite, Redis and a Redis Cluster: fifty new domains signed up on one
//! server put it first in the grouped queue with the count, though another server has more
//! queued domains looked up more often (without signups); the metric moves; the dashboard shows
//! the wave and the busiest mailboxes, clients and servers of the day.

use std::time::Duration;

use email_verdict_tests::{Nsd, Redis, RedisCluster, Request, Response, Sidecar, wait_for};
use serde_json::{Value, json};

const WAVE_SERVER: &str = "mx.wavemail.waves";
const FLOOD_SERVER: &str = "mx.flood.example";
/// The never-seen domains of the wave, and the names looked up under the other server.
const WAVE: usize = 50;
const FLOODED: usize = 60;

fn signup(sc: &Sidecar, event: &Value) -> Response {
    let body = event.to_string();
    let r = sc.send(
        &Request::new("POST", "/api/v1/signups")
            .bearer(sc.key())
            .header("Content-Type", "application/json")
            .body(body.as_bytes()),
    );
    assert_eq!(r.status, 200, "{event}: {r}");
    r
}

fn admin(sc: &Sidecar, target: &str) -> Value {
    let r = Request::get(target).send(sc.admin_addr());
    assert_eq!(r.status, 200, "{target}: {r}");
    r.json()
}

/// `(server, domains, new_domains_last_hour, wave)` of each group, in the queue's order.
fn groups(sc: &Sidecar) -> Vec<(String, u64, u64, bool)> {
    let page = admin(sc, "/admin/v1/reviews/servers");
    let groups = page["servers"].as_array().expect("servers");
    groups
        .iter()
        .map(|g| {
            let n = |f: &str| g[f].as_u64().unwrap_or_else(|| panic!("{f} in {g}"));
            (
                g["server"].as_str().unwrap_or("?").to_owned(),
                n("domains"),
                n("new_domains_last_hour"),
                g["wave"] == true,
            )
        })
        .collect()
}

/// The value of an unlabelled metric on `/metrics`.
fn metric(sc: &Sidecar, name: &str) -> f64 {
    let text = Request::get("/metrics").send(sc.admin_addr()).text();
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
        .unwrap_or_else(|| panic!("no {name} in\n{text}"))
}

/// The queue's first group once it is `want`: the wave count is read off a board ranked in the
/// background, so the last signup's share may land a moment after its answer.
fn first_group_becomes(sc: &Sidecar, want: (&str, u64, u64, bool), what: &str) {
    let want = (want.0.to_owned(), want.1, want.2, want.3);
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let have = groups(sc);
        if have.first() == Some(&want) {
            return;
        }
        assert!(std::time::Instant::now() < deadline, "{what}: want {want:?} first, have {have:?}");
        std::thread::sleep(Duration::from_millis(25));
    }
}

fn queued(sc: &Sidecar) -> u64 {
    admin(sc, "/admin/v1/reviews?limit=1")["waiting"].as_u64().unwrap_or(0)
}

fn a_wave_leads_the_queue(sc: &Sidecar) {
    // Looked up over time, never signed up: sixty names on mx.flood.example, each twice.
    for round in 0..2 {
        for i in 0..FLOODED {
            assert_eq!(sc.lookup(&format!("n{i}.flood.example")).status, 200, "round {round}");
        }
    }
    // One never-seen domain signing up twenty times is no wave.
    assert_eq!(sc.lookup("solo.waves").status, 200);
    wait_for("solo.waves queued", Duration::from_secs(10), || (queued(sc) == FLOODED as u64 + 1).then_some(()));
    for _ in 0..20 {
        signup(sc, &json!({"domain": "solo.waves"}));
    }
    let before = wait_for("solo.waves ranked", Duration::from_secs(10), || {
        let before = groups(sc);
        before.iter().any(|g| g.0 == WAVE_SERVER && g.2 > 0).then_some(before)
    });
    assert_eq!(before[0].0, FLOOD_SERVER, "the most queued domains, looked up most, first: {before:?}");
    let solo = before.iter().find(|g| g.0 == WAVE_SERVER).expect("the wave's server is queued");
    assert_eq!((solo.1, solo.2, solo.3), (1, 1, false), "twenty signups of one domain: one new domain");
    assert_eq!(metric(sc, "email_verdict_signup_waves_total"), 0.0);

    // The wave: fifty never-seen domains on one server, each judged by the gateway, then signed
    // up, from a handful of clients and mailboxes.
    for i in 0..WAVE {
        let domain = format!("wave{i:02}.waves");
        assert_eq!(sc.lookup(&domain).status, 200, "{domain}");
        let mailbox = ["a1", "b2", "c3"][i % 3].repeat(32);
        signup(sc, &json!({"domain": domain, "mailbox": mailbox, "client": format!("203.0.113.{}", i % 5)}));
    }
    let all = (FLOODED + 1 + WAVE) as u64;
    wait_for("the wave queued", Duration::from_secs(10), || (queued(sc) == all).then_some(()));
    first_group_becomes(sc, (WAVE_SERVER, WAVE as u64 + 1, WAVE as u64 + 1, true), "the wave first, with its count");
    let after = groups(sc);
    assert_eq!((after[1].0.as_str(), after[1].1, after[1].2), (FLOOD_SERVER, FLOODED as u64, 0));
    assert_eq!(admin(sc, "/admin/v1/reviews/servers")["wave_threshold"], 10);
    assert_eq!(metric(sc, "email_verdict_signup_waves_total"), 1.0, "the wave counted once");
    assert_eq!(metric(sc, "email_verdict_signups_new_domain_total"), (20 + WAVE) as f64);

    // The busiest of the day (ranked in the background): the wave's server, its clients and
    // mailboxes (as the gateway's keyed hash).
    let busiest = wait_for("the boards", Duration::from_secs(10), || {
        let b = admin(sc, "/admin/v1/signups");
        (b["waves"][0]["count"] == json!(WAVE + 1)).then_some(b)
    });
    assert_eq!(busiest["waves"][0]["value"], WAVE_SERVER, "{busiest}");
    assert_eq!(busiest["servers"][0]["value"], WAVE_SERVER, "{busiest}");
    assert_eq!(busiest["servers"][0]["count"], WAVE + 20, "{busiest}");
    let clients: Vec<&str> =
        busiest["clients"].as_array().unwrap().iter().filter_map(|c| c["value"].as_str()).collect();
    assert_eq!(clients.len(), 5, "{busiest}");
    assert_eq!(busiest["clients"][0]["count"], WAVE / 5, "{busiest}");
    assert_eq!(busiest["mailboxes"][0]["value"], "a1".repeat(32), "{busiest}");
    assert_eq!(busiest["mailboxes"][0]["count"], 17, "{busiest}");

    // The dashboard: the grouped view leads with the wave; the home page shows it and the busiest.
    let page = Request::get("/dashboard/reviews?view=servers").send(sc.admin_addr());
    assert_eq!(page.status, 200, "{page}");
    let html = page.text();
    let first = html.split("<tr data-server=\"").nth(1).unwrap_or_default();
    assert!(first.starts_with(&format!("{WAVE_SERVER}\" data-wave")), "{html}");
    assert!(first.contains(&format!("{}: a wave", WAVE + 1)), "{first}");
    let home = Request::get("/dashboard").send(sc.admin_addr()).text();
    for board in ["waves", "mailboxes", "clients", "servers"] {
        assert!(home.contains(&format!("data-board=\"{board}\"")), "{board}");
    }
    assert!(home.contains(&format!("<a href=\"/dashboard/servers/{WAVE_SERVER}\">{WAVE_SERVER}</a>")), "{home}");
    assert!(home.contains("<code>a1a1a1a1a1a1…</code>"), "a mailbox as its hash, shortened");
    assert!(!home.contains(&"a1".repeat(7)), "never the whole hash");
}

#[test]
fn a_wave_of_new_domains_leads_the_queue_on_sqlite() {
    let nsd = Nsd::start();
    let sc = Sidecar::builder().dns(nsd.addr()).keys(&["gateway"]).start();
    a_wave_leads_the_queue(&sc);
}

#[test]
fn a_wave_of_new_domains_leads_the_queue_on_redis() {
    let nsd = Nsd::start();
    let redis = Redis::start();
    let sc = Sidecar::builder().dns(nsd.addr()).state(&redis.url()).keys(&["gateway"]).start();
    a_wave_leads_the_queue(&sc);
}

#[test]
fn a_wave_of_new_domains_leads_the_queue_on_a_redis_cluster() {
    let nsd = Nsd::start();
    let cluster = RedisCluster::start(3);
    let sc = Sidecar::builder().dns(nsd.addr()).state(&cluster.url()).keys(&["gateway"]).start();
    a_wave_leads_the_queue(&sc);
}

/// Behind a load balancer the gateway's lookup and its signup count may reach two replicas: the
/// one counting reads the shared queue for a domain it did not judge.
#[test]
fn a_wave_judged_on_one_replica_is_counted_on_another() {
    let nsd = Nsd::start();
    let redis = Redis::start();
    let a = Sidecar::builder().dns(nsd.addr()).state(&redis.url()).keys(&["gateway"]).start();
    let b = Sidecar::builder().dns(nsd.addr()).state(&redis.url()).keys(&[]).start();
    let domains: Vec<String> = (0..12).map(|i| format!("split{i}.waves")).collect();
    for domain in &domains {
        assert_eq!(a.lookup(domain).status, 200, "{domain}");
    }
    wait_for("twelve queued", Duration::from_secs(10), || (queued(&a) == 12).then_some(()));
    let key = a.key().to_owned();
    for domain in &domains {
        let body = json!({"domain": domain}).to_string();
        let req = Request::new("POST", "/api/v1/signups")
            .bearer(&key)
            .header("Content-Type", "application/json")
            .body(body.as_bytes());
        assert_eq!(b.send(&req).status, 200, "{domain}");
    }
    first_group_becomes(&a, (WAVE_SERVER, 12, 12, true), "counted on b, seen from a");
    assert_eq!(metric(&b, "email_verdict_signup_waves_total"), 1.0);
    assert_eq!(metric(&a, "email_verdict_signup_waves_total"), 0.0, "a counted none");
}
