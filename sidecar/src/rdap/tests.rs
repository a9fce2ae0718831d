//! The service against a canned RDAP server on loopback: answers arrive in the background, a
//! lookup never waits, each status comes to its outcome, only the registered domain is asked.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::*;

/// A server answering each request with `answer(path)` (raw HTTP response bytes, or `None` to
/// hold the connection without answering); every request line's path is recorded.
fn server(answer: fn(&str) -> Option<String>) -> (String, Arc<Mutex<Vec<String>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}/rdap/", listener.local_addr().unwrap());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let record = seen.clone();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { continue };
            let mut line = String::new();
            let mut reader = BufReader::new(conn.try_clone().unwrap());
            if reader.read_line(&mut line).is_err() {
                continue;
            }
            while let Ok(n) = reader.read_line(&mut String::new()) {
                if n <= 2 {
                    break;
                }
            }
            let path = line.split(' ').nth(1).unwrap_or_default().to_owned();
            record.lock().unwrap().push(path.clone());
            match answer(&path) {
                Some(response) => {
                    let _ = conn.write_all(response.as_bytes());
                }
                None => held.push(conn),
            }
        }
    });
    (base, seen)
}

fn http(status: &str, headers: &str, body: &str) -> String {
    format!("HTTP/1.1 {status}\r\ncontent-length: {}\r\nconnection: close\r\n{headers}\r\n{body}", body.len())
}

fn domain_json(date: &str) -> String {
    format!(r#"{{"objectClassName": "domain", "events": [{{"eventAction": "registration", "eventDate": "{date}"}}]}}"#)
}

fn answer(path: &str) -> Option<String> {
    match path.rsplit('/').next().unwrap_or_default() {
        "old.example" => {
            Some(http("200 OK", "content-type: application/rdap+json\r\n", &domain_json("2000-01-01T00:00:00Z")))
        }
        "new.test" => Some(http("200 OK", "", &domain_json("2026-11-20T12:00:00Z"))),
        "none.example" => Some(http("200 OK", "", r#"{"objectClassName": "domain", "ldhName": "none.example"}"#)),
        "busy.example" => Some(http("429 Too Many Requests", "retry-after: 600\r\n", "")),
        "down.example" => Some(http("503 Service Unavailable", "", "")),
        "html.example" => Some(http("200 OK", "content-type: text/html\r\n", "<html>maintenance</html>")),
        "hang.example" => None,
        _ => Some(http("404 Not Found", "", "")),
    }
}

fn ages(base: &str, timeout: Duration) -> Arc<DomainAges> {
    let text = format!(r#"{{"services": [[["example", "test"], ["{base}"]]]}}"#);
    let settings = RdapSettings { bootstrap: Arc::new(Bootstrap::parse(&text).unwrap()), timeout, reach: Reach::Any };
    DomainAges::start(&settings, Arc::new(Metrics::new())).unwrap()
}

/// The `rdap_*` lines of the metrics page.
fn rdap_metrics(ages: &DomainAges) -> Vec<String> {
    let text = ages.shared.metrics.encode();
    text.lines().filter(|l| l.starts_with("email_verdict_rdap_") && !l.ends_with(" 0")).map(str::to_owned).collect()
}

fn d(name: &str) -> Domain {
    Domain::parse(name).unwrap()
}

/// Asks until `domain`'s outcome is settled (it has a fresh entry), at most 10 s.
fn settled(ages: &DomainAges, domain: &str) -> Known {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let known = ages.shared.lock().known(domain, Instant::now());
        if matches!(known, Known::Fresh(_)) {
            return known;
        }
        assert!(Instant::now() < deadline, "{domain} never settled");
        std::thread::sleep(Duration::from_millis(10));
    }
}

// 2026-11-25T00:00:00Z
const NOW: i64 = 1_795_564_800;

#[test]
fn an_age_comes_in_the_background_for_the_registered_domain_only() {
    let (base, seen) = server(answer);
    let ages = ages(&base, Duration::from_secs(5));
    assert_eq!(ages.age(&d("mail.old.example"), NOW), None, "not known yet: nothing waits");
    assert_eq!(settled(&ages, "old.example"), Known::Fresh(Some(946_684_800)));
    let age = ages.age(&d("old.example"), NOW).unwrap();
    assert_eq!((age.registered, age.days), (946_684_800, 9825));
    assert_eq!(ages.age(&d("x.y.old.example"), NOW), Some(age), "every name under it");
    let young = {
        ages.age(&d("new.test"), NOW);
        settled(&ages, "new.test");
        ages.age(&d("new.test"), NOW).unwrap()
    };
    assert_eq!(young.days, 4);
    assert_eq!(*seen.lock().unwrap(), ["/rdap/domain/old.example", "/rdap/domain/new.test"], "asked once each");
}

#[test]
fn no_age_without_a_registration_a_known_domain_or_a_service() {
    let (base, seen) = server(answer);
    let ages = ages(&base, Duration::from_secs(5));
    for (name, known) in [
        ("none.example", Known::Fresh(None)),
        ("unknown.example", Known::Fresh(None)),
        ("html.example", Known::Fresh(None)),
        ("down.example", Known::Fresh(None)),
    ] {
        assert_eq!(ages.age(&d(name), NOW), None);
        assert_eq!(settled(&ages, name), known, "{name}");
        assert_eq!(ages.age(&d(name), NOW), None, "{name}");
    }
    // No service for the TLD, a public suffix, a private suffix's name: nothing is asked.
    let asked = seen.lock().unwrap().len();
    for name in ["shop.example.net", "example", "ann.github.io"] {
        if let Ok(domain) = Domain::parse(name) {
            assert_eq!(ages.age(&domain, NOW), None, "{name}");
        }
    }
    assert_eq!(ages.shared.lock().pending(), 0);
    assert_eq!(seen.lock().unwrap().len(), asked);
}

#[test]
fn a_lookup_does_not_wait_for_a_server_that_holds_the_request() {
    let (base, seen) = server(answer);
    let ages = ages(&base, Duration::from_secs(3));
    assert_eq!(ages.age(&d("hang.example"), NOW), None);
    // The server holds the request: asking again answers at once, and queues nothing more.
    let deadline = Instant::now() + Duration::from_secs(5);
    while seen.lock().unwrap().is_empty() {
        assert!(Instant::now() < deadline, "the request never came");
        std::thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(ages.age(&d("hang.example"), NOW), None);
    assert_eq!(ages.shared.lock().pending(), 1, "answered while the request is still held");
    assert_eq!(settled(&ages, "hang.example"), Known::Fresh(None), "timed out: a failure, kept briefly");
    assert_eq!(seen.lock().unwrap().len(), 1);
}

#[test]
fn a_rate_limited_server_is_not_asked_before_its_retry_after() {
    let (base, seen) = server(answer);
    let ages = ages(&base, Duration::from_secs(5));
    ages.age(&d("busy.example"), NOW);
    let deadline = Instant::now() + Duration::from_secs(10);
    while ages.shared.lock().pending() > 0 {
        assert!(Instant::now() < deadline);
        std::thread::sleep(Duration::from_millis(5));
    }
    for name in ["old.example", "new.test", "busy.example"] {
        assert_eq!(ages.age(&d(name), NOW), None);
    }
    assert_eq!(ages.shared.lock().pending(), 0, "nothing queued for the server while it waits");
    assert_eq!(*seen.lock().unwrap(), ["/rdap/domain/busy.example"]);
    assert_eq!(rdap_metrics(&ages), [r#"email_verdict_rdap_requests_total{outcome="rate_limited"} 1"#]);
}

#[test]
fn the_queue_is_bounded() {
    let (base, _seen) = server(|_| None);
    let ages = ages(&base, Duration::from_secs(5));
    for i in 0..(QUEUE + WORKERS) * 3 {
        ages.age(&d(&format!("flood{i}.example")), NOW);
    }
    let pending = ages.shared.lock().pending();
    assert!(pending <= QUEUE + WORKERS, "{pending}");
    let not_queued = rdap_metrics(&ages)
        .iter()
        .find_map(|l| l.strip_prefix("email_verdict_rdap_not_queued_total ")?.parse::<usize>().ok())
        .unwrap_or(0);
    // Workers take jobs off the queue while the loop runs, so a few more than QUEUE + WORKERS
    // may be accepted; every one refused is counted, and none twice.
    let total = (QUEUE + WORKERS) * 3;
    assert!(not_queued >= total - QUEUE - 2 * WORKERS, "refusals counted: {not_queued}");
    assert!(not_queued + pending <= total, "{not_queued} + {pending}");
}

#[test]
fn hosts_for_the_log() {
    assert_eq!(host_of("https://rdap.example.com/rdap/"), "rdap.example.com");
    assert_eq!(host_of("http://user:pw@127.0.0.1:8080/x"), "127.0.0.1:8080");
}
