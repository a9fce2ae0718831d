//! Issue 18: verdicts in bulk, against the built binary and NSD's fixture zones:
//! `POST /api/v1/domains` (quota per answered item, all or nothing; the burst per request) and
//! `email-verdict check` (one output line per input, in order; CSV; Ctrl-C keeps lines whole).

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::Duration;

use email_verdict_tests::verdict::check_error;
use email_verdict_tests::{Nsd, Request, Response, Sidecar, TestDir, start_with};
use serde_json::{Value, json};

fn batch(sc: &Sidecar, key: &str, inputs: &[&str]) -> Response {
    let body = json!({ "inputs": inputs }).to_string();
    sc.send(
        &Request::new("POST", "/api/v1/domains")
            .bearer(key)
            .header("Content-Type", "application/json")
            .body(body.as_bytes()),
    )
}

fn used_today(sc: &Sidecar, name: &str) -> u64 {
    sc.cli().row_named(name).used_today.parse().expect("a count")
}

#[test]
fn a_batch_answers_in_order_and_costs_one_unit_per_verdict() {
    let (sc, _nsd) = start_with(|b| b.keys(&["basic"]));
    let key = sc.key().to_owned();
    let domains = ["gmail.com", "mailinator.com", "Ann@Outlook.com", "not an email", "yopmail.com"];
    // 1,000 inputs: the five above over and over (repeats are resolved once), 200 invalid.
    let inputs: Vec<&str> = (0..1000).map(|i| domains[i % domains.len()]).collect();
    let r = batch(&sc, &key, &inputs);
    assert_eq!(r.status, 200, "{r}");
    let body = r.json();
    let results = body["results"].as_array().expect("results");
    assert_eq!(results.len(), 1000);
    assert!(body["request_id"].is_string() && body.get("input").is_none(), "{body}");
    for (i, item) in results.iter().enumerate() {
        assert_eq!(item["input"], inputs[i], "item {i} is in input order");
        if inputs[i] == "not an email" {
            assert_eq!(item["error"]["code"], "invalid_input", "{item}");
        } else {
            assert!(item.get("request_id").is_none(), "{item}");
            let expected = match inputs[i] {
                "mailinator.com" | "yopmail.com" => "disposable",
                _ => "safe",
            };
            assert_eq!(item["result"]["verdict"], expected, "{item}");
        }
    }
    assert_eq!(results[2]["email"], "Ann@outlook.com", "the local part keeps its case, the domain is normalized");
    assert_eq!(used_today(&sc, "test-0"), 800, "800 verdicts, 200 invalid inputs free");
    assert_eq!(r.header("x-ratelimit-remaining"), Some("4200"), "{r}");
    // More valid inputs than remain today: refused whole, nothing counted.
    std::thread::sleep(Duration::from_millis(1100));
    let many: Vec<String> = (0..1000).map(|i| format!("n{i}.example")).collect();
    for _ in 0..4 {
        let refs: Vec<&str> = many.iter().map(String::as_str).collect();
        assert_eq!(batch(&sc, &key, &refs).status, 200);
    }
    let refs: Vec<&str> = many.iter().map(String::as_str).collect();
    let r = batch(&sc, &key, &refs);
    check_error(&r, 402, "quota_exceeded", "1,000 valid inputs with 200 left");
    assert_eq!(r.header("x-ratelimit-remaining"), Some("200"), "{r}");
    assert_eq!(used_today(&sc, "test-0"), 4800, "the refused batch cost nothing");
}

#[test]
fn the_burst_counts_requests_and_bad_bodies_are_refused() {
    let (sc, _nsd) = start_with(|b| b.keys(&["free"]));
    let key = sc.key().to_owned();
    assert_eq!(batch(&sc, &key, &["gmail.com", "x", "mailinator.com"]).status, 200);
    check_error(&batch(&sc, &key, &["gmail.com"]), 429, "rate_limit_exceeded", "the same second");
    std::thread::sleep(Duration::from_millis(1100));
    check_error(&batch(&sc, &key, &["a.example", "b.example"]), 402, "quota_exceeded", "2 with 1 left");
    assert_eq!(used_today(&sc, "test-0"), 2);
    let send = |body: &[u8]| {
        std::thread::sleep(Duration::from_millis(1100));
        sc.send(
            &Request::new("POST", "/api/v1/domains").bearer(&key).header("Content-Type", "application/json").body(body),
        )
    };
    for body in [
        &br#"{"inputs": []}"#[..],
        b"{}",
        b"[\"gmail.com\"]",
        b"{\"inputs\": [1]}",
        b"not json",
        b"{\"inputs\":[\"a.b\"],\"x\":1}",
    ] {
        check_error(&send(body), 400, "invalid_input", &String::from_utf8_lossy(body));
    }
    let thousand_and_one = json!({ "inputs": vec!["gmail.com"; 1001] }).to_string();
    check_error(&send(thousand_and_one.as_bytes()), 400, "invalid_input", "1,001 inputs");
    let r = sc.send(&Request::get("/api/v1/domains").bearer(&key));
    check_error(&r, 405, "method_not_allowed", "GET");
    check_error(
        &batch(&sc, "ev_0000000000000000000000000000000000000000", &["gmail.com"]),
        401,
        "api_key_invalid",
        "bad key",
    );
}

/// `email-verdict check ARGS` with `stdin`, against NSD.
fn check(nsd: &Nsd, args: &[&str], stdin: &str) -> (Option<i32>, String, String) {
    email_verdict_tests::sidecar::run_check(nsd.addr(), args, stdin)
}

#[test]
fn check_writes_one_line_per_input_in_order() {
    let nsd = Nsd::start();
    let input =
        "gmail.com\nann@mailinator.com\n\nnot an email\n\u{fffd}bad\nyopmail.com\r\ngmail.com\nlast@outlook.com";
    let (code, stdout, stderr) = check(&nsd, &[], input);
    assert_eq!(code, Some(0), "{stderr}");
    let lines: Vec<Value> = stdout.lines().map(|l| serde_json::from_str(l).expect("a JSON line")).collect();
    let inputs: Vec<&str> = input.split('\n').map(|l| l.trim_end_matches('\r')).collect();
    assert_eq!(lines.len(), inputs.len(), "{stdout}");
    for (line, input) in lines.iter().zip(&inputs) {
        assert_eq!(line["input"], *input, "{line}");
    }
    assert_eq!(lines[0]["result"]["verdict"], "safe");
    assert_eq!(lines[1]["result"]["verdict"], "disposable");
    assert_eq!(lines[1]["email"], "ann@mailinator.com");
    assert_eq!(lines[2]["error"]["code"], "invalid_input");
    assert_eq!(lines[3]["error"]["code"], "invalid_input");
    assert_eq!(lines[5]["result"]["verdict"], "disposable");
    assert!(lines.iter().all(|l| l.get("request_id").is_none()));
    assert!(!stderr.contains("%"), "no progress bar when stderr is not a terminal: {stderr}");
    assert_eq!(stderr.trim_end().lines().last().map(|l| l.starts_with("check: 8 lines in ")), Some(true), "{stderr}");
    // CSV, from a file.
    let dir = TestDir::new("check-file");
    let file = dir.join("in.txt");
    std::fs::write(&file, "gmail.com\nx\n").unwrap();
    let (code, stdout, _) = check(&nsd, &["--format", "csv", &file.display().to_string()], "");
    assert_eq!(code, Some(0));
    let rows: Vec<&str> = stdout.lines().collect();
    assert_eq!(rows.len(), 3, "{stdout}");
    assert!(rows[0].starts_with("input,input_type,email,domain,verdict,"), "{stdout}");
    assert!(rows[1].starts_with("gmail.com,domain,,gmail.com,safe,"), "{stdout}");
    assert!(rows[2].starts_with("x,") && rows[2].contains("invalid_input"), "{stdout}");
    // A file that cannot be read is bad usage.
    let (code, _, stderr) = check(&nsd, &["/nonexistent/in.txt"], "");
    assert_eq!(code, Some(2), "{stderr}");
}

/// Inputs come from signup forms, so from anyone: no CSV cell starts like a spreadsheet formula
/// (`=`, `+`, `-`, `@`), whatever the input, its email or the suggestion built from it.
#[test]
fn check_csv_cells_never_start_a_formula() {
    let nsd = Nsd::start();
    let input = "=HYPERLINK(\"http://x\")\n-2+3@yhaoo.com\n@SUM(A1)\n+1@gmail.com\n";
    let (code, stdout, stderr) = check(&nsd, &["--format", "csv"], input);
    assert_eq!(code, Some(0), "{stderr}");
    let rows = csv_rows(&stdout);
    assert_eq!(rows.len(), 4, "four rows after the header: {stdout}");
    for row in &rows {
        for cell in row {
            assert!(!cell.starts_with(['=', '+', '-', '@']), "a formula-like cell {cell:?} in {row:?}");
        }
    }
    // The value is kept, behind the quote a spreadsheet hides.
    assert_eq!(rows[1][0], "'-2+3@yhaoo.com");
    assert_eq!(rows[1][2], "'-2+3@yhaoo.com", "email");
    assert_eq!(rows[1][15], "'-2+3@yahoo.com", "did_you_mean");
    assert_eq!(rows[0][0], "'=HYPERLINK(\"http://x\")");
}

/// The CSV's rows after its header.
fn csv_rows(text: &str) -> Vec<Vec<String>> {
    csv::Reader::from_reader(text.as_bytes())
        .records()
        .map(|r| r.expect("a CSV record").iter().map(str::to_owned).collect())
        .collect()
}

/// The issue's "new user": a file of mixed addresses, standard error on a terminal (a pty from
/// `script`), standard output to a file: a progress bar with percent and ETA on the terminal,
/// one record per input in the file, a summary line at the end.
#[test]
fn check_on_a_terminal_shows_a_progress_bar_and_a_summary() {
    let nsd = Nsd::start();
    let dir = TestDir::new("check-pty");
    // Under NSD's default response rate limit (200 a second): more NXDOMAINs in a burst would
    // see some answers dropped, and the run would report DNS errors.
    let mut input: String = (0..150).map(|i| format!("user{i}@n{i}.example\n")).collect();
    input.push_str("ann@mailinator.com\nnot an email\n");
    std::fs::write(dir.join("in.txt"), &input).unwrap();
    let command =
        format!("{} check --dns {} in.txt > out.jsonl", email_verdict_tests::sidecar::binary().display(), nsd.addr());
    let out = Command::new("script")
        .args(["-qec", &command, "/dev/null"])
        .current_dir(dir.path())
        .env_remove("EMAIL_VERDICT_CONFIG")
        .output()
        .expect("run script (util-linux)");
    let terminal = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{terminal}");
    assert!(terminal.contains('%') && terminal.contains("ETA"), "no progress bar on the terminal: {terminal}");
    assert!(
        terminal.contains("check: 152 lines in ") && terminal.contains("1 disposable, 150 safe, 1 errors"),
        "no summary: {terminal}"
    );
    let written = std::fs::read_to_string(dir.join("out.jsonl")).unwrap();
    assert_eq!(written.lines().count(), 152, "one line per input");
    assert!(!written.contains('%') && !written.contains("ETA"), "the bar stays off standard output");
}

/// `--state URL` applies the reviewer decisions of that store and never writes to it; without
/// it (a temporary store the run creates) none apply. `--cache-size` is checked like serve's.
#[test]
fn check_applies_the_decisions_of_the_store_it_is_given() {
    let nsd = Nsd::start();
    let dir = TestDir::new("check-state");
    let state = format!("sqlite:{}", dir.join("state.db").display());
    let review = Command::new(email_verdict_tests::sidecar::binary())
        .args(["review", "set", "ownmail.example", "disposable", "--state", &state])
        .output()
        .expect("run email-verdict review set");
    assert!(review.status.success(), "{}", String::from_utf8_lossy(&review.stderr));
    let verdict = |args: &[&str]| {
        let (code, stdout, stderr) = check(&nsd, args, "ann@ownmail.example\n");
        assert_eq!(code, Some(0), "{stderr}");
        let line: Value = serde_json::from_str(stdout.trim()).expect("one JSON line");
        line["result"]["verdict"].as_str().map(str::to_owned)
    };
    assert_eq!(verdict(&["--state", &state]).as_deref(), Some("disposable"), "the reviewer's decision");
    // Read only: a name a server lookup would queue for review (weak-only listed) leaves that
    // store's queue as it was.
    let (code, stdout, stderr) = check(&nsd, &["--state", &state], "firemail.cc\nann@waifu.club\n");
    assert_eq!((code, stdout.lines().count()), (Some(0), 2), "{stderr}");
    let queue = Command::new(email_verdict_tests::sidecar::binary())
        .args(["review", "list", "--state", &state])
        .output()
        .expect("run email-verdict review list");
    let queue = String::from_utf8_lossy(&queue.stdout);
    assert!(!queue.contains("firemail.cc") && !queue.contains("waifu.club"), "check wrote to --state: {queue}");
    assert_eq!(verdict(&["--cache-size", "5"]).as_deref(), Some("safe"), "a temporary store: no decisions");
    let (code, _, stderr) = check(&nsd, &["--cache-size", "0"], "gmail.com\n");
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("--cache-size"), "{stderr}");
}

#[test]
fn ctrl_c_stops_check_with_every_written_line_whole() {
    let nsd = Nsd::start();
    let dir = TestDir::new("check-interrupt");
    let mut child = Command::new(email_verdict_tests::sidecar::binary())
        .arg("check")
        .args(["--dns", &nsd.addr().to_string(), "--concurrency", "4"])
        .current_dir(dir.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run email-verdict check");
    let mut stdin = child.stdin.take().expect("stdin");
    // Distinct names: each needs a DNS answer. Keep stdin open: the run can only end by Ctrl-C.
    let names: String = (0..2000).map(|i| format!("user{i}@n{i}.example\n")).collect();
    stdin.write_all(names.as_bytes()).expect("write stdin");
    std::thread::sleep(Duration::from_millis(1500));
    let pid = child.id().to_string();
    assert!(Command::new("kill").args(["-INT", &pid]).status().expect("kill").success());
    let out = child.wait_with_output().expect("wait");
    drop(stdin);
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.ends_with('\n') || stdout.is_empty(), "the last line is whole");
    for (i, line) in stdout.lines().enumerate() {
        let v: Value =
            serde_json::from_str(line).unwrap_or_else(|e| panic!("line {i} is not whole JSON ({e}): {line}"));
        assert_eq!(v["input"], format!("user{i}@n{i}.example"), "in order");
    }
    assert!(String::from_utf8_lossy(&out.stderr).contains("interrupted"), "{}", String::from_utf8_lossy(&out.stderr));
}

/// Issue 23: without `--state`, `check` used `$TMPDIR/email-verdict-check-<pid>.db` and opened
/// it even when it was already there: a file planted at that name (a store whose mail-server
/// index calls 192.0.2.10 disposable infrastructure) turned `fresh-burner.example` disposable.
/// The pid is known in advance here the way an attacker guesses it: `sh` execs `check` in its
/// own process once the file is planted. The run's store is now a new file in a new directory
/// only its user can enter (0700), under a random name, removed at exit.
#[test]
fn check_never_opens_a_planted_temporary_store() {
    use std::os::unix::fs::PermissionsExt;
    let nsd = Nsd::start();
    // A server's store that learned mailinator.com's and guerrillamail.com's mail server (at
    // threshold 1 two domains are enough for an address: issue 24 asks twice the threshold).
    let mut sc = Sidecar::builder().dns(nsd.addr()).args(&["--infra-threshold", "1"]).start();
    sc.lookup_ok("mailinator.com");
    sc.lookup_ok("guerrillamail.com");
    email_verdict_tests::wait_for("the index to know 192.0.2.10", Duration::from_secs(5), || {
        (sc.lookup_ok("fresh-burner.example")["result"]["mx_ip_match"] == true).then_some(())
    });
    assert!(sc.terminate(Duration::from_secs(10)).is_some(), "the server stops");
    let tmp = TestDir::new("check-tmp");
    let binary = email_verdict_tests::sidecar::binary();
    let mut child = Command::new("sh")
        .args(["-c", "read go && exec \"$0\" check --dns \"$1\""])
        .arg(&binary)
        .arg(nsd.addr().to_string())
        .env("TMPDIR", tmp.path())
        .env_remove("EMAIL_VERDICT_CONFIG")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run sh");
    let old_name = format!("email-verdict-check-{}.db", child.id());
    for suffix in ["", "-wal"] {
        let from = format!("{}{suffix}", sc.state_db().display());
        if std::path::Path::new(&from).exists() {
            std::fs::copy(&from, tmp.join(&format!("{old_name}{suffix}"))).expect("plant");
        }
    }
    let planted = std::fs::read(tmp.join(&old_name)).expect("planted");
    let mut stdin = child.stdin.take().expect("stdin");
    stdin.write_all(b"go\n").expect("write stdin");
    // While the run waits for its input: the directory of its store, and its mode.
    let started = std::time::Instant::now();
    let private = loop {
        let found = std::fs::read_dir(tmp.path())
            .into_iter()
            .flatten()
            .filter_map(Result::ok)
            .map(|e| e.path())
            .find(|p| p.is_dir() && p.join("state.db").exists());
        if let Some(dir) = found {
            let mode = std::fs::symlink_metadata(&dir).expect("stat").permissions().mode() & 0o777;
            break Some((dir, mode));
        }
        if started.elapsed() > Duration::from_secs(5) {
            break None;
        }
        std::thread::sleep(Duration::from_millis(25));
    };
    stdin.write_all(b"fresh-burner.example\n").expect("write stdin");
    drop(stdin);
    let out = child.wait_with_output().expect("wait");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let line: Value = serde_json::from_str(String::from_utf8_lossy(&out.stdout).trim()).expect("one JSON line");
    let r = &line["result"];
    assert_eq!((r["verdict"].as_str(), r["mx_ip_match"].as_bool()), (Some("safe"), Some(false)), "{line}");
    let (private, mode) =
        private.unwrap_or_else(|| panic!("no directory with the run's store in {}", tmp.path().display()));
    assert_eq!(mode, 0o700, "{}", private.display());
    let name = private.file_name().and_then(|n| n.to_str()).unwrap_or_default().to_owned();
    assert!(name.starts_with("email-verdict-check-") && name.len() >= 52, "a random name: {name}");
    assert!(!private.exists(), "removed at exit");
    assert_eq!(std::fs::read(tmp.join(&old_name)).expect("planted"), planted, "the planted file is untouched");
    let left: Vec<_> = std::fs::read_dir(tmp.path()).unwrap().filter_map(Result::ok).map(|e| e.file_name()).collect();
    assert!(left.iter().all(|n| n.to_string_lossy().starts_with(&old_name)), "nothing else left: {left:?}");
}

/// Issue 25: a resolver that says a real mail domain does not exist (a sandbox, a captive
/// network) would make every domain `safe`: `check` asks it once first and stops, saying why.
#[test]
fn check_stops_when_the_resolver_denies_a_real_mail_domain() {
    let nsd = Nsd::start();
    // NSD answers NXDOMAIN for this name, as a lying resolver does for everything.
    let (code, stdout, stderr) = check(&nsd, &["--resolver-check", "no-such-name.example"], "mailinator.com\n");
    assert_eq!(code, Some(1), "{stderr}");
    assert!(stdout.is_empty(), "no verdict printed: {stdout}");
    assert!(stderr.contains("does not exist") && stderr.contains("--no-resolver-check"), "{stderr}");
    let (code, stdout, _) =
        check(&nsd, &["--resolver-check", "no-such-name.example", "--no-resolver-check"], "mailinator.com\n");
    assert_eq!((code, stdout.lines().count()), (Some(0), 1), "skipped on request");
    let (code, _, stderr) = check(&nsd, &[], "mailinator.com\n");
    assert_eq!(code, Some(0), "the default check (gmail.com) passes against a real answer: {stderr}");
}
