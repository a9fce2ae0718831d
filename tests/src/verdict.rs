//! Assertions on `/api/v1` responses: the field table, types and consistency rules of
//! verdict-api.md, and the error body shape.

use crate::http::Response;
use serde_json::Value;

/// Every boolean field of `result`.
pub const RESULT_BOOLEANS: &[&str] = &[
    "disposable",
    "temporary",
    "safe",
    "free_provider",
    "business_email",
    "shared_mx",
    "has_mx",
    "domain_exists",
    "cached",
    "allowlisted",
    "blocked",
    "mx_ip_match",
    "review_required",
];

/// Every field of `result` that is a string array.
pub const RESULT_ARRAYS: &[&str] = &["mx_records", "mx_ip_address"];

/// `result` fields that are enums, with their allowed values.
pub const RESULT_ENUMS: &[(&str, &[&str])] =
    &[("verdict", &["disposable", "safe"]), ("level", &["low", "critical"]), ("recommendation", &["allow", "block"])];

/// Checks a 200 response: status, JSON content type, `X-Request-ID` == `request_id`, every field
/// with its type, and the consistency rules. Returns the body. `what` names the request.
pub fn check_ok(resp: &Response, what: &str) -> Value {
    assert_eq!(resp.status, 200, "{what}: expected 200\n{resp}");
    assert_json_content_type(resp, what);
    let v = resp.json();
    assert_request_id_header(resp, &v, what);
    let problems = [shape_problems(&v), consistency_problems(&v)].concat();
    assert!(problems.is_empty(), "{what}: response breaks the contract:\n  - {}\n{resp}", problems.join("\n  - "));
    v
}

/// Checks an error response: status, JSON content type, body
/// `{"request_id": "...", "error": {"code": CODE, "message": "..."}}`, `X-Request-ID` header.
pub fn check_error(resp: &Response, status: u16, code: &str, what: &str) -> Value {
    assert_eq!(
        (resp.status, error_code(resp).as_deref()),
        (status, Some(code)),
        "{what}: expected {status} {code}\n{resp}"
    );
    assert_json_content_type(resp, what);
    let v = resp.json();
    let rid = v.get("request_id").and_then(Value::as_str);
    assert!(rid.is_some_and(|s| !s.is_empty()), "{what}: error body without a non-empty string request_id\n{resp}");
    let msg = v.pointer("/error/message").and_then(Value::as_str);
    assert!(msg.is_some_and(|s| !s.is_empty()), "{what}: error body without a non-empty string error.message\n{resp}");
    assert_request_id_header(resp, &v, what);
    v
}

/// `error.code` of a JSON error body, if any.
pub fn error_code(resp: &Response) -> Option<String> {
    let v: Value = serde_json::from_slice(&resp.body).ok()?;
    v.pointer("/error/code")?.as_str().map(str::to_string)
}

fn assert_json_content_type(resp: &Response, what: &str) {
    let ct = resp.header("content-type").unwrap_or("");
    assert!(
        ct.to_ascii_lowercase().starts_with("application/json"),
        "{what}: Content-Type {ct:?} is not application/json\n{resp}"
    );
}

fn assert_request_id_header(resp: &Response, v: &Value, what: &str) {
    let body_id = v.get("request_id").and_then(Value::as_str);
    let header_ids = resp.headers_named("x-request-id");
    assert_eq!(header_ids.len(), 1, "{what}: expected exactly one X-Request-ID header\n{resp}");
    assert_eq!(Some(header_ids[0]), body_id, "{what}: X-Request-ID differs from request_id\n{resp}");
}

/// Every top-level and `result` field present with its JSON type.
pub fn shape_problems(v: &Value) -> Vec<String> {
    let mut p = Vec::new();
    for f in ["request_id", "input", "input_type", "email", "domain"] {
        if !v.get(f).is_some_and(Value::is_string) {
            p.push(format!("{f} is not a string: {:?}", v.get(f)));
        }
    }
    if v.get("request_id").and_then(Value::as_str) == Some("") {
        p.push("request_id is empty".into());
    }
    let it = v.get("input_type").and_then(Value::as_str);
    if !matches!(it, Some("domain" | "email")) {
        p.push(format!("input_type {it:?} not domain|email"));
    }
    if !v.get("did_you_mean").is_some_and(|d| d.is_null() || d.is_string()) {
        p.push(format!("did_you_mean is not null or a string: {:?}", v.get("did_you_mean")));
    }
    if !v.get("mx_unavailable").is_some_and(Value::is_boolean) {
        p.push(format!("mx_unavailable is not a boolean: {:?}", v.get("mx_unavailable")));
    }
    let Some(r) = v.get("result").filter(|r| r.is_object()) else {
        p.push("result is not an object".into());
        return p;
    };
    for f in RESULT_BOOLEANS {
        if !r.get(*f).is_some_and(Value::is_boolean) {
            p.push(format!("result.{f} is not a boolean: {:?}", r.get(*f)));
        }
    }
    for f in RESULT_ARRAYS {
        let ok = r.get(*f).and_then(Value::as_array).is_some_and(|a| a.iter().all(Value::is_string));
        if !ok {
            p.push(format!("result.{f} is not an array of strings: {:?}", r.get(*f)));
        }
    }
    for (f, allowed) in RESULT_ENUMS {
        let s = r.get(*f).and_then(Value::as_str);
        if !s.is_some_and(|s| allowed.contains(&s)) {
            p.push(format!("result.{f} = {:?}, not one of {allowed:?}", r.get(*f)));
        }
    }
    p
}

/// The consistency rules of the spec, plus the mirrors and the input_type/email relation.
pub fn consistency_problems(v: &Value) -> Vec<String> {
    let mut p = Vec::new();
    let r = &v["result"];
    let b = |f: &str| r.get(f).and_then(Value::as_bool);
    let s = |f: &str| r.get(f).and_then(Value::as_str);
    let disposable = b("disposable");
    if b("temporary") != disposable {
        p.push("temporary != disposable".into());
    }
    if b("safe") != disposable.map(|d| !d) {
        p.push("safe != !disposable".into());
    }
    let (verdict, level, rec) = match disposable {
        Some(true) => ("disposable", "critical", "block"),
        _ => ("safe", "low", "allow"),
    };
    if s("verdict") != Some(verdict) {
        p.push(format!("verdict {:?} but disposable {disposable:?}", s("verdict")));
    }
    if s("level") != Some(level) {
        p.push(format!("level {:?} does not mirror verdict {verdict}", s("level")));
    }
    if s("recommendation") != Some(rec) {
        p.push(format!("recommendation {:?} does not mirror verdict {verdict}", s("recommendation")));
    }
    p.extend(suggestion_problems(v));
    let mx = strings(&r["mx_records"]);
    for h in &mx {
        if h.ends_with('.') || h.chars().any(|c| c.is_ascii_uppercase()) || h.is_empty() {
            p.push(format!("mx_records entry {h:?} is not lowercase without trailing dot"));
        }
    }
    if b("has_mx") == Some(false) && !mx.is_empty() {
        p.push("has_mx false with non-empty mx_records".into());
    }
    if b("has_mx") == Some(true) && mx.is_empty() {
        p.push("has_mx true with empty mx_records".into());
    }
    for ip in strings(&r["mx_ip_address"]) {
        if ip.parse::<std::net::IpAddr>().is_err() {
            p.push(format!("mx_ip_address entry {ip:?} is not an IP address"));
        }
    }
    let email = v.get("email").and_then(Value::as_str).unwrap_or("");
    let domain = v.get("domain").and_then(Value::as_str).unwrap_or("");
    match v.get("input_type").and_then(Value::as_str) {
        Some("domain") if !email.is_empty() => p.push(format!("input_type domain with non-empty email {email:?}")),
        Some("email") if !email.ends_with(&format!("@{domain}")) => {
            p.push(format!("email {email:?} does not end with @{domain}"))
        }
        _ => {}
    }
    if domain.ends_with('.') || domain.chars().any(|c| c.is_ascii_uppercase() || !c.is_ascii()) {
        p.push(format!("domain {domain:?} is not normalized (ASCII lowercase, no trailing dot)"));
    }
    p
}

/// The strings of a JSON array (non-strings skipped).
pub fn strings(v: &Value) -> Vec<String> {
    v.as_array().map(|a| a.iter().filter_map(Value::as_str).map(str::to_string).collect()).unwrap_or_default()
}

/// Asserts that each (pointer, expected) pair holds, reporting every mismatch at once.
/// Pointers are JSON pointers into the body, e.g. `/result/has_mx`, `/domain`.
pub fn expect_fields(v: &Value, expected: &[(&str, Value)], what: &str) {
    let mismatches: Vec<String> = expected
        .iter()
        .filter(|(ptr, want)| v.pointer(ptr) != Some(want))
        .map(|(ptr, want)| format!("{ptr}: expected {want}, got {:?}", v.pointer(ptr)))
        .collect();
    assert!(mismatches.is_empty(), "{what}:\n  - {}\nbody: {v:#}", mismatches.join("\n  - "));
}

/// `did_you_mean`: only for a domain without mail, the same kind as the input (an email keeps
/// its local part, a domain stays a domain), and never the checked domain itself.
fn suggestion_problems(v: &Value) -> Vec<String> {
    let Some(suggested) = v.get("did_you_mean").and_then(Value::as_str) else { return Vec::new() };
    let mut p = Vec::new();
    if v["result"]["has_mx"] != Value::Bool(false) {
        p.push(format!("did_you_mean {suggested:?} for a domain with MX"));
    }
    let (local, domain) = match suggested.rsplit_once('@') {
        Some((local, domain)) => (Some(local), domain),
        None => (None, suggested),
    };
    let email = v.get("email").and_then(Value::as_str).unwrap_or_default();
    match (v.get("input_type").and_then(Value::as_str), local) {
        (Some("email"), Some(local)) if email.rsplit_once('@').map(|(l, _)| l) == Some(local) => {}
        (Some("domain"), None) => {}
        _ => p.push(format!("did_you_mean {suggested:?} does not keep the input's form ({email:?})")),
    }
    if Some(domain) == v.get("domain").and_then(Value::as_str) {
        p.push(format!("did_you_mean {suggested:?} suggests the checked domain itself"));
    }
    p
}
