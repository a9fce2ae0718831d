//! Operator lists given at run time (`--disposable-list`, `--free-list`): they are honoured,
//! normalized like inputs, bounded by the Public Suffix List, and free beats disposable.

use email_verdict_tests::verdict::expect_fields;
use email_verdict_tests::{TestDir, start_with};
use serde_json::{Value, json};

/// (flag, list file contents, looked-up segment, expected fields, why)
type Case = (&'static str, &'static str, &'static str, Vec<(&'static str, Value)>, &'static str);

fn disposable() -> Vec<(&'static str, Value)> {
    vec![
        ("/result/verdict", json!("disposable")),
        ("/result/disposable", json!(true)),
        ("/result/level", json!("critical")),
        ("/result/recommendation", json!("block")),
    ]
}

fn safe() -> Vec<(&'static str, Value)> {
    vec![
        ("/result/verdict", json!("safe")),
        ("/result/disposable", json!(false)),
        ("/result/level", json!("low")),
        ("/result/recommendation", json!("allow")),
    ]
}

fn allowlisted() -> Vec<(&'static str, Value)> {
    [safe(), vec![("/result/allowlisted", json!(true)), ("/result/review_required", json!(false))]].concat()
}

fn blocked() -> Vec<(&'static str, Value)> {
    [disposable(), vec![("/result/blocked", json!(true))]].concat()
}

fn free() -> Vec<(&'static str, Value)> {
    [safe(), vec![("/result/free_provider", json!(true))]].concat()
}

#[test]
fn operator_lists() {
    let table: Vec<Case> = vec![
        ("--disposable-list", "ownmail.example\n", "ownmail.example", disposable(), "listed domain"),
        ("--disposable-list", "ownmail.example\n", "a%40ownmail.example", disposable(), "email on a listed domain"),
        ("--disposable-list", "OwnMail.Example\n", "ownmail.example", disposable(), "entry in mixed case"),
        (
            "--disposable-list",
            "bücher.example\n",
            "b%C3%BCcher.example",
            disposable(),
            "entry in Unicode, normalized to Punycode",
        ),
        (
            "--disposable-list",
            "xn--bcher-kva.example\n",
            "b%C3%BCcher.example",
            disposable(),
            "entry in Punycode, input in Unicode",
        ),
        ("--disposable-list", "pp.ua\n", "shop.pp.ua", safe(), "entry that is a public suffix is never honoured"),
        ("--disposable-list", "example\n", "ownmail.example", safe(), "entry that is a TLD is never honoured"),
        ("--disposable-list", "gmail.com\n", "gmail.com", free(), "free webmail is never disposable (rule 2)"),
        (
            "--disposable-list",
            "outlook.com\n",
            "shopco.example",
            safe(),
            "disposable signals are not inherited through shared MX (rule 3)",
        ),
        ("--free-list", "ownmail.example\n", "ownmail.example", free(), "listed free provider"),
        (
            "--disposable-list",
            "# a comment\n\nownmail.example\n",
            "ownmail.example",
            disposable(),
            "comments and blank lines",
        ),
        (
            "--allowlist",
            "mailinator.com\n",
            "mailinator.com",
            allowlisted(),
            "allowlist beats a shipped disposable list",
        ),
        ("--allowlist", "ownmail.example\n", "ownmail.example", allowlisted(), "allowlisted: no review needed"),
        ("--blocklist", "ownmail.example\n", "ownmail.example", blocked(), "blocklisted"),
        (
            "--blocklist",
            "gmail.com\n",
            "gmail.com",
            free(),
            "free webmail is never disposable, even blocklisted (rule 2)",
        ),
    ];
    for (flag, contents, seg, expected, why) in table {
        let dir = TestDir::new("lists");
        let file = dir.write("list.txt", contents);
        let file = file.to_string_lossy().to_string();
        let (sc, _nsd) = start_with(|b| b.args(&[flag, &file]));
        let v = sc.lookup_ok(seg);
        expect_fields(&v, &expected, &format!("{why} ({flag} {contents:?}, lookup {seg})"));
    }
}

#[test]
fn several_lists_add_up() {
    let dir = TestDir::new("lists");
    let a = dir.write("a.txt", "ownmail.example\n");
    let b = dir.write("b.txt", "shopco.example\n");
    let (a, b) = (a.to_string_lossy().to_string(), b.to_string_lossy().to_string());
    let (sc, _nsd) = start_with(|s| s.args(&["--disposable-list", &a, "--disposable-list", &b]));
    for seg in ["ownmail.example", "shopco.example", "mailinator.com"] {
        let v = sc.lookup_ok(seg);
        expect_fields(&v, &disposable(), seg);
    }
    expect_fields(&sc.lookup_ok("nomx.example"), &safe(), "unlisted");
}

#[test]
fn a_missing_list_file_stops_serve_with_a_message() {
    let dir = TestDir::new("lists");
    let missing = dir.join("no-such-list.txt").to_string_lossy().to_string();
    let out = email_verdict_tests::sidecar::run_raw(
        dir.path(),
        &[
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--admin-listen",
            "127.0.0.1:0",
            "--state",
            &format!("sqlite:{}", dir.join("s.db").display()),
            "--disposable-list",
            &missing,
        ],
    );
    assert!(matches!(out.code, Some(1 | 2)), "serve with a missing list file: expected exit 1 or 2\n{out}");
    assert!(out.stderr.contains("no-such-list.txt"), "the message does not name the file\n{out}");
}
