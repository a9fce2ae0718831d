//! Issue 44: shadow mode against the real processes. The generated corpus of
//! `framework_differentials` (every family; the disposable address where popular frameworks read
//! it, often beside a safe one) and a few plain signups go, one at a time, through each gateway
//! twice: once in block mode, once in shadow mode, each run on a fresh stack. The filter runs
//! without the header hold (`hold_headers: false`; the Wasm build also without
//! `allow_on_headers_stop_iteration`, as Istio's `WasmPlugin` and Envoy Gateway give it), ext_authz
//! from the shipped `envoy/ext-authz-config.json` with only `mode` changed.
//!
//! Shadow mode must let every request reach the app exactly as sent (the body byte for byte, no
//! `x-email-*` header added), and count by reason exactly what block mode refused: the Envoy
//! counters `email_verdict.would_block_<reason>` for the filter, the sidecar's
//! `email_verdict_ext_authz_would_block_total{reason}` for ext_authz.
//!
//! Then `enforce_percent`: at 30 %, 1,000 distinct clients (by `x-forwarded-for`, which the
//! test's Envoy trusts) are refused in proportion (binomial bounds) and each client's retry gets
//! the same answer, through the Wasm filter.

#[path = "framework_differentials/corpus.rs"]
#[allow(dead_code)]
mod corpus;
#[path = "framework_differentials/encode.rs"]
#[allow(dead_code)]
mod encode;

use std::collections::BTreeMap;

use email_verdict_tests::envoy::{EnvoyBuilder, FilterBuild, Gateway, envoy_binary};
use email_verdict_tests::{Nsd, Request, Sidecar, TestDir, UpstreamApp, workspace_root};
use serde_json::{Value, json};

use corpus::{Case, corpus};

const SEED: u64 = 0x5EED_0044;
const CASE_HEADER: &str = "x-corpus-case";

#[derive(Clone, Copy, Debug, PartialEq)]
enum Via {
    Filter(FilterBuild),
    ExtAuthz,
}

/// The corpus, and plain signups: safe ones (JSON, form), an unreadable body, too many addresses.
fn cases() -> Vec<Case> {
    let mut cases = corpus(SEED, 140);
    let plain = |what: &str, content_type: &str, body: String| Case {
        family: "plain",
        what: what.into(),
        target: "/signup".into(),
        headers: vec![("Content-Type".into(), content_type.into())],
        body: body.into_bytes(),
    };
    let many: Vec<String> = (0..40).map(|i| format!("u{i}@site{i}.example")).collect();
    cases.extend([
        plain("safe JSON", "application/json", json!({ "email": "ann@gmail.com" }).to_string()),
        plain("safe form", "application/x-www-form-urlencoded", "email=bob%40gmail.com".into()),
        plain("unreadable JSON", "application/json", "{\"email\": NaN}".into()),
        plain("too many addresses", "application/json", json!({ "email": "c@gmail.com", "cc": many }).to_string()),
    ]);
    cases
}

/// One stack: NSD, the sidecar, the app, Envoy with this gateway in `mode`.
fn start(via: Via, mode: &str, dir: &TestDir) -> Gateway {
    envoy_binary();
    let nsd = Nsd::start_with_root();
    let mut sidecar = Sidecar::builder().dns(nsd.addr()).keys(&["gateway"]);
    if via == Via::ExtAuthz {
        let shipped = workspace_root().join("envoy/ext-authz-config.json");
        let mut config: Value = serde_json::from_slice(&std::fs::read(shipped).unwrap()).unwrap();
        config["mode"] = json!(mode);
        let path = dir.write(&format!("ext-authz-{mode}.json"), &config.to_string());
        sidecar = sidecar.args(&["--ext-authz-config", &path.display().to_string()]);
    }
    let sidecar = sidecar.start();
    let app = UpstreamApp::start();
    let envoy = EnvoyBuilder::new(sidecar.addr(), app.addr()).api_key(sidecar.key());
    let envoy = match via {
        Via::Filter(build) => {
            let b = envoy.build(build).set("/hold_headers", json!(false)).set("/mode", json!(mode));
            match build {
                FilterBuild::Wasm => {
                    b.edit_config("allow_on_headers_stop_iteration: true", "allow_on_headers_stop_iteration: false")
                }
                FilterBuild::Module => b,
            }
        }
        Via::ExtAuthz => envoy.ext_authz(),
    };
    Gateway { envoy: envoy.start(), app, sidecar, nsd }
}

/// What a gateway answered each case: the status and our refusal's `error` code (`None` when
/// the app answered, or Envoy itself). Four at a time (no limit in these configurations
/// depends on the order).
fn send_all(gw: &Gateway, cases: &[Case]) -> Vec<(u16, Option<String>)> {
    let answers = std::sync::Mutex::new(vec![(0u16, None); cases.len()]);
    let next = std::sync::atomic::AtomicUsize::new(0);
    std::thread::scope(|s| {
        for _ in 0..4 {
            s.spawn(|| {
                loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let Some(c) = cases.get(i) else { break };
                    let mut req = Request::new("POST", &c.target).header(CASE_HEADER, &i.to_string());
                    for (n, v) in &c.headers {
                        req = req.header(n, v);
                    }
                    let r = req.body(&c.body).send(gw.envoy.addr());
                    let body: Value = serde_json::from_slice(&r.body).unwrap_or_default();
                    let error = body.get("error").and_then(Value::as_str).filter(|_| r.status != 200);
                    answers.lock().expect("lock")[i] = (r.status, error.map(str::to_owned));
                }
            });
        }
    });
    answers.into_inner().expect("lock")
}

/// The `would_block` reason of a block-mode refusal, by its `error` code and status.
fn reason(status: u16, error: &str) -> &'static str {
    match (status, error) {
        (403, "disposable_email") => "disposable",
        (429, "too_many_signups") => "too_many_signups",
        (413, "body_too_large") => "body_too_large",
        (_, "unreadable_body") => "unreadable_body",
        (_, "invalid_email") => "invalid_email",
        (_, "missing_email") => "missing_email",
        (_, "too_many_addresses") => "too_many_addresses",
        (_, "subaddressed_email") => "subaddressed",
        (_, "verdict_unavailable") => "verdict_unavailable",
        other => panic!("a refusal that is not ours: {other:?}"),
    }
}

const REASONS: [&str; 9] = [
    "disposable",
    "too_many_signups",
    "unreadable_body",
    "too_many_addresses",
    "invalid_email",
    "missing_email",
    "subaddressed",
    "body_too_large",
    "verdict_unavailable",
];

/// The gateway's `would_block` counts by reason.
fn counted(gw: &Gateway, via: Via) -> BTreeMap<&'static str, u64> {
    let metrics = match via {
        Via::ExtAuthz => Request::get("/metrics").send(gw.sidecar.admin_addr()).text(),
        Via::Filter(_) => String::new(),
    };
    let value = |reason: &str| match via {
        Via::Filter(_) => gw.envoy.counter(&format!("email_verdict.would_block_{reason}")).unwrap_or(0),
        Via::ExtAuthz => {
            let series = format!("email_verdict_ext_authz_would_block_total{{reason=\"{reason}\"}} ");
            metrics.lines().find_map(|l| l.strip_prefix(&series)?.parse::<f64>().ok()).unwrap_or(0.0) as u64
        }
    };
    REASONS.into_iter().map(|r| (r, value(r))).filter(|(_, n)| *n > 0).collect()
}

fn shadow_counts_what_block_refuses(via: Via) {
    let dir = TestDir::new("shadow");
    let cases = cases();
    let blocked = {
        let gw = start(via, "block", &dir);
        send_all(&gw, &cases)
    };
    let mut expected: BTreeMap<&'static str, u64> = BTreeMap::new();
    for (status, error) in &blocked {
        if let Some(error) = error {
            *expected.entry(reason(*status, error)).or_default() += 1;
        }
    }
    assert!(expected.get("disposable").copied().unwrap_or(0) > 50, "{via:?}: block mode refused {expected:?}");
    let gw = start(via, "shadow", &dir);
    let shadowed = send_all(&gw, &cases);
    let recorded = gw.app.requests();
    for (i, (c, (status, _))) in cases.iter().zip(&shadowed).enumerate() {
        let what = format!("{via:?}, case {i} ({}: {})", c.family, c.what);
        if blocked[i].1.is_none() && blocked[i].0 != 200 {
            assert_eq!(*status, blocked[i].0, "{what}: Envoy's own answer, the same in both modes");
            continue;
        }
        assert_eq!(*status, 200, "{what}: shadow mode refuses nothing");
        let r = recorded.iter().find(|r| r.header(CASE_HEADER) == Some(&i.to_string())).expect("reached the app");
        assert_eq!(r.body, c.body, "{what}: the body as sent");
        let added: Vec<&(String, String)> = r.headers.iter().filter(|(n, _)| n.starts_with("x-email-")).collect();
        assert!(added.is_empty(), "{what}: headers added {added:?}");
    }
    assert_eq!(counted(&gw, via), expected, "{via:?}: would_block by reason against block mode's refusals");
}

#[test]
fn shadow_mode_through_the_wasm_filter_without_the_header_hold() {
    shadow_counts_what_block_refuses(Via::Filter(FilterBuild::Wasm));
}

#[test]
fn shadow_mode_through_the_dynamic_module_without_the_header_hold() {
    shadow_counts_what_block_refuses(Via::Filter(FilterBuild::Module));
}

#[test]
fn shadow_mode_through_ext_authz() {
    shadow_counts_what_block_refuses(Via::ExtAuthz);
}

/// Whether a disposable signup from `client` (named in `x-forwarded-for`) was refused; panics
/// on anything but a refusal or the app's answer.
fn refused_from(gw: &Gateway, client: &str) -> bool {
    let body = json!({ "email": "x@mailinator.com" }).to_string();
    let req = email_verdict_tests::envoy::signup("application/json", body.as_bytes()).header("x-forwarded-for", client);
    let r = gw.envoy.send(&req);
    assert!(matches!(r.status, 200 | 403), "{client}: {r}");
    r.status == 403
}

fn a_share_of_clients_is_enforced(via: Via) {
    let nsd = Nsd::start();
    let dir = TestDir::new("shadow");
    let mut sidecar = Sidecar::builder().dns(nsd.addr()).keys(&["gateway"]);
    if via == Via::ExtAuthz {
        let shipped = workspace_root().join("envoy/ext-authz-config.json");
        let mut config: Value = serde_json::from_slice(&std::fs::read(shipped).unwrap()).unwrap();
        config.as_object_mut().unwrap().remove("velocity"); // 2,000 signups of one address
        config["enforce_percent"] = json!(0);
        let path = dir.write("ext-authz.json", &config.to_string());
        sidecar = sidecar.args(&["--ext-authz-config", &path.display().to_string()]);
        config["enforce_percent"] = json!(30);
        dir.write("ext-authz-30.json", &config.to_string());
    }
    let mut sidecar = sidecar.start();
    let app = UpstreamApp::start();
    let envoy = EnvoyBuilder::new(sidecar.addr(), app.addr()).api_key(sidecar.key());
    let envoy = match via {
        Via::Filter(build) => envoy.build(build).set("/enforce_percent", json!(30)),
        Via::ExtAuthz => envoy.ext_authz(),
    };
    let envoy = envoy.placeholder("XFF_NUM_TRUSTED_HOPS", "1").start();
    if via == Via::ExtAuthz {
        // Shadow for all at 0 %; the share raised to 30 % by SIGHUP, without a restart.
        let probe = || {
            (0..50).any(|i| {
                let body = json!({ "email": "x@mailinator.com" }).to_string();
                let req = email_verdict_tests::envoy::signup("application/json", body.as_bytes())
                    .header("x-forwarded-for", &format!("198.18.0.{i}"));
                envoy.send(&req).status == 403
            })
        };
        assert!(!probe(), "0 %: nobody refused");
        std::fs::rename(dir.path().join("ext-authz-30.json"), dir.path().join("ext-authz.json")).unwrap();
        sidecar.process().signal("HUP");
        email_verdict_tests::wait_for("the reloaded share", std::time::Duration::from_secs(10), || {
            let logs = sidecar.stdout_text() + &sidecar.stderr_text();
            logs.contains("--ext-authz-config reloaded").then_some(())
        });
        assert!(probe(), "30 % after SIGHUP: some of 50 clients refused");
    }
    let gw = Gateway { envoy, app, sidecar, nsd };
    let started = std::time::Instant::now();
    // Eight senders at once: each request is a connection of its own.
    let enforced = std::sync::atomic::AtomicUsize::new(0);
    std::thread::scope(|s| {
        for worker in 0..8u32 {
            let (gw, enforced) = (&gw, &enforced);
            s.spawn(move || {
                for i in (worker..1000).step_by(8) {
                    let client = std::net::Ipv4Addr::from(0xc633_6400u32 + i * 257).to_string();
                    let once = refused_from(gw, &client);
                    assert_eq!(refused_from(gw, &client), once, "{via:?}, {client}: a retry gets the same answer");
                    enforced.fetch_add(usize::from(once), std::sync::atomic::Ordering::Relaxed);
                }
            });
        }
    });
    let enforced = enforced.into_inner();
    // n = 1,000, p = 0.3: sd 14.5; 5 sd either side.
    assert!((228..=372).contains(&enforced), "{via:?}: {enforced} of 1,000 clients refused at 30 %");
    eprintln!("{via:?}: {enforced} of 1,000 refused, {:?}", started.elapsed());
}

#[test]
fn at_30_percent_clients_are_refused_in_proportion_and_each_keeps_its_answer() {
    a_share_of_clients_is_enforced(Via::Filter(FilterBuild::Wasm));
    a_share_of_clients_is_enforced(Via::ExtAuthz);
}

/// Under concurrent signups every shadowed signup is judged: an app answers once it has the
/// `content-length` bytes, so the chunk reaching it is held while its verdict is asked for (the
/// benchmark's row 19 found 7 % of them unjudged, their callouts ended with the stream, before).
#[test]
fn every_concurrent_shadowed_signup_is_judged() {
    for build in [FilterBuild::Wasm, FilterBuild::Module] {
        let gw = email_verdict_tests::envoy::gateway_on(build, |b| {
            b.set("/mode", json!("shadow")).set("/hold_headers", json!(false)).set("/cache/ttl_seconds", json!(3600))
        });
        let body = json!({ "email": "ann@gmail.com", "name": "Test User" }).to_string();
        let post = || email_verdict_tests::envoy::signup("application/json", body.as_bytes());
        std::thread::scope(|s| {
            for _ in 0..8 {
                s.spawn(|| {
                    for _ in 0..50 {
                        assert_eq!(gw.envoy.send(&post()).status, 200);
                    }
                });
            }
        });
        let count = |name: &str| gw.envoy.counter(name).unwrap_or(0);
        let (shadowed, checked) = (count("email_verdict.shadowed"), count("email_verdict.checked"));
        assert_eq!((shadowed, checked), (400, 400), "{build:?}: every shadowed signup judged");
        // One callout per domain at a time, one more once the first decision sync changes the
        // version the cached verdict was stored under (and one that raced that sync): never one
        // per signup.
        assert!(count("email_verdict.callouts") <= 3, "{build:?}\n{}", gw.envoy.stats_matching("email_verdict"));
    }
}
