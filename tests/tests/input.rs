//! The `:input` segment: percent-decoding, email vs domain, IDNA, case, trailing dot, limits,
//! and the inputs that must be refused with 400 invalid_input.

use email_verdict_tests::verdict::{check_error, expect_fields};
use email_verdict_tests::{Sidecar, start};
use serde_json::json;

/// A valid domain name of exactly `len` characters ending in `.example` (labels of at most 63).
fn name_of_len(len: usize) -> String {
    let suffix = ".example";
    assert!(len > suffix.len() + 1);
    let mut labels: Vec<String> = Vec::new();
    let mut rest = len - suffix.len();
    while rest > 0 {
        // a label of n chars costs n + 1 with its dot, except the first
        let cost_first = if labels.is_empty() { 0 } else { 1 };
        let n = (rest - cost_first).min(63);
        // never leave a remainder that cannot hold a label and its dot
        let n = if rest - cost_first - n == 1 { n - 1 } else { n };
        labels.push("a".repeat(n));
        rest -= n + cost_first;
    }
    let name = format!("{}{suffix}", labels.join("."));
    assert_eq!(name.len(), len, "{name}");
    name
}

/// Percent-encodes every byte outside the unreserved set.
fn enc(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// (segment as sent, input echoed, input_type, email, domain)
type Row = (String, String, &'static str, String, String);

fn row(seg: &str, input: &str, itype: &'static str, email: &str, domain: &str) -> Row {
    (seg.into(), input.into(), itype, email.into(), domain.into())
}

fn check_rows(sc: &Sidecar, rows: &[Row]) {
    for (seg, input, itype, email, domain) in rows {
        let v = sc.lookup_ok(seg);
        expect_fields(
            &v,
            &[
                ("/input", json!(input)),
                ("/input_type", json!(itype)),
                ("/email", json!(email)),
                ("/domain", json!(domain)),
            ],
            &format!("segment {seg:?}"),
        );
    }
}

#[test]
fn domains_are_normalized_and_the_input_echoed_decoded() {
    let (sc, _nsd) = start();
    let rows = [
        row("ownmail.example", "ownmail.example", "domain", "", "ownmail.example"),
        row("OWNMAIL.EXAMPLE", "OWNMAIL.EXAMPLE", "domain", "", "ownmail.example"),
        row("OwnMail.Example", "OwnMail.Example", "domain", "", "ownmail.example"),
        row("ownmail.example.", "ownmail.example.", "domain", "", "ownmail.example"),
        row("ownmail%2Eexample", "ownmail.example", "domain", "", "ownmail.example"),
        row("b%C3%BCcher.example", "bücher.example", "domain", "", "xn--bcher-kva.example"),
        row("B%C3%9CCHER.example", "BÜCHER.example", "domain", "", "xn--bcher-kva.example"),
        row("xn--bcher-kva.example", "xn--bcher-kva.example", "domain", "", "xn--bcher-kva.example"),
        row("XN--BCHER-KVA.EXAMPLE", "XN--BCHER-KVA.EXAMPLE", "domain", "", "xn--bcher-kva.example"),
    ];
    check_rows(&sc, &rows);
}

#[test]
fn emails_keep_the_local_part_and_normalize_the_domain() {
    let (sc, _nsd) = start();
    let rows = [
        row(
            "John.Doe%40Mailinator.COM",
            "John.Doe@Mailinator.COM",
            "email",
            "John.Doe@mailinator.com",
            "mailinator.com",
        ),
        row("John.Doe@Mailinator.COM", "John.Doe@Mailinator.COM", "email", "John.Doe@mailinator.com", "mailinator.com"),
        row(
            "user%40b%C3%BCcher.example",
            "user@bücher.example",
            "email",
            "user@xn--bcher-kva.example",
            "xn--bcher-kva.example",
        ),
        row(
            "user%2Btag%40ownmail.example",
            "user+tag@ownmail.example",
            "email",
            "user+tag@ownmail.example",
            "ownmail.example",
        ),
        row(
            "%22john%20doe%22%40ownmail.example",
            "\"john doe\"@ownmail.example",
            "email",
            "\"john doe\"@ownmail.example",
            "ownmail.example",
        ),
    ];
    check_rows(&sc, &rows);
}

#[test]
fn the_email_domain_gets_the_domain_verdict() {
    let (sc, _nsd) = start();
    let v = sc.lookup_ok("John.Doe%40Mailinator.COM");
    assert_eq!(v["result"]["verdict"], "disposable", "{v:#}");
    let v = sc.lookup_ok("someone%40shopco.example");
    assert_eq!(v["result"]["shared_mx"], true, "{v:#}");
    assert_eq!(v["result"]["business_email"], true, "{v:#}");
}

#[test]
fn lengths_at_the_limits_are_accepted() {
    let (sc, _nsd) = start();
    let local64 = "l".repeat(64);
    let label63 = format!("{}.example", "a".repeat(63));
    let name253 = name_of_len(253);
    // 64 + 1 + 189 = 254
    let email254 = format!("{local64}@{}", name_of_len(189));
    let rows = [
        row(
            &format!("{local64}%40ownmail.example"),
            &format!("{local64}@ownmail.example"),
            "email",
            &format!("{local64}@ownmail.example"),
            "ownmail.example",
        ),
        row(&label63, &label63, "domain", "", &label63),
        row(&name253, &name253, "domain", "", &name253),
        row(&email254, &email254, "email", &email254, &email254[65..]),
    ];
    check_rows(&sc, &rows);
}

#[test]
fn invalid_inputs_are_refused() {
    let (sc, _nsd) = start();
    let long_name = name_of_len(254);
    let email255 = format!("{}@{}", "l".repeat(64), name_of_len(190));
    // (segment as sent, why it is invalid)
    let table: Vec<(String, &str)> = vec![
        ("".into(), "empty segment"),
        ("%20".into(), "only a space"),
        ("a%20b.example".into(), "space inside a label"),
        ("localhost".into(), "a single label"),
        ("example".into(), "a bare TLD"),
        ("user%40localhost".into(), "email on a single-label domain"),
        (format!("{}.example", "a".repeat(64)), "a 64-character label"),
        (long_name, "a 254-character name"),
        (enc(&email255), "an email of 255 characters"),
        (format!("{}%40ownmail.example", "l".repeat(65)), "a 65-character local part"),
        ("a..b%40ownmail.example".into(), "consecutive dots in the local part"),
        (".a%40ownmail.example".into(), "local part starts with a dot"),
        ("a.%40ownmail.example".into(), "local part ends with a dot"),
        ("john%20doe%40ownmail.example".into(), "unquoted space in the local part"),
        ("user%40".into(), "email without domain"),
        ("user@".into(), "email without domain, raw @"),
        ("%40ownmail.example".into(), "email without local part"),
        ("user%40%5B192.0.2.1%5D".into(), "address literal"),
        ("192.0.2.1".into(), "an IPv4 address"),
        ("%5B2001%3Adb8%3A%3A1%5D".into(), "an IPv6 literal"),
        ("user%40%40ownmail.example".into(), "two @"),
        ("a%40b%40ownmail.example".into(), "unquoted @ in the local part"),
        ("a%00b.example".into(), "NUL"),
        ("%FF.example".into(), "invalid UTF-8"),
        ("a%C2%80b.example".into(), "a C1 control character (UTS-46 disallowed)"),
        ("a%EF%BF%BDb.example".into(), "U+FFFD (UTS-46 disallowed)"),
        ("a_b.example".into(), "underscore (STD3)"),
        ("-a.example".into(), "label starts with a hyphen"),
        ("a-.example".into(), "label ends with a hyphen"),
        ("ownmail..example".into(), "empty label"),
        (".ownmail.example".into(), "leading dot"),
        ("ownmail.example..".into(), "two trailing dots"),
        // Issue 23: a bare domain keeps its root dot, an email's domain does not; and what
        // python-email-validator calls unsafe in a local part.
        ("a%40ownmail.example.".into(), "a trailing dot after an email's domain"),
        ("a%C2%A0b%40ownmail.example".into(), "a no-break space in the local part"),
        ("a%E3%80%80b%40ownmail.example".into(), "an ideographic space in the local part"),
        ("%22a%E2%80%A8b%22%40ownmail.example".into(), "a line separator in a quoted local part"),
        ("a%E2%80%AEb%40ownmail.example".into(), "a bidi override in the local part"),
        ("a%E2%80%8Bb%40ownmail.example".into(), "a zero-width space in the local part"),
        ("a%EE%80%80b%40ownmail.example".into(), "a private-use character in the local part"),
        ("%2E".into(), "only a dot"),
        ("a%2Fb.example".into(), "slash (decoded) inside the name"),
        ("a%3Fb.example".into(), "question mark (decoded) inside the name"),
    ];
    for (seg, why) in table {
        let resp = sc.lookup(&seg);
        check_error(&resp, 400, "invalid_input", &format!("{why}: segment {seg:?}"));
    }
}

#[test]
fn name_of_len_builds_valid_names() {
    for len in [10, 70, 72, 189, 190, 253, 254] {
        let n = name_of_len(len);
        assert!(n.split('.').all(|l| !l.is_empty() && l.len() <= 63), "{n}");
    }
}
