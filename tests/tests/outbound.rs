//! Issue 31, "outbound requests follow redirects anywhere": RDAP lookups and URL lists never
//! reach a non-public address (loopback here: by address and by a name resolving to it) unless
//! `--allow-private-outbound` says so, and never follow a redirect out of their origin (another
//! host name for the same address, or another port, counts as another origin) even with it.
//! Each refusal shows in the log, in `GET /admin/v1/lists` and in
//! `email_verdict_outbound_refused_total`. The servers are [`ListServer`]s on loopback; the
//! domains are NSD's fixture zones.

use std::time::Duration;

use email_verdict_tests::{ListServer, Nsd, Request, Served, Sidecar, TestDir, start_with, wait_for};
use serde_json::{Value, json};

/// A refusal shows within this (the first fetches run at start, RDAP on the first lookup).
const SHOWN: Duration = Duration::from_secs(20);

/// A bootstrap file in `dir` sending `.example` to `base`.
fn bootstrap(dir: &TestDir, base: &str) -> String {
    let services = json!({"services": [[["example"], [base]]]});
    dir.write("dns.json", &services.to_string()).display().to_string()
}

fn domain_object(name: &str) -> Served {
    let events = [json!({"eventAction": "registration", "eventDate": "2001-02-03T04:05:06Z"})];
    let body = json!({"objectClassName": "domain", "ldhName": name, "events": events});
    Served::Reply { status: 200, headers: vec![], body: body.to_string() }
}

fn redirect(location: &str) -> Served {
    Served::Reply { status: 302, headers: vec![("location".into(), location.into())], body: String::new() }
}

/// One sample of `GET /metrics` (name and labels exactly as exposed).
fn metric(sc: &Sidecar, series: &str) -> f64 {
    let text = Request::get("/metrics").send(sc.admin_addr()).text();
    text.lines().find_map(|l| l.strip_prefix(series)?.strip_prefix(' ')?.parse().ok()).unwrap_or(0.0)
}

fn refused(sc: &Sidecar, purpose: &str, reason: &str) -> f64 {
    metric(sc, &format!(r#"email_verdict_outbound_refused_total{{purpose="{purpose}",reason="{reason}"}}"#))
}

/// Operator list `index`'s last error, once it has one.
fn list_error(sc: &Sidecar, index: usize) -> String {
    wait_for(&format!("list {index} to fail"), SHOWN, || {
        let r = Request::get("/admin/v1/lists").send(sc.admin_addr());
        assert_eq!(r.status, 200, "{r}");
        r.json()["lists"][index]["last_error"]["message"].as_str().map(str::to_owned)
    })
}

fn details(sc: &Sidecar, segment: &str) -> Value {
    sc.lookup_ok(segment)["details"].clone()
}

fn verdict(sc: &Sidecar, segment: &str) -> String {
    sc.lookup_ok(segment)["result"]["verdict"].as_str().unwrap_or_default().to_owned()
}

#[test]
fn loopback_is_refused_without_the_flag_by_address_and_by_name() {
    let server = ListServer::start();
    server.serve("/rdap/domain/ownmail.example", domain_object("ownmail.example"));
    server.serve("/d.txt", Served::List("shopco.example\n".into()));
    let dir = TestDir::new("outbound-loopback");
    let file = bootstrap(&dir, &server.url("/rdap/"));
    // The list by a name that resolves to loopback, RDAP by the address itself.
    let list = format!("http://localhost:{}/d.txt", server.addr().port());
    let (sc, _nsd) = start_with(|b| b.args(&["--rdap", "--rdap-bootstrap", &file, "--disposable-list", &list]));

    let message = list_error(&sc, 0);
    assert!(message.contains("refused") && message.contains("--allow-private-outbound"), "{message}");
    assert_eq!(verdict(&sc, "shopco.example"), "safe", "the list was not loaded");
    wait_for("the RDAP refusal", SHOWN, || {
        assert!(details(&sc, "ownmail.example").get("domain_age_days").is_none());
        (refused(&sc, "rdap", "address") >= 1.0).then_some(())
    });
    assert!(refused(&sc, "list", "address") >= 1.0);
    assert_eq!(metric(&sc, r#"email_verdict_rdap_requests_total{outcome="refused"}"#), 1.0);
    assert!(server.seen().is_empty(), "a request reached loopback: {:?}", server.seen());
    // The log line may follow the metric by a moment.
    wait_for("the RDAP refusal's log line", SHOWN, || {
        let log = sc.stderr_text();
        log.lines().any(|l| l.contains("RDAP request refused") && l.contains("no public address")).then_some(())
    });
    let log = sc.stderr_text();
    assert!(log.lines().any(|l| l.contains("list reload failed") && l.contains("refused")), "{log}");
}

/// Server `a` redirects RDAP to server `b` (same address, another port) and the disposable
/// list to itself under the name `localhost`; its blocklist moved within its own origin.
fn redirecting_servers() -> (ListServer, ListServer) {
    let (a, b) = (ListServer::start(), ListServer::start());
    b.serve("/rdap/domain/ownmail.example", domain_object("ownmail.example"));
    b.serve("/d.txt", Served::List("shopco.example\n".into()));
    a.serve("/d.txt", Served::List("shopco.example\n".into()));
    a.serve("/rdap/domain/ownmail.example", redirect(&b.url("/rdap/domain/ownmail.example")));
    a.serve("/moved.txt", redirect(&format!("http://localhost:{}/d.txt", a.addr().port())));
    a.serve("/old-block.txt", redirect("/block.txt"));
    a.serve("/block.txt", Served::List("ownmail.example\n".into()));
    (a, b)
}

#[test]
fn a_redirect_to_another_origin_is_not_followed_even_with_the_flag() {
    let (a, b) = redirecting_servers();
    let dir = TestDir::new("outbound-redirect");
    let file = bootstrap(&dir, &a.url("/rdap/"));
    let (list, block) = (a.url("/moved.txt"), a.url("/old-block.txt"));
    let (sc, _nsd): (Sidecar, Nsd) = start_with(|b| {
        b.env("EMAIL_VERDICT_ALLOW_PRIVATE_OUTBOUND", "true").args(&[
            "--rdap",
            "--rdap-bootstrap",
            &file,
            "--disposable-list",
            &list,
            "--blocklist",
            &block,
        ])
    });

    let message = list_error(&sc, 0);
    assert!(message.contains("redirect") && message.contains("refused"), "{message}");
    assert_eq!(verdict(&sc, "shopco.example"), "safe", "the redirected list was not loaded");
    assert_eq!(verdict(&sc, "ownmail.example"), "disposable", "a redirect within the origin is followed");
    wait_for("the RDAP refusal", SHOWN, || {
        assert!(details(&sc, "ownmail.example").get("domain_age_days").is_none());
        (refused(&sc, "rdap", "redirect") >= 1.0).then_some(())
    });
    assert!(refused(&sc, "list", "redirect") >= 1.0);
    assert_eq!(refused(&sc, "list", "address") + refused(&sc, "rdap", "address"), 0.0, "loopback allowed");
    assert!(b.seen().is_empty(), "another port was reached: {:?}", b.seen());
    let targets: Vec<String> = a.seen().into_iter().map(|s| s.target).collect();
    assert!(!targets.contains(&"/d.txt".to_owned()), "another host name was followed: {targets:?}");
    assert!(targets.contains(&"/block.txt".to_owned()), "{targets:?}");
    let log = sc.stderr_text();
    assert!(log.contains("may reach private addresses"), "the flag is announced: {log}");
    assert!(log.lines().any(|l| l.contains("RDAP request refused") && l.contains("redirect")), "{log}");
}
