//! Issue 26: `details.domain_age_days` from RDAP, through the built binary against NSD's
//! fixture zones and a local RDAP server ([`ListServer`] with canned answers), which the
//! sidecar finds through its own bootstrap file (`--rdap-bootstrap`). The age comes in the
//! background (polled for, never slept for); a lookup never waits for RDAP; 404s, timeouts and
//! servers without a service leave it absent; a `429` keeps the sidecar away until its
//! `Retry-After`; off by default, nothing is asked; only the registered domain is ever sent.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use email_verdict_tests::{ListServer, Nsd, Request, Served, Sidecar, TestDir, start_with, wait_for};
use serde_json::{Value, json};

/// Seconds of the current Unix time.
fn now() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs() as i64)
}

/// `YYYY-MM-DDTHH:MM:SSZ` of Unix seconds (proleptic Gregorian).
fn rfc3339(unix: i64) -> String {
    let (days, secs) = (unix.div_euclid(86_400), unix.rem_euclid(86_400));
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z", secs / 3600, secs % 3600 / 60, secs % 60)
}

/// An RDAP domain object registered at `unix`.
fn domain_object(name: &str, unix: i64) -> Served {
    let body = json!({
        "objectClassName": "domain",
        "ldhName": name,
        "events": [
            {"eventAction": "last changed", "eventDate": rfc3339(now())},
            {"eventAction": "registration", "eventDate": rfc3339(unix)},
        ],
    });
    Served::Reply { status: 200, headers: vec![], body: body.to_string() }
}

fn status(status: u16, headers: &[(&str, &str)]) -> Served {
    let headers = headers.iter().map(|(n, v)| (n.to_string(), v.to_string())).collect();
    Served::Reply { status, headers, body: String::new() }
}

/// NSD, the RDAP server (serving `paths` under `/rdap/`) and a sidecar whose bootstrap file
/// sends `.example` to it, started with `args` (`--rdap` or not) and `--allow-private-outbound`
/// (the RDAP server is on loopback).
fn setup(paths: Vec<(&str, Served)>, args: &[&str]) -> (Sidecar, Nsd, ListServer) {
    let rdap = ListServer::start();
    for (domain, served) in paths {
        rdap.serve(&format!("/rdap/domain/{domain}"), served);
    }
    let bootstrap = json!({
        "description": "test", "publication": "2026-11-25T00:00:00Z", "version": "1.0",
        "services": [[["example"], [rdap.url("/rdap/")]]],
    });
    let dir = TestDir::new("rdap-bootstrap");
    let file = dir.write("dns.json", &bootstrap.to_string()).display().to_string();
    let mut all = vec!["--rdap-bootstrap", &file, "--allow-private-outbound"];
    all.extend_from_slice(args);
    let (sc, nsd) = start_with(|b| b.args(&all));
    (sc, nsd, rdap)
}

fn details(sc: &Sidecar, segment: &str) -> Value {
    sc.lookup_ok(segment)["details"].clone()
}

/// Looks `segment` up until its `details.domain_age_days` is there (at most 20 s).
fn age_when_known(sc: &Sidecar, segment: &str) -> u64 {
    wait_for(&format!("domain_age_days of {segment}"), Duration::from_secs(20), || {
        details(sc, segment)["domain_age_days"].as_u64()
    })
}

#[test]
fn the_age_comes_in_the_background_for_the_registered_domain_alone() {
    let registered = now() - 10 * 86_400 - 3600;
    let (sc, _nsd, rdap) = setup(vec![("ownmail.example", domain_object("ownmail.example", registered))], &["--rdap"]);
    let email = "secret.person+tag%40ownmail.example";
    // The first lookup never has it: it is only asked for now, off the lookup's path.
    let first = details(&sc, email);
    assert!(first.get("domain_age_days").is_none(), "{first:#}");
    assert_eq!(age_when_known(&sc, email), 10);
    assert_eq!(age_when_known(&sc, "ownmail.example"), 10, "the domain's own lookup");
    // A batch item carries it too.
    let body = json!({"inputs": ["ownmail.example", "gmail.com"]}).to_string();
    let r = sc.send_retrying_429(
        &Request::new("POST", "/api/v1/domains")
            .bearer(sc.key())
            .header("Content-Type", "application/json")
            .body(body.as_bytes()),
    );
    assert_eq!(r.status, 200, "{r}");
    let items = r.json()["results"].clone();
    assert_eq!(items[0]["details"]["domain_age_days"], 10, "{items:#}");
    assert!(items[1]["details"].get("domain_age_days").is_none(), "no RDAP service for .com here: {items:#}");
    // The public page shows it beside the provider and the kind of service.
    let page = sc.get("/en/domain/ownmail.example");
    assert_eq!(page.status, 200);
    let html = page.text();
    assert!(html.contains("data-age-days=\"10\""), "{html}");
    assert!(html.contains(&format!("data-registered=\"{}\"", &rfc3339(registered)[..10])), "{html}");
    assert!(html.contains("(10 days ago)") && html.contains("data-provider") && html.contains("data-service="));
    let de = sc.get("/de/domain/ownmail.example").text();
    assert!(de.contains("(vor 10 Tagen)"), "{de}");
    // The review queue: a name with its own mail server (100) registered 10 days ago (+300).
    wait_for("the queue entry to know the age", Duration::from_secs(20), || {
        let r = Request::get("/admin/v1/reviews?q=ownmail").send(sc.admin_addr());
        assert_eq!(r.status, 200, "{r}");
        (r.json()["queue"][0]["likelihood"] == 400).then_some(())
    });
    // One request for all of it: the registered domain only, never the local part.
    let seen = rdap.seen();
    let targets: Vec<&str> = seen.iter().map(|s| s.target.as_str()).collect();
    assert_eq!(targets, ["/rdap/domain/ownmail.example"]);
    for s in &seen {
        for (name, value) in &s.headers {
            assert!(!value.contains("secret") && !value.contains("tag"), "{name}: {value}");
        }
    }
    let logs = format!("{}{}", sc.stderr_text(), sc.stdout_text());
    assert!(!logs.contains("secret.person"), "the local part reached the log:\n{logs}");
}

#[test]
fn a_404_or_a_tld_without_a_service_leaves_it_absent() {
    let (sc, _nsd, rdap) = setup(vec![("shopco.example", status(404, &[]))], &["--rdap"]);
    wait_for("the RDAP request for shopco.example", Duration::from_secs(20), || {
        let d = details(&sc, "shopco.example");
        assert!(d.get("domain_age_days").is_none(), "{d:#}");
        (!rdap.seen().is_empty()).then_some(())
    });
    // Answered or not yet, the 404 is asked once (cached, or still under way) and gives nothing.
    for _ in 0..5 {
        let d = details(&sc, "shopco.example");
        assert!(d.get("domain_age_days").is_none(), "{d:#}");
        assert_eq!(d["provider"], "Microsoft 365", "the other details stand");
    }
    assert_eq!(rdap.seen().len(), 1);
    // gmail.com: this bootstrap file has no service for .com; doesnotexist.example: NXDOMAIN.
    for input in ["gmail.com", "ann%40gmail.com", "doesnotexist.example"] {
        assert!(details(&sc, input).get("domain_age_days").is_none(), "{input}");
    }
    assert_eq!(rdap.seen().len(), 1, "{:?}", rdap.seen());
}

#[test]
fn a_lookup_answers_while_the_rdap_server_holds_the_request() {
    let (sc, _nsd, rdap) = setup(vec![("nomx.example", Served::Hang)], &["--rdap", "--rdap-timeout-ms", "60000"]);
    let d = details(&sc, "nomx.example");
    assert!(d.get("domain_age_days").is_none(), "{d:#}");
    wait_for("the RDAP server to hold the request", Duration::from_secs(20), || (rdap.holding() == 1).then_some(()));
    // The server holds the sidecar's request (60 s timeout): the lookup answers all the same.
    let r = sc.lookup("nomx.example");
    assert_eq!(r.status, 200, "{r}");
    assert!(r.json()["details"].get("domain_age_days").is_none());
    let page = sc.get("/en/domain/nomx.example");
    assert_eq!(page.status, 200);
    assert!(!page.text().contains("data-age-days"));
    assert_eq!(rdap.holding(), 1, "the RDAP request was still held while the lookups answered");
    assert_eq!(rdap.seen().len(), 1, "and not asked again meanwhile");
}

#[test]
fn a_429_keeps_the_sidecar_away_until_its_retry_after() {
    let registered = now() - 400 * 86_400;
    let (sc, _nsd, rdap) = setup(
        vec![
            ("ownmail.example", status(429, &[("Retry-After", "2")])),
            ("shopco.example", domain_object("shopco.example", registered)),
        ],
        &["--rdap"],
    );
    assert!(details(&sc, "ownmail.example").get("domain_age_days").is_none());
    wait_for("the 429", Duration::from_secs(20), || (!rdap.seen().is_empty()).then_some(()));
    // Another domain on the same server: asked only once the 2 s are over.
    assert_eq!(age_when_known(&sc, "shopco.example"), 400);
    let seen = rdap.seen();
    let targets: Vec<&str> = seen.iter().map(|s| s.target.as_str()).collect();
    assert_eq!(targets, ["/rdap/domain/ownmail.example", "/rdap/domain/shopco.example"]);
    let waited = seen[1].at.duration_since(seen[0].at);
    assert!(waited >= Duration::from_secs(2), "asked again after {waited:?}, before Retry-After: 2");
    assert!(details(&sc, "ownmail.example").get("domain_age_days").is_none());
}

#[test]
fn off_by_default_nothing_is_asked() {
    let (sc, _nsd, rdap) = setup(vec![("ownmail.example", domain_object("ownmail.example", now() - 86_400))], &[]);
    for input in ["ownmail.example", "ann%40ownmail.example", "shopco.example"] {
        let d = details(&sc, input);
        assert!(d.get("domain_age_days").is_none(), "{input}: {d:#}");
    }
    assert!(!sc.get("/en/domain/ownmail.example").text().contains("data-age-days"));
    // Whatever a background worker would have done, it would have done by the time a fetch
    // that is on (the other tests) gets its answer: nothing may arrive in that time.
    std::thread::sleep(Duration::from_millis(1500));
    assert!(details(&sc, "ownmail.example").get("domain_age_days").is_none());
    assert!(rdap.seen().is_empty(), "{:?}", rdap.seen());
    assert!(!sc.stderr_text().contains("domain age from RDAP: on"));
}
