//! The documentation's shell examples, run as written against `make demo`'s stack (issue 25):
//! a README that drifts from the product fails `make test`.
//!
//! Every ```` ```sh ```` block of `README.md` and `docs/*.md` runs in bash (`set -euo pipefail`)
//! from the repository's root, with what a reader has after the Quickstart: `scripts/demo.sh`
//! running (its own ports, its fresh state in `target/demo`), `KEY` set to the demo's API key,
//! `target/release` on `PATH` and `EMAIL_VERDICT_STATE` pointing at the demo's state. The blocks
//! run in order, README first, so a later one may use what an earlier one made. A block preceded by `<!-- not run: why -->` is skipped (a cluster, a real
//! resolver, a server of your own). A ```` ```json output ```` block right after a block is what it
//! prints: every line a JSON value whose fields must be in the output's JSON (`"..."` matches
//! anything); a ```` ```text output ```` block's lines must each appear in the output, in order
//! (`...` in a line matches anything).
//!
//! `make demo FILTER=module` (the filter as the Envoy dynamic module) is started once too, for
//! one blocked and one allowed signup. The demos use fixed ports, so they run one at a time.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use email_verdict_tests::{Request, TestDir, envoy::filter_module, workspace_root};
use serde_json::Value;
use std::sync::Mutex;

/// The demo's fixed ports: one demo at a time.
static DEMO: Mutex<()> = Mutex::new(());

/// One shell example and what it must print.
#[derive(Debug)]
struct Example {
    file: String,
    line: usize,
    script: String,
    output: Option<(String, String)>,
}

/// The examples of one markdown text.
fn examples(file: &str, text: &str) -> Vec<Example> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        if lines[i].trim_end() != "```sh" {
            i += 1;
            continue;
        }
        let skipped =
            lines[..i].iter().rev().find(|l| !l.trim().is_empty()).is_some_and(|l| l.contains("<!-- not run"));
        let start = i;
        let body = block(&lines, &mut i);
        let mut next = i;
        while next < lines.len() && lines[next].trim().is_empty() {
            next += 1;
        }
        let output = match lines.get(next).map(|l| l.trim_end()) {
            Some(fence @ ("```json output" | "```text output")) => {
                let kind = fence.trim_start_matches("```").trim_end_matches(" output").to_owned();
                i = next;
                Some((kind, block(&lines, &mut i)))
            }
            _ => None,
        };
        if !skipped {
            out.push(Example { file: file.to_owned(), line: start + 1, script: body, output });
        }
    }
    out
}

/// The block whose opening fence is at `*i`; leaves `*i` after its closing fence.
fn block(lines: &[&str], i: &mut usize) -> String {
    *i += 1;
    let mut body = String::new();
    while *i < lines.len() && lines[*i].trim_end() != "```" {
        body.push_str(lines[*i]);
        body.push('\n');
        *i += 1;
    }
    *i += 1;
    body
}

/// `make demo`, started as a reader would (already built: `DEMO_SKIP_BUILD=1`), stopped with
/// SIGTERM on drop. Its ports are fixed (10000, 9901, 8080, 8081, 3000): none of the other tests
/// uses them (theirs come from the OS, above 32768).
struct Demo {
    child: Child,
    key: String,
    state: String,
    log: PathBuf,
}

impl Demo {
    /// `make demo` with `FILTER=filter` (`wasm` or `module`).
    fn start(dir: &TestDir, filter: &str) -> Demo {
        let log = dir.join("demo.log");
        let state = format!("sqlite:{}", workspace_root().join("target/demo/demo.db").display());
        let child = Command::new("bash")
            .arg(workspace_root().join("scripts/demo.sh"))
            .current_dir(workspace_root())
            .env("DEMO_SKIP_BUILD", "1")
            .env("FILTER", filter)
            .env_remove("EMAIL_VERDICT_STATE")
            .env_remove("DEMO_KEEP_STATE")
            .env_remove("EMAIL_VERDICT_DNS")
            .stdin(Stdio::null())
            .stdout(std::fs::File::create(&log).expect("demo log"))
            .stderr(Stdio::from(std::fs::File::options().append(true).open(&log).expect("demo log")))
            .spawn()
            .expect("run scripts/demo.sh");
        let mut demo = Demo { child, key: String::new(), state, log };
        let started = Instant::now();
        loop {
            let text = std::fs::read_to_string(&demo.log).unwrap_or_default();
            if let Some(key) = text.lines().find_map(|l| l.trim().strip_prefix("Demo API key (plan pro): ")) {
                demo.key = key.trim().to_owned();
                return demo;
            }
            let exited = demo.child.try_wait().ok().flatten();
            assert!(exited.is_none() && started.elapsed() < Duration::from_secs(60), "the demo did not start:\n{text}");
            std::thread::sleep(Duration::from_millis(200));
        }
    }
}

impl Drop for Demo {
    fn drop(&mut self) {
        let _ = Command::new("kill").arg("-TERM").arg(self.child.id().to_string()).status();
        let deadline = Instant::now() + Duration::from_secs(20);
        while Instant::now() < deadline && matches!(self.child.try_wait(), Ok(None)) {
            std::thread::sleep(Duration::from_millis(100));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn run(example: &Example, demo: &Demo, cwd: &Path) -> Result<String, String> {
    let path =
        format!("{}:{}", workspace_root().join("target/release").display(), std::env::var("PATH").unwrap_or_default());
    let out = Command::new("bash")
        .arg("-c")
        .arg(format!("set -euo pipefail\n{}", example.script))
        .current_dir(cwd)
        .env("PATH", path)
        .env("KEY", &demo.key)
        .env("EMAIL_VERDICT_STATE", &demo.state)
        .env_remove("EMAIL_VERDICT_CONFIG")
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run bash: {e}"))?;
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    if !out.status.success() {
        return Err(format!("exit {}\n{stdout}{}", out.status, String::from_utf8_lossy(&out.stderr)));
    }
    Ok(stdout)
}

/// Whether `actual` holds every field of `expected` (`"..."` matches anything).
fn matches(expected: &Value, actual: &Value) -> bool {
    match (expected, actual) {
        (Value::String(s), _) if s == "..." => true,
        (Value::Object(e), Value::Object(a)) => e.iter().all(|(k, v)| a.get(k).is_some_and(|av| matches(v, av))),
        (Value::Array(e), Value::Array(a)) => e.len() == a.len() && e.iter().zip(a).all(|(e, a)| matches(e, a)),
        (e, a) => e == a,
    }
}

fn check_output(kind: &str, expected: &str, actual: &str) -> Result<(), String> {
    match kind {
        "json" => {
            let values: Vec<Value> = serde_json::Deserializer::from_str(actual)
                .into_iter::<Value>()
                .collect::<Result<_, _>>()
                .map_err(|e| format!("the output is not JSON ({e}):\n{actual}"))?;
            let wanted: Vec<Value> = serde_json::Deserializer::from_str(expected)
                .into_iter::<Value>()
                .collect::<Result<_, _>>()
                .map_err(|e| format!("the documented output is not JSON: {e}"))?;
            let ok = wanted.len() == values.len() && wanted.iter().zip(&values).all(|(w, v)| matches(w, v));
            if ok { Ok(()) } else { Err(format!("documented:\n{expected}\nprinted:\n{actual}")) }
        }
        _ => {
            let mut rest = actual;
            for line in expected.lines().map(str::trim).filter(|l| !l.is_empty()) {
                // `...` in a line stands for what changes from run to run (a time, a count).
                for part in line.split("...").filter(|p| !p.is_empty()) {
                    match rest.find(part) {
                        Some(at) => rest = &rest[at + part.len()..],
                        None => return Err(format!("documented line {line:?} not printed (in order):\n{actual}")),
                    }
                }
            }
            Ok(())
        }
    }
}

fn documents() -> Vec<(String, String)> {
    let root = workspace_root();
    let mut files = vec![root.join("README.md")];
    if let Ok(dir) = std::fs::read_dir(root.join("docs")) {
        let mut docs: Vec<PathBuf> =
            dir.filter_map(Result::ok).map(|e| e.path()).filter(|p| p.extension().is_some_and(|x| x == "md")).collect();
        docs.sort();
        files.extend(docs);
    }
    files
        .into_iter()
        .map(|p| {
            let name = p.strip_prefix(&root).unwrap_or(&p).display().to_string();
            (name, std::fs::read_to_string(&p).expect("read a document"))
        })
        .collect()
}

#[test]
fn the_parser_finds_blocks_outputs_and_skips() {
    let text = "intro\n```sh\necho hi\n```\n\n```json output\n{\"a\": 1}\n```\n\n<!-- not run: needs a cluster -->\n```sh\nkubectl apply\n```\n```sh\necho two\n```\n";
    let found = examples("x.md", text);
    assert_eq!(found.len(), 2, "{found:?}");
    assert_eq!(found[0].output.as_ref().map(|(k, b)| (k.as_str(), b.as_str())), Some(("json", "{\"a\": 1}\n")));
    assert_eq!((found[1].line, found[1].script.as_str()), (14, "echo two\n"));
    assert!(matches(&serde_json::json!({"a": "...", "b": [1]}), &serde_json::json!({"a": 3, "b": [1], "c": 0})));
    assert!(!matches(&serde_json::json!({"a": 1}), &serde_json::json!({"a": 2})));
    assert!(check_output("text", "at ...Z\nnext", "decided at 2026-11-29T06:36:53Z\nnext line").is_ok());
    assert!(check_output("text", "at ...Z\nnext", "next\ndecided at 2026-11-29T06:36:53Z").is_err());
}

#[test]
fn the_documented_examples_work_as_written() {
    let _one_demo = DEMO.lock().unwrap_or_else(|e| e.into_inner());
    let dir = TestDir::new("readme");
    let cwd = workspace_root();
    let demo = Demo::start(&dir, "wasm");
    let mut failures = Vec::new();
    let mut ran = 0;
    for (file, text) in documents() {
        for example in examples(&file, &text) {
            ran += 1;
            let result = run(&example, &demo, &cwd)
                .and_then(|out| example.output.as_ref().map_or(Ok(()), |(kind, want)| check_output(kind, want, &out)));
            if let Err(e) = result {
                failures.push(format!("{}:{}\n{}\n{e}", example.file, example.line, example.script));
            }
        }
    }
    assert!(ran > 5, "only {ran} examples found");
    assert!(failures.is_empty(), "{} of {ran} examples fail:\n\n{}", failures.len(), failures.join("\n----\n"));
}

#[test]
fn the_demo_runs_the_dynamic_module_too() {
    filter_module(); // fails at once, with how to build it, when it is missing
    let _one_demo = DEMO.lock().unwrap_or_else(|e| e.into_inner());
    let dir = TestDir::new("readme-module");
    let demo = Demo::start(&dir, "module");
    let log = std::fs::read_to_string(&demo.log).unwrap_or_default();
    assert!(log.contains("libemail_verdict_filter.so"), "the banner names the module\n{log}");
    let envoy = std::net::SocketAddr::from(([127, 0, 0, 1], 10000));
    let signup = |email: &str| {
        Request::new("POST", "/signup")
            .header("Content-Type", "application/json")
            .body(serde_json::json!({ "email": email }).to_string().as_bytes())
            .send(envoy)
    };
    let blocked = signup("temp@mailinator.com");
    assert_eq!(blocked.status, 403, "a disposable signup through the module\n{blocked}\n{log}");
    assert_eq!(blocked.json()["error"], "disposable_email", "{blocked}");
    let allowed = signup("jane@gmail.com");
    assert_eq!(allowed.status, 200, "a good signup through the module\n{allowed}");
    // The demo app answers with the verdict headers it received.
    assert_eq!(allowed.json()["verdict_headers"]["x-email-verdict"], "safe", "{allowed}");
    let stats =
        Request::get("/stats?filter=dynamicmodulescustom").send(std::net::SocketAddr::from(([127, 0, 0, 1], 9901)));
    assert!(stats.text().contains("dynamicmodulescustom.email_verdict.blocked: 1"), "{}", stats.text());
}
