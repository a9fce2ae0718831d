//! Issue 15: the filter with `hold_headers: false` in a real Envoy configured WITHOUT
//! `allow_on_headers_stop_iteration` (what Istio's WasmPlugin, TrafficExtension and Envoy
//! Gateway's EnvoyExtensionPolicy produce): disposable signups never reach the app as a complete
//! request, safe ones arrive intact (large bodies in many chunks included), nothing stalls.

use email_verdict_tests::envoy::{FilterBuild, Gateway, each_build, gateway_on, signup};
use email_verdict_tests::{Request, Response};
use serde_json::json;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::time::Duration;

/// Block-only mode; the Wasm filter also without `allow_on_headers_stop_iteration` (what Istio's
/// WasmPlugin gives). The dynamic module has no such setting: it only stops holding the headers.
fn block_only(build: FilterBuild) -> Gateway {
    gateway_on(build, |b| {
        let b = b.set("/hold_headers", json!(false));
        match build {
            FilterBuild::Wasm => {
                b.edit_config("allow_on_headers_stop_iteration: true", "allow_on_headers_stop_iteration: false")
            }
            FilterBuild::Module => b,
        }
    })
}

/// A JSON signup whose body is about `size` bytes, the email last, sent chunked in `chunks`
/// pieces with a pause between them. Returns the status and body of the answer.
fn send_chunked(g: &Gateway, email: &str, size: usize, chunks: usize) -> (u16, String) {
    let padding = "x".repeat(size.saturating_sub(60));
    let body = json!({ "note": padding, "email": email }).to_string().into_bytes();
    let mut stream = TcpStream::connect(g.envoy.addr()).expect("connect to Envoy");
    stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let head = "POST /signup HTTP/1.1\r\nHost: shop.example\r\nContent-Type: application/json\r\n\
                Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n";
    stream.write_all(head.as_bytes()).unwrap();
    let piece = body.len().div_ceil(chunks).max(1);
    for part in body.chunks(piece) {
        stream.write_all(format!("{:x}\r\n", part.len()).as_bytes()).unwrap();
        stream.write_all(part).unwrap();
        stream.write_all(b"\r\n").unwrap();
        std::thread::sleep(Duration::from_millis(2));
    }
    stream.write_all(b"0\r\n\r\n").unwrap();
    let mut reader = BufReader::new(stream);
    let mut status_line = String::new();
    reader.read_line(&mut status_line).expect("an answer, not a stall");
    let status = status_line.split_whitespace().nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
    let mut rest = String::new();
    let _ = reader.read_to_string(&mut rest);
    (status, rest)
}

fn assert_blocked(resp: &Response, what: &str) {
    assert_eq!(resp.status, 403, "{what}\n{resp}");
    assert_eq!(resp.json()["error"], "disposable_email", "{what}");
}

#[test]
fn disposable_signups_never_reach_the_app_in_any_body_format() {
    each_build(|build| {
        let g = block_only(build);
        assert_blocked(&g.envoy.signup_json("temp.user@mailinator.com"), "JSON");
        assert_blocked(&g.envoy.signup_form("temp@mailinator.com"), "urlencoded");
        assert_blocked(&g.envoy.signup_multipart("temp@sub.mailinator.com"), "multipart");
        // Cached now: blocked from the body phase without a callout.
        assert_blocked(&g.envoy.signup_json("again@mailinator.com"), "cached verdict");
        let (status, body) = send_chunked(&g, "chunks@mailinator.com", 60_000, 64);
        assert_eq!(status, 403, "chunked disposable signup: {body}");
        std::thread::sleep(Duration::from_millis(300));
        assert_eq!(g.app.count(), 0, "no complete request reached the app: {:?}", g.app.requests());
        // The headers did go upstream (that is the mode): the app saw requests whose body never ended.
        assert!(g.app.incomplete() >= 1, "the blocked signups' headers went upstream first");
    });
}

#[test]
fn safe_signups_arrive_intact_without_verdict_headers() {
    each_build(|build| {
        let g = block_only(build);
        let body = json!({ "email": "jane@gmail.com", "name": "Jane" }).to_string();
        let resp = g.envoy.send(&signup("application/json", body.as_bytes()).header("x-email-verdict", "disposable"));
        assert_eq!(resp.status, 200, "{resp}");
        let seen = g.app.wait_for_request(1);
        assert_eq!(seen.body, body.as_bytes());
        assert!(seen.header("x-email-verdict").is_none(), "forged header stripped, none added: {:?}", seen.headers);
        // A large body in many chunks, the email at its end: every byte arrives, in order.
        let (status, answer) = send_chunked(&g, "big@gmail.com", 60_000, 200);
        assert_eq!(status, 200, "{answer}");
        let seen = g.app.wait_for_request(2);
        let parsed: serde_json::Value = serde_json::from_slice(&seen.body).expect("the app got the whole JSON body");
        assert_eq!(parsed["email"], "big@gmail.com");
        assert_eq!(parsed["note"].as_str().map(str::len), Some(60_000 - 60));
        // Requests that are not signups are untouched.
        assert_eq!(g.envoy.send(&Request::get("/home")).status, 200);
    });
}

#[test]
fn refusals_still_refuse_and_a_missing_email_goes_on_unmarked() {
    each_build(|build| {
        let g = block_only(build);
        let resp = g.envoy.send(&signup("application/json", br#"{"email":"x@mailinator.com","n":NaN}"#));
        assert_eq!((resp.status, resp.json()["error"].clone()), (400, json!("unreadable_body")), "{resp}");
        let resp = g.envoy.send(&signup("application/json", br#"{"email":"not an email"}"#));
        assert_eq!((resp.status, resp.json()["error"].clone()), (400, json!("invalid_email")), "{resp}");
        let resp = g.envoy.send(&signup("application/json", br#"{"name":"Ann"}"#));
        assert_eq!(resp.status, 200, "{resp}");
        let seen = g.app.wait_for_request(1);
        assert!(seen.header("x-email-verdict-bypass").is_none(), "no header can be added: {:?}", seen.headers);
        assert_eq!(g.app.count(), 1);
    });
}

#[test]
fn flag_mode_without_the_hold_is_refused_by_envoy() {
    each_build(|build| {
        let failure = email_verdict_tests::envoy::EnvoyBuilder::new(
            "127.0.0.1:9".parse().unwrap(),
            "127.0.0.1:9".parse().unwrap(),
        )
        .api_key("ev_0000000000000000000000000000000000000000")
        .build(build)
        .set("/hold_headers", json!(false))
        .set("/mode", json!("flag"))
        .try_start()
        .err()
        .expect("Envoy must refuse the plugin configuration");
        assert!(failure.log.contains("hold_headers: false works only with mode \"block\""), "{}", failure.log);
    });
}

/// Issue 30: Node and Go handlers start on the headers, before the body is complete, so an
/// address in the query is judged before the headers go upstream: a disposable one is refused
/// while the body is still arriving, and the app never sees even the headers. A body address
/// is judged before any byte of the body reaches the app.
#[test]
fn a_query_address_is_judged_before_the_headers_go_upstream() {
    each_build(|build| {
        let g = block_only(build);
        let mut stream = TcpStream::connect(g.envoy.addr()).expect("connect to Envoy");
        stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let head = "POST /signup?email=temp%40mailinator.com HTTP/1.1\r\nHost: shop.example\r\n\
                    Content-Type: application/json\r\nContent-Length: 1000\r\nConnection: close\r\n\r\n";
        stream.write_all(head.as_bytes()).unwrap();
        stream.write_all(br#"{"name":""#).unwrap(); // and nothing more: the body never ends
        let mut status_line = String::new();
        BufReader::new(stream).read_line(&mut status_line).expect("an answer before the body ends");
        assert!(status_line.starts_with("HTTP/1.1 403"), "{status_line}");
        std::thread::sleep(Duration::from_millis(300));
        assert_eq!((g.app.count(), g.app.incomplete()), (0, 0), "the app saw nothing: {:?}", g.app.requests());
        // A safe query address does not make a disposable body address pass.
        let body = json!({ "name": "Ann", "contact": "x@mailinator.com" }).to_string();
        let resp = g.envoy.send(
            &Request::new("POST", "/signup?email=ann%40gmail.com")
                .header("Content-Type", "application/json")
                .body(body.as_bytes()),
        );
        assert_blocked(&resp, "a safe query address, a disposable one in the body");
        std::thread::sleep(Duration::from_millis(300));
        assert_eq!(g.app.count(), 0, "no complete request reached the app: {:?}", g.app.requests());
    });
}
