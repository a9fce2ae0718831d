//! The real-client guard: what real clients send with a safe address still signs up through the
//! block-mode gateway (the app gets it, judged `safe`), and the frameworks read that address. Each
//! client tags its request with `?client=NAME` so the app's recording says who sent it.

use std::process::Command;

use email_verdict_tests::frameworks::Frameworks;
use email_verdict_tests::{TestDir, workspace_root};

use super::corpus::SAFE;
use super::{Via, is_disposable, start_gateway};

/// (client, command); every command prints `<client> <status>` lines or just the status.
fn clients(base: &str, dir: &TestDir) -> Vec<(&'static str, Command)> {
    let url = |c: &str| format!("{base}/signup?client={c}");
    let curl = |c: &'static str, args: &[&str]| {
        let mut cmd = Command::new("curl");
        cmd.args(["-sS", "-o", "/dev/null", "-w", "%{http_code}"]).args(args).arg(url(c));
        (c, cmd)
    };
    let python = format!(
        r#"import requests
for client, kw in [("requests-json", {{"json": {{"email": "{SAFE}"}}}}),
                   ("requests-data", {{"data": {{"email": "{SAFE}", "name": "Ann"}}}}),
                   ("requests-files", {{"data": {{"email": "{SAFE}"}}, "files": {{"avatar": ("a.bin", b"\r\n--\r\r\n")}}}})]:
    print(client, requests.post("{base}/signup?client=" + client, timeout=10, **kw).status_code)"#
    );
    let node = format!(
        r#"(async () => {{
  const json = await fetch("{base}/signup?client=node-fetch-json", {{ method: "POST",
    headers: {{ "content-type": "application/json" }}, body: JSON.stringify({{ email: "{SAFE}" }}) }});
  console.log("node-fetch-json", json.status);
  const data = new FormData();
  data.append("email", "{SAFE}");
  data.append("avatar", new Blob(["\r\n--\r"]), "a.bin");
  const form = await fetch("{base}/signup?client=node-fetch-formdata", {{ method: "POST", body: data }});
  console.log("node-fetch-formdata", form.status);
}})();"#
    );
    let mut py = Command::new(email_verdict_tests::werkzeug::python());
    py.args(["-c", &python]);
    let mut nd = Command::new("node");
    nd.args(["-e", &node]);
    let mut go = Command::new(workspace_root().join("target/frameworks/go-readers"));
    go.args(["client", &url("go-multipart-writer")]);
    let mut browser = Command::new("node");
    browser.arg(workspace_root().join("tests/browser/signup-clients.mjs")).arg(base).env("TMPDIR", dir.path());
    vec![
        curl("curl-F", &["-F", &format!("email={SAFE}"), "-F", "name=Ann"]),
        curl("curl-d", &["-d", "email=ann%40gmail.com", "-d", "name=Ann"]),
        curl("curl-json", &["--json", &format!(r#"{{"email":"{SAFE}"}}"#)]),
        ("python-requests", py),
        ("node-fetch", nd),
        ("go-multipart-writer", go),
        ("chromium", browser),
    ]
}

fn guard(via: Via, frameworks: &Frameworks) -> Vec<String> {
    let gw = start_gateway(via);
    let dir = TestDir::new("signup-clients");
    let base = format!("http://{}", gw.envoy.addr());
    let mut problems = Vec::new();
    let mut sent = 0;
    for (name, mut cmd) in clients(&base, &dir) {
        let out = cmd.current_dir(dir.path()).output().unwrap_or_else(|e| panic!("run {name}: {e}"));
        let stdout = String::from_utf8_lossy(&out.stdout);
        if !out.status.success() {
            problems.push(format!("{name} failed: {stdout}{}", String::from_utf8_lossy(&out.stderr)));
        }
        for line in stdout.lines().filter(|l| l.split(' ').next_back().is_some_and(|s| s.parse::<u16>().is_ok())) {
            sent += 1;
            if !line.ends_with("200") {
                problems.push(format!("{}: {name} got {line}", via.name()));
            }
        }
    }
    let signups: Vec<_> = gw.app.requests().into_iter().filter(|r| r.path() == "/signup").collect();
    if signups.len() != sent {
        problems.push(format!("{}: {sent} signups answered, the app got {}", via.name(), signups.len()));
    }
    for r in &signups {
        let verdict = r.header("x-email-verdict").unwrap_or("none");
        let read = frameworks.read_all(r);
        let readers: Vec<&str> =
            read.iter().filter(|(_, v)| v.iter().flatten().any(|v| v == SAFE)).map(|(n, _)| n.as_str()).collect();
        if verdict != "safe"
            || readers.is_empty()
            || read.iter().flat_map(|(_, v)| v.iter().flatten()).any(|v| is_disposable(v))
        {
            problems.push(format!("{}: {} judged {verdict}, read as {SAFE} by {readers:?}", via.name(), r.target));
        }
    }
    println!("{}: {} real-client signups reached the app", via.name(), signups.len());
    problems
}

#[test]
fn real_clients_still_sign_up() {
    let frameworks = Frameworks::start();
    let problems: Vec<String> = Via::ALL.into_iter().flat_map(|via| guard(via, &frameworks)).collect();
    assert!(problems.is_empty(), "real clients refused or misread:\n{}", problems.join("\n"));
}
