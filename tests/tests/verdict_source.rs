//! `x-email-verdict-source` on the lookup the gateways call (`GET /api/v1/domain/:input`): what
//! decided each verdict, one fixture per source, against a real sidecar and NSD (the body stays
//! exactly the spec's: `check_ok`). The same source labels `email_verdict_verdicts_total`.

use std::time::Duration;

use email_verdict_tests::{Nsd, Request, Sidecar, TestDir, wait_for};

/// The domain's lookup: (verdict, the source header).
fn judged(sc: &Sidecar, domain: &str) -> (String, String) {
    let r = sc.lookup(domain);
    let body = email_verdict_tests::verdict::check_ok(&r, domain);
    let verdict = body["result"]["verdict"].as_str().unwrap_or_default().to_owned();
    let source = r.header("x-email-verdict-source").unwrap_or_else(|| panic!("{domain}: no source header\n{r}"));
    (verdict, source.to_owned())
}

fn pair(verdict: &str, source: &str) -> (String, String) {
    (verdict.to_owned(), source.to_owned())
}

#[test]
fn each_verdict_names_its_deciding_source() {
    let (nsd, dir) = (Nsd::start(), TestDir::new("source"));
    // burn1-4.test (strong, the operator's disposable list) teach the index mx.burnmail.test.
    let burn = ["burn1.test", "burn2.test", "burn3.test", "burn4.test"];
    let disposable = dir.write("disposable.txt", &(burn.join("\n") + "\n"));
    let blocklist = dir.write("block.txt", "victimco.test\n");
    let sc = Sidecar::builder()
        .dns(nsd.addr())
        .args(&[
            "--disposable-list",
            disposable.to_str().expect("UTF-8 path"),
            "--blocklist",
            blocklist.to_str().expect("UTF-8 path"),
        ])
        .start();

    assert_eq!(judged(&sc, "mailinator.com"), pair("disposable", "strong_list"), "the shipped strong list");
    assert_eq!(judged(&sc, "ownmail.example"), pair("safe", "rules"), "unlisted, own mail");
    assert_eq!(judged(&sc, "gmail.com"), pair("safe", "rules"), "free webmail");
    assert_eq!(judged(&sc, "victimco.test"), pair("disposable", "operator"), "the operator's blocklist");

    sc.cli().run(&["review", "set", "ownmail.example", "disposable"]).expect_code(0, "review set");
    assert_eq!(judged(&sc, "ownmail.example"), pair("disposable", "reviewer"), "a reviewer's block");
    sc.cli().run(&["review", "set", "ownmail.example", "safe"]).expect_code(0, "review set safe");
    assert_eq!(judged(&sc, "ownmail.example"), pair("safe", "reviewer"), "a reviewer's allow");

    for name in burn {
        assert_eq!(judged(&sc, name), pair("disposable", "strong_list"), "{name}");
    }
    // The index learns in the background, after each answer.
    let caught = wait_for("new-name.test caught by its mail server", Duration::from_secs(5), || {
        let j = judged(&sc, "new-name.test");
        (j.0 == "disposable").then_some(j)
    });
    assert_eq!(caught, pair("disposable", "infrastructure"));

    // The metric counts by the same source.
    let text = Request::get("/metrics").send(sc.admin_addr()).text();
    for series in [
        r#"email_verdict_verdicts_total{verdict="disposable",source="operator"} 1"#,
        r#"email_verdict_verdicts_total{verdict="safe",source="reviewer"} 1"#,
        r#"email_verdict_verdicts_total{verdict="disposable",source="list"} 0"#,
    ] {
        assert!(text.lines().any(|l| l == series), "{series} not in\n{text}");
    }
}
