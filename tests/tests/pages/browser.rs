//! The pages and the dashboard in a real headless Chromium (Debian `chromium` driven by
//! `playwright-core`, scripts in `tests/browser/`). Screenshots go to `target/screenshots/`.

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use email_verdict_tests::{ChildProcess, TestDir, start_with, workspace_root};

use super::{public_listener_up, with_test_ipdb};

const NODE_TIMEOUT: Duration = Duration::from_secs(240);

fn browser_dir() -> PathBuf {
    workspace_root().join("tests/browser")
}

fn screenshots() -> String {
    workspace_root().join("target/screenshots").display().to_string()
}

/// Runs `node tests/browser/SCRIPT ARGS...`; panics with its output unless it exits 0.
fn node(script: &str, args: &[&str]) -> String {
    let chromium = std::env::var("CHROMIUM").unwrap_or_else(|_| "/usr/bin/chromium".into());
    let ready = PathBuf::from(&chromium).is_file()
        && Command::new("node").arg("--version").output().is_ok_and(|o| o.status.success())
        && browser_dir().join("node_modules/playwright-core/package.json").is_file();
    assert!(
        ready,
        "the browser tests need node, Chromium at {chromium} and tests/browser/node_modules: \
         run scripts/install-browser-deps.sh"
    );
    let dir = TestDir::new("browser");
    let mut cmd = Command::new("node");
    // Chromium's own temporary files (a profile, `.org.chromium.*`) go to the test's directory,
    // removed with it, whatever state the browser ends in.
    cmd.arg(browser_dir().join(script)).args(args).current_dir(browser_dir()).env("TMPDIR", dir.path());
    let mut child = ChildProcess::spawn(script, cmd, dir.path());
    let status = child.wait_timeout(NODE_TIMEOUT);
    let output = format!("{}\n{}", child.stdout_text(), child.stderr_text());
    assert!(status.is_some_and(|s| s.success()), "node {script} failed ({status:?}):\n{output}");
    child.stdout_text()
}

#[test]
fn browser_pages_in_every_language_show_verdict_and_mx_table() {
    let (sc, _nsd) = start_with(|b| with_test_ipdb(b).args(&["--page-rate-limit", "0"]));
    public_listener_up(&sc);
    let out = node("pages.mjs", &[&format!("http://{}", sc.addr()), &screenshots()]);
    assert!(out.contains("pages: ok"), "{out}");
}

/// With the shipped IP databases (not the test ones): their credit in every page's language.
#[test]
fn browser_pages_credit_the_shipped_ip_data_in_the_page_language() {
    let (sc, _nsd) = start_with(|b| b.args(&["--page-rate-limit", "0"]));
    public_listener_up(&sc);
    let out = node("credit.mjs", &[&format!("http://{}", sc.addr()), &screenshots()]);
    assert!(out.contains("credit: ok"), "{out}");
}

#[test]
fn browser_second_recheck_the_same_day_is_refused() {
    let (sc, _nsd) = start_with(with_test_ipdb);
    public_listener_up(&sc);
    let base = format!("http://{}", sc.addr());
    for lang in ["ja", "es"] {
        let out = node(
            "recheck.mjs",
            &[&base, lang, if lang == "ja" { "ownmail.example" } else { "gmail.com" }, &screenshots()],
        );
        assert!(out.contains("recheck: ok"), "{out}");
    }
}

#[test]
fn browser_dashboard_creates_changes_and_revokes_a_key_and_decides_a_review() {
    let token = "browser-admin-token";
    let (sc, _nsd) = start_with(|b| with_test_ipdb(b).args(&["--admin-token", token]));
    public_listener_up(&sc);
    sc.lookup_ok("ownmail.example"); // queued as ambiguous
    email_verdict_tests::wait_for("ownmail.example queued", Duration::from_secs(5), || {
        sc.cli().run(&["review", "list"]).stdout.contains("ownmail.example").then_some(())
    });
    let used = sc.cli().row_named("test-0").id; // the key of the lookup above: one day of data
    let admin = format!("http://{}", sc.admin_addr());
    let out = node("dashboard.mjs", &[&admin, token, "ownmail.example", &used, &screenshots()]);
    let created: serde_json::Value =
        out.lines().find_map(|l| serde_json::from_str(l).ok()).unwrap_or_else(|| panic!("no key printed:\n{out}"));
    let (key, id) = (created["key"].as_str().unwrap_or_default(), created["id"].as_str().unwrap_or_default());
    let row = sc.cli().row_named("browser-test");
    assert_eq!(
        (row.id.as_str(), row.plan.as_str(), row.status.as_str()),
        (id, "basic", "revoked"),
        "created premium, changed to basic"
    );
    assert_eq!(sc.lookup_with_key("gmail.com", key).status, 401, "the revoked key is refused");
    let history = sc.cli().run(&["review", "history", "ownmail.example"]);
    assert!(history.stdout.contains("disposable") && history.stdout.contains("dashboard"), "{history}");
    assert_eq!(sc.lookup_ok("ownmail.example")["result"]["verdict"], "disposable", "the next lookup reflects it");
}

/// Issue 24: the review queue as a reviewer works it in the dashboard: a page of its own,
/// filtered, decided from the filtered page, grouped by mail server, a server marked once for
/// all its domains (its page says who taught the index about it and what the mark does).
#[test]
fn browser_review_queue_is_paged_filtered_and_decided_by_mail_server() {
    let dir = TestDir::new("browser-reviews");
    let burn = ["burn1.test", "burn2.test", "burn3.test", "burn4.test"];
    let list = dir.write("disposable.txt", &(burn.join("\n") + "\n"));
    let list = list.to_str().unwrap_or_default().to_owned();
    // An address needs twice the threshold: at 5 the four listed domains teach the index about
    // mx.burnmail.test without catching the never-listed names on it, which wait for review.
    let (sc, _nsd) = start_with(|b| b.args(&["--disposable-list", &list, "--infra-threshold", "5"]));
    for name in burn {
        assert_eq!(sc.lookup_ok(name)["result"]["verdict"], "disposable", "{name}");
    }
    let queued = ["firemail.cc", "shared-backup.test", "upper-case.test", "victimco.test", "nomx.example"];
    for name in queued {
        sc.lookup_ok(name);
    }
    email_verdict_tests::wait_for("five queued", Duration::from_secs(5), || {
        let rows = sc.cli().run(&["review", "list"]).stdout.lines().count();
        (rows == queued.len() + 1).then_some(())
    });
    let out = node("reviews.mjs", &[&format!("http://{}", sc.admin_addr()), &screenshots()]);
    assert!(out.contains("reviews: ok"), "{out}");
    let r = sc.lookup_ok("shared-backup.test");
    assert_eq!(
        (r["result"]["verdict"].as_str(), r["result"]["mx_ip_match"].as_bool()),
        (Some("disposable"), Some(true))
    );
    let history = sc.cli().run(&["review", "history", "mx.burnmail.test", "--server"]);
    assert!(history.stdout.contains("\tdisposable\tdashboard\ta burner network"), "{}", history.stdout);
}

/// Issue 32, item 4: a wave of never-seen domains signing up on one mail server leads the
/// dashboard's queue by mail server and its home page, beside the day's busiest; one mark
/// settles it.
#[test]
fn browser_a_signup_wave_leads_the_dashboard_and_one_mark_settles_it() {
    let (sc, _nsd) = start_with(|b| b.keys(&["gateway"]));
    for _ in 0..2 {
        for i in 0..20 {
            assert_eq!(sc.lookup(&format!("n{i}.flood.example")).status, 200);
        }
    }
    for i in 0..12 {
        let domain = format!("wave{i}.waves");
        assert_eq!(sc.lookup(&domain).status, 200, "{domain}");
        let (mailbox, client) = (["a1", "b2", "c3"][i % 3].repeat(32), format!("203.0.113.{}", i % 4));
        let event = serde_json::json!({ "domain": domain, "mailbox": mailbox, "client": client });
        let body = event.to_string();
        let req = email_verdict_tests::Request::new("POST", "/api/v1/signups")
            .bearer(sc.key())
            .header("Content-Type", "application/json")
            .body(body.as_bytes());
        assert_eq!(sc.send(&req).status, 200, "{event}");
    }
    email_verdict_tests::wait_for("32 queued and the boards ranked", Duration::from_secs(10), || {
        let queued = sc.cli().run(&["review", "list"]).stdout.lines().count() == 33;
        let boards = email_verdict_tests::Request::get("/admin/v1/signups").send(sc.admin_addr()).json();
        (queued && boards["waves"][0]["count"] == 12 && boards["clients"].as_array().is_some_and(|c| c.len() == 4))
            .then_some(())
    });
    let out = node("waves.mjs", &[&format!("http://{}", sc.admin_addr()), &screenshots()]);
    assert!(out.contains("waves: ok"), "{out}");
    assert_eq!(sc.lookup_ok("wave3.waves")["result"]["verdict"], "disposable", "the mark decides the wave");
}
