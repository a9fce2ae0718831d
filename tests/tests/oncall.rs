//! The on-call kit against real processes: Debian's Prometheus (started here, no service
//! manager) scrapes a real sidecar and three real Envoys in front of one app (the Wasm filter,
//! the dynamic module, ext_authz) every second, with the rules of `deploy/prometheus/` loaded
//! as shipped except for time, compressed so that a test waits seconds, not minutes or a day
//! ([`compress_time`]): every `for:` is 1 s (alerts are checked "pending or firing"), and the
//! windows of the rules that compare with the past are cut by name — the blocked shares' 5
//! minutes (the gateways', and the sidecar's by source) to 5 s and their baseline (the day
//! before those 5 minutes) to the minute before those 5 s; the decision sync's 10 minutes
//! without a success to 5 s. The thresholds, the shape of
//! each expression and the other rules' windows stay as shipped. For the same reason the two
//! filter builds keep a verdict 1 s (`cache.ttl_seconds`, 300 as shipped: a wrong block reaches
//! a gateway when its cached verdict expires) and fetch the sidecar's decisions every second.
//! One stack for the whole test, started once.
//!
//! Healthy traffic first: no alert pending or firing. Then the incidents, in this order: a
//! reviewer wrongly blocks a popular safe domain the signups use (EmailVerdictBlockShareJump
//! for each gateway; the sidecar counts those verdicts by source `reviewer`, says so in
//! `x-email-verdict-source` and EmailVerdictBlockedBySourceJump names it), then undoes it; an operator list's URL failing
//! (EmailVerdictListStale), a wave of new domains on one mail server
//! (EmailVerdictNewDomainWave), DNS gone (EmailVerdictDnsFailing,
//! EmailVerdictDecidedWithoutDns); every query of the Grafana dashboard then returns series;
//! last the sidecar stopped (EmailVerdictGatewayFailingOpen and EmailVerdictDecisionSyncFailing
//! for each filter build, EmailVerdictExtAuthzFailingOpen, EmailVerdictSidecarDown). Along the
//! way: both filter builds' counters arrive under the same names, and every family the sidecar
//! exports has a row in the operator guide's metric table.

use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use email_verdict_tests::envoy::{Envoy, EnvoyBuilder, FilterBuild, form_encode};
use email_verdict_tests::{
    ChildProcess, ListServer, Nsd, Request, Served, Sidecar, TestDir, UpstreamApp, free_port, wait_for, workspace_root,
};
use serde_json::{Value, json};

/// A real Prometheus on a free loopback port, its storage and configuration in a test directory.
struct Prometheus {
    // `process` before `dir`: the process dies before its files are removed.
    process: ChildProcess,
    addr: SocketAddr,
    _dir: TestDir,
}

impl Prometheus {
    fn binary() -> PathBuf {
        let found =
            ["/usr/bin/prometheus", "/usr/local/bin/prometheus"].into_iter().map(PathBuf::from).find(|p| p.is_file());
        found.unwrap_or_else(|| {
            panic!("prometheus not found: run scripts/install-deps.sh (Debian's prometheus package)")
        })
    }

    /// Scrapes `sidecar` (job email-verdict) and each `(build, Envoy admin)` (job
    /// email-verdict-envoy, with the shipped relabelling), every second, with the shipped rules.
    fn start(sidecar: SocketAddr, proxies: &[(&str, SocketAddr)]) -> Prometheus {
        let dir = TestDir::new("prometheus");
        let rules = std::fs::read_to_string(workspace_root().join("deploy/prometheus/email-verdict.rules.yml"))
            .expect("read the rules");
        dir.write("email-verdict.rules.yml", &compress_time(&rules));
        // The shipped scrape configuration's relabelling of the proxies' job, as is.
        let shipped = std::fs::read_to_string(workspace_root().join("deploy/prometheus/prometheus.yml"))
            .expect("read deploy/prometheus/prometheus.yml");
        let relabel =
            shipped.split_once("    metric_relabel_configs:\n").map(|(_, r)| r).expect("metric_relabel_configs");
        let proxies: String = proxies
            .iter()
            .map(|(build, addr)| format!("      - targets: [\"{addr}\"]\n        labels: {{ proxy: {build} }}\n"))
            .collect();
        let config = format!(
            "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n  evaluation_interval: 1s\n\
             rule_files: [email-verdict.rules.yml]\n\
             scrape_configs:\n\
             \x20 - job_name: email-verdict\n    static_configs:\n      - targets: [\"{sidecar}\"]\n\
             \x20 - job_name: email-verdict-envoy\n    metrics_path: /stats/prometheus\n    static_configs:\n{proxies}\
             \x20   metric_relabel_configs:\n{relabel}"
        );
        let config_file = dir.write("prometheus.yml", &config);
        let addr = SocketAddr::from(([127, 0, 0, 1], free_port()));
        let mut cmd = Command::new(Self::binary());
        cmd.arg(format!("--config.file={}", config_file.display()))
            .arg(format!("--storage.tsdb.path={}", dir.join("data").display()))
            .arg(format!("--web.listen-address={addr}"))
            .arg("--log.level=warn")
            .current_dir(dir.path());
        let process = ChildProcess::spawn("prometheus", cmd, dir.path());
        let prometheus = Prometheus { process, addr, _dir: dir };
        wait_for("Prometheus ready", Duration::from_secs(30), || {
            let r = Request::get("/-/ready").timeout(Duration::from_millis(500)).try_send(addr).ok()?;
            (r.status == 200).then_some(())
        });
        prometheus
    }

    fn api(&self, target: &str) -> Value {
        let r = Request::get(target).timeout(Duration::from_secs(5)).send(self.addr);
        assert_eq!(r.status, 200, "{target}\n{r}\n{}", self.process.dump());
        let body = r.json();
        assert_eq!(body["status"], "success", "{target}: {body}");
        body["data"].clone()
    }

    /// The instant vector `expr` evaluates to now.
    fn query(&self, expr: &str) -> Vec<Value> {
        let data = self.api(&format!("/api/v1/query?query={}", form_encode(expr)));
        data["result"].as_array().cloned().unwrap_or_default()
    }

    /// Every email-verdict alert pending or firing: (name, state, labels).
    fn alerts(&self) -> Vec<(String, String, Value)> {
        let data = self.api("/api/v1/alerts");
        let alerts = data["alerts"].as_array().cloned().unwrap_or_default();
        alerts
            .into_iter()
            .filter_map(|a| {
                let name = a["labels"]["alertname"].as_str()?.to_owned();
                name.starts_with("EmailVerdict")
                    .then(|| (name, a["state"].as_str().unwrap_or("").to_owned(), a["labels"].clone()))
            })
            .collect()
    }

    /// Waits until `name` is pending or firing with these labels (a subset); returns its state.
    fn wait_alert(&self, name: &str, labels: &[(&str, &str)], within: Duration) -> String {
        let deadline = Instant::now() + within;
        loop {
            let alerts = self.alerts();
            let found = alerts.iter().find(|(n, _, l)| n == name && labels.iter().all(|(k, v)| l[*k] == *v));
            if let Some((_, state, _)) = found {
                return state.clone();
            }
            assert!(
                Instant::now() < deadline,
                "{name} {labels:?} neither pending nor firing after {within:?}: {alerts:?}"
            );
            std::thread::sleep(Duration::from_millis(250));
        }
    }

    /// Waits for `n` more evaluations of the rules (so that what was scraped has been judged).
    fn wait_evaluations(&self, n: u32) {
        std::thread::sleep(Duration::from_millis(1100 * u64::from(n)));
    }

    /// Waits until `targets` targets are up (scraped successfully).
    fn wait_scraped(&self, targets: usize) {
        wait_for("every target up", Duration::from_secs(20), || {
            let up = self.query("up == 1");
            (up.len() >= targets).then_some(())
        });
    }
}

/// Windows cut in the rules whose name starts so: (rule, shipped, in the test). A rule renamed
/// or a window changed fails the test rather than going untested.
const CUT_WINDOWS: [(&str, &str, &str); 6] = [
    ("email_verdict:gateway_blocked:", "[5m]", "[5s]"),
    ("email_verdict:gateway_blocked:", "[1d] offset 5m", "[1m] offset 5s"),
    ("email_verdict:verdicts_disposable:", "[5m]", "[5s]"),
    ("email_verdict:verdicts_disposable:", "[1d] offset 5m", "[1m] offset 5s"),
    ("EmailVerdictBlockedBySourceJump", "[5m]", "[5s]"),
    ("EmailVerdictDecisionSyncFailing", "[10m]", "[5s]"),
];

/// The rules with every `for:` at 1 s and the [`CUT_WINDOWS`] cut: the test cannot wait the
/// shipped minutes, nor a day for a baseline.
fn compress_time(rules: &str) -> String {
    let mut rule = "";
    let mut cut = [0; CUT_WINDOWS.len()];
    let lines: Vec<String> = rules
        .lines()
        .map(|l| {
            let trimmed = l.trim_start();
            if let Some(name) = trimmed.strip_prefix("- record: ").or_else(|| trimmed.strip_prefix("- alert: ")) {
                rule = name.trim();
            }
            if trimmed.starts_with("for: ") {
                return format!("{}for: 1s", &l[..l.len() - trimmed.len()]);
            }
            let mut line = l.to_owned();
            for (i, (prefix, shipped, test)) in CUT_WINDOWS.iter().enumerate() {
                if rule.starts_with(prefix) && line.contains(shipped) {
                    line = line.replace(shipped, test);
                    cut[i] += 1;
                }
            }
            line
        })
        .collect();
    for ((prefix, shipped, _), n) in CUT_WINDOWS.iter().zip(cut) {
        assert!(n > 0, "no {shipped} window in a rule named {prefix}*: update CUT_WINDOWS");
    }
    lines.join("\n")
}

fn signup(envoy: &Envoy, email: &str) -> u16 {
    envoy.signup_json(email).status
}

/// The lookups of `domains` at once (DNS may be slow: each waits up to the lookup deadline).
fn lookups_at_once(sc: &Sidecar, domains: &[String]) -> Vec<u16> {
    std::thread::scope(|s| {
        let handles: Vec<_> = domains.iter().map(|d| s.spawn(move || sc.lookup(d).status)).collect();
        handles.into_iter().map(|h| h.join().expect("a lookup thread")).collect()
    })
}

/// Some names of the shipped strong list (decided by the listing alone, no DNS needed).
fn strong_listed(n: usize) -> Vec<String> {
    let text = std::fs::read_to_string(workspace_root().join("data/disposable/disposable-email-domains.txt"))
        .expect("read the shipped strong list");
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .skip(100)
        .take(n)
        .map(str::to_owned)
        .collect()
}

/// Every family the sidecar exports (as Prometheus names it) has a row in the metric table.
fn assert_metric_table_covers(sc: &Sidecar) {
    let text = Request::get("/metrics").send(sc.admin_addr()).text();
    let guide = std::fs::read_to_string(workspace_root().join("docs/operator-guide.md")).expect("read the guide");
    let families: BTreeSet<String> = text
        .lines()
        .filter_map(|l| l.strip_prefix("# TYPE "))
        .map(|t| {
            let mut parts = t.split(' ');
            let (name, kind) = (parts.next().unwrap_or_default(), parts.next().unwrap_or_default());
            if kind == "counter" { format!("{name}_total") } else { name.to_owned() }
        })
        .collect();
    assert!(families.len() >= 25, "{families:?}");
    for family in families {
        assert!(
            guide.contains(&format!("| `{family}` |")),
            "no row for {family} in docs/operator-guide.md's metric table"
        );
    }
}

/// A reviewer blocks `ownmail.example`, which most signups now use, by mistake: the blocked
/// share of every gateway (both filter builds, ext_authz) jumps against its baseline, and the
/// sidecar says the blocks were a reviewer's. Then the undo.
fn wrong_block(prom: &Prometheus, sc: &Sidecar, gateways: &[&Envoy; 3]) {
    let started = Instant::now();
    sc.cli().run(&["review", "set", "ownmail.example", "disposable", "--note", "oops"]).expect_code(0, "review set");
    for round in 0..3 {
        for envoy in gateways {
            for i in 0..4 {
                assert_eq!(signup(envoy, &format!("eve{round}{i}@ownmail.example")), 403, "wrongly blocked");
            }
            assert_eq!(signup(envoy, "bob@mailinator.com"), 403);
            assert_eq!(signup(envoy, "carol@gmail.com"), 200);
        }
    }
    let r = sc.lookup("ownmail.example");
    assert_eq!(r.header("x-email-verdict-source"), Some("reviewer"), "{r}");
    // Each gateway, and the sidecar by source, pending or firing at some point (the shares fall
    // back as their baseline takes the jump in, a few seconds later here).
    let want = ["ext_authz", "module", "sidecar: reviewer", "wasm"];
    let mut seen = BTreeSet::new();
    let deadline = Instant::now() + Duration::from_secs(15);
    while seen.len() < want.len() {
        for (name, _, labels) in prom.alerts() {
            let gateway = labels["filter_build"].as_str().or(labels["enforcement"].as_str());
            match name.as_str() {
                "EmailVerdictBlockShareJump" if labels["mode"] == "block" => {
                    seen.insert(gateway.unwrap_or_default().to_owned());
                }
                "EmailVerdictBlockedBySourceJump" => {
                    seen.insert(format!("sidecar: {}", labels["source"].as_str().unwrap_or_default()));
                }
                _ => {}
            }
        }
        assert!(Instant::now() < deadline, "the block share alerts for {want:?}: only {seen:?}");
        std::thread::sleep(Duration::from_millis(250));
    }
    assert_eq!(seen, want.into_iter().map(String::from).collect());
    let by_reviewer = "email_verdict_verdicts_total{verdict=\"disposable\",source=\"reviewer\"} >= 3";
    assert_eq!(prom.query(by_reviewer).len(), 1, "the sidecar's disposable verdicts by source");
    sc.cli().run(&["review", "clear", "ownmail.example"]).expect_code(0, "the undo");
    let r = sc.lookup("ownmail.example");
    assert_eq!(r.header("x-email-verdict-source"), Some("rules"), "{r}");
    eprintln!("wrong block: alerts in {:?}", started.elapsed());
}

#[test]
fn alerts_and_dashboard_against_a_real_prometheus() {
    let started = Instant::now();
    for build in FilterBuild::ALL {
        build.artifact(); // fail fast when one is missing
    }
    let mut nsd = Nsd::start();
    let mut lists = ListServer::start();
    lists.serve("/block.txt", Served::List("blocked-by-operator.example\n".into()));
    let ext_authz_config = workspace_root().join("envoy/ext-authz-config.json").display().to_string();
    let mut sc = Sidecar::builder()
        .dns(nsd.addr())
        .keys(&["gateway", "free"])
        .args(&[
            "--allow-private-outbound",
            "--blocklist",
            &lists.url("/block.txt"),
            "--list-refresh",
            "3",
            "--dns-timeout-ms",
            "300",
            "--ext-authz-config",
            &ext_authz_config,
        ])
        .start();
    let (gateway_key, free_key) = (sc.keys()[0].clone(), sc.keys()[1].clone());
    let app = UpstreamApp::start();
    // The three proxies, started side by side (V8 compiles the Wasm module first).
    let base = || EnvoyBuilder::new(sc.addr(), app.addr()).api_key(&gateway_key);
    let filter = || base().set("/cache/ttl_seconds", json!(1)).set("/decision_sync_seconds", json!(1));
    let (wasm, module, ext_authz) = std::thread::scope(|s| {
        let w = s.spawn(|| filter().build(FilterBuild::Wasm).start());
        let m = s.spawn(|| filter().build(FilterBuild::Module).start());
        let e = s.spawn(|| base().ext_authz().placeholder("FAILURE_MODE_ALLOW", "true").start());
        (w.join().expect("wasm"), m.join().expect("module"), e.join().expect("ext_authz"))
    });
    let proxies = [("wasm", wasm.admin_addr()), ("module", module.admin_addr()), ("ext_authz", ext_authz.admin_addr())];
    let prom = Prometheus::start(sc.admin_addr(), &proxies);
    prom.wait_scraped(4);
    eprintln!("stack up after {:?}", started.elapsed());

    // --- healthy: signups through each proxy, API lookups, a customer's key over its burst.
    let gateways = [&wasm, &module, &ext_authz];
    for round in 0..4 {
        for envoy in gateways {
            assert_eq!(signup(envoy, &format!("ann{round}@ownmail.example")), 200);
            assert_eq!(signup(envoy, "bob@mailinator.com"), 403);
            assert_eq!(signup(envoy, "carol@gmail.com"), 200);
        }
        assert_eq!(sc.lookup("nomx.example").status, 200);
        assert_eq!(sc.lookup("doesnotexist.example").status, 200);
        assert_eq!(sc.lookup("not%20valid").status, 400);
    }
    let burst: Vec<u16> =
        (0..3).map(|_| sc.send(&Request::get(&format!("/api/v1/domain/gmail.com?key={free_key}"))).status).collect();
    assert!(burst.contains(&429), "a free key over its burst: {burst:?}");
    // Until the blocked share's baseline (5 s back) holds all of this traffic, it may have seen
    // part of it and differ from the share now: 8 evaluations, not 4.
    prom.wait_evaluations(8);
    let healthy = prom.alerts();
    assert!(healthy.is_empty(), "alerts on a healthy stack: {healthy:?}");

    // Both filter builds' counters under one name, told apart by filter_build.
    let checked = prom.query("sum by (filter_build) (email_verdict_checked)");
    let builds: BTreeSet<String> =
        checked.iter().filter_map(|s| s["metric"]["filter_build"].as_str().map(str::to_owned)).collect();
    assert_eq!(builds, ["module", "wasm"].into_iter().map(String::from).collect(), "{checked:?}");
    for s in &checked {
        assert!(s["value"][1].as_str().and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0) >= 8.0, "{s}");
    }
    assert!(prom.query("{__name__=~\"envoy_dynamicmodulescustom_.*\"}").is_empty(), "the module's names renamed");
    let refused = prom.query("email_verdict_plan_rejections_total{plan=\"free\",limit=\"burst\"} > 0");
    assert_eq!(refused.len(), 1, "the free key's 429 counted by plan: {refused:?}");
    assert_metric_table_covers(&sc);

    wrong_block(&prom, &sc, &gateways);

    // --- an operator list's URL failing: stale after 3 refresh periods (9 s here).
    lists.serve("/block.txt", Served::Status(503));
    let state =
        prom.wait_alert("EmailVerdictListStale", &[("list", "0"), ("kind", "blocklist")], Duration::from_secs(30));
    eprintln!("list stale: {state} after {:?}", started.elapsed());

    // --- a wave: ten never-seen domains signed up on one mail server.
    for i in 0..10 {
        let domain = format!("oncall{i}.waves");
        assert_eq!(sc.lookup(&domain).status, 200, "{domain}");
        let body = json!({ "domain": domain }).to_string();
        let r = sc.send(
            &Request::new("POST", "/api/v1/signups")
                .bearer(&gateway_key)
                .header("Content-Type", "application/json")
                .body(body.as_bytes()),
        );
        assert_eq!(r.status, 200, "{r}");
    }
    let state = prom.wait_alert("EmailVerdictNewDomainWave", &[], Duration::from_secs(15));
    eprintln!("wave: {state} after {:?}", started.elapsed());
    wait_for("the wave's domains in the review queue gauge", Duration::from_secs(10), || {
        let q = "email_verdict_review_queue_entries >= 10 and email_verdict_review_queue_capacity == 10000";
        (prom.query(q).len() == 1).then_some(())
    });
    let refresh = prom.query("email_verdict_list_refresh_seconds{list=\"0\",kind=\"blocklist\"} == 3");
    assert_eq!(refresh.len(), 1, "the list's refresh period: {refresh:?}");

    // --- DNS gone: never-seen domains fail, strong-listed ones are decided without DNS.
    nsd.stop();
    let dark: Vec<String> = (0..30).map(|i| format!("dark{i}.example")).collect();
    let answers = lookups_at_once(&sc, &dark);
    assert!(answers.iter().all(|s| *s == 500), "no DNS, no verdict: {answers:?}");
    let listed = strong_listed(15);
    let answers = lookups_at_once(&sc, &listed);
    assert!(answers.iter().all(|s| *s == 200), "decided by the listing: {answers:?} for {listed:?}");
    let state = prom.wait_alert("EmailVerdictDnsFailing", &[], Duration::from_secs(15));
    eprintln!("DNS failing: {state} after {:?}", started.elapsed());
    prom.wait_alert("EmailVerdictDecidedWithoutDns", &[], Duration::from_secs(15));

    // --- every query of the dashboard returns series (the sidecar still up, incidents on).
    let dashboard: Value = serde_json::from_str(
        &std::fs::read_to_string(workspace_root().join("deploy/grafana/email-verdict.json"))
            .expect("read the dashboard"),
    )
    .expect("JSON");
    let mut empty = Vec::new();
    let mut evaluated = 0;
    for panel in dashboard["panels"].as_array().expect("panels") {
        for target in panel["targets"].as_array().into_iter().flatten() {
            let expr = target["expr"].as_str().unwrap_or_default().replace("$__rate_interval", "1m");
            evaluated += 1;
            if prom.query(&expr).is_empty() {
                empty.push(format!("{}: {expr}", panel["title"]));
            }
        }
    }
    assert!(empty.is_empty(), "dashboard queries without series:\n{}", empty.join("\n"));
    eprintln!("{evaluated} dashboard queries answered after {:?}", started.elapsed());

    // --- the sidecar stopped: every build lets signups through unjudged (failure_mode allow).
    sc.kill();
    for i in 0..12 {
        for envoy in gateways {
            assert_eq!(signup(envoy, &format!("dave@off{i}.example")), 200, "failing open");
        }
    }
    for build in ["wasm", "module"] {
        let state =
            prom.wait_alert("EmailVerdictGatewayFailingOpen", &[("filter_build", build)], Duration::from_secs(15));
        eprintln!("failing open ({build}): {state} after {:?}", started.elapsed());
    }
    for build in ["wasm", "module"] {
        prom.wait_alert("EmailVerdictDecisionSyncFailing", &[("filter_build", build)], Duration::from_secs(15));
    }
    prom.wait_alert("EmailVerdictExtAuthzFailingOpen", &[], Duration::from_secs(15));
    prom.wait_alert("EmailVerdictSidecarDown", &[], Duration::from_secs(15));
    let bypassed = prom.query("email_verdict:gateway_bypassed:rate5m{reason=\"sidecar_error\"} > 0");
    assert_eq!(bypassed.len(), 2, "bypasses by reason, per build: {bypassed:?}");
    for alert in ["EmailVerdictGatewayFailingClosed", "EmailVerdictNotScraped", "EmailVerdictProxyDown"] {
        assert!(prom.alerts().iter().all(|(n, _, _)| n != alert), "{alert} must not fire");
    }
    lists.stop();
    eprintln!("done after {:?}", started.elapsed());
}
