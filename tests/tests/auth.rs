//! Authentication: `?key=` and `Authorization: Bearer`, header precedence, allowed IPs.

use email_verdict_tests::verdict::{check_error, check_ok};
use email_verdict_tests::{Request, start, start_with};

/// A key of the right shape that no state has ever seen.
/// (what, query string, Authorization header, expected status, expected error code)
type Case = (&'static str, String, Option<String>, u16, Option<&'static str>);

const UNKNOWN_KEY: &str = "ev_0123456789abcdef0123456789abcdef01234567";

#[test]
fn key_forms_and_precedence() {
    let (sc, _nsd) = start();
    let key = sc.key();
    let path = "/api/v1/domain/ownmail.example";
    let table: Vec<Case> = vec![
        ("no key", String::new(), None, 401, Some("missing_api_key")),
        ("?key=garbage", "?key=garbage".into(), None, 401, Some("api_key_invalid")),
        ("unknown well-formed key", format!("?key={UNKNOWN_KEY}"), None, 401, Some("api_key_invalid")),
        ("valid ?key=", format!("?key={key}"), None, 200, None),
        ("valid key among other parameters", format!("?x=1&key={key}&y=2"), None, 200, None),
        ("valid Bearer", String::new(), Some(format!("Bearer {key}")), 200, None),
        ("unknown Bearer", String::new(), Some(format!("Bearer {UNKNOWN_KEY}")), 401, Some("api_key_invalid")),
        ("garbage Bearer", String::new(), Some("Bearer garbage".into()), 401, Some("api_key_invalid")),
        ("header valid + query garbage", "?key=garbage".into(), Some(format!("Bearer {key}")), 200, None),
        ("header valid + query unknown", format!("?key={UNKNOWN_KEY}"), Some(format!("Bearer {key}")), 200, None),
        (
            "header garbage + query valid",
            format!("?key={key}"),
            Some("Bearer garbage".into()),
            401,
            Some("api_key_invalid"),
        ),
        (
            "header unknown + query valid",
            format!("?key={key}"),
            Some(format!("Bearer {UNKNOWN_KEY}")),
            401,
            Some("api_key_invalid"),
        ),
    ];
    for (what, query, auth, status, code) in table {
        let mut req = Request::get(&format!("{path}{query}"));
        if let Some(a) = &auth {
            req = req.header("Authorization", a);
        }
        let resp = sc.send_retrying_429(&req);
        match code {
            None => {
                assert_eq!(resp.status, status, "{what}\n{resp}");
                check_ok(&resp, what);
            }
            Some(code) => {
                check_error(&resp, status, code, what);
            }
        }
    }
}

#[test]
fn auth_is_checked_before_input() {
    let (sc, _nsd) = start();
    let resp = sc.get("/api/v1/domain/not%20valid");
    check_error(&resp, 401, "missing_api_key", "invalid input, no key");
    let resp = sc.get("/api/v1/domain/not%20valid?key=garbage");
    check_error(&resp, 401, "api_key_invalid", "invalid input, garbage key");
    let resp = sc.get(&format!("/api/v1/domain/not%20valid?key={}", sc.key()));
    check_error(&resp, 400, "invalid_input", "invalid input, valid key");
}

#[test]
fn allowed_ip_ranges_are_enforced() {
    let (sc, _nsd) = start_with(|b| b.keys(&[]));
    let create = |name: &str, cidr: &str| {
        let out = sc.cli().run(&["keys", "create", "--plan", "pro", "--name", name, "--allow-ip", cidr]);
        out.expect_code(0, &format!("keys create --allow-ip {cidr}"));
        out.last_line().to_string()
    };
    let elsewhere = create("elsewhere", "192.0.2.0/24");
    let loopback = create("loopback", "127.0.0.0/8");
    let both = {
        let out = sc.cli().run(&[
            "keys",
            "create",
            "--plan",
            "pro",
            "--name",
            "both",
            "--allow-ip",
            "192.0.2.0/24",
            "--allow-ip",
            "127.0.0.1/32",
        ]);
        out.expect_code(0, "keys create with two --allow-ip");
        out.last_line().to_string()
    };
    // keys created while serving are honoured within a second
    std::thread::sleep(std::time::Duration::from_millis(1100));
    check_error(
        &sc.lookup_with_key("ownmail.example", &elsewhere),
        401,
        "api_key_invalid",
        "key allowed only from 192.0.2.0/24, used from 127.0.0.1",
    );
    let resp = sc.lookup_with_key("ownmail.example", &loopback);
    check_ok(&resp, "key allowed from 127.0.0.0/8");
    let resp = sc.lookup_with_key("ownmail.example", &both);
    check_ok(&resp, "key allowed from 192.0.2.0/24 and 127.0.0.1/32");
}

#[test]
fn x_forwarded_for_from_an_untrusted_peer_is_ignored() {
    let (sc, _nsd) = start_with(|b| b.keys(&[]));
    let out = sc.cli().run(&["keys", "create", "--plan", "pro", "--name", "n", "--allow-ip", "192.0.2.0/24"]);
    out.expect_code(0, "keys create --allow-ip 192.0.2.0/24");
    let key = out.last_line().to_string();
    std::thread::sleep(std::time::Duration::from_millis(1100));
    for header in ["X-Forwarded-For", "X-Real-IP", "Forwarded"] {
        let value = if header == "Forwarded" { "for=192.0.2.7" } else { "192.0.2.7" };
        let req = Request::get(&format!("/api/v1/domain/ownmail.example?key={key}")).header(header, value);
        check_error(
            &sc.send_retrying_429(&req),
            401,
            "api_key_invalid",
            &format!("{header}: {value} sent straight from 127.0.0.1 (no trusted proxy)"),
        );
    }
}

/// Issue 25: each `401` says which case it is (malformed, another scheme, unknown or revoked in
/// this store, not from this address), without telling an unknown key from a revoked one.
#[test]
fn each_401_says_which_case_it_is() {
    let (sc, _nsd) = start_with(|b| b.keys(&["pro", "pro"]));
    let revoked_id = sc.cli().list().into_iter().find(|k| k.name == "test-1").map(|k| k.id).unwrap();
    sc.cli().run(&["keys", "revoke", &revoked_id]).expect_code(0, "revoke");
    let elsewhere = sc.cli().run(&["keys", "create", "--plan", "pro", "--allow-ip", "192.0.2.0/24"]);
    let elsewhere = elsewhere.last_line().to_string();
    std::thread::sleep(std::time::Duration::from_millis(1100));
    let path = "/api/v1/domain/ownmail.example";
    let message = |req: Request, code: &str, what: &str| -> String {
        let body = check_error(&sc.send_retrying_429(&req), 401, code, what);
        body["error"]["message"].as_str().unwrap_or_default().to_owned()
    };
    let token = message(
        Request::get(path).header("Authorization", &format!("Token {}", sc.key())),
        "missing_api_key",
        "Token scheme",
    );
    assert!(token.contains("Token scheme") && token.contains("Bearer"), "{token}");
    let malformed = message(Request::get(&format!("{path}?key=ev_123")), "api_key_invalid", "malformed");
    assert!(malformed.contains("malformed"), "{malformed}");
    let unknown = message(Request::get(&format!("{path}?key={UNKNOWN_KEY}")), "api_key_invalid", "unknown");
    let revoked = message(Request::get(&format!("{path}?key={}", sc.keys()[1])), "api_key_invalid", "revoked");
    assert_eq!(unknown, revoked, "an unknown and a revoked key read alike");
    assert!(unknown.contains("state store"), "{unknown}");
    let not_here = message(Request::get(&format!("{path}?key={elsewhere}")), "api_key_invalid", "other address");
    assert!(not_here.contains("address"), "{not_here}");
}
