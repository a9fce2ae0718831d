//! Issue 3 as a new user tries it, against the built binary: quotas and bursts exact on one
//! process and across two sharing a real Redis, rate-limit headers, IP allowlists behind a
//! trusted proxy, the admin API, and state that survives `kill -9`.

use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use email_verdict_tests::verdict::{check_error, check_ok};
use email_verdict_tests::{Nsd, Redis, Request, Response, Sidecar, TestDir, api_target, start_with, wait_for};
use serde_json::json;

fn get(sc: &Sidecar, key: &str) -> Response {
    sc.send(&Request::get(&api_target("ownmail.example", key)))
}

/// `n` requests released together, spread over `sidecars`; their answers and how long it took.
fn burst(sidecars: &[&Arc<Sidecar>], key: &str, n: usize) -> (Vec<Response>, Duration) {
    let barrier = Arc::new(Barrier::new(n + 1));
    let threads: Vec<_> = (0..n)
        .map(|i| {
            let (sc, barrier, target) =
                (sidecars[i % sidecars.len()].clone(), barrier.clone(), api_target("ownmail.example", key));
            std::thread::spawn(move || {
                barrier.wait();
                sc.send(&Request::get(&target))
            })
        })
        .collect();
    barrier.wait();
    let started = Instant::now();
    let answers = threads.into_iter().map(|t| t.join().expect("request thread")).collect();
    (answers, started.elapsed())
}

fn count(answers: &[Response], status: u16) -> usize {
    answers.iter().filter(|r| r.status == status).count()
}

/// Exactly `limit` of the simultaneous requests pass, when all were admitted within one
/// second (the window); the rest get 429.
fn assert_exact_burst(answers: &[Response], elapsed: Duration, limit: usize) {
    assert_eq!(count(answers, 200) + count(answers, 429), answers.len(), "only 200 and 429 expected");
    assert!(count(answers, 200) <= limit * (1 + elapsed.as_secs() as usize), "more than the burst passed");
    if elapsed < Duration::from_millis(900) {
        assert_eq!(count(answers, 200), limit, "within one second exactly the burst passes");
    }
}

#[test]
fn free_key_gets_three_lookups_then_402_with_retry_after() {
    let (sc, _nsd) = start_with(|b| b.keys(&["free"]));
    let key = sc.key().to_string();
    for remaining in [2, 1, 0] {
        let r = get(&sc, &key);
        check_ok(&r, "free lookup");
        assert_eq!(r.header("x-ratelimit-limit"), Some("3"));
        assert_eq!(r.header("x-ratelimit-remaining"), Some(remaining.to_string().as_str()));
        let reset: i64 = r.header("x-ratelimit-reset").expect("reset header").parse().unwrap();
        assert_eq!(reset % 86_400, 0, "resets at midnight UTC");
        std::thread::sleep(Duration::from_millis(1050));
    }
    let r = get(&sc, &key);
    check_error(&r, 402, "quota_exceeded", "fourth lookup");
    let retry: u64 = r.header("retry-after").expect("Retry-After on 402").parse().unwrap();
    assert!((1..=86_400).contains(&retry), "Retry-After {retry}: the seconds to midnight");
    assert_eq!(r.header("x-ratelimit-remaining"), Some("0"));
    let listed = sc.cli().row_named("test-0");
    assert_eq!(listed.used_today, "3", "keys list shows today's usage");
}

#[test]
fn back_to_back_free_requests_give_200_then_429() {
    let (sc, _nsd) = start_with(|b| b.keys(&["free"]));
    let key = sc.key().to_string();
    check_ok(&get(&sc, &key), "first");
    let r = get(&sc, &key);
    check_error(&r, 429, "rate_limit_exceeded", "second within a second");
    assert_eq!(r.header("retry-after"), Some("1"));
    // The refused request cost no quota: two more lookups, a second apart, still pass.
    std::thread::sleep(Duration::from_millis(1050));
    check_ok(&get(&sc, &key), "second lookup");
}

#[test]
fn a_failed_lookup_costs_no_quota() {
    let (sc, _nsd) = start_with(|b| b.keys(&["free"]));
    let key = sc.key().to_string();
    let r = sc.send(&Request::get(&api_target("not%20valid", &key)));
    check_error(&r, 400, "invalid_input", "invalid input");
    assert_eq!(r.header("x-ratelimit-remaining"), Some("3"), "an invalid input is given back");
    for _ in 0..3 {
        std::thread::sleep(Duration::from_millis(1050));
        check_ok(&get(&sc, &key), "lookup after a refunded one");
    }
}

#[test]
fn concurrent_burst_is_exact_on_one_process() {
    let (sc, _nsd) = start_with(|b| b.keys(&["basic"]));
    let sc = Arc::new(sc);
    let key = sc.key().to_string();
    sc.lookup_ok("ownmail.example"); // warm the DNS cache
    std::thread::sleep(Duration::from_millis(1100));
    let (answers, elapsed) = burst(&[&sc], &key, 40);
    assert_exact_burst(&answers, elapsed, 10);
}

#[test]
fn two_processes_sharing_redis_share_quota_and_burst_exactly() {
    let redis = Redis::start();
    let nsd = Nsd::start();
    let a = Arc::new(Sidecar::builder().dns(nsd.addr()).state(&redis.url()).keys(&["basic", "free"]).start());
    let b = Arc::new(Sidecar::builder().dns(nsd.addr()).state(&redis.url()).keys(&[]).start());
    let (basic, free) = (a.keys()[0].clone(), a.keys()[1].clone());
    // The key made through A's store works on B.
    check_ok(&get(&b, &basic), "key created on the shared store, used on B");
    std::thread::sleep(Duration::from_millis(1100));
    let (answers, elapsed) = burst(&[&a, &b], &basic, 40);
    assert_exact_burst(&answers, elapsed, 10);
    // Free quota 3, alternating replicas a second apart: exactly three 200s in all.
    let mut ok = 0;
    for i in 0..5 {
        let sc = if i % 2 == 0 { &a } else { &b };
        let r = get(sc, &free);
        match r.status {
            200 => ok += 1,
            402 => {
                check_error(&r, 402, "quota_exceeded", "over the shared quota");
            }
            s => panic!("unexpected {s}: {}", r.text()),
        }
        std::thread::sleep(Duration::from_millis(1050));
    }
    assert_eq!(ok, 3, "quota shared exactly across replicas");
}

#[test]
fn redis_outage_gives_bounded_500_and_recovers() {
    let mut redis = Redis::start();
    let nsd = Nsd::start();
    let sc = Sidecar::builder().dns(nsd.addr()).state(&redis.url()).start();
    let key = sc.key().to_string();
    check_ok(&get(&sc, &key), "before the outage");
    redis.kill();
    std::thread::sleep(Duration::from_millis(600)); // past the 0.5 s key cache
    let started = Instant::now();
    let r = get(&sc, &key);
    check_error(&r, 500, "internal_error", "state store down");
    assert!(r.header("retry-after").is_some());
    assert!(started.elapsed() < Duration::from_secs(8), "answered within a bound: {:?}", started.elapsed());
    redis.restart();
    wait_for("the sidecar to recover once Redis is back", Duration::from_secs(20), || {
        (get(&sc, &key).status == 200).then_some(())
    });
}

#[test]
fn ip_allowlist_uses_peer_or_trusted_proxy_chain() {
    let nsd = Nsd::start();
    let direct = Sidecar::builder().dns(nsd.addr()).keys(&[]).start();
    let elsewhere = create_key(&direct, &["--allow-ip", "192.0.2.0/24"]);
    let here = create_key(&direct, &["--allow-ip", "127.0.0.1"]);
    std::thread::sleep(Duration::from_millis(600));
    check_error(&get(&direct, &elsewhere), 401, "api_key_invalid", "key limited to another network");
    check_ok(&get(&direct, &here), "key limited to this host");
    let spoofed = Request::get(&api_target("ownmail.example", &elsewhere)).header("X-Forwarded-For", "192.0.2.9");
    check_error(&direct.send(&spoofed), 401, "api_key_invalid", "X-Forwarded-For from an untrusted peer");

    let proxied = Sidecar::builder().dns(nsd.addr()).keys(&[]).args(&["--trusted-proxy", "127.0.0.0/8"]).start();
    let key = create_key(&proxied, &["--allow-ip", "192.0.2.0/24"]);
    std::thread::sleep(Duration::from_millis(600));
    let via =
        |xff: &str| proxied.send(&Request::get(&api_target("ownmail.example", &key)).header("X-Forwarded-For", xff));
    check_ok(&via("192.0.2.9"), "client in the allowed network behind a trusted proxy");
    check_error(&via("192.0.2.9, 198.51.100.1"), 401, "api_key_invalid", "last untrusted hop is outside");
    std::thread::sleep(Duration::from_millis(50));
    check_ok(&via("198.51.100.1, 192.0.2.9"), "spoofed left entry is ignored");
}

fn create_key(sc: &Sidecar, extra: &[&str]) -> String {
    let mut args = vec!["keys", "create", "--plan", "pro"];
    args.extend_from_slice(extra);
    let out = sc.cli().run(&args);
    out.expect_code(0, "keys create");
    out.last_line().to_string()
}

#[test]
fn usage_and_revocations_survive_kill_9() {
    let dir = TestDir::new("plans-restart");
    let state = format!("sqlite:{}", dir.join("state.db").display());
    let nsd = Nsd::start();
    let mut first = Sidecar::builder().dns(nsd.addr()).state(&state).keys(&["free", "pro"]).start();
    let (free, pro) = (first.keys()[0].clone(), first.keys()[1].clone());
    check_ok(&get(&first, &free), "first lookup");
    std::thread::sleep(Duration::from_millis(1050));
    check_ok(&get(&first, &free), "second lookup");
    let pro_id = first.cli().list().into_iter().find(|r| r.plan == "pro").expect("pro key listed").id;
    first.cli().run(&["keys", "revoke", &pro_id]).expect_code(0, "revoke");
    std::process::Command::new("kill").args(["-9", &first.process().pid().to_string()]).status().unwrap();
    drop(first);
    let second = Sidecar::builder().dns(nsd.addr()).state(&state).keys(&[]).start();
    std::thread::sleep(Duration::from_millis(1050)); // the burst window is kept too
    let r = get(&second, &free);
    check_ok(&r, "third lookup after kill -9");
    assert_eq!(r.header("x-ratelimit-remaining"), Some("0"), "the two answered lookups were kept");
    std::thread::sleep(Duration::from_millis(1050));
    check_error(&get(&second, &free), 402, "quota_exceeded", "fourth");
    check_error(&get(&second, &pro), 401, "api_key_invalid", "revoked before the kill");
}

fn admin(sc: &Sidecar, method: &str, path: &str, token: Option<&str>, body: Option<serde_json::Value>) -> Response {
    let mut req = Request::new(method, path);
    if let Some(t) = token {
        req = req.bearer(t);
    }
    if let Some(b) = body {
        req = req.header("Content-Type", "application/json").body(b.to_string().as_bytes());
    }
    req.send(sc.admin_addr())
}

#[test]
fn admin_api_manages_keys_and_takes_effect_within_a_second() {
    let nsd = Nsd::start();
    let sc = Sidecar::builder().dns(nsd.addr()).keys(&[]).args(&["--admin-token", "s3cret"]).start();
    let t = Some("s3cret");
    assert_eq!(admin(&sc, "GET", "/admin/v1/keys", None, None).status, 401);
    assert_eq!(admin(&sc, "GET", "/admin/v1/keys", Some("wrong"), None).status, 401);
    assert_eq!(admin(&sc, "GET", "/healthz", None, None).status, 200, "health stays open for probes");

    let created = admin(&sc, "POST", "/admin/v1/keys", t, Some(json!({"plan": "basic", "name": "shop"})));
    assert_eq!(created.status, 201, "{}", created.text());
    let body = created.json();
    let (id, key) = (body["id"].as_str().unwrap().to_string(), body["key"].as_str().unwrap().to_string());
    assert_eq!((body["plan"].as_str(), body["daily_quota"].as_u64()), (Some("basic"), Some(5000)));
    let r = get(&sc, &key);
    check_ok(&r, "admin-created key");
    assert_eq!(r.header("x-ratelimit-limit"), Some("5000"));

    let listed = admin(&sc, "GET", "/admin/v1/keys", t, None).json();
    let row = &listed["keys"][0];
    assert_eq!((row["id"].as_str(), row["used_today"].as_u64()), (Some(id.as_str()), Some(1)));
    assert!(row.get("key").is_none(), "the key itself is never listed");

    let changed = admin(&sc, "PATCH", &format!("/admin/v1/keys/{id}"), t, Some(json!({"plan": "pro"})));
    assert_eq!(changed.json()["plan"], "pro");
    std::thread::sleep(Duration::from_millis(1000));
    assert_eq!(get(&sc, &key).header("x-ratelimit-limit"), Some("20000"), "plan change within a second");

    let limited = admin(&sc, "PATCH", &format!("/admin/v1/keys/{id}"), t, Some(json!({"allow_ips": ["192.0.2.0/24"]})));
    assert_eq!(limited.json()["allow_ips"], json!(["192.0.2.0/24"]));
    std::thread::sleep(Duration::from_millis(1000));
    check_error(&get(&sc, &key), 401, "api_key_invalid", "allowlist set through the admin API");
    admin(&sc, "PATCH", &format!("/admin/v1/keys/{id}"), t, Some(json!({"allow_ips": []})));

    let usage = admin(&sc, "GET", &format!("/admin/v1/keys/{id}/usage?days=2"), t, None).json();
    assert_eq!(usage["days"].as_array().map(Vec::len), Some(2));
    assert!(usage["days"][0]["used"].as_u64().unwrap() >= 2);

    let revoked = admin(&sc, "POST", &format!("/admin/v1/keys/{id}/revoke"), t, None);
    assert_eq!(revoked.json()["status"], "revoked");
    std::thread::sleep(Duration::from_millis(1000));
    check_error(&get(&sc, &key), 401, "api_key_invalid", "revoked through the admin API");

    let bad = admin(&sc, "POST", "/admin/v1/keys", t, Some(json!({"plan": "gold"})));
    assert_eq!((bad.status, bad.json()["error"]["code"].as_str()), (400, Some("invalid_request")));
    assert_eq!(admin(&sc, "GET", "/admin/v1/keys/key_000000000000", t, None).status, 404);
}

#[test]
fn admin_listener_on_a_public_address_needs_a_token() {
    let dir = TestDir::new("admin-open");
    let out = email_verdict_tests::sidecar::run_raw(
        dir.path(),
        &["serve", "--admin-listen", "0.0.0.0:0", "--state", &format!("sqlite:{}", dir.join("s.db").display())],
    );
    out.expect_code(2, "serve with a public admin listener and no token");
    assert!(out.stderr.contains("--admin-token"), "{}", out.stderr);
}

// ---- plans an operator defines (issue 16) --------------------------------------------------------

const OPERATOR_PLANS: &str = "[plans.gateway]\ndaily-quota = \"unlimited\"\nburst-per-second = \"unlimited\"\n\
                              [plans.partner]\ndaily-quota = 2\nburst-per-second = 100\n";

#[test]
fn a_gateway_plan_from_the_settings_file_is_never_refused() {
    let (sc, _nsd) = start_with(|b| b.settings(OPERATOR_PLANS).keys(&["gateway", "partner"]));
    let (gateway, partner) = (&sc.keys()[0].clone(), &sc.keys()[1].clone());
    // 200 simultaneous requests: far over every built-in plan's burst and the free quota.
    let sc = Arc::new(sc);
    let (answers, _) = burst(&[&sc], gateway, 200);
    assert_eq!(
        count(&answers, 200),
        200,
        "an unlimited plan refuses nothing: {:?}",
        answers.iter().map(|r| r.status).collect::<Vec<_>>()
    );
    assert!(answers[0].header("x-ratelimit-limit").is_none(), "no rate-limit headers without a limit\n{}", answers[0]);
    // The partner plan's own figures hold: two a day.
    assert_eq!(get(&sc, partner).status, 200);
    assert_eq!(get(&sc, partner).status, 200);
    check_error(&get(&sc, partner), 402, "quota_exceeded", "partner plan, third lookup");
    // keys list and the admin API show the plan and its figures.
    assert_eq!(sc.cli().row_named("test-0").plan, "gateway");
    let gateway_row = || {
        let keys = Request::get("/admin/v1/keys").send(sc.admin_addr()).json();
        keys["keys"].as_array().unwrap().iter().find(|k| k["plan"] == "gateway").cloned().unwrap()
    };
    let row = gateway_row();
    assert_eq!((row["daily_quota"].clone(), row["burst_per_second"].clone()), (json!("unlimited"), json!("unlimited")));
    // Usage counts units leased: a burst that spanned two 100 ms slots leased for its rate,
    // and the unspent units go back when the lease ends, 1 s after the key's last request.
    let used = wait_for("the gateway's lease to end", Duration::from_secs(5), || {
        let used = gateway_row()["used_today"].as_u64().unwrap();
        assert!(used >= 200, "every answer counted: {used}");
        (used == 200).then_some(used)
    });
    assert_eq!(used, 200);
    let created = Request::new("POST", "/admin/v1/keys")
        .header("Content-Type", "application/json")
        .body(br#"{"plan":"partner","name":"api"}"#)
        .send(sc.admin_addr());
    assert_eq!(created.status, 201, "{created}");
    assert_eq!(created.json()["daily_quota"], 2);
    let refused = Request::new("POST", "/admin/v1/keys")
        .header("Content-Type", "application/json")
        .body(br#"{"plan":"gold"}"#)
        .send(sc.admin_addr());
    assert_eq!(refused.status, 400, "{refused}");
    assert!(refused.text().contains("defined: free, basic, premium, pro, gateway, partner"), "{refused}");
}

#[test]
fn keys_create_names_the_plans_it_knows() {
    let dir = TestDir::new("plans-cli");
    let state = format!("sqlite:{}", dir.join("state.db").display());
    let cli = email_verdict_tests::Cli::new(&state, dir.path());
    let out = cli.run(&["keys", "create", "--plan", "gold"]);
    out.expect_code(2, "a plan no settings file defines");
    assert!(out.stderr.contains("unknown plan \"gold\" (defined: free, basic, premium, pro, gateway)"), "{out}");
    // The gateway's plan needs no settings file (issue 23: the gateway key is never exhaustible).
    cli.run(&["keys", "create", "--plan", "gateway"]).expect_code(0, "the default gateway plan");
    let file = dir.join("bad.toml");
    std::fs::write(&file, "[plans.pro]\ndaily-quota = 1\nburst-per-second = 1\n").unwrap();
    let out = cli.clone().with_config(&file).run(&["keys", "create", "--plan", "pro"]);
    out.expect_code(2, "redefining a built-in plan");
    assert!(out.stderr.contains("built-in plans"), "{out}");
}

#[test]
fn a_key_whose_plan_was_removed_fails_closed_with_one_log_line() {
    let nsd = Nsd::start();
    let dir = TestDir::new("plans-removed");
    let state = format!("sqlite:{}", dir.join("state.db").display());
    let first = Sidecar::builder().dns(nsd.addr()).state(&state).settings(OPERATOR_PLANS).keys(&["partner"]).start();
    let key = first.key().to_owned();
    assert_eq!(get(&first, &key).status, 200);
    drop(first);
    // The same state, served without the settings file: the plan is gone.
    let second = Sidecar::builder().dns(nsd.addr()).state(&state).keys(&[]).start();
    for _ in 0..3 {
        check_error(&get(&second, &key), 500, "internal_error", "a key whose plan is gone");
    }
    let log = second.stderr_text();
    let lines: Vec<&str> = log.lines().filter(|l| l.contains("its plan is not defined")).collect();
    assert_eq!(lines.len(), 1, "one operator line per key\n{log}");
    assert!(lines[0].contains("partner") && !lines[0].contains(&key), "{}", lines[0]);
    let keys = Request::get("/admin/v1/keys").send(second.admin_addr()).json();
    assert_eq!(keys["keys"][0]["daily_quota"], serde_json::Value::Null, "{keys}");
}

#[test]
fn changing_a_plans_figures_applies_on_sighup_in_the_same_process() {
    let (sc, _nsd) = start_with(|b| b.settings(OPERATOR_PLANS).keys(&["partner"]));
    let key = sc.key().to_owned();
    assert_eq!(get(&sc, &key).status, 200);
    assert_eq!(get(&sc, &key).status, 200);
    check_error(&get(&sc, &key), 402, "quota_exceeded", "the partner plan's two a day");
    let pid = sc.pid();
    // A broken file keeps the plans in force.
    std::fs::write(sc.dir().join("plans.toml"), "[plans.partner]\ndaily-quota = \"lots\"\n").unwrap();
    let hup = |what: &str| {
        let status = std::process::Command::new("kill").args(["-HUP", &pid.to_string()]).status().unwrap();
        assert!(status.success(), "{what}");
    };
    hup("broken file");
    wait_for("the refused reload in the log", Duration::from_secs(5), || {
        sc.stderr_text().contains("plans not reloaded").then_some(())
    });
    check_error(&get(&sc, &key), 402, "quota_exceeded", "still two a day");
    let raised = OPERATOR_PLANS.replace("daily-quota = 2", "daily-quota = 4");
    std::fs::write(sc.dir().join("plans.toml"), raised).unwrap();
    hup("raised quota");
    wait_for("the partner plan's new figure", Duration::from_secs(5), || (get(&sc, &key).status == 200).then_some(()));
    assert_eq!(sc.pid(), pid, "the same process");
    let keys = Request::get("/admin/v1/keys").send(sc.admin_addr()).json();
    assert_eq!(keys["keys"][0]["daily_quota"], 4, "{keys}");
}
