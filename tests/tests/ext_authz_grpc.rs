//! Issue 43: Envoy's ext_authz over gRPC (`envoy/ext-authz-grpc.template.yaml`:
//! `envoy.service.auth.v3.Authorization/Check`, `with_request_body.pack_as_bytes`) against the
//! sidecar's `--ext-authz-grpc-listen`, in a real Envoy, on NSD's fixture zones. The gRPC check
//! is the HTTP check's decision: the same refusals byte for byte, the same flag headers, the same
//! counts, and Envoy's failure mode when the sidecar cannot answer.

use email_verdict_tests::envoy::{Envoy, EnvoyBuilder, Gateway, grpc_ext_authz_gateway, signup};
use email_verdict_tests::nsd::Nsd;
use email_verdict_tests::sidecar::{Sidecar, SidecarBuilder};
use email_verdict_tests::{Request, Response, UpstreamApp, VERDICT_HEADERS, free_port};
use serde_json::json;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

const TEMPLATE: &str = "ext-authz-grpc.template.yaml";

fn shipped_config() -> String {
    email_verdict_tests::workspace_root().join("envoy/ext-authz-config.json").display().to_string()
}

/// The gRPC gateway (NSD, the sidecar with its gRPC listener, a recording app, Envoy checking over
/// gRPC) and a second Envoy in front of the same sidecar and app checking over HTTP.
struct Stacks {
    http: Envoy,
    g: Gateway,
    grpc_addr: SocketAddr,
}

fn stacks_with(args: &[&str], configure: impl FnOnce(EnvoyBuilder) -> EnvoyBuilder) -> Stacks {
    let config = shipped_config();
    let sidecar = |b: SidecarBuilder| b.args(&["--ext-authz-config", &config]).args(args);
    let (g, grpc_addr) = grpc_ext_authz_gateway(sidecar, configure);
    let http = EnvoyBuilder::new(g.sidecar.addr(), g.app.addr()).api_key(g.sidecar.key()).ext_authz().start();
    Stacks { http, g, grpc_addr }
}

fn stacks() -> Stacks {
    stacks_with(&[], |e| e)
}

/// The refusal as a client sees it: status, content type and body.
fn refusal(resp: &Response) -> (u16, Option<String>, String) {
    (resp.status, resp.header("content-type").map(str::to_owned), resp.text())
}

#[test]
fn a_disposable_signup_is_refused_exactly_as_the_http_check_refuses_it() {
    let s = stacks();
    let cases: Vec<(&str, Request)> = vec![
        ("JSON", signup("application/json", br#"{"email":"temp.user@mailinator.com","name":"T"}"#)),
        ("urlencoded", signup("application/x-www-form-urlencoded", b"name=T&email=Temp.User%2Bx%40Mailinator.COM")),
        ("query", Request::new("POST", "/signup?email=q%40mailinator.com")),
        ("invalid", signup("application/json", br#"{"email":"not an email"}"#)),
        ("unreadable", signup("application/json", br#"{"email":"x@mailinator.com","n":NaN}"#)),
    ];
    for (what, req) in &cases {
        let (grpc, http) = (s.g.envoy.send(req), s.http.send(req));
        assert!(grpc.status >= 400 && grpc.status < 500, "{what}: refused over gRPC\n{grpc}");
        assert_eq!(refusal(&grpc), refusal(&http), "{what}: the gRPC check's refusal is the HTTP check's");
    }
    assert_eq!(s.g.envoy.send(&cases[0].1).json()["error"], "disposable_email");
    // Multipart, with a binary file before the address (raw_body carries the bytes unchanged).
    let body = [
        &b"--B\r\nContent-Disposition: form-data; name=\"avatar\"; filename=\"a.bin\"\r\n"[..],
        b"Content-Type: application/octet-stream\r\n\r\n\xff\xfe\x00\x80\r\n",
        b"--B\r\nContent-Disposition: form-data; name=\"email\"\r\n\r\nsomeone@sub.mailinator.com\r\n--B--\r\n",
    ]
    .concat();
    let resp = s.g.envoy.send(&signup("multipart/form-data; boundary=B", &body));
    assert_eq!((resp.status, resp.json()["error"].clone()), (403, json!("disposable_email")), "{resp}");
    assert_eq!(s.g.app.count(), 0, "no refused signup reaches the app: {:?}", s.g.app.requests());
    let log = s.g.sidecar.stderr_text();
    assert!(log.contains("route=\"ext_authz_grpc\""), "one log line per gRPC check\n{log}");
    assert!(!log.contains("temp.user") && !log.contains(s.g.sidecar.key()), "no email, no key in the log\n{log}");
    let metrics = Request::get("/metrics").send(s.g.sidecar.admin_addr()).text();
    let refused = "email_verdict_ext_authz_checks_total{outcome=\"refused\"} 4";
    assert!(metrics.contains(refused), "both checks counted alike (2 invalid/unreadable, both ways)\n{metrics}");
}

#[test]
fn a_safe_signup_reaches_the_app_with_the_flag_headers_and_forgeries_are_removed() {
    let s = stacks();
    let body = json!({ "email": "Jane.Doe@GMAIL.com", "name": "Jane" }).to_string();
    let req = signup("application/json", body.as_bytes())
        .header("x-email-verdict", "disposable")
        .header("x-email-flags", "allowlisted")
        .header("x-email-verdict-bypass", "no_email")
        .header("x-email-suggestion", "forged.example")
        .header("x-email-verdict-key", "ev_ffffffffffffffffffffffffffffffffffffffff");
    let resp = s.g.envoy.send(&req);
    assert_eq!(resp.status, 200, "{resp}");
    let seen = s.g.app.wait_for_request(1);
    assert_eq!(seen.headers_named("x-email-verdict"), ["safe"], "{:?}", seen.headers);
    assert_eq!(seen.headers_named("x-email-domain"), ["gmail.com"]);
    let flags = seen.headers_named("x-email-flags");
    assert!(flags.len() == 1 && flags[0].contains("free_provider") && !flags[0].contains("allowlisted"), "{flags:?}");
    for removed in ["x-email-verdict-bypass", "x-email-suggestion", "x-email-verdict-key"] {
        assert!(seen.header(removed).is_none(), "{removed} reached the app: {:?}", seen.headers);
    }
    assert_eq!(seen.body, body.as_bytes(), "the body arrives intact");
    // The shipped configuration counts signups; the client is the check's source address.
    assert_eq!(seen.headers_named("x-email-client-signups"), ["1"], "{:?}", seen.headers);
    // The HTTP check sets the same headers for the same signup.
    let other = json!({ "email": "Jane.Doe@GMAIL.com", "name": "Jane" }).to_string();
    assert_eq!(s.http.send(&signup("application/json", other.as_bytes())).status, 200);
    let by_http = s.g.app.wait_for_request(2);
    for name in ["x-email-verdict", "x-email-domain", "x-email-flags", "x-email-normalized", "x-email-role"] {
        assert_eq!(seen.headers_named(name), by_http.headers_named(name), "{name}");
    }
    // A signup without an address: through, marked; a request off the signup route: unchecked,
    // with every forged verdict header stripped.
    let resp = s.g.envoy.send(&signup("application/json", br#"{"name":"Ann"}"#).header("x-email-verdict", "safe"));
    assert_eq!(resp.status, 200, "{resp}");
    let seen = s.g.app.wait_for_request(3);
    assert_eq!(seen.headers_named("x-email-verdict-bypass"), ["no_email"], "{:?}", seen.headers);
    assert!(seen.header("x-email-verdict").is_none(), "{:?}", seen.headers);
    assert_eq!(s.g.envoy.send(&Request::new("GET", "/home").header("x-email-verdict", "safe")).status, 200);
    let seen = s.g.app.wait_for_request(4);
    for h in VERDICT_HEADERS {
        assert!(seen.header(h).is_none(), "a forged {h} reached the app: {:?}", seen.headers);
    }
    assert!(seen.header("x-email-verdict-key").is_none(), "the key reached the app: {:?}", seen.headers);
}

#[test]
fn a_stopped_or_refusing_sidecar_gives_the_operators_failure_mode() {
    let app = UpstreamApp::start();
    let dead = SocketAddr::from(([127, 0, 0, 1], free_port()));
    let key = "ev_0123456789abcdef0123456789abcdef01234567";
    let closed = EnvoyBuilder::new(dead, app.addr()).api_key(key).ext_authz_grpc().start();
    assert_eq!(closed.signup_json("jane@gmail.com").status, 503, "failure_mode_allow false: refused");
    assert_eq!(app.count(), 0);
    let open = EnvoyBuilder::new(dead, app.addr())
        .api_key(key)
        .ext_authz_grpc()
        .placeholder("FAILURE_MODE_ALLOW", "true")
        .start();
    let req = signup("application/json", br#"{"email":"jane@gmail.com"}"#).header("x-email-verdict", "safe");
    assert_eq!(open.send(&req).status, 200, "failure_mode_allow true: through");
    let seen = app.wait_for_request(1);
    assert_eq!(seen.header("x-envoy-auth-failure-mode-allowed"), Some("true"), "{:?}", seen.headers);
    assert!(seen.header("x-email-verdict").is_none(), "no forged verdict survives: {:?}", seen.headers);
    assert!(seen.header("x-email-verdict-key").is_none(), "the key never reaches the app: {:?}", seen.headers);
    // A running sidecar that refuses the key: our failure (UNAVAILABLE), so Envoy's failure mode
    // decides, as for the HTTP check's 5xx.
    let s = stacks_with(&[], |e| e.api_key("ev_ffffffffffffffffffffffffffffffffffffffff"));
    assert_eq!(s.g.envoy.signup_json("jane@gmail.com").status, 503);
    assert_eq!(s.g.app.count(), 0);
    let metrics = Request::get("/metrics").send(s.g.sidecar.admin_addr()).text();
    assert!(metrics.contains("email_verdict_ext_authz_checks_total{outcome=\"failed\"} 1"), "{metrics}");
}

#[test]
fn garbage_on_the_grpc_port_harms_nothing() {
    let s = stacks();
    // Not HTTP/2 at all, a preface and then junk, a connection left silent: each is dropped.
    for junk in [
        &b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"[..],
        b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\xff\xff\xff\xff\xff\xff\xff\xff\xff",
    ] {
        let mut conn = TcpStream::connect(s.grpc_addr).unwrap();
        conn.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        conn.write_all(junk).unwrap();
        let mut sink = Vec::new();
        let _ = conn.read_to_end(&mut sink);
    }
    let _silent = TcpStream::connect(s.grpc_addr).unwrap();
    let resp = s.g.envoy.signup_json("temp@mailinator.com");
    assert_eq!((resp.status, resp.json()["error"].clone()), (403, json!("disposable_email")), "{resp}");
}

#[test]
fn ext_authz_grpc_yaml_is_the_rendered_template_and_envoy_accepts_it() {
    let root = email_verdict_tests::workspace_root();
    let out = email_verdict_tests::envoy::run({
        let mut c = std::process::Command::new("python3");
        c.arg(root.join("scripts/render-envoy.py")).arg("--template").arg(root.join("envoy").join(TEMPLATE));
        c
    });
    assert!(out.success(), "scripts/render-envoy.py failed\n{out}");
    let shipped =
        std::fs::read_to_string(root.join("envoy/ext-authz-grpc.yaml")).expect("read envoy/ext-authz-grpc.yaml");
    assert!(shipped == out.stdout, "envoy/ext-authz-grpc.yaml is stale: run `make envoy-config`");
    assert!(shipped.contains("port_value: 8082"), "the docs' gRPC port by default");
    let checked = email_verdict_tests::envoy::validate(&root.join("envoy/ext-authz-grpc.yaml"), &root);
    assert!(checked.success(), "Envoy refuses envoy/ext-authz-grpc.yaml\n{checked}");
}

#[test]
fn the_grpc_listener_is_refused_on_a_port_in_use_or_the_public_ones() {
    let dir = email_verdict_tests::TestDir::new("grpc-listen");
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let out = email_verdict_tests::sidecar::run_raw(
        dir.path(),
        &[
            "serve",
            "--ext-authz-grpc-listen",
            &addr,
            "--state",
            "sqlite:x.db",
            "--listen",
            "127.0.0.1:0",
            "--admin-listen",
            "127.0.0.1:0",
        ],
    );
    out.expect_code(2, "a port in use");
    assert!(out.stderr.contains("--ext-authz-grpc-listen"), "{}", out.stderr);
    let port = free_port();
    let same = format!("127.0.0.1:{port}");
    let out = email_verdict_tests::sidecar::run_raw(
        dir.path(),
        &[
            "serve",
            "--ext-authz-grpc-listen",
            &same,
            "--listen",
            &same,
            "--admin-listen",
            "127.0.0.1:0",
            "--state",
            "sqlite:x.db",
        ],
    );
    out.expect_code(2, "the public listener's address");
    assert!(out.stderr.contains("--ext-authz-grpc-listen"), "{}", out.stderr);
}

#[test]
fn the_grpc_listener_comes_from_the_flag_the_environment_or_the_config_file() {
    let nsd = Nsd::start();
    for how in ["flag", "environment", "config file"] {
        let addr = SocketAddr::from(([127, 0, 0, 1], free_port()));
        let listen = addr.to_string();
        let builder = Sidecar::builder().dns(nsd.addr());
        let sidecar = match how {
            "flag" => builder.args(&["--ext-authz-grpc-listen", &listen]),
            "environment" => builder.env("EMAIL_VERDICT_EXT_AUTHZ_GRPC_LISTEN", &listen),
            _ => builder.settings(&format!("ext-authz-grpc-listen = {listen:?}")),
        }
        .start();
        // Ready (`/healthz` ok) only once the gRPC listener accepts too.
        assert!(TcpStream::connect_timeout(&addr, Duration::from_secs(1)).is_ok(), "{how}: not listening");
        let log = sidecar.stderr_text();
        assert!(
            log.lines().any(|l| l.contains("ready") && l.contains(&listen)),
            "{how}: the ready line names it\n{log}"
        );
    }
}

#[test]
fn an_upgrade_takes_the_grpc_listener_over() {
    let mut s = stacks();
    let mut new = s.g.sidecar.spawn_upgrade();
    let line_from = |p: &mut email_verdict_tests::ChildProcess, text: &str| {
        email_verdict_tests::wait_for(&format!("{text:?} from the new process"), Duration::from_secs(30), || {
            (p.stderr_text().contains(text) || p.stdout_text().contains(text)).then_some(())
        })
    };
    line_from(&mut new, "upgrade: waiting for the listeners");
    s.g.sidecar.process().signal("QUIT");
    line_from(&mut new, " ready listen=");
    let mut old = s.g.sidecar.replace_process(new);
    // The old process closes its gRPC listener when it shuts down; the new one, bound beside it
    // (SO_REUSEPORT), answers the checks from then on.
    let status = old.wait_timeout(Duration::from_secs(30)).expect("the old process exits");
    assert!(status.success(), "{status}");
    let resp = s.g.envoy.signup_json("temp@mailinator.com");
    assert_eq!((resp.status, resp.json()["error"].clone()), (403, json!("disposable_email")), "{resp}");
    assert_eq!(s.g.envoy.signup_json("jane@gmail.com").status, 200);
    let log = s.g.sidecar.stderr_text();
    assert!(log.contains("route=\"ext_authz_grpc\""), "the new process checked\n{log}");
}

/// A gRPC-framed protobuf signup (binary: it reaches the check intact only as `raw_body`) is
/// judged as the HTTP check judges it: the same refusal for a disposable address, the same
/// headers and the same bytes at the app for a real one.
#[test]
fn a_binary_grpc_signup_is_judged_as_the_http_check_judges_it() {
    let s = stacks();
    let framed = |email: &str| {
        // A message with the address in field 1 and a non-UTF-8 bytes field 2.
        let mut message = vec![0x0a, email.len() as u8];
        message.extend_from_slice(email.as_bytes());
        message.extend_from_slice(&[0x12, 3, 0xff, 0xfe, 0x80]);
        let mut body = vec![0];
        body.extend_from_slice(&(message.len() as u32).to_be_bytes());
        body.extend_from_slice(&message);
        body
    };
    let grpc_signup = |email: &str| {
        Request::new("POST", "/signup")
            .header("content-type", "application/grpc")
            .header("te", "trailers")
            .body(&framed(email))
    };
    let req = grpc_signup("temp.user@mailinator.com");
    let (grpc, http) = (s.g.envoy.send(&req), s.http.send(&req));
    let reply = |r: &Response| {
        (r.status, r.header("content-type").map(str::to_owned), r.header("grpc-status").map(str::to_owned), r.text())
    };
    assert_eq!(reply(&grpc), reply(&http), "the gRPC check's refusal is the HTTP check's");
    assert!(grpc.status >= 400 || grpc.header("grpc-status").is_some_and(|s| s != "0"), "refused\n{grpc}");
    assert_eq!(s.g.app.count(), 0, "{:?}", s.g.app.requests());
    let req = grpc_signup("jane@gmail.com");
    assert_eq!(s.g.envoy.send(&req).status, 200);
    let by_grpc = s.g.app.wait_for_request(1);
    assert_eq!(by_grpc.body, framed("jane@gmail.com"), "the body reaches the app intact");
    assert_eq!(s.http.send(&req).status, 200);
    let by_http = s.g.app.wait_for_request(2);
    for name in ["x-email-verdict", "x-email-domain", "x-email-flags", "x-email-verdict-bypass"] {
        assert_eq!(by_grpc.headers_named(name), by_http.headers_named(name), "{name}: {:?}", by_grpc.headers);
    }
}
