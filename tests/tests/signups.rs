//! Issue 32: `POST /api/v1/signups` against the built binary, NSD and a real Redis (alone and as
//! a cluster): one signup counted in every scope, the counts shared by every replica on the
//! store, the mail server counted when the sidecar already knows it (never waiting for DNS),
//! the key's quota spent like a lookup's, bad events refused in the API's words.

use email_verdict_tests::verdict::check_error;
use email_verdict_tests::{Nsd, Redis, RedisCluster, Request, Response, Sidecar, start_with};
use serde_json::{Value, json};

/// A mailbox hash as the filter sends it (64 lowercase hex digits).
const MAILBOX: &str = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

fn signup(sc: &Sidecar, key: &str, event: &Value) -> Response {
    let body = event.to_string();
    sc.send(
        &Request::new("POST", "/api/v1/signups")
            .bearer(key)
            .header("Content-Type", "application/json")
            .body(body.as_bytes()),
    )
}

/// The counts of a signup answered 200: `(scope, hour, day)` for each scope counted.
fn counts(r: &Response) -> Vec<(String, u64, u64)> {
    assert_eq!(r.status, 200, "{r}");
    let body = r.json();
    assert_eq!(body["request_id"].as_str(), r.header("x-request-id"), "{body}");
    let counts = body["counts"].as_object().expect("counts");
    let window = |w: &Value| (w["hour"].as_u64().expect("hour"), w["day"].as_u64().expect("day"));
    ["mailbox", "client", "domain", "server"]
        .into_iter()
        .filter_map(|scope| counts.get(scope).map(|w| (scope.to_owned(), window(w).0, window(w).1)))
        .collect()
}

fn row(scope: &str, n: u64) -> (String, u64, u64) {
    (scope.to_owned(), n, n)
}

/// Two sidecars on one store: every signup counted once, whichever replica it reached; the
/// server scope only where the replica's MX cache knows the domain.
fn counts_agree_across_replicas(state: &str) {
    let nsd = Nsd::start();
    let a = Sidecar::builder().dns(nsd.addr()).state(state).keys(&["gateway"]).start();
    let b = Sidecar::builder().dns(nsd.addr()).state(state).keys(&[]).start();
    let key = a.key().to_owned();
    let event = json!({"domain": "gmail.com", "mailbox": MAILBOX, "client": "203.0.113.7"});
    for (n, sc) in [(1, &a), (2, &b), (3, &a), (4, &b)] {
        assert_eq!(counts(&signup(sc, &key, &event)), [row("mailbox", n), row("client", n), row("domain", n)]);
    }
    // The client as a v6 address and as its /64 is one client; another mailbox is another.
    let v6 = |client: &str, mailbox: &str| json!({"domain": "Mail.Gmail.com", "mailbox": mailbox, "client": client});
    let other = "f".repeat(64);
    assert_eq!(counts(&signup(&a, &key, &v6("2001:db8:1:2::9", &other)))[..2], [row("mailbox", 1), row("client", 1)]);
    let got = counts(&signup(&b, &key, &v6("2001:db8:1:2::/64", &other)));
    assert_eq!(got, [row("mailbox", 2), row("client", 2), row("domain", 6)], "mail.gmail.com counts as gmail.com");
    // The mail server: known to `a` once a lookup cached the domain's MX; `b` never resolved it.
    assert_eq!(a.lookup("0-mail.com").status, 200);
    let wave = json!({"domain": "0-mail.com"});
    assert_eq!(counts(&signup(&a, &key, &wave)), [row("domain", 1), row("server", 1)]);
    assert_eq!(counts(&signup(&b, &key, &wave)), [row("domain", 2)], "b does not wait for DNS");
}

#[test]
fn counts_agree_across_two_sidecars_on_one_redis() {
    let redis = Redis::start();
    counts_agree_across_replicas(&redis.url());
}

#[test]
fn counts_agree_across_two_sidecars_on_a_redis_cluster() {
    let cluster = RedisCluster::start(3);
    counts_agree_across_replicas(&cluster.url());
}

/// The `gateway` plan with `basic`'s figures, so that a unit spent shows.
const FINITE_GATEWAY: &str = "[plans.gateway]\ndaily-quota = 5000\nburst-per-second = 10\n";

#[test]
fn a_signup_costs_a_unit_and_bad_events_cost_nothing() {
    let (sc, _nsd) = start_with(|b| b.settings(FINITE_GATEWAY).keys(&["gateway", "free", "basic", "pro"]));
    let key = sc.key().to_owned();
    // Counts are written by gateways only: every customer plan is refused before its body is
    // read, and writes nothing (a basic key could otherwise flag a victim's address at every
    // gateway, a pro key fill the operator's boards with invented clients).
    let victim = json!({"domain": "gmail.com", "mailbox": MAILBOX, "client": "198.51.100.7"});
    for customer in &sc.keys()[1..] {
        let r = signup(&sc, customer, &victim);
        let body = check_error(&r, 403, "forbidden", "a customer's key");
        let message = body["error"]["message"].as_str().unwrap_or_default();
        assert!(message.contains("gateway plan"), "{message}");
    }
    let r = signup(&sc, &key, &json!({"domain": "gmail.com"}));
    assert_eq!(counts(&r), [row("domain", 1)], "only what is given is counted, none of the refused");
    assert_eq!(r.header("x-ratelimit-remaining"), Some("4999"), "{r}");
    let r = signup(&sc, &key, &victim);
    assert_eq!(counts(&r), [row("mailbox", 1), row("client", 1), row("domain", 2)], "the refused wrote nothing");
    let bad = [
        (json!({"domain": "not a domain"}), "domain: "),
        (json!({"domain": "gmail.com", "mailbox": "john@gmail.com"}), "mailbox: must be 64 lowercase hex digits"),
        (json!({"domain": "gmail.com", "mailbox": MAILBOX.to_uppercase()}), "mailbox: must be 64 lowercase hex"),
        (json!({"domain": "gmail.com", "client": "203.0.113.0/24"}), "client: must be an IP address or an IPv6 /64"),
        (json!({"domain": "gmail.com", "client": "2001:db8::/48"}), "client: must be an IP address or an IPv6 /64"),
        (json!({"domain": "gmail.com", "email": "a@gmail.com"}), "unknown field `email`"),
        (json!(["gmail.com"]), "the body is not a JSON object"),
    ];
    for (event, message) in bad {
        std::thread::sleep(std::time::Duration::from_millis(150)); // basic: 10 a second
        let r = signup(&sc, &key, &event);
        let body = check_error(&r, 400, "invalid_input", &event.to_string());
        let got = body["error"]["message"].as_str().unwrap_or_default();
        assert!(got.starts_with(message), "{event}: {got}");
        assert_eq!(r.header("x-ratelimit-remaining"), Some("4998"), "{event}: costs nothing");
    }
    check_error(&signup(&sc, "ev_nope", &json!({"domain": "gmail.com"})), 401, "api_key_invalid", "a bad key");
    let get = sc.send(&Request::new("GET", "/api/v1/signups").bearer(&key));
    check_error(&get, 405, "method_not_allowed", "GET");
    assert!(!sc.stderr_text().contains(MAILBOX), "no mailbox hash in the log");
    assert!(!sc.stderr_text().contains("203.0.113"), "no client address in the log");
}
