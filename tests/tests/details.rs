//! Issue 26: the `details` object beside `result`, through the built binary against NSD's fixture
//! zones: the single lookup, a batch and `email-verdict check` (JSON lines and CSV) agree, and
//! `result` is the spec's record, unchanged.

use email_verdict_tests::verdict::{RESULT_ARRAYS, RESULT_BOOLEANS, RESULT_ENUMS};
use email_verdict_tests::{Nsd, Request, start_with};
use serde_json::{Value, json};

/// The `details` of each fixture input, as every entry point must give them.
fn expected() -> Vec<(&'static str, Value)> {
    vec![
        (
            "J.O.H.N+x@GoogleMail.com",
            json!({"normalized_email": "john@gmail.com", "subaddressed": true, "role_account": false, "relay": false, "provider": "googlemail.com"}),
        ),
        (
            "Postmaster+x@gmail.com",
            json!({"normalized_email": "postmaster@gmail.com", "subaddressed": true, "role_account": true, "relay": false, "provider": "gmail.com"}),
        ),
        // Issue 32: one mailbox, three spellings; only the first two are sub-addresses.
        (
            "J.o.h.n+1@gmail.com",
            json!({"normalized_email": "john@gmail.com", "subaddressed": true, "role_account": false, "relay": false, "provider": "gmail.com"}),
        ),
        (
            "john+2@googlemail.com",
            json!({"normalized_email": "john@gmail.com", "subaddressed": true, "role_account": false, "relay": false, "provider": "googlemail.com"}),
        ),
        (
            "JOHN@gmail.com",
            json!({"normalized_email": "john@gmail.com", "subaddressed": false, "role_account": false, "relay": false, "provider": "gmail.com"}),
        ),
        // A person's name is not a role (issue 32: the old list called sydney@ one).
        (
            "sydney@shopco.example",
            json!({"normalized_email": "sydney@shopco.example", "subaddressed": false, "role_account": false, "relay": false, "provider": "Microsoft 365"}),
        ),
        (
            "J.O.H.N+x@ownmail.example",
            json!({"normalized_email": "J.O.H.N+x@ownmail.example", "subaddressed": false, "role_account": false, "relay": false, "provider": null}),
        ),
        // mx.duck.com is on data/shared_mx.tsv.
        (
            "duck.com",
            json!({"normalized_email": "", "subaddressed": false, "role_account": false, "relay": true, "provider": "DuckDuckGo Email Protection"}),
        ),
    ]
}

/// Percent-encodes `@` and `+` for a path segment.
fn segment(input: &str) -> String {
    input.replace('+', "%2B").replace('@', "%40")
}

/// The keys of `result` are exactly the spec's, and `details` sits beside it.
fn assert_result_unchanged(record: &Value, what: &str) {
    let keys: Vec<&str> = record["result"].as_object().expect("result").keys().map(String::as_str).collect();
    // The spec's field table, as the harness's shape checks know it.
    let spec: Vec<&str> = RESULT_ENUMS
        .iter()
        .map(|(name, _)| *name)
        .chain(RESULT_BOOLEANS.iter().copied())
        .chain(RESULT_ARRAYS.iter().copied())
        .collect();
    let mut sorted_keys = keys.clone();
    sorted_keys.sort_unstable();
    let mut sorted_spec = spec;
    sorted_spec.sort_unstable();
    assert_eq!(sorted_keys, sorted_spec, "{what}: result keys\n{record:#}");
    assert!(record["result"].get("details").is_none() && record.get("details").is_some(), "{what}");
}

#[test]
fn the_lookup_and_a_batch_give_details_beside_an_unchanged_result() {
    let (sc, _nsd) = start_with(|b| b.keys(&["pro"]));
    for (input, details) in expected() {
        let v = sc.lookup_ok(&segment(input));
        assert_eq!(v["details"], details, "GET {input}\n{v:#}");
        assert_result_unchanged(&v, input);
    }
    // The role address and the Gmail address stay safe free webmail: details decide nothing.
    let v = sc.lookup_ok(&segment("Postmaster+x@gmail.com"));
    assert_eq!((v["result"]["verdict"].as_str(), v["result"]["free_provider"].as_bool()), (Some("safe"), Some(true)));

    let inputs: Vec<&str> = expected().iter().map(|(i, _)| *i).collect();
    let body = json!({ "inputs": inputs }).to_string();
    let r = sc.send_retrying_429(
        &Request::new("POST", "/api/v1/domains")
            .bearer(sc.key())
            .header("Content-Type", "application/json")
            .body(body.as_bytes()),
    );
    assert_eq!(r.status, 200, "{r}");
    let body = r.json();
    let results = body["results"].as_array().expect("results");
    for ((input, details), item) in expected().iter().zip(results) {
        assert_eq!(item["input"], *input);
        assert_eq!(item["details"], *details, "batch item {input}\n{item:#}");
        assert_result_unchanged(item, input);
    }
}

#[test]
fn check_prints_the_same_details_as_json_lines_and_csv_columns() {
    let nsd = Nsd::start();
    let stdin: String = expected().iter().map(|(i, _)| format!("{i}\n")).collect();
    let jsonl = check(&nsd, &[], &stdin);
    let lines: Vec<Value> = jsonl.lines().map(|l| serde_json::from_str(l).expect("a JSON line")).collect();
    assert_eq!(lines.len(), expected().len(), "{jsonl}");
    for ((input, details), line) in expected().iter().zip(&lines) {
        assert_eq!(line["details"], *details, "check {input}\n{line:#}");
        assert_result_unchanged(line, input);
    }
    let csv = check(&nsd, &["--format", "csv"], &stdin);
    let mut reader = csv::Reader::from_reader(csv.as_bytes());
    let header: Vec<String> = reader.headers().expect("a header").iter().map(str::to_owned).collect();
    let col =
        |name: &str| header.iter().position(|h| h == name).unwrap_or_else(|| panic!("no {name} column: {header:?}"));
    let rows: Vec<Vec<String>> =
        reader.records().map(|r| r.expect("a CSV record").iter().map(str::to_owned).collect()).collect();
    for ((input, details), row) in expected().iter().zip(&rows) {
        let cell = |name: &str| row[col(name)].clone();
        assert_eq!(cell("normalized_email"), details["normalized_email"].as_str().unwrap(), "{input}");
        assert_eq!(cell("role_account"), details["role_account"].to_string(), "{input}");
        assert_eq!(cell("relay"), details["relay"].to_string(), "{input}");
        assert_eq!(cell("provider"), details["provider"].as_str().unwrap_or(""), "{input}");
        assert_eq!(cell("subaddressed"), details["subaddressed"].to_string(), "{input}");
    }
    assert_eq!(header.last().map(String::as_str), Some("subaddressed"), "new columns come last");
}

/// `email-verdict check` over `stdin` with NSD as its resolver: its standard output.
fn check(nsd: &Nsd, args: &[&str], stdin: &str) -> String {
    let (code, stdout, stderr) = email_verdict_tests::sidecar::run_check(nsd.addr(), args, stdin);
    assert_eq!(code, Some(0), "{stderr}");
    stdout
}
