//! Issue 43: the sidecar's gRPC ext_authz listener (`--ext-authz-grpc-listen`) called directly,
//! as Envoy calls it, with an HTTP/2 client: the key from the call's metadata or from the
//! signup's headers, the body from `raw_body` or `body`, the statuses of calls it cannot read,
//! an oversized message, and a clean exit on SIGTERM.

use email_verdict::grpc_authz::proto::{AttributeContext, CheckRequest, HttpRequest, Request as AttrRequest};
use email_verdict_tests::nsd::Nsd;
use email_verdict_tests::sidecar::Sidecar;
use email_verdict_tests::{Request, free_port};
use std::net::SocketAddr;
use std::time::Duration;

#[path = "common/grpc_check.rs"]
mod grpc_check;
use grpc_check::{Answer, CHECK, call, framed};

/// A `CheckRequest` for `POST /signup` with a JSON body (as `raw_body`, or `body` when `string`).
fn check_request(body: &str, string: bool, headers: &[(&str, &str)]) -> CheckRequest {
    let mut http = HttpRequest { method: "POST".into(), path: "/signup".into(), ..Default::default() };
    http.headers.insert("content-type".into(), "application/json".into());
    for (name, value) in headers {
        http.headers.insert((*name).into(), (*value).into());
    }
    if string {
        http.body = body.into();
    } else {
        http.raw_body = body.as_bytes().to_vec();
    }
    let request = AttrRequest { http: Some(http) };
    CheckRequest { attributes: Some(AttributeContext { source: None, request: Some(request) }) }
}

fn denied_status(answer: &Answer) -> Option<(i32, i32)> {
    match answer {
        Answer::Message(m) => {
            Some((m.status.as_ref()?.code, m.denied_response.as_ref().and_then(|d| d.status.as_ref())?.code))
        }
        Answer::Status(..) => None,
    }
}

#[test]
fn calls_as_envoy_makes_them() {
    let nsd = Nsd::start();
    let grpc = SocketAddr::from(([127, 0, 0, 1], free_port()));
    let mut sidecar = Sidecar::builder()
        .dns(nsd.addr())
        .keys(&["gateway"])
        .args(&["--ext-authz-grpc-listen", &grpc.to_string()])
        .start();
    let key = sidecar.key().to_owned();
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let disposable = r#"{"email":"temp.user@mailinator.com"}"#;
    let safe = r#"{"email":"jane@gmail.com"}"#;
    runtime.block_on(async {
        let with_key = [("x-email-verdict-key", key.as_str())];
        // The key in the call's metadata; the body as bytes, then as a string: refused alike.
        for string in [false, true] {
            let answer = call(grpc, CHECK, &with_key, framed(&check_request(disposable, string, &[]))).await;
            assert_eq!(denied_status(&answer), Some((7, 403)), "string body: {string}: {answer:?}");
            let Answer::Message(m) = answer else { unreachable!() };
            let denied = m.denied_response.unwrap();
            assert!(denied.body.contains("disposable_email"), "{}", denied.body);
        }
        // Allowed: the flag headers to set, the others (and the key) to remove.
        let answer = call(grpc, CHECK, &with_key, framed(&check_request(safe, false, &[]))).await;
        let Answer::Message(m) = answer else { panic!("{answer:?}") };
        assert_eq!(m.status.unwrap().code, 0);
        let ok = m.ok_response.expect("ok_response");
        let set: Vec<(&str, &str)> =
            ok.headers.iter().map(|h| h.header.as_ref().unwrap()).map(|h| (h.key.as_str(), h.value.as_str())).collect();
        assert!(
            set.contains(&("x-email-verdict", "safe")) && set.contains(&("x-email-domain", "gmail.com")),
            "{set:?}"
        );
        assert!(ok.headers_to_remove.iter().any(|h| h == "x-email-verdict-bypass"), "{:?}", ok.headers_to_remove);
        assert!(ok.headers_to_remove.iter().any(|h| h == "x-email-verdict-key"), "{:?}", ok.headers_to_remove);
        // The key in the signup's own headers when the metadata has none.
        let in_headers = check_request(disposable, false, &[("x-email-verdict-key", &key)]);
        assert_eq!(denied_status(&call(grpc, CHECK, &[], framed(&in_headers)).await), Some((7, 403)));
        // No key, or a wrong one: our failure, the call's own UNAVAILABLE (Envoy's failure mode).
        let no_key = call(grpc, CHECK, &[], framed(&check_request(safe, false, &[]))).await;
        assert!(matches!(&no_key, Answer::Status(14, m) if m.contains("verdict_unavailable")), "{no_key:?}");
        let wrong = [("x-email-verdict-key", "ev_ffffffffffffffffffffffffffffffffffffffff")];
        let wrong_key = call(grpc, CHECK, &wrong, framed(&check_request(safe, false, &[]))).await;
        assert!(matches!(&wrong_key, Answer::Status(14, m) if m.contains("api_key_invalid")), "{wrong_key:?}");
        // Calls it cannot read: their own statuses, never a panic, never a pass.
        let other = call(grpc, "/grpc.health.v1.Health/Check", &with_key, framed(&CheckRequest::default())).await;
        assert!(matches!(other, Answer::Status(12, _)), "{other:?}");
        let cases: [(&str, Vec<u8>, u32); 5] = [
            ("no prefix", vec![0, 0], 3),
            ("a length that lies", vec![0, 0, 0, 0, 9, 1, 2], 3),
            ("compressed", vec![1, 0, 0, 0, 0], 12),
            ("not a CheckRequest", vec![0, 0, 0, 0, 3, 0x0a, 0xff, 0xff], 3),
            ("no HTTP request", framed(&CheckRequest::default()), 3),
        ];
        for (what, body, code) in cases {
            let answer = call(grpc, CHECK, &with_key, body).await;
            assert!(matches!(answer, Answer::Status(c, _) if c == code), "{what}: {answer:?}");
        }
        // A body over the HTTP check's limit: its refusal, 413, as the HTTP check answers it.
        let big = format!(r#"{{"email":"jane@gmail.com","pad":"{}"}}"#, "x".repeat(10 * 1024 * 1024 + 1));
        let answer = call(grpc, CHECK, &with_key, framed(&check_request(&big, false, &[]))).await;
        assert_eq!(denied_status(&answer), Some((7, 413)), "{:?}", denied_status(&answer));
        // And it still serves.
        let answer = call(grpc, CHECK, &with_key, framed(&check_request(disposable, false, &[]))).await;
        assert_eq!(denied_status(&answer), Some((7, 403)));
    });
    let log = sidecar.stderr_text();
    assert!(!log.contains("temp.user") && !log.contains(&key), "no email, no key in the log\n{log}");
    assert!(!log.contains("panicked"), "{log}");
    let unchecked = log.lines().filter(|l| l.contains("call not checked")).count();
    assert_eq!(unchecked, 6, "one line per call it could not read\n{log}");
    let metrics = Request::get("/metrics").send(sidecar.admin_addr()).text();
    assert!(metrics.contains("email_verdict_ext_authz_checks_total{outcome=\"failed\"} 2"), "{metrics}");
    // SIGTERM: the listener closes with the server, within its grace period.
    let process = sidecar.process();
    process.signal("TERM");
    let status = process.wait_timeout(Duration::from_secs(10)).expect("serve exits on SIGTERM");
    assert!(status.success(), "{status}");
    assert!(std::net::TcpStream::connect_timeout(&grpc, Duration::from_millis(500)).is_err(), "the listener is closed");
}
