//! One callout per domain at a time (filter/CONFIG.md, "The cache"): concurrent signups for one
//! uncached domain share their worker's callout, in a real Envoy, on both builds of the filter.
//! The sidecar here is a stand-in that answers every lookup slowly and counts them, so that the
//! signups are all waiting while the first callout is in flight.

use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use email_verdict_tests::envoy::{EnvoyBuilder, each_build};
use email_verdict_tests::{Request, UpstreamApp};
use serde_json::json;

const DOMAIN: &str = "stampede.example";

/// A sidecar that answers each `GET /api/v1/domain/<d>` with a disposable verdict after
/// `delay`, and anything else with a 404; it counts the lookups it received.
struct SlowSidecar {
    addr: SocketAddr,
    lookups: Arc<Mutex<Vec<String>>>,
}

impl SlowSidecar {
    fn start(delay: Duration) -> SlowSidecar {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let lookups = Arc::new(Mutex::new(Vec::new()));
        let seen = Arc::clone(&lookups);
        std::thread::spawn(move || {
            for conn in listener.incoming().flatten() {
                let seen = Arc::clone(&seen);
                std::thread::spawn(move || serve(conn, &seen, delay));
            }
        });
        SlowSidecar { addr, lookups }
    }

    fn lookups(&self) -> usize {
        let prefix = format!("/api/v1/domain/{DOMAIN}");
        self.lookups.lock().unwrap().iter().filter(|p| p.starts_with(&prefix)).count()
    }
}

/// One keep-alive connection from Envoy: request after request (callouts carry no body).
fn serve(conn: TcpStream, seen: &Mutex<Vec<String>>, delay: Duration) {
    let mut writer = conn.try_clone().unwrap();
    let mut reader = BufReader::new(conn);
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let path = line.split_whitespace().nth(1).unwrap_or("").to_string();
        loop {
            let mut header = String::new();
            if reader.read_line(&mut header).unwrap_or(0) == 0 {
                return;
            }
            if header == "\r\n" {
                break;
            }
        }
        let (status, body) = if path.starts_with("/api/v1/domain/") {
            seen.lock().unwrap().push(path.clone());
            std::thread::sleep(delay);
            ("200 OK", lookup_body())
        } else {
            ("404 Not Found", r#"{"error":{"code":"not_found","message":"m"}}"#.to_string())
        };
        let answer = format!(
            "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
            body.len()
        );
        if writer.write_all(answer.as_bytes()).is_err() {
            return;
        }
    }
}

fn lookup_body() -> String {
    json!({
        "request_id": "stand-in", "input": DOMAIN, "input_type": "domain", "email": "", "domain": DOMAIN,
        "result": {
            "verdict": "disposable", "disposable": true, "temporary": true, "safe": false,
            "free_provider": false, "business_email": false, "shared_mx": false, "has_mx": true,
            "domain_exists": true, "mx_records": [], "mx_ip_address": [], "level": "critical",
            "recommendation": "block", "cached": false, "allowlisted": false, "blocked": false,
            "mx_ip_match": false, "review_required": false
        }
    })
    .to_string()
}

fn signup(i: usize) -> Request {
    let body = json!({ "email": format!("user{i}@{DOMAIN}"), "name": "Test User" }).to_string();
    email_verdict_tests::envoy::signup("application/json", body.as_bytes()).timeout(Duration::from_secs(20))
}

#[test]
fn concurrent_signups_for_one_uncached_domain_make_one_callout_per_worker() {
    const WORKERS: u32 = 2;
    const SIGNUPS: usize = 24;
    each_build(|build| {
        let sidecar = SlowSidecar::start(Duration::from_millis(1500));
        let app = UpstreamApp::start();
        let envoy = EnvoyBuilder::new(sidecar.addr, app.addr())
            .api_key("ev_stand_in")
            .concurrency(WORKERS)
            .build(build)
            .start();
        let addr = envoy.addr();
        let statuses: Vec<u16> = std::thread::scope(|s| {
            let sent: Vec<_> = (0..SIGNUPS).map(|i| s.spawn(move || signup(i).send(addr).status)).collect();
            sent.into_iter().map(|t| t.join().unwrap()).collect()
        });
        assert!(statuses.iter().all(|s| *s == 403), "every signup blocked by the shared verdict: {statuses:?}");
        assert_eq!(app.count(), 0);
        let callouts = envoy.counter("email_verdict.callouts").unwrap_or_default();
        assert!(
            (1..=u64::from(WORKERS)).contains(&callouts),
            "{SIGNUPS} concurrent signups for {DOMAIN} made {callouts} callouts on {WORKERS} workers (at most one each)\n{}",
            envoy.stats_matching("email_verdict")
        );
        assert_eq!(sidecar.lookups() as u64, callouts, "the sidecar saw each callout once");
        // The verdict is cached now: the next signup asks nobody.
        assert_eq!(signup(SIGNUPS).send(envoy.addr()).status, 403);
        assert_eq!(sidecar.lookups() as u64, callouts);
    });
}

/// The first signup's client goes away while its callout is in flight (Envoy cancels the
/// callout): one more callout is made for the waiters, and every waiter gets the verdict, none
/// a bypass. The dynamic module hands the flight to a waiting signup, which calls out itself;
/// the Wasm filter's root context calls out (a woken Wasm stream runs inside another context's
/// callback, where its own callout would be answered to that context).
#[test]
fn waiters_do_not_hang_when_the_first_signups_client_goes_away() {
    each_build(|build| {
        let sidecar = SlowSidecar::start(Duration::from_millis(1500));
        let app = UpstreamApp::start();
        let envoy = EnvoyBuilder::new(sidecar.addr, app.addr()).api_key("ev_stand_in").build(build).start();
        let (addr, sidecar) = (envoy.addr(), &sidecar);
        let statuses: Vec<u16> = std::thread::scope(|s| {
            s.spawn(move || {
                // The leader: sends its signup, then closes the connection before the answer.
                let mut conn = TcpStream::connect(addr).unwrap();
                let body = json!({ "email": format!("first@{DOMAIN}") }).to_string();
                let head = format!(
                    "POST /signup HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
                    body.len()
                );
                conn.write_all(head.as_bytes()).unwrap();
                conn.write_all(body.as_bytes()).unwrap();
                while sidecar.lookups() == 0 {
                    std::thread::sleep(Duration::from_millis(10));
                }
                std::thread::sleep(Duration::from_millis(300)); // the waiters are in by now
                drop(conn);
            });
            while sidecar.lookups() == 0 {
                std::thread::sleep(Duration::from_millis(10));
            }
            let sent: Vec<_> = (1..=3).map(|i| s.spawn(move || signup(i).send(addr).status)).collect();
            sent.into_iter().map(|t| t.join().unwrap()).collect()
        });
        assert_eq!(statuses, vec![403, 403, 403], "the waiters got the verdict");
        assert_eq!(sidecar.lookups(), 2, "one callout handed over, no burst");
    });
}
