use serde_json::{Value, json};

use super::*;

fn no_env(_: &str) -> Result<String, EnvError> {
    Err(EnvError::NotSet)
}

fn minimal() -> Value {
    json!({
        "sidecar": { "cluster": "email_verdict", "api_key": "ev_k" },
        "signup_routes": [{ "method": "POST", "path": "/signup" }]
    })
}

fn load(doc: &Value) -> Result<FilterConfig, ConfigError> {
    FilterConfig::from_json(&serde_json::to_vec(doc).unwrap(), &no_env)
}

/// Sets `value` at the JSON pointer `at` in the minimal document (creating objects on the way).
fn with(at: &str, value: Value) -> Value {
    let mut doc = minimal();
    let mut node = &mut doc;
    let segments: Vec<&str> = at.trim_start_matches('/').split('/').collect();
    for (i, seg) in segments.iter().enumerate() {
        if i == segments.len() - 1 {
            match node {
                Value::Array(items) => items[seg.parse::<usize>().unwrap()] = value.clone(),
                _ => {
                    node[*seg] = value.clone();
                }
            }
        } else {
            node = match node {
                Value::Array(items) => &mut items[seg.parse::<usize>().unwrap()],
                _ => {
                    if node.get(*seg).is_none() {
                        node[*seg] = json!({});
                    }
                    &mut node[*seg]
                }
            };
        }
    }
    doc
}

#[test]
fn minimal_config_gets_the_contract_defaults() {
    let c = load(&minimal()).unwrap();
    assert_eq!(
        c.sidecar,
        Sidecar {
            cluster: "email_verdict".into(),
            authority: "email_verdict".into(),
            timeout: Duration::from_millis(1000),
            authorization: "Bearer ev_k".into(),
        }
    );
    assert_eq!(c.enforce.email, EmailSources::default());
    assert_eq!(c.enforce.email.json_pointers, ["/email"]);
    assert_eq!(c.enforce.email.form_fields, ["email"]);
    assert_eq!(c.enforce.mode, Mode::Block);
    assert_eq!(c.enforce.block_status, 403);
    let body: Value = serde_json::from_slice(&c.enforce.block_body).unwrap();
    assert_eq!(body, json!({"error": "disposable_email", "message": "Please sign up with a permanent email address."}));
    assert_eq!(
        c.enforce.flag_headers.all(),
        [
            "x-email-verdict",
            "x-email-domain",
            "x-email-flags",
            "x-email-verdict-bypass",
            "x-email-suggestion",
            "x-email-normalized",
            "x-email-role",
            "x-email-relay",
            "x-email-mailbox-signups",
            "x-email-client-signups",
            "x-email-velocity"
        ]
    );
    assert_eq!(c.enforce.detail_headers, DetailHeaders::default(), "every detail header is sent by default");
    assert_eq!(
        (c.enforce.on_missing_email, c.enforce.on_invalid_email, c.failure_mode),
        (Policy::Allow, Policy::Deny, FailureMode::all(Policy::Allow))
    );
    assert_eq!(c.failure_status, 503);
    assert_eq!(c.cache, VerdictCache::new(300, 10_000).map(|c| c.versioned(true)));
    assert_eq!(c.max_body_bytes, 65_536);
    assert_eq!(c.enforce.on_unreadable_body, Policy::Deny);
    assert!(c.local_lists.is_some_and(|l| l.len() > 10_000), "local_fallback defaults to true");
}

/// The decisions are synced for `local_fallback` and for the cache (a decision must reach the
/// verdicts it holds); the cache's entries carry their version exactly when they are synced.
#[test]
fn the_decisions_are_synced_for_the_fallback_and_for_the_cache() {
    let sync = |c: &FilterConfig| c.decisions.as_ref().map(|d| (d.period_ms, d.fallback));
    let versioned = |c: &FilterConfig| c.cache.is_some_and(|cache| cache == cache.versioned(true));
    let c = load(&minimal()).unwrap();
    assert_eq!((sync(&c), versioned(&c)), (Some((30_000, true)), true), "the defaults");
    let c = load(&with("/local_fallback", json!(false))).unwrap();
    assert_eq!((sync(&c), versioned(&c)), (Some((30_000, false)), true), "for the cache alone");
    let mut doc = with("/local_fallback", json!(false));
    doc["cache"] = json!({ "ttl_seconds": 0 });
    assert_eq!(sync(&load(&doc).unwrap()), None, "neither needs them");
    let c = load(&with("/cache", json!({ "ttl_seconds": 0 }))).unwrap();
    assert_eq!((sync(&c), c.cache), (Some((30_000, true)), None), "for the fallback alone");
    let c = load(&with("/decision_sync_seconds", json!(0))).unwrap();
    assert_eq!((sync(&c), versioned(&c), c.cache.is_some()), (None, false, true), "off: the cache as before");
}

#[test]
fn local_fallback_and_on_unreadable_body() {
    let c = load(&with("/local_fallback", json!(false))).unwrap();
    assert!(c.local_lists.is_none());
    let c = load(&with("/on_unreadable_body", json!("allow"))).unwrap();
    assert_eq!(c.enforce.on_unreadable_body, Policy::Allow);
    let err = load(&with("/local_fallback", json!("yes"))).unwrap_err().to_string();
    assert!(err.starts_with("local_fallback: invalid type"), "{err}");
    let err = load(&with("/on_unreadable_body", json!("maybe"))).unwrap_err().to_string();
    assert!(err.starts_with("on_unreadable_body: unknown variant"), "{err}");
}

#[test]
fn example_config_validates() {
    let bytes = include_bytes!("../../example-config.json");
    let env = |name: &str| match name {
        "EMAIL_VERDICT_API_KEY" => Ok("ev_0123456789abcdef\n".to_owned()),
        _ => Err(EnvError::NotSet),
    };
    let c = FilterConfig::from_json(bytes, &env).unwrap();
    assert_eq!(c.sidecar.authorization, "Bearer ev_0123456789abcdef");
    assert_eq!(c.sidecar.authority, "email-verdict");
    assert!(c.is_signup("POST", "/api/register/step1?ref=x"));
    // Without the variable the same file is refused, naming the field.
    let err = FilterConfig::from_json(bytes, &no_env).unwrap_err().to_string();
    assert!(err.starts_with("sidecar.api_key_env: environment variable EMAIL_VERDICT_API_KEY is not set"), "{err}");
    let err = FilterConfig::from_json(bytes, &|_| Err(EnvError::Unsupported)).unwrap_err().to_string();
    assert!(err.starts_with("sidecar.api_key_env: "), "{err}");
}

#[test]
fn bad_configs_are_rejected_naming_the_field() {
    let cases: Vec<(Value, &str)> = vec![
        (json!({}), "sidecar: missing field `sidecar`"),
        (json!({"sidecar": {"cluster": "c", "api_key": "k"}}), "signup_routes: missing field `signup_routes`"),
        (with("/sidecar", json!({"api_key": "k"})), "sidecar.cluster: missing field `cluster`"),
        (with("/signup_routes/0", json!({"path": "/s"})), "signup_routes[0].method: missing field `method`"),
        (with("/extra", json!(1)), "extra: unknown field `extra`"),
        (with("/sidecar/timout_ms", json!(1)), "sidecar.timout_ms: unknown field `timout_ms`"),
        (with("/sidecar/timeout_ms", json!(0)), "sidecar.timeout_ms: must be 1..=60000"),
        (with("/sidecar/timeout_ms", json!(60_001)), "sidecar.timeout_ms: must be 1..=60000"),
        (with("/sidecar/timeout_ms", json!("200")), "sidecar.timeout_ms: invalid type: string"),
        (with("/sidecar/timeout_ms", json!(-1)), "sidecar.timeout_ms: invalid value"),
        (with("/sidecar/cluster", json!("")), "sidecar.cluster: "),
        (with("/sidecar/authority", json!("a b")), "sidecar.authority: "),
        (with("/sidecar/api_key_env", json!("K")), "sidecar.api_key: exactly one of"),
        (with("/sidecar", json!({"cluster": "c"})), "sidecar.api_key: exactly one of"),
        (with("/sidecar/api_key", json!("ev_a\r\nx-injected: 1")), "sidecar.api_key: "),
        (with("/sidecar/api_key", json!("")), "sidecar.api_key: "),
        (with("/signup_routes", json!([])), "signup_routes: must name at least one route"),
        (with("/signup_routes", json!({})), "signup_routes: invalid type: map"),
        (with("/signup_routes/0", json!({"method": "POST"})), "signup_routes[0]: exactly one of path and path_prefix"),
        (
            with("/signup_routes/0", json!({"method": "POST", "path": "/a", "path_prefix": "/b"})),
            "signup_routes[0]: exactly one of path and path_prefix",
        ),
        (with("/signup_routes/0/path", json!("signup")), "signup_routes[0].path: must start with '/'"),
        (with("/signup_routes/0/path", json!("/signup?x=1")), "signup_routes[0].path: "),
        (with("/signup_routes/0/method", json!("PO ST")), "signup_routes[0].method: "),
        (with("/signup_routes/0/verb", json!("GET")), "signup_routes[0].verb: unknown field `verb`"),
        (with("/email/json_pointers", json!(["email"])), "email.json_pointers[0]: must be an RFC 6901 pointer"),
        (with("/email/headers", json!(["bad header"])), "email.headers[0]: "),
        (with("/email/headers", json!(["X-Email-Verdict"])), "email.headers[0]: must not be one of flag_headers"),
        (with("/email/form_fields", json!([""])), "email.form_fields[0]: must not be empty"),
        (with("/email/query_params", json!(["e", ""])), "email.query_params[1]: must not be empty"),
        (with("/email", json!({"json_pointers": [], "form_fields": []})), "email: at least one of"),
        (with("/email/cookies", json!([])), "email.cookies: unknown field `cookies`"),
        (with("/mode", json!("dry_run")), "mode: unknown variant `dry_run`"),
        (with("/enforce_percent", json!(101)), "enforce_percent: must be 0..=100"),
        (with("/on_missing_email", json!("Allow")), "on_missing_email: unknown variant `Allow`"),
        (with("/on_invalid_email", json!(true)), "on_invalid_email: "),
        (with("/failure_mode", json!("open")), "failure_mode: expected \"allow\", \"deny\", or an object"),
        (with("/failure_mode", json!({"sidecar_down": "deny"})), "failure_mode: expected"),
        (with("/failure_mode", json!({"sidecar_timeout": "block"})), "failure_mode: expected"),
        (with("/block_response/status", json!(200)), "block_response.status: must be 400..=599"),
        (with("/block_response/status", json!(600)), "block_response.status: must be 400..=599"),
        (with("/block_response/headers", json!({})), "block_response.headers: unknown field"),
        (with("/failure_status", json!(302)), "failure_status: must be 400..=599"),
        (with("/flag_headers/verdict", json!("")), "flag_headers.verdict: "),
        (with("/flag_headers/flags", json!("content-length")), "flag_headers.flags: must not be a header"),
        (with("/flag_headers/bypass", json!("authorization")), "flag_headers.bypass: must not be a header"),
        (with("/flag_headers/domain", json!("X-Email-Verdict")), "flag_headers.domain: must differ"),
        (with("/flag_headers/role_account", json!("X-Email-Relay")), "flag_headers.relay: must differ"),
        (with("/flag_headers/normalized_email", json!("cookie")), "flag_headers.normalized_email: must not be"),
        (with("/flag_headers/relay", json!(null)), "flag_headers.relay: invalid type"),
        (with("/detail_headers/provider", json!(true)), "detail_headers.provider: unknown field `provider`"),
        (with("/detail_headers", json!(false)), "detail_headers: invalid type"),
        (with("/cache/max_entries", json!(0)), "cache.max_entries: must be 1..=1000000"),
        (with("/cache/max_entries", json!(1_000_001)), "cache.max_entries: must be 1..=1000000"),
        (with("/cache/ttl_seconds", json!(-5)), "cache.ttl_seconds: invalid value"),
        (with("/cache/size", json!(5)), "cache.size: unknown field"),
        (with("/max_body_bytes", json!(10_485_761)), "max_body_bytes: must be 1..=10485760"),
        (with("/max_body_bytes", json!(0)), "max_body_bytes: must be 1..=10485760"),
    ];
    for (doc, expected) in cases {
        let err = load(&doc).expect_err(&doc.to_string()).to_string();
        assert!(err.starts_with(expected), "{doc}\n  got:      {err}\n  expected: {expected}…");
    }
}

#[test]
fn malformed_documents_are_rejected() {
    for bytes in [&b""[..], b"  \n", b"null", b"[]", b"{", b"{} {}", b"\xff"] {
        let err = FilterConfig::from_json(bytes, &no_env);
        assert!(err.is_err(), "{:?}", String::from_utf8_lossy(bytes));
    }
    let doc =
        br#"{"sidecar":{"cluster":"c","api_key":"k","cluster":"d"},"signup_routes":[{"method":"POST","path":"/s"}]}"#;
    let err = FilterConfig::from_json(doc, &no_env).unwrap_err().to_string();
    assert!(err.starts_with("sidecar.cluster: duplicate field `cluster`"), "{err}");
}

#[test]
fn validate_alone_checks_without_the_environment() {
    let doc = with("/sidecar", json!({"cluster": "c", "api_key_env": "NOT_SET_ANYWHERE"}));
    let parsed = PluginConfig::parse(&serde_json::to_vec(&doc).unwrap()).unwrap();
    assert_eq!(parsed.validate(), Ok(()));
    let bad = with("/cache/max_entries", json!(0));
    let parsed = PluginConfig::parse(&serde_json::to_vec(&bad).unwrap()).unwrap();
    assert_eq!(
        parsed.validate(),
        Err(ConfigError::Invalid { field: "cache.max_entries".into(), message: "must be 1..=1000000".into() })
    );
}

#[test]
fn values_are_normalized() {
    let doc = json!({
        "sidecar": { "cluster": "outbound|8080||ev.ns.svc.cluster.local", "api_key": "k", "timeout_ms": 60000 },
        "signup_routes": [{ "method": "post", "path": "/signup" }, { "method": "PUT", "path_prefix": "/users/" }],
        "email": { "headers": ["X-Email"] },
        "flag_headers": { "verdict": "X-Verdict", "relay": "X-Relay-Service" },
        "detail_headers": { "normalized_email": false },
        "block_response": { "body": null },
        "cache": { "ttl_seconds": 0 },
        "max_body_bytes": 10485760
    });
    let c = load(&doc).unwrap();
    assert_eq!(c.sidecar.authority, "outbound|8080||ev.ns.svc.cluster.local");
    assert_eq!(c.enforce.email.headers, ["x-email"]);
    assert_eq!(c.enforce.email.json_pointers, ["/email"], "unlisted sources keep their defaults");
    assert_eq!(c.enforce.flag_headers.verdict, "x-verdict");
    assert_eq!(c.enforce.flag_headers.relay, "x-relay-service");
    assert_eq!(
        c.enforce.detail_headers,
        DetailHeaders { normalized_email: false, ..DetailHeaders::default() },
        "unlisted details keep their default"
    );
    assert_eq!(c.enforce.block_body, b"null");
    assert_eq!(c.cache, None);
    assert_eq!(c.max_body_bytes, 10 * 1024 * 1024);
    assert_eq!(c.routes[0], Route { method: "POST".into(), path: PathMatch::Exact("/signup".into()) });
}

#[test]
fn signup_matching() {
    let doc = with(
        "/signup_routes",
        json!([{ "method": "POST", "path": "/signup" }, { "method": "put", "path_prefix": "/api/register" }]),
    );
    let c = load(&doc).unwrap();
    let cases = [
        ("POST", "/signup", true),
        ("post", "/signup", true),
        ("POST", "/signup?next=/home", true),
        ("GET", "/signup", false),
        ("PUT", "/api/register", true),
        ("PUT", "/api/registerx?y", true),
        ("PUT", "/api/regist", false),
        ("POST", "/api/register", false),
        ("", "", false),
        // Every variant an app may route to its /signup handler (issue 13 item 1).
        ("POST", "/signup/", true),
        ("POST", "/Signup", true),
        ("POST", "/SIGNUP", true),
        ("POST", "//signup", true),
        ("POST", "///signup", true),
        ("POST", "/./signup", true),
        ("POST", "/%73ignup", true),
        ("POST", "/%2Fsignup", true),
        ("POST", "/signup;x", true),
        ("POST", "/x/../signup", true),
        ("POST", "/signup.json", true),
        ("POST", "http://shop.example/signup", true),
        ("PUT", "//API/register/step1", true),
        ("POST", "/signups", false),
        ("POST", "/signup/confirm", false),
        ("POST", "/sign", false),
    ];
    for (method, path, expected) in cases {
        assert_eq!(c.is_signup(method, path), expected, "{method} {path}");
    }
}
