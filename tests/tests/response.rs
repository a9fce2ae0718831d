//! The shape of a 200: every field with its JSON type, request ids, the mirrors.

use email_verdict_tests::verdict::{RESULT_ARRAYS, RESULT_BOOLEANS, RESULT_ENUMS, check_ok};
use email_verdict_tests::{Request, start};
use serde_json::Value;
use std::collections::HashSet;

#[test]
fn every_field_of_the_spec_with_its_type() {
    let (sc, _nsd) = start();
    let v = sc.lookup_ok("ownmail.example");
    for f in ["request_id", "input", "input_type", "email", "domain"] {
        assert!(v[f].is_string(), "{f} is not a string: {v:#}");
    }
    assert!(v["result"].is_object(), "result is not an object: {v:#}");
    for f in RESULT_BOOLEANS {
        assert!(v["result"][f].is_boolean(), "result.{f} is not a boolean: {v:#}");
    }
    for f in RESULT_ARRAYS {
        assert!(v["result"][f].is_array(), "result.{f} is not an array: {v:#}");
    }
    for (f, _) in RESULT_ENUMS {
        assert!(v["result"][f].is_string(), "result.{f} is not a string: {v:#}");
    }
    assert_eq!(v["input"], "ownmail.example");
    assert_eq!(v["input_type"], "domain");
    assert_eq!(v["email"], "");
    assert_eq!(v["domain"], "ownmail.example");
}

#[test]
fn request_ids_are_mirrored_and_unique() {
    let (sc, _nsd) = start();
    let mut seen = HashSet::new();
    let segments = ["ownmail.example", "shopco.example", "ownmail.example", "gmail.com"];
    for (i, seg) in segments.iter().cycle().take(12).enumerate() {
        // check_ok asserts X-Request-ID == request_id
        let v = sc.lookup_ok(seg);
        let id = v["request_id"].as_str().unwrap_or_default().to_string();
        assert!(seen.insert(id.clone()), "request {i}: request_id {id:?} repeated");
    }
    // errors carry ids from the same space
    for target in ["/api/v1/domain/ownmail.example", "/nope", "/api/v1/domain/a%20b"] {
        let resp = sc.send(&Request::get(target));
        let v = resp.json();
        let id = v["request_id"].as_str().unwrap_or_default().to_string();
        assert_eq!(resp.header("x-request-id"), Some(id.as_str()), "{target}\n{resp}");
        assert!(seen.insert(id.clone()), "{target}: request_id {id:?} repeated");
    }
}

#[test]
fn level_and_recommendation_mirror_the_verdict() {
    let (sc, _nsd) = start();
    // (segment, verdict, level, recommendation)
    let table = [
        ("ownmail.example", "safe", "low", "allow"),
        ("gmail.com", "safe", "low", "allow"),
        ("mailinator.com", "disposable", "critical", "block"),
    ];
    for (seg, verdict, level, rec) in table {
        let v = sc.lookup_ok(seg);
        let r = &v["result"];
        assert_eq!(
            (&r["verdict"], &r["level"], &r["recommendation"]),
            (&Value::from(verdict), &Value::from(level), &Value::from(rec)),
            "{seg}: {v:#}"
        );
    }
}

#[test]
fn content_length_matches_the_body() {
    let (sc, _nsd) = start();
    let resp = sc.lookup("ownmail.example");
    check_ok(&resp, "lookup");
    let len = resp.header("content-length").map(str::to_string);
    if let Some(len) = len {
        assert_eq!(len.parse::<usize>().ok(), Some(resp.body.len()), "Content-Length mismatch");
    }
}
