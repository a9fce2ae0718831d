//! Issue 32 through a real Envoy with the shipped ext_authz configuration
//! (`envoy/ext-authz.template.yaml`, which adds the client's address to every check): one
//! canonical mailbox counted whatever its spelling, the counts reaching the app, a `flag` limit
//! naming its scope, a `block` limit answering 429, and the secret required at start.

use email_verdict_tests::envoy::{Gateway, gateway_with, signup};
use email_verdict_tests::{Response, TestDir};
use serde_json::{Value, json};

/// The sidecar's secret in these tests (the gateway's: at least 32 bytes).
const SECRET: &str = "the ext_authz tests' mailbox secret, 32 bytes+";

/// The shipped `envoy/ext-authz-config.json`, with these `velocity` limits instead of its own.
fn gateway(dir: &TestDir, velocity: Option<Value>) -> Gateway {
    gateway_keyed(dir, velocity, "gateway")
}

/// [`gateway`] with the gateway's key on `plan`.
fn gateway_keyed(dir: &TestDir, velocity: Option<Value>, plan: &str) -> Gateway {
    let shipped = email_verdict_tests::workspace_root().join("envoy/ext-authz-config.json");
    let mut config: Value = serde_json::from_str(&std::fs::read_to_string(shipped).unwrap()).unwrap();
    if let Some(velocity) = velocity {
        config["velocity"] = velocity;
    }
    let file = dir.join("ext-authz.json");
    std::fs::write(&file, config.to_string()).unwrap();
    let file = file.display().to_string();
    gateway_with(
        |s| s.keys(&[plan]).args(&["--ext-authz-config", &file, "--mailbox-secret", SECRET]),
        |e| e.ext_authz(),
    )
}

/// The app's copy of the `n`th signup's header `name` (`None` when absent).
fn seen(g: &Gateway, n: usize, name: &str) -> Option<String> {
    let request = g.app.wait_for_request(n);
    request.headers_named(name).first().map(|v| v.to_string())
}

#[test]
fn one_mailbox_in_any_spelling_is_counted_once_and_flagged_past_the_shipped_limit() {
    let dir = TestDir::new("velocity-flag");
    // The shipped limits: a mailbox's fourth signup in a day and a client's eleventh in an hour
    // are flagged.
    let g = gateway(&dir, None);
    // Quoting is no new mailbox (RFC 5322: `"john+2"` is `john+2`), nor is case.
    for (n, email) in ["J.o.h.n+1@gmail.com", "\"john+2\"@googlemail.com", "JOHN@gmail.com"].into_iter().enumerate() {
        let resp = g.envoy.signup_json(email);
        assert_eq!(resp.status, 200, "{email}: {resp}");
        let n = n + 1;
        assert_eq!(seen(&g, n, "x-email-mailbox-signups"), Some(n.to_string()), "{email}");
        assert_eq!(seen(&g, n, "x-email-client-signups"), Some(n.to_string()), "{email}: the client Envoy saw");
        assert_eq!(seen(&g, n, "x-email-velocity"), None, "{email}: within the limit");
    }
    assert_eq!(g.envoy.signup_json("j.o.h.n@gmail.com").status, 200);
    assert_eq!(seen(&g, 4, "x-email-mailbox-signups").as_deref(), Some("4"));
    assert_eq!(seen(&g, 4, "x-email-velocity").as_deref(), Some("mailbox"), "past the flag limit");
    assert_eq!(g.envoy.signup_json("jane@gmail.com").status, 200);
    assert_eq!(seen(&g, 5, "x-email-mailbox-signups").as_deref(), Some("1"), "another mailbox");
    assert_eq!(seen(&g, 2, "x-email-normalized").as_deref(), Some("john@gmail.com"), "unquoted");
    // Case at a domain that documents no case rule: one mailbox for the count all the same.
    for (n, email) in ["ann@outlook.com", "ANN@outlook.com", "\"Ann\"@outlook.com"].into_iter().enumerate() {
        assert_eq!(g.envoy.signup_json(email).status, 200, "{email}");
        assert_eq!(seen(&g, 6 + n, "x-email-mailbox-signups"), Some((n + 1).to_string()), "{email}");
    }
    let log = g.sidecar.stderr_text();
    assert!(!log.to_lowercase().contains("john") && !log.contains(SECRET), "no address, no secret in the log\n{log}");
}

#[test]
fn a_block_limit_answers_429_with_retry_after() {
    let dir = TestDir::new("velocity-block");
    let g = gateway(&dir, Some(json!({"client": {"per_hour": 2, "action": "block"}})));
    // Each signup names another client in X-Forwarded-For: the client is who connected (the
    // shipped use_remote_address), so a fresh header dodges nothing and frames no one.
    let as_client = |email: &str, forged: &str| {
        let body = json!({"email": email}).to_string();
        g.envoy.send(&signup("application/json", body.as_bytes()).header("x-forwarded-for", forged))
    };
    for (email, forged) in [("a@gmail.com", "198.51.100.1"), ("b@gmail.com", "198.51.100.2")] {
        assert_eq!(as_client(email, forged).status, 200, "{email}");
    }
    assert_eq!(seen(&g, 2, "x-email-client-signups").as_deref(), Some("2"), "not the forged address's 1");
    let resp: Response = as_client("c@gmail.com", "198.51.100.3");
    assert_eq!(resp.status, 429, "{resp}");
    assert_eq!(resp.header("retry-after"), Some("3600"), "{resp}");
    let body = resp.json();
    assert_eq!((body["error"].as_str(), body["scope"].as_str()), (Some("too_many_signups"), Some("client")), "{body}");
    assert_eq!(body["retry_after"], 3600);
    assert!(body["request_id"].is_string(), "{body}");
    assert_eq!(g.app.count(), 2, "the refused signup never reaches the app");
}

/// A signup refused for its domain's mail (`no_mx: block`) is counted like every refused signup,
/// as the filter counts it: retrying with undeliverable domains does not dodge the client limit.
#[test]
fn a_signup_refused_for_no_mail_is_counted() {
    let dir = TestDir::new("velocity-no-mx");
    let shipped = email_verdict_tests::workspace_root().join("envoy/ext-authz-config.json");
    let mut config: Value = serde_json::from_str(&std::fs::read_to_string(shipped).unwrap()).unwrap();
    config["velocity"] = json!({"client": {"per_hour": 2, "action": "block"}});
    config["no_mx"] = json!("block");
    let file = dir.join("ext-authz.json");
    std::fs::write(&file, config.to_string()).unwrap();
    let file = file.display().to_string();
    let g = gateway_with(
        |s| s.keys(&["gateway"]).args(&["--ext-authz-config", &file, "--mailbox-secret", SECRET]),
        |e| e.ext_authz(),
    );
    let refused = g.envoy.signup_json("ann@noaddr.example");
    assert_eq!(refused.status, 400, "{refused}");
    assert_eq!(refused.json()["error"], "undeliverable_email", "{refused}");
    assert_eq!(g.envoy.signup_json("a@gmail.com").status, 200);
    assert_eq!(seen(&g, 1, "x-email-client-signups").as_deref(), Some("2"), "the refused one was counted");
    assert_eq!(g.envoy.signup_json("b@gmail.com").status, 429, "the third signup of the hour");
}

#[test]
fn velocity_without_the_mailbox_secret_is_refused_at_start_naming_the_flag() {
    let dir = TestDir::new("velocity-secret");
    let file = dir.join("ext-authz.json");
    std::fs::write(&file, r#"{"velocity":{"mailbox":{"per_day":3,"action":"flag"}}}"#).unwrap();
    let out = email_verdict_tests::sidecar::run_raw(
        dir.path(),
        &["serve", "--ext-authz-config", &file.display().to_string(), "--state", "sqlite:x.db"],
    );
    out.expect_code(2, "velocity without a secret");
    assert!(out.stderr.contains("--mailbox-secret"), "{}", out.stderr);
    // A guessable secret is refused too (the filter's 32-byte minimum, surrounding space trimmed
    // by both), and never echoed.
    let short = "  a secret too short to be safe \n";
    let out = email_verdict_tests::sidecar::run_raw(
        dir.path(),
        &[
            "serve",
            "--ext-authz-config",
            &file.display().to_string(),
            "--state",
            "sqlite:x.db",
            "--mailbox-secret",
            short,
        ],
    );
    out.expect_code(2, "a short secret");
    assert!(out.stderr.contains("at least 32 bytes"), "{}", out.stderr);
    assert!(!out.stderr.contains("too short to be safe"), "{}", out.stderr);
    std::fs::write(&file, r#"{"failure_mode":"open"}"#).unwrap();
    let out = email_verdict_tests::sidecar::run_raw(
        dir.path(),
        &["serve", "--ext-authz-config", &file.display().to_string(), "--state", "sqlite:x.db"],
    );
    out.expect_code(2, "a bad failure_mode");
    assert!(out.stderr.contains("failure_mode: expected"), "{}", out.stderr);
}

#[test]
fn a_key_on_a_customer_plan_counts_nothing_and_refuses_nothing() {
    // /ext_authz takes its key from x-email-verdict-key: a customer calling it with a basic key
    // (or a gateway misconfigured with one) must write no count. The signup is judged without.
    let dir = TestDir::new("velocity-plan");
    let g = gateway_keyed(&dir, Some(json!({"client": {"per_hour": 1, "action": "block"}})), "basic");
    for (n, email) in ["a@gmail.com", "b@gmail.com"].into_iter().enumerate() {
        assert_eq!(g.envoy.signup_json(email).status, 200, "{email}");
        assert_eq!(seen(&g, n + 1, "x-email-client-signups"), None, "{email}: not counted");
        assert_eq!(seen(&g, n + 1, "x-email-verdict").as_deref(), Some("safe"));
    }
    let log = g.sidecar.stderr_text();
    assert!(log.contains("must be on the gateway plan"), "logged\n{log}");
}
