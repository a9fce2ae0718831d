//! Issue 45, traces: the sidecar continues the caller's trace (W3C `traceparent`, B3) and
//! exports its spans over OTLP/HTTP to a real receiver (`tests/otlp/receiver.py`, on the official
//! `opentelemetry-proto`): the lookup API, `/ext_authz` over HTTP and gRPC, the sampler, tracing
//! off without an endpoint, a bad setting refused at start, and no address or key in any span.

use std::net::SocketAddr;
use std::process::Command;
use std::time::Duration;

#[path = "common/grpc_check.rs"]
mod grpc_check;

use email_verdict::grpc_authz::proto::{AttributeContext, CheckRequest, HttpRequest, Request as AttrRequest};
use email_verdict_tests::otlp::{OtlpReceiver, Span};
use email_verdict_tests::{
    ChildProcess, ListServer, Nsd, Request, Served, Sidecar, SidecarBuilder, TestDir, free_port,
};

const TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const CLIENT_SPAN: &str = "00f067aa0ba902b7";
const EMAIL: &str = "traced.user@ownmail.example";
const WAIT: Duration = Duration::from_secs(15);

/// A sidecar exporting to `receiver`, spans sent 100 ms after they end.
fn traced(nsd: &Nsd, receiver: &OtlpReceiver, configure: impl FnOnce(SidecarBuilder) -> SidecarBuilder) -> Sidecar {
    let builder = Sidecar::builder()
        .dns(nsd.addr())
        .keys(&["gateway"])
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", &receiver.endpoint())
        .env("OTEL_BSP_SCHEDULE_DELAY", "100");
    configure(builder).start()
}

fn lookup(sc: &Sidecar, headers: &[(&str, &str)]) -> email_verdict_tests::Response {
    let mut req =
        Request::get(&format!("/api/v1/domain/{EMAIL}")).header("Authorization", &format!("Bearer {}", sc.key()));
    for (name, value) in headers {
        req = req.header(name, value);
    }
    let resp = sc.send_retrying_429(&req);
    assert_eq!(resp.status, 200, "{resp}");
    resp
}

fn named<'a>(spans: &'a [Span], name: &str) -> &'a Span {
    spans.iter().find(|s| s.name == name).unwrap_or_else(|| panic!("no span {name}: {spans:#?}"))
}

fn has(spans: &[Span], names: &[&str]) -> bool {
    names.iter().all(|n| spans.iter().any(|s| s.name == *n))
}

/// Whether `span` is `ancestor` or under it in `spans`.
fn under(spans: &[Span], span: &Span, ancestor: &Span) -> bool {
    let mut at = span;
    for _ in 0..spans.len() + 1 {
        if at.span_id == ancestor.span_id {
            return true;
        }
        match spans.iter().find(|s| s.span_id == at.parent_span_id) {
            Some(parent) => at = parent,
            None => return false,
        }
    }
    false
}

/// No attribute of any span the receiver holds says the email, its local part or the key.
fn assert_nothing_secret(receiver: &OtlpReceiver, key: &str) {
    let spans = receiver.spans();
    assert!(!spans.is_empty(), "nothing exported to check");
    for span in &spans {
        let attributes = serde_json::Value::Object(span.attributes.clone()).to_string();
        for secret in [EMAIL, "traced.user", key, &key[..12]] {
            assert!(!attributes.contains(secret), "span {} carries {secret:?}: {attributes}", span.name);
        }
        assert!(!span.name.contains("traced.user"), "{}", span.name);
    }
}

#[test]
fn a_lookup_continues_the_callers_w3c_trace() {
    let (nsd, receiver) = (Nsd::start(), OtlpReceiver::start());
    let sc = traced(&nsd, &receiver, |b| b);
    let resp = lookup(&sc, &[("traceparent", &format!("00-{TRACE}-{CLIENT_SPAN}-01"))]);
    let want = ["GET /api/v1/domain/{input}", "lookup", "store.admission", "dns.mx"];
    let spans = receiver.wait_for_trace(TRACE, WAIT, |s| has(s, &want));

    let server = named(&spans, "GET /api/v1/domain/{input}");
    assert_eq!(server.parent_span_id, CLIENT_SPAN, "the server span's parent is the caller's span");
    assert_eq!((server.kind.as_str(), server.service_name.as_str()), ("SERVER", "email-verdict"));
    assert_eq!(server.attribute("http.request.method"), Some(&"GET".into()));
    assert_eq!(server.attribute("http.route"), Some(&"/api/v1/domain/{input}".into()));
    assert_eq!(server.attribute("http.response.status_code"), Some(&200.into()));
    let lookup = named(&spans, "lookup");
    assert_eq!(lookup.parent_span_id, server.span_id, "the lookup under the server span");
    let source = resp.header("x-email-verdict-source").expect("a source header");
    assert_eq!(lookup.attribute("email_verdict.source"), Some(&source.into()));
    assert_eq!(lookup.attribute("email_verdict.verdict"), Some(&"safe".into()));
    assert_eq!(lookup.attribute("email_verdict.cache_hit"), Some(&false.into()));
    let admission = named(&spans, "store.admission");
    assert_eq!(admission.parent_span_id, server.span_id);
    assert_eq!(admission.attribute("email_verdict.plan"), Some(&"gateway".into()));
    assert_eq!(admission.attribute("email_verdict.admitted"), Some(&true.into()));
    let dns = named(&spans, "dns.mx");
    assert!(under(&spans, dns, lookup), "the DNS query under the lookup: {spans:#?}");

    // The log line of the request carries the trace id.
    let logged = sc.stderr_text();
    assert!(logged.lines().any(|l| l.contains(TRACE) && l.contains("request")), "{logged}");
    assert_nothing_secret(&receiver, sc.key());
}

#[test]
fn b3_headers_continue_the_callers_trace() {
    let (nsd, receiver) = (Nsd::start(), OtlpReceiver::start());
    let sc = traced(&nsd, &receiver, |b| b);
    let single = "80f198ee56343ba864fe8b2a57d3eff7";
    lookup(&sc, &[("b3", &format!("{single}-e457b5a2e4d86bd1-1-05e3ac9a4f6e3b90"))]);
    let spans = receiver.wait_for_trace(single, WAIT, |s| has(s, &["GET /api/v1/domain/{input}"]));
    assert_eq!(named(&spans, "GET /api/v1/domain/{input}").parent_span_id, "e457b5a2e4d86bd1");

    let multi = "463ac35c9f6413ad48485a3953bb6124";
    lookup(&sc, &[("x-b3-traceid", multi), ("x-b3-spanid", "a2fb4a1d1a96d312"), ("x-b3-sampled", "1")]);
    let spans = receiver.wait_for_trace(multi, WAIT, |s| has(s, &["GET /api/v1/domain/{input}", "lookup"]));
    assert_eq!(named(&spans, "GET /api/v1/domain/{input}").parent_span_id, "a2fb4a1d1a96d312");
}

#[test]
fn a_request_without_trace_context_starts_a_root_trace() {
    let (nsd, receiver) = (Nsd::start(), OtlpReceiver::start());
    let sc = traced(&nsd, &receiver, |b| b);
    lookup(&sc, &[]);
    let server = email_verdict_tests::wait_for("the server span", WAIT, || {
        receiver.spans().into_iter().find(|s| s.name == "GET /api/v1/domain/{input}")
    });
    assert_eq!(server.parent_span_id, "", "a root span");
    assert_ne!(server.trace_id, TRACE);
    let spans = receiver.wait_for_trace(&server.trace_id, WAIT, |s| has(s, &["lookup"]));
    assert_eq!(named(&spans, "lookup").parent_span_id, server.span_id);
}

#[test]
fn the_rdap_request_joins_the_trace_of_the_lookup_that_queued_it() {
    let (nsd, receiver, rdap) = (Nsd::start(), OtlpReceiver::start(), ListServer::start());
    let empty = Served::Reply { status: 404, headers: vec![], body: String::new() };
    rdap.serve("/rdap/domain/ownmail.example", empty);
    let bootstrap = serde_json::json!({
        "description": "test", "publication": "2026-11-25T00:00:00Z", "version": "1.0",
        "services": [[["example"], [rdap.url("/rdap/")]]],
    });
    let dir = TestDir::new("rdap-bootstrap");
    let file = dir.write("dns.json", &bootstrap.to_string()).display().to_string();
    let sc = traced(&nsd, &receiver, |b| b.args(&["--rdap", "--rdap-bootstrap", &file, "--allow-private-outbound"]));
    lookup(&sc, &[("traceparent", &format!("00-{TRACE}-{CLIENT_SPAN}-01"))]);
    let spans = receiver.wait_for_trace(TRACE, WAIT, |s| has(s, &["lookup", "rdap"]));
    let rdap_span = named(&spans, "rdap");
    assert_eq!(rdap_span.parent_span_id, named(&spans, "lookup").span_id, "{spans:#?}");
    assert_eq!(rdap_span.kind, "CLIENT");
    assert!(rdap_span.attribute("email_verdict.outcome").is_some(), "{rdap_span:?}");
}

/// One unary `Check` on a fresh HTTP/2 connection, `metadata` as request headers; the answer's
/// `grpc-status` (`0` when a `CheckResponse` came back).
async fn grpc_check(addr: SocketAddr, metadata: &[(&str, &str)], body: &str) -> String {
    let mut http = HttpRequest { method: "POST".into(), path: "/signup".into(), ..Default::default() };
    http.headers.insert("content-type".into(), "application/json".into());
    http.raw_body = body.as_bytes().to_vec();
    let check = CheckRequest {
        attributes: Some(AttributeContext { source: None, request: Some(AttrRequest { http: Some(http) }) }),
    };
    match grpc_check::call(addr, grpc_check::CHECK, metadata, grpc_check::framed(&check)).await {
        grpc_check::Answer::Message(response) => {
            assert!(response.status.is_some(), "a CheckResponse without a status: {response:?}");
            "0".to_owned()
        }
        grpc_check::Answer::Status(status, message) => format!("{status} {message}"),
    }
}

#[test]
fn ext_authz_over_http_and_grpc_continues_the_callers_trace() {
    let (nsd, receiver) = (Nsd::start(), OtlpReceiver::start());
    let grpc = SocketAddr::from(([127, 0, 0, 1], free_port()));
    let config = email_verdict_tests::workspace_root().join("envoy/ext-authz-config.json").display().to_string();
    let sc = traced(&nsd, &receiver, |b| {
        b.args(&["--ext-authz-config", &config, "--ext-authz-grpc-listen", &grpc.to_string()])
    });
    let body = format!(r#"{{"email":"{EMAIL}"}}"#);

    let http_trace = "0af7651916cd43dd8448eb211c80319c";
    let req = Request::new("POST", "/ext_authz/signup")
        .header("content-type", "application/json")
        .header("x-email-verdict-key", sc.key())
        .header("traceparent", &format!("00-{http_trace}-b7ad6b7169203331-01"))
        .body(body.as_bytes());
    let resp = sc.send(&req);
    assert_eq!(resp.status, 200, "{resp}");
    let spans =
        receiver.wait_for_trace(http_trace, WAIT, |s| has(s, &["POST /ext_authz/{path}", "ext_authz.check", "lookup"]));
    let server = named(&spans, "POST /ext_authz/{path}");
    assert_eq!(server.parent_span_id, "b7ad6b7169203331");
    let check = named(&spans, "ext_authz.check");
    assert_eq!(check.parent_span_id, server.span_id);
    assert_eq!(check.attribute("email_verdict.outcome"), server.attribute("email_verdict.outcome"));
    assert!(under(&spans, named(&spans, "lookup"), check), "{spans:#?}");

    let grpc_trace = "5b8efff798038103d269b633813fc60c";
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let traceparent = format!("00-{grpc_trace}-eee19b7ec3c1b174-01");
    let metadata = [("x-email-verdict-key", sc.key()), ("traceparent", traceparent.as_str())];
    assert_eq!(runtime.block_on(grpc_check(grpc, &metadata, &body)), "0");
    let name = "envoy.service.auth.v3.Authorization/Check";
    let spans = receiver.wait_for_trace(grpc_trace, WAIT, |s| has(s, &[name, "ext_authz.check", "lookup"]));
    let server = named(&spans, name);
    assert_eq!((server.parent_span_id.as_str(), server.kind.as_str()), ("eee19b7ec3c1b174", "SERVER"));
    assert_eq!(server.attribute("rpc.grpc.status_code"), Some(&0.into()));
    assert_eq!(named(&spans, "ext_authz.check").parent_span_id, server.span_id);
    assert_nothing_secret(&receiver, sc.key());
}

#[test]
fn the_last_spans_are_sent_on_sigterm() {
    let (nsd, receiver) = (Nsd::start(), OtlpReceiver::start());
    // A batch would leave only after a minute: what arrives was sent by the exit's flush.
    let mut sc = traced(&nsd, &receiver, |b| b.env("OTEL_BSP_SCHEDULE_DELAY", "60000"));
    lookup(&sc, &[("traceparent", &format!("00-{TRACE}-{CLIENT_SPAN}-01"))]);
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(receiver.spans().len(), 0, "nothing sent before the exit");
    let status = sc.terminate(Duration::from_secs(15)).expect("exits on SIGTERM");
    assert!(status.success(), "{status:?}\n{}", sc.stderr_text());
    let spans = receiver.spans();
    assert!(has(&spans, &["GET /api/v1/domain/{input}", "lookup"]), "{spans:#?}");
}

/// Waits long enough for a batch to have been sent (the schedule is 100 ms), then asserts none was.
fn assert_nothing_exported(receiver: &OtlpReceiver) {
    std::thread::sleep(Duration::from_millis(1500));
    assert_eq!(receiver.spans().len(), 0, "{:#?}", receiver.spans());
}

#[test]
fn the_always_off_sampler_exports_nothing() {
    let (nsd, receiver) = (Nsd::start(), OtlpReceiver::start());
    let sc = traced(&nsd, &receiver, |b| b.env("OTEL_TRACES_SAMPLER", "always_off"));
    lookup(&sc, &[("traceparent", &format!("00-{TRACE}-{CLIENT_SPAN}-01"))]);
    lookup(&sc, &[]);
    assert_nothing_exported(&receiver);
}

#[test]
fn without_an_endpoint_nothing_is_exported_and_nothing_is_said() {
    let (nsd, receiver) = (Nsd::start(), OtlpReceiver::start());
    // The other variables alone do not turn tracing on, nor are they checked.
    let sc = Sidecar::builder()
        .dns(nsd.addr())
        .keys(&["gateway"])
        .env("OTEL_SERVICE_NAME", "gate")
        .env("OTEL_TRACES_SAMPLER", "not-a-sampler")
        .start();
    lookup(&sc, &[("traceparent", &format!("00-{TRACE}-{CLIENT_SPAN}-01"))]);
    assert_nothing_exported(&receiver);
    let logged = sc.stderr_text();
    assert!(!logged.contains(TRACE) && !logged.contains("traces"), "{logged}");
}

#[test]
fn a_bad_tracing_setting_stops_the_start_with_one_line() {
    let dir = TestDir::new("otel-bad");
    for (name, value) in [
        ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"),
        ("OTEL_TRACES_SAMPLER", "sometimes"),
        ("OTEL_EXPORTER_OTLP_HEADERS", "no-equals-sign"),
    ] {
        let (listen, admin) = (free_port(), free_port());
        let mut cmd = Command::new(email_verdict_tests::sidecar::binary());
        cmd.env_clear()
            .args([
                "serve",
                "--listen",
                &format!("127.0.0.1:{listen}"),
                "--admin-listen",
                &format!("127.0.0.1:{admin}"),
            ])
            .args(["--state", &format!("sqlite:{}", dir.join("state.db").display())])
            .env("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:9")
            .env(name, value);
        // A build that ignores the setting serves on: stopped after a while rather than awaited.
        let mut process = ChildProcess::spawn(&format!("serve-{name}"), cmd, dir.path());
        let status = process.wait_timeout(Duration::from_secs(20));
        let stderr = process.stderr_text();
        assert_eq!(status.and_then(|s| s.code()), Some(2), "{name}={value}: {stderr}");
        let said: Vec<&str> = stderr.lines().filter(|l| l.contains(name)).collect();
        assert_eq!(said.len(), 1, "{name}={value}: one line naming it: {stderr}");
        assert!(said[0].starts_with("email-verdict: "), "{stderr}");
    }
}
