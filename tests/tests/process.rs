//! The process: its ready line, what its logs never contain, SIGTERM.

use email_verdict_tests::{Request, Sidecar, start};
use std::io::Write;
use std::time::{Duration, Instant};

const UNKNOWN_KEY: &str = "ev_0123456789abcdef0123456789abcdef01234567";

fn exits_zero_after_sigterm(sc: &mut Sidecar, what: &str) {
    let started = Instant::now();
    let status = sc.terminate(Duration::from_secs(10));
    let took = started.elapsed();
    let status = status.unwrap_or_else(|| panic!("{what}: still running 10 s after SIGTERM"));
    assert_eq!(status.code(), Some(0), "{what}: exit status {status} after SIGTERM ({took:?})");
}

#[test]
fn logs_say_ready_and_never_hold_a_key() {
    let (mut sc, _nsd) = start();
    let key = sc.key().to_string();
    let requests = [
        Request::get(&format!("/api/v1/domain/ownmail.example?key={key}")),
        Request::get(&format!("/api/v1/domain/secret.person%40mailinator.com?key={key}")),
        Request::get(&format!("/api/v1/domain/not%20valid?key={key}")),
        Request::get(&format!("/nope?key={key}")),
        Request::get("/api/v1/domain/ownmail.example").bearer(&key),
        Request::get(&format!("/api/v1/domain/ownmail.example?key={UNKNOWN_KEY}")),
        Request::get("/api/v1/domain/ownmail.example").bearer(UNKNOWN_KEY),
        Request::new("POST", &format!("/api/v1/domain/ownmail.example?key={key}")),
    ];
    let ids: Vec<String> =
        requests.iter().filter_map(|r| Some(sc.send(r).header("x-request-id")?.to_owned())).collect();
    assert_eq!(ids.len(), requests.len(), "every answer names its request");
    // a clean exit writes every log line (request lines leave through a queue)
    exits_zero_after_sigterm(&mut sc, "after the requests");
    let logs = format!("{}\n{}", sc.stdout_text(), sc.stderr_text());
    for id in &ids {
        assert_eq!(logs.matches(id.as_str()).count(), 1, "request {id}: one log line\n{logs}");
    }
    assert!(sc.stderr_text().lines().any(|l| l.contains("ready")), "no line containing `ready` on stderr");
    // README: the logs never hold the API key, the query string or the email address
    for secret in
        [key.as_str(), &key[key.len() - 20..], UNKNOWN_KEY, &UNKNOWN_KEY[UNKNOWN_KEY.len() - 20..], "secret.person"]
    {
        let line = logs.lines().find(|l| l.contains(secret));
        assert!(line.is_none(), "the logs contain {secret:?}: {line:?}");
    }
}

#[test]
fn sigterm_exits_zero_promptly() {
    let (mut sc, _nsd) = start();
    sc.lookup_ok("ownmail.example");
    exits_zero_after_sigterm(&mut sc, "idle server");
}

#[test]
fn sigterm_with_open_idle_connections_exits_zero_promptly() {
    let (mut sc, _nsd) = start();
    // a keep-alive connection after a complete exchange, and one that never sent a byte
    let req = Request::get(&format!("/api/v1/domain/ownmail.example?key={}", sc.key()));
    let (resp, _keep_alive) = req.send_keep_alive(sc.addr()).expect("keep-alive request");
    assert_eq!(resp.status, 200, "{resp}");
    let _silent = std::net::TcpStream::connect(sc.addr()).expect("connect");
    let mut partial = std::net::TcpStream::connect(sc.addr()).expect("connect");
    partial.write_all(b"GET /api/v1/domain/own").expect("write");
    exits_zero_after_sigterm(&mut sc, "server with idle connections");
}

#[test]
fn listeners_are_free_again_after_exit() {
    let (mut sc, _nsd) = start();
    let (public, admin) = (sc.addr(), sc.admin_addr());
    exits_zero_after_sigterm(&mut sc, "idle server");
    std::net::TcpListener::bind(public).expect("public port still taken after exit");
    std::net::TcpListener::bind(admin).expect("admin port still taken after exit");
}
