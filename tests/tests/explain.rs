//! `email-verdict explain` and `GET /admin/v1/explain` against the built binary and NSD: the
//! deciding source for every kind of verdict (strong list, weak listing alone and corroborated,
//! reviewer, operator files, infrastructure, the rules), with the facts behind it; an address's
//! local part never shown; bad input refused in one line; the admin API's JSON the CLI's.

use std::time::Duration;

use email_verdict_tests::{CliOutput, Nsd, Request, Sidecar, SidecarBuilder, TestDir, start_with, wait_for};
use serde_json::{Value, json};

/// `email-verdict explain ARGS... --dns NSD --state ...` (and `--config` when the sidecar has one).
fn explain(sc: &Sidecar, nsd: &Nsd, args: &[&str]) -> CliOutput {
    let dns = nsd.addr().to_string();
    let mut all = vec!["explain"];
    all.extend(args);
    all.extend(["--dns", &dns]);
    sc.cli().run(&all)
}

/// The `--format json` answer for `query`.
fn explain_json(sc: &Sidecar, nsd: &Nsd, query: &str) -> Value {
    let out = explain(sc, nsd, &[query, "--format", "json"]);
    out.expect_code(0, query);
    serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("{query}: not JSON ({e})\n{out}"))
}

/// The value of the text form's line labelled `label` (first one).
fn text_line<'a>(stdout: &'a str, label: &str) -> &'a str {
    stdout
        .lines()
        .find_map(|l| l.strip_prefix(label).filter(|rest| rest.starts_with("  ")).map(str::trim))
        .unwrap_or_else(|| panic!("no {label:?} line in:\n{stdout}"))
}

fn source_names(e: &Value) -> Vec<&str> {
    let sources = e["listing"]["sources"].as_array().unwrap_or_else(|| panic!("no sources: {e}"));
    sources.iter().map(|s| s["name"].as_str().unwrap_or("")).collect()
}

/// Looks `domain` up through the API until `pred` holds on its result (the index learns in
/// the background, within milliseconds; bounded anyway).
fn lookup_until(sc: &Sidecar, domain: &str, pred: impl Fn(&Value) -> bool) {
    wait_for(&format!("lookup of {domain}"), Duration::from_secs(5), || {
        pred(&sc.lookup_ok(domain)["result"]).then_some(())
    });
}

/// A sidecar whose `--config` file holds `toml` (the CLI gets the same file).
fn start_configured(toml: &str, more: impl FnOnce(SidecarBuilder) -> SidecarBuilder) -> (Sidecar, Nsd) {
    start_with(|b| more(b.settings(toml)))
}

#[test]
fn a_strong_listing_names_every_list_with_its_version_and_tier() {
    let (sc, nsd) = start_with(|b| b);
    let e = explain_json(&sc, &nsd, "mailinator.com");
    assert_eq!((e["verdict"].as_str(), e["source"].as_str()), (Some("disposable"), Some("strong_list")), "{e}");
    assert_eq!(
        (e["listing"]["entry"].as_str(), e["listing"]["via_parent"].as_bool()),
        (Some("mailinator.com"), Some(false))
    );
    assert_eq!(source_names(&e), ["disposable-email-domains", "fakefilter", "mailchecker"]);
    for s in e["listing"]["sources"].as_array().unwrap() {
        let version = s["version"].as_str().unwrap_or("");
        assert!(version.chars().next().is_some_and(|c| c.is_ascii_digit()), "a version: {s}");
        assert!(s["location"].as_str().is_some_and(|l| l.starts_with("shipped: data/disposable/")), "{s}");
    }
    assert_eq!(e["listing"]["sources"][2]["tier"], "weak");
    assert_eq!(e["dns"]["mx"], json!(["mail.mailinator.com (192.0.2.10)"]));
    assert_eq!(e["next"]["undo"], "email-verdict review set mailinator.com safe --note \"REASON\"");
    // A subdomain matches through its parent, whose mail it shares.
    let sub = explain_json(&sc, &nsd, "x7.mailinator.com");
    assert_eq!(
        (sub["source"].as_str(), sub["listing"]["entry"].as_str()),
        (Some("strong_list"), Some("mailinator.com"))
    );
    assert_eq!(
        (sub["listing"]["via_parent"].as_bool(), sub["listing"]["parent_mail"].as_bool()),
        (Some(true), Some(true))
    );
    // The text form: aligned lines for people.
    let out = explain(&sc, &nsd, &["mailinator.com"]);
    out.expect_code(0, "text");
    assert_eq!(text_line(&out.stdout, "verdict"), "disposable");
    assert!(text_line(&out.stdout, "source").starts_with("strong_list: "), "{out}");
    assert!(out.stdout.contains("  listed by     fakefilter 0."), "{out}");
    assert!(text_line(&out.stdout, "undo").starts_with("email-verdict review set mailinator.com safe"), "{out}");
}

#[test]
fn a_weak_listing_alone_and_an_unlisted_domain_are_the_rules() {
    let (sc, nsd) = start_with(|b| b);
    let weak = explain_json(&sc, &nsd, "firemail.cc");
    assert_eq!((weak["verdict"].as_str(), weak["source"].as_str()), (Some("safe"), Some("rules")), "{weak}");
    assert_eq!(source_names(&weak), ["mailchecker"]);
    assert_eq!((weak["listing"]["strong"].as_bool(), weak["review_required"].as_bool()), (Some(false), Some(true)));
    let plain = explain_json(&sc, &nsd, "ownmail.example");
    assert_eq!((plain["verdict"].as_str(), plain["source"].as_str()), (Some("safe"), Some("rules")), "{plain}");
    assert_eq!((plain["listing"].is_null(), plain["decision"].is_null()), (true, true));
    assert_eq!(plain["next"]["undo"], "email-verdict review set ownmail.example disposable --note \"REASON\"");
    let free = explain_json(&sc, &nsd, "gmail.com");
    assert_eq!((free["source"].as_str(), free["next"]["undo"].is_null()), (Some("free_webmail"), true), "{free}");
}

#[test]
fn a_reviewers_block_and_allow_say_who_when_and_why() {
    let (sc, nsd) = start_with(|b| b);
    let set = |verdict: &str, note: &str, who: &str| {
        sc.cli()
            .run(&["review", "set", "ownmail.example", verdict, "--note", note, "--reviewer", who])
            .expect_code(0, "set");
    };
    set("disposable", "burner network", "alice");
    let e = explain_json(&sc, &nsd, "ownmail.example");
    assert_eq!((e["verdict"].as_str(), e["source"].as_str()), (Some("disposable"), Some("reviewer")), "{e}");
    let d = &e["decision"];
    assert_eq!(
        (d["by"].as_str(), d["verdict"].as_str(), d["on"].as_str()),
        (Some("reviewer"), Some("disposable"), Some("ownmail.example"))
    );
    assert_eq!((d["reviewer"].as_str(), d["note"].as_str()), (Some("alice"), Some("burner network")));
    assert!(d["at"].as_str().is_some_and(|t| t.len() == 20 && t.ends_with('Z')), "RFC 3339: {d}");
    assert_eq!(e["next"]["withdraw"], "email-verdict review clear ownmail.example --note \"REASON\"");
    // The undo as explain printed it, then explain and a lookup agree it is undone.
    set("safe", "customer ticket 42", "bob");
    let out = explain(&sc, &nsd, &["ownmail.example"]);
    out.expect_code(0, "after the undo");
    assert_eq!(text_line(&out.stdout, "verdict"), "safe");
    assert!(text_line(&out.stdout, "decision").starts_with("safe by reviewer bob on ownmail.example at 20"), "{out}");
    assert_eq!(text_line(&out.stdout, "  note"), "customer ticket 42");
    assert_eq!(sc.lookup_ok("ownmail.example")["result"]["allowlisted"], true);
}

#[test]
fn the_operators_allowlist_and_blocklist_files_are_named() {
    let dir = TestDir::new("explain-operator");
    let allow = dir.write("allow.txt", "mailinator.com\n");
    let block = dir.write("block.txt", "ownmail.example\n");
    let toml =
        format!("allowlist = [{:?}]\nblocklist = [{:?}]\n", allow.display().to_string(), block.display().to_string());
    let (sc, nsd) = start_configured(&toml, |b| b);
    let allowed = explain_json(&sc, &nsd, "sub.mailinator.com");
    assert_eq!(
        (allowed["verdict"].as_str(), allowed["source"].as_str()),
        (Some("safe"), Some("operator")),
        "{allowed}"
    );
    let d = &allowed["decision"];
    assert_eq!((d["by"].as_str(), d["on"].as_str()), (Some("operator"), Some("mailinator.com")));
    assert_eq!(d["files"], json!([allow.display().to_string()]));
    let blocked = explain_json(&sc, &nsd, "ownmail.example");
    assert_eq!((blocked["verdict"].as_str(), blocked["source"].as_str()), (Some("disposable"), Some("operator")));
    assert_eq!(blocked["decision"]["files"], json!([block.display().to_string()]));
}

#[test]
fn infrastructure_gives_its_evidence_and_corroborates_a_weak_listing() {
    let (sc, nsd) = start_configured("infra-threshold = 1\n", |b| b);
    for listed in ["mailinator.com", "guerrillamail.com"] {
        assert_eq!(sc.lookup_ok(listed)["result"]["verdict"], "disposable");
    }
    lookup_until(&sc, "fresh-burner.example", |r| r["mx_ip_match"] == true);
    let e = explain_json(&sc, &nsd, "fresh-burner.example");
    assert_eq!((e["verdict"].as_str(), e["source"].as_str()), (Some("disposable"), Some("infrastructure")), "{e}");
    let infra = &e["infrastructure"][0];
    assert_eq!((infra["server"].as_str(), infra["kind"].as_str()), (Some("192.0.2.10"), Some("address")), "{e}");
    assert!(infra["disposable_domains"].as_u64() >= Some(2), "mailinator.com and guerrillamail.com: {infra}");
    // A weak-only listing on that server: corroborated.
    let weak = explain_json(&sc, &nsd, "tempemailco.com");
    assert_eq!((weak["verdict"].as_str(), weak["source"].as_str()), (Some("disposable"), Some("list")), "{weak}");
    assert_eq!(source_names(&weak), ["mailchecker"]);
    assert!(!weak["infrastructure"].as_array().unwrap().is_empty(), "{weak}");
    let out = explain(&sc, &nsd, &["fresh-burner.example"]);
    assert!(text_line(&out.stdout, "infrastructure").starts_with("address 192.0.2.10 serves "), "{out}");
}

#[test]
fn an_address_is_explained_by_its_domain_and_its_local_part_never_shown() {
    let (sc, nsd) = start_with(|b| b);
    for format in ["text", "json"] {
        let out = explain(&sc, &nsd, &["Secret.Person+tag@Mailinator.com", "--format", format]);
        out.expect_code(0, format);
        let all = format!("{}{}", out.stdout, out.stderr).to_lowercase();
        assert!(!all.contains("secret") && !all.contains("person"), "the local part leaked:\n{out}");
        assert!(all.contains("mailinator.com"), "{out}");
    }
    let e = explain_json(&sc, &nsd, "someone@mailinator.com");
    assert_eq!((e["domain"].as_str(), e["input_type"].as_str()), (Some("mailinator.com"), Some("email")));
    let r = Request::get("/admin/v1/explain?q=Secret.Person%40mailinator.com").send(sc.admin_addr());
    assert_eq!(r.status, 200, "{r}");
    assert!(!r.text().to_lowercase().contains("secret"), "{r}");
    let logs = format!("{}{}", sc.stdout_text(), sc.stderr_text()).to_lowercase();
    assert!(!logs.contains("secret"), "the sidecar logged the local part");
}

#[test]
fn bad_input_exits_2_with_one_line() {
    let (sc, nsd) = start_with(|b| b);
    for bad in ["not an email", "secret@", "@", "x", ""] {
        let out = explain(&sc, &nsd, &[bad]);
        out.expect_code(2, bad);
        assert_eq!((out.stdout.as_str(), out.stderr.lines().count()), ("", 1), "{bad:?}: {out}");
        assert!(out.stderr.starts_with("email-verdict: "), "{out}");
        assert!(bad != "secret@" || !out.stderr.contains("secret"), "{out}");
    }
    explain(&sc, &nsd, &["mailinator.com", "--format", "yaml"]).expect_code(2, "bad format");
    sc.cli().run(&["explain"]).expect_code(2, "no query");
}

#[test]
fn without_dns_it_says_so_and_tells_what_is_known_offline() {
    let (sc, _nsd) = start_with(|b| b);
    sc.cli().run(&["review", "set", "ownmail.example", "disposable", "--note", "n"]).expect_code(0, "set");
    // Nothing listens on port 9 of the loopback: DNS fails at once.
    let run = |q: &str| {
        let out = sc.cli().run(&["explain", q, "--format", "json", "--dns", "127.0.0.1:9"]);
        out.expect_code(0, q);
        serde_json::from_str::<Value>(&out.stdout).unwrap()
    };
    let listed = run("mailinator.com");
    assert_eq!((listed["verdict"].as_str(), listed["dns"]["available"].as_bool()), (Some("disposable"), Some(false)));
    assert_eq!(listed["source"], "strong_list");
    let decided = run("ownmail.example");
    assert_eq!((decided["verdict"].as_str(), decided["source"].as_str()), (Some("disposable"), Some("reviewer")));
    let unknown = run("clean-shared.test");
    assert_eq!((unknown["verdict"].clone(), unknown["source"].as_str()), (Value::Null, Some("unknown")), "{unknown}");
}

const ADMIN_TOKEN: &str = "explain-admin-token-under-test";

#[test]
fn the_admin_api_answers_the_clis_json_with_signup_counts_and_limits() {
    let dir = TestDir::new("explain-admin");
    let authz = dir.write("ext-authz.json", r#"{"velocity": {"domain": {"per_day": 2, "action": "block"}}}"#);
    let toml = format!(
        "ext-authz-config = {:?}\nmailbox-secret = {:?}\n",
        authz.display().to_string(),
        email_verdict_tests::TEST_MAILBOX_SECRET
    );
    let (sc, nsd) = start_configured(&toml, |b| b.keys(&["gateway"]).args(&["--admin-token", ADMIN_TOKEN]));
    sc.lookup_ok("mailinator.com"); // the sidecar now knows its mail server: signups count it too
    for _ in 0..2 {
        let body = json!({"domain": "mailinator.com"}).to_string();
        let req = Request::new("POST", "/api/v1/signups").bearer(sc.key()).header("Content-Type", "application/json");
        assert_eq!(sc.send(&req.body(body.as_bytes())).status, 200);
    }
    let get = |target: &str, token: Option<&str>| {
        let req = Request::get(target);
        let req = match token {
            Some(t) => req.bearer(t),
            None => req,
        };
        req.send(sc.admin_addr())
    };
    assert_eq!(get("/admin/v1/explain?q=mailinator.com", None).status, 401);
    let disposable_verdicts = || {
        let text = get("/metrics", None).text();
        // By source: every series of the disposable verdicts.
        let lines: Vec<&str> =
            text.lines().filter(|l| l.starts_with(r#"email_verdict_verdicts_total{verdict="disposable","#)).collect();
        assert!(!lines.is_empty(), "no disposable verdicts counted:\n{text}");
        lines.join("\n")
    };
    let before = disposable_verdicts();
    let r = get("/admin/v1/explain?q=mailinator.com", Some(ADMIN_TOKEN));
    assert_eq!(r.status, 200, "{r}");
    assert_eq!(disposable_verdicts(), before, "a support question is not a verdict the API gave");
    let api = r.json();
    assert_eq!(api, explain_json(&sc, &nsd, "mailinator.com"), "the admin API and the CLI agree");
    let s = &api["signups"];
    assert_eq!(
        (s["domain"]["day"].as_u64(), s["server"]["name"].as_str()),
        (Some(2), Some("mail.mailinator.com")),
        "{s}"
    );
    assert_eq!(s["server"]["day"].as_u64(), Some(2), "{s}");
    let limit = &s["domain"]["limit"];
    assert_eq!(
        (limit["max"].as_u64(), limit["action"].as_str(), limit["reached"].as_bool()),
        (Some(2), Some("block"), Some(true))
    );
    for bad in ["/admin/v1/explain", "/admin/v1/explain?q=not%20an%20email", "/admin/v1/explain?q="] {
        let r = get(bad, Some(ADMIN_TOKEN));
        assert_eq!((r.status, r.json()["error"]["code"].as_str()), (400, Some("invalid_request")), "{bad}: {r}");
    }
}
