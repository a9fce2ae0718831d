//! Error responses: routes, methods, and the one error body shape.

use email_verdict_tests::verdict::check_error;
use email_verdict_tests::{Request, start};

#[test]
fn unknown_paths_are_not_found_even_without_a_key() {
    let (sc, _nsd) = start();
    let key = sc.key().to_string();
    let paths = [
        "/nope",
        "/definitely/not/here",
        "/api",
        "/api/v1",
        "/api/v2/domain/ownmail.example",
        "/api/v1/domains/ownmail.example",
        "/API/V1/DOMAIN/ownmail.example",
    ];
    for p in paths {
        check_error(&sc.get(p), 404, "not_found", &format!("GET {p} (no key)"));
        let with_key = format!("{p}?key={key}");
        check_error(&sc.get(&with_key), 404, "not_found", &format!("GET {p}?key=..."));
    }
}

#[test]
fn other_methods_on_the_api_path_are_not_allowed() {
    let (sc, _nsd) = start();
    let key = sc.key().to_string();
    for method in ["POST", "PUT", "DELETE", "PATCH"] {
        let req = Request::new(method, "/api/v1/domain/ownmail.example");
        check_error(&sc.send(&req), 405, "method_not_allowed", &format!("{method} (no key)"));
        let req = Request::new(method, &format!("/api/v1/domain/ownmail.example?key={key}"))
            .header("Content-Type", "application/json")
            .body(b"{}");
        check_error(&sc.send(&req), 405, "method_not_allowed", &format!("{method} with key"));
    }
}

#[test]
fn the_admin_listener_is_not_the_api() {
    let (sc, _nsd) = start();
    let target = format!("/api/v1/domain/ownmail.example?key={}", sc.key());
    let resp = Request::get(&target).send(sc.admin_addr());
    assert_ne!(resp.status, 200, "the admin listener serves the API\n{resp}");
}

#[test]
fn every_error_has_the_same_shape() {
    let (sc, _nsd) = start();
    let key = sc.key().to_string();
    // (request, status, code); check_error asserts the body shape, the JSON content type and
    // X-Request-ID == request_id
    let table = [
        (Request::get("/api/v1/domain/ownmail.example"), 401, "missing_api_key"),
        (Request::get("/api/v1/domain/ownmail.example?key=x"), 401, "api_key_invalid"),
        (Request::get(&format!("/api/v1/domain/a%20b?key={key}")), 400, "invalid_input"),
        (Request::get(&format!("/api/v1/domain/?key={key}")), 400, "invalid_input"),
        (Request::get("/nope"), 404, "not_found"),
        (Request::new("POST", "/api/v1/domain/ownmail.example"), 405, "method_not_allowed"),
    ];
    for (req, status, code) in table {
        let what = format!("{} -> {status} {code}", req.target());
        let v = check_error(&sc.send(&req), status, code, &what);
        let keys: Vec<&String> = v.as_object().map(|o| o.keys().collect()).unwrap_or_default();
        assert_eq!(keys.len(), 2, "{what}: top-level keys other than request_id, error: {v}");
        let err_keys: Vec<&String> = v["error"].as_object().map(|o| o.keys().collect()).unwrap_or_default();
        assert!(
            err_keys.iter().all(|k| *k == "code" || *k == "message"),
            "{what}: error has keys other than code and message: {v}"
        );
    }
}
