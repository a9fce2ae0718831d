//! Issue 32: signup counts at the gateway, through a real Envoy with the built filter (each build:
//! Wasm and dynamic module; the client is the address Envoy names) and the
//! real sidecar counting in its store. One canonical mailbox under three spellings counts as one
//! (the app sees `x-email-mailbox-signups` 1, 2, 3); past a `flag` limit the app sees
//! `x-email-velocity`; past a `block` limit the signup gets the 429. The mailbox leaves the proxy
//! only as a keyed hash: neither the sidecar's log nor its request lines hold the address.

use email_verdict_tests::envoy::{FilterBuild, Gateway, each_build, gateway_on};
use serde_json::{Value, json};

const SECRET: &str = "a test secret of at least 32 bytes...";

fn counting(build: FilterBuild, limits: Value) -> Gateway {
    gateway_on(build, |b| {
        b.set("/velocity", limits)
            .set("/mailbox_secret", json!(SECRET))
            .remove("/mailbox_secret_env")
            .set("/cache/ttl_seconds", json!(300))
    })
}

#[test]
fn one_mailbox_under_three_spellings_counts_as_one_and_the_shipped_limit_flags_the_fourth() {
    each_build(|build| {
        // The shipped configuration's counting (envoy/plugin-config.json: a mailbox's fourth
        // signup in a day is flagged, the secret from Envoy's environment).
        let g = gateway_on(build, |b| b.counting().set("/cache/ttl_seconds", json!(300)));
        // Quoting is no new mailbox (RFC 5322: `"jo.hn"` is `jo.hn`), nor is case.
        let spellings = ["J.o.h.n+1@gmail.com", "\"john+2\"@googlemail.com", "JOHN@gmail.com", "\"jo.hn\"@gmail.com"];
        for (i, spelling) in spellings.iter().enumerate() {
            let resp = g.envoy.signup_json(spelling);
            assert_eq!(resp.status, 200, "{spelling}\n{resp}");
            let seen = g.app.wait_for_request(i + 1);
            let count = (i + 1).to_string();
            assert_eq!(seen.header("x-email-mailbox-signups"), Some(count.as_str()), "{spelling}: {:?}", seen.headers);
            assert_eq!(seen.header("x-email-client-signups"), Some(count.as_str()), "{spelling}");
            let flagged = if i + 1 > 3 { Some("mailbox") } else { None };
            assert_eq!(seen.header("x-email-velocity"), flagged, "{spelling}");
        }
        assert_eq!(g.app.wait_for_request(2).header("x-email-normalized"), Some("john@gmail.com"), "unquoted");
        // Case at a domain that documents no case rule: one mailbox for the count all the same.
        for (i, spelling) in ["ann@outlook.com", "ANN@outlook.com", "\"Ann\"@outlook.com"].iter().enumerate() {
            assert_eq!(g.envoy.signup_json(spelling).status, 200, "{spelling}");
            let seen = g.app.wait_for_request(5 + i);
            let count = (i + 1).to_string();
            assert_eq!(seen.header("x-email-mailbox-signups"), Some(count.as_str()), "{spelling}: {:?}", seen.headers);
        }
        assert_eq!(g.envoy.counter("email_verdict.counted"), Some(7));
        let log = g.sidecar.stderr_text().to_lowercase();
        assert!(
            !log.contains("john") && !log.contains("jo.hn") && !log.contains("ann@"),
            "the sidecar never sees the mailbox"
        );
    });
}

/// A signup of `email` from a client that names itself `forwarded_for` in X-Forwarded-For.
fn signup_as(g: &Gateway, email: &str, forwarded_for: &str) -> email_verdict_tests::Response {
    let body = json!({ "email": email }).to_string();
    g.envoy.send(
        &email_verdict_tests::envoy::signup("application/json", body.as_bytes())
            .header("x-forwarded-for", forwarded_for),
    )
}

#[test]
fn a_block_limit_answers_429_and_a_forged_count_never_reaches_the_app() {
    each_build(|build| {
        let g = counting(build, json!({ "client": { "per_hour": 2, "action": "block" } }));
        // Each signup names another client in X-Forwarded-For: the client is who connected
        // (the shipped use_remote_address), so a fresh header dodges nothing and frames no one.
        for (email, forged) in [("ann@gmail.com", "198.51.100.1"), ("bob@gmail.com", "198.51.100.2")] {
            let resp = g.envoy.send(
                &email_verdict_tests::envoy::signup(
                    "application/json",
                    json!({ "email": email }).to_string().as_bytes(),
                )
                .header("x-email-client-signups", "0")
                .header("x-email-velocity", "")
                .header("x-forwarded-for", forged),
            );
            assert_eq!(resp.status, 200, "{email}\n{resp}");
        }
        let seen = g.app.wait_for_request(2);
        assert_eq!(seen.headers_named("x-email-client-signups"), ["2"], "the client's copy replaced");
        assert!(seen.header("x-email-velocity").is_none());
        let resp = signup_as(&g, "carol@gmail.com", "198.51.100.3");
        assert_eq!(resp.status, 429, "{resp}");
        assert_eq!(resp.header("retry-after"), Some("3600"));
        let body = resp.json();
        assert_eq!((body["error"].as_str(), body["scope"].as_str()), (Some("too_many_signups"), Some("client")));
        assert_eq!(g.app.count(), 2);
    });
}

#[test]
fn refused_signups_are_counted_too() {
    each_build(|build| {
        let g = counting(build, json!({ "client": { "per_hour": 100, "action": "flag" } }));
        // The first refusal caches the verdict; the later ones are refused from the cache at
        // once, and each still waits for its count (the stream's end must not lose it).
        for _ in 0..8 {
            assert_eq!(g.envoy.signup_json("temp@mailinator.com").status, 403);
        }
        assert_eq!(g.envoy.signup_json("ann@gmail.com").status, 200);
        let seen = g.app.wait_for_request(1);
        assert_eq!(seen.header("x-email-client-signups"), Some("9"), "{:?}", seen.headers);
        assert_eq!(g.envoy.counter("email_verdict.counted"), Some(9));
    });
}

#[test]
fn a_count_refused_for_the_keys_plan_is_a_configuration_error_never_a_refusal() {
    each_build(|build| {
        // The gateway's key on a customer plan: the sidecar refuses its counts (403), and the
        // signup is judged without them even under failure_mode deny (the signup did nothing wrong).
        let g = email_verdict_tests::envoy::gateway_with_on(
            build,
            |s| s.keys(&["pro"]),
            |b| {
                b.set("/velocity", json!({ "client": { "per_hour": 1, "action": "block" } }))
                    .set("/mailbox_secret", json!(SECRET))
                    .remove("/mailbox_secret_env")
                    .set("/failure_mode", json!("deny"))
            },
        );
        for email in ["ann@gmail.com", "bob@gmail.com"] {
            let resp = g.envoy.signup_json(email);
            assert_eq!(resp.status, 200, "{email}\n{resp}");
        }
        let seen = g.app.wait_for_request(2);
        assert_eq!(seen.header("x-email-verdict"), Some("safe"));
        assert!(seen.header("x-email-client-signups").is_none(), "{:?}", seen.headers);
        assert_eq!(g.envoy.counter("email_verdict.count_refused"), Some(2));
        assert_eq!(g.envoy.counter("email_verdict.counted").unwrap_or(0), 0);
    });
}
