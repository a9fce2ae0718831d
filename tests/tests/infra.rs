//! Issue 24: never-listed disposable domains caught by their own mail servers, as an attacker
//! tries to evade it (section 1) and to turn it against someone else (section 2), against NSD
//! serving `fixtures/zones/test.zone`. The disposable names are the operator's
//! (`--disposable-list`, tier strong), so each test knows exactly what the index can learn.

use std::time::Duration;

use email_verdict_tests::{DnsCounter, Nsd, Sidecar, SidecarBuilder, TestDir, wait_for};
use serde_json::Value;

/// The disposable service's four listed domains, all on `mx.burnmail.test` (198.51.100.10,
/// 2001:db8:24::10).
const BURN: [&str; 4] = ["burn1.test", "burn2.test", "burn3.test", "burn4.test"];

/// A sidecar on `dns` with `listed` as an operator disposable list (the file is in `dir`).
fn sidecar(
    dns: std::net::SocketAddr,
    dir: &TestDir,
    listed: &[&str],
    more: impl FnOnce(SidecarBuilder) -> SidecarBuilder,
) -> Sidecar {
    let list = dir.write("disposable.txt", &(listed.join("\n") + "\n"));
    let list = list.to_str().expect("UTF-8 path").to_owned();
    more(Sidecar::builder().dns(dns).args(&["--disposable-list", &list])).start()
}

fn result(body: &Value) -> &Value {
    &body["result"]
}

/// Looks each of `names` up and checks it is disposable by its listing: the index learns their
/// mail servers (in the background, after the answer).
fn learn_from(sc: &Sidecar, names: &[&str]) {
    for name in names {
        let r = sc.lookup_ok(name);
        assert_eq!(result(&r)["verdict"], "disposable", "{name} is listed: {r}");
    }
}

/// Looks `domain` up until it is caught by its mail servers (background writes land within
/// milliseconds; bounded anyway), and returns that answer.
fn caught(sc: &Sidecar, domain: &str) -> Value {
    wait_for(&format!("mx_ip_match on {domain}"), Duration::from_secs(5), || {
        let body = sc.lookup_ok(domain);
        (result(&body)["mx_ip_match"] == true).then_some(body)
    })
}

/// The fields issue 24 is about, in one tuple for readable assertions.
fn flags(body: &Value) -> (&str, bool, bool, bool, bool) {
    let r = result(body);
    let flag = |f: &str| r[f].as_bool().unwrap_or_else(|| panic!("{f} missing: {r}"));
    (
        r["verdict"].as_str().unwrap_or(""),
        flag("mx_ip_match"),
        flag("shared_mx"),
        flag("business_email"),
        flag("review_required"),
    )
}

/// Section 1: a shared backup MX (Google Workspace) beside the disposable server used to cancel
/// the signal (`shared_mx` skipped the infrastructure check) and made the domain a business.
/// Its own server is judged on its own; `business_email` is never true for it.
#[test]
fn a_shared_backup_mx_does_not_hide_a_disposable_server() {
    let (nsd, dir) = (Nsd::start(), TestDir::new("infra"));
    let sc = sidecar(nsd.addr(), &dir, &BURN, |b| b);
    learn_from(&sc, &BURN);
    // Its own server by name, and a new host name on its address: both beside a shared backup.
    for domain in ["shared-backup.test", "new-name-shared.test"] {
        let r = caught(&sc, domain);
        assert_eq!(flags(&r), ("disposable", true, true, false, false), "{domain}: {r}");
    }
    // A business on Google Workspace with a backup server of its own stays the spec's row.
    let r = sc.lookup_ok("clean-shared.test");
    assert_eq!(flags(&r), ("safe", false, true, true, true), "{r}");
}

/// Section 1, the other cheap evasions: a new host name on the disposable server's address, an
/// IPv6-only host on its IPv6 address, the disposable server second behind a dead first MX.
#[test]
fn cheap_evasions_of_the_mail_server_are_caught() {
    let (nsd, dir) = (Nsd::start(), TestDir::new("infra"));
    let sc = sidecar(nsd.addr(), &dir, &BURN, |b| b);
    learn_from(&sc, &BURN);
    for domain in ["new-name.test", "v6-only.test", "dead-first.test"] {
        let r = caught(&sc, domain);
        assert_eq!(flags(&r), ("disposable", true, false, false, false), "{domain}: {r}");
    }
}

/// Section 1: the disposable server's name in upper case (a resolver passes the case through;
/// NSD would not, so a forwarder upper-cases MX targets) and with the trailing dot every name
/// has on the wire is the same server.
#[test]
fn an_mx_target_in_upper_case_is_the_same_server() {
    let (nsd, dir) = (Nsd::start(), TestDir::new("infra"));
    let counter = DnsCounter::start_uppercasing_mx(nsd.addr());
    let sc = sidecar(counter.addr(), &dir, &BURN, |b| b);
    learn_from(&sc, &BURN);
    let r = caught(&sc, "upper-case.test");
    assert_eq!(flags(&r), ("disposable", true, false, false, false), "{r}");
    assert_eq!(result(&r)["mx_records"], serde_json::json!(["mx.burnmail.test"]));
}

/// The attacker's listed names: two pointed at `mx.victimco.test` by name, one with a host of its
/// own given victimco's address (203.0.113.25).
const LAPSED: [&str; 3] = ["lapsed1.test", "lapsed2.test", "lapsed3.test"];

/// Waits until the index holds what `names` taught (written in the background after each
/// answer): the admin API lists every domain that taught `server`.
/// (A build without that endpoint, `EMAIL_VERDICT_BIN` of an older commit, gets half a second.)
fn settled(sc: &Sidecar, server: &str, names: &[&str]) {
    wait_for(&format!("the index to learn {server} from {names:?}"), Duration::from_secs(5), || {
        let r = email_verdict_tests::Request::get(&format!("/admin/v1/reviews/servers/{server}")).send(sc.admin_addr());
        if r.status == 404 {
            std::thread::sleep(Duration::from_millis(500));
            return Some(());
        }
        let taught = r.json()["taught_by"].as_array().map(|t| t.len()).unwrap_or(0);
        (r.status == 200 && taught >= names.len()).then_some(())
    });
}

/// Section 2: whoever controls two listed names points them at `mx.victimco.test` and looks them
/// up (so would the warm-up); a third gets a host of its own on victimco's address. A mail server
/// named under a domain is that domain's: `victimco.test` stays the spec's own-MX row, and so
/// does its other brand on the same server (victimco receives its own mail there: a company's
/// server); a neighbour sharing only the address stays safe (an address needs twice the
/// threshold).
#[test]
fn listed_names_pointed_at_a_business_do_not_make_it_or_its_neighbour_disposable() {
    let (nsd, dir) = (Nsd::start(), TestDir::new("infra"));
    let sc = sidecar(nsd.addr(), &dir, &LAPSED, |b| b);
    learn_from(&sc, &LAPSED);
    settled(&sc, "203.0.113.25", &LAPSED);
    for domain in ["victimco.test", "victimco-brand.test", "neighbour.test"] {
        let r = sc.lookup_ok(domain);
        assert_eq!(flags(&r), ("safe", false, false, false, true), "{domain}: {r}");
    }
}

/// Section 2: facts fade when their evidence goes. burn1.test leaves the list; looked up again it
/// teaches nothing, which forgets what it taught: its server's address is down to three
/// disposable domains (under the four an address needs), its name still at three (over two).
/// (The other fading, a domain whose MX moved, is the state store suite's `infra` test; facts
/// not seen for 30 days stop counting, `verdicts/infra.rs`.)
#[test]
fn facts_fade_when_the_listing_goes() {
    let (nsd, dir) = (Nsd::start(), TestDir::new("infra"));
    let mut sc = sidecar(nsd.addr(), &dir, &BURN, |b| b.args(&["--list-max-shrink", "1"]));
    learn_from(&sc, &BURN);
    assert!(flags(&caught(&sc, "new-name.test")).1);
    dir.write("disposable.txt", &(BURN[1..].join("\n") + "\n"));
    sc.process().signal("HUP");
    // Delisted, it is still caught, by its server's name (three listed domains use it): a
    // verdict by mx_ip_match teaches nothing, so what it taught is forgotten.
    wait_for("burn1.test delisted", Duration::from_secs(10), || {
        (result(&sc.lookup_ok("burn1.test"))["mx_ip_match"] == true).then_some(())
    });
    wait_for("new-name.test no longer caught", Duration::from_secs(5), || {
        (result(&sc.lookup_ok("new-name.test"))["mx_ip_match"] == false).then_some(())
    });
    let r = sc.lookup_ok("shared-backup.test");
    assert_eq!(flags(&r), ("disposable", true, true, false, false), "the name still counts: {r}");
}

/// Section 2: a reviewer sees a learned server with the domains that taught it, and marks it
/// once for all its domains: `safe` (then nothing it serves is caught through it, and its
/// queued domains leave the queue), or `disposable` (every domain on it, its owner included,
/// is caught; the answer says how many queued domains that blocks). Shared infrastructure is
/// never marked disposable.
#[test]
fn a_reviewer_marks_a_server_once_for_all_its_domains() {
    use email_verdict_tests::Request;
    let (nsd, dir) = (Nsd::start(), TestDir::new("infra"));
    let sc = sidecar(nsd.addr(), &dir, &BURN, |b| b);
    learn_from(&sc, &BURN);
    settled(&sc, "mx.burnmail.test", &BURN);
    let server = Request::get("/admin/v1/reviews/servers/mx.burnmail.test").send(sc.admin_addr()).json();
    let taught: Vec<&str> =
        server["taught_by"].as_array().unwrap().iter().filter_map(|t| t["domain"].as_str()).collect();
    assert_eq!(taught.len(), 4, "{server}");
    assert!(BURN.iter().all(|b| taught.contains(b)), "{server}");
    assert_eq!(
        (server["disposable"].as_u64(), server["owner"].as_str(), &server["mark"]),
        (Some(4), Some("burnmail.test"), &Value::Null)
    );
    assert!(flags(&caught(&sc, "shared-backup.test")).1);
    // Safe: the name (API) and the address (CLI), once each, for every domain on them.
    let put = |server: &str, body: &str| {
        Request::new("PUT", &format!("/admin/v1/reviews/servers/{server}"))
            .header("Content-Type", "application/json")
            .body(body.as_bytes())
            .send(sc.admin_addr())
    };
    let r = put("mx.burnmail.test", r#"{"decision": "safe", "note": "a forwarding service", "reviewer": "ana"}"#);
    assert_eq!((r.status, r.json()["mark"].as_str()), (200, Some("safe")), "{r}");
    sc.cli().run(&["review", "set", "198.51.100.10", "safe", "--server"]).expect_code(0, "mark the address");
    for domain in ["shared-backup.test", "dead-first.test", "new-name.test"] {
        let r = sc.lookup_ok(domain);
        assert_eq!((flags(&r).0, flags(&r).1), ("safe", false), "{domain}: {r}");
    }
    // Disposable: victimco's address, looked up first so its domains wait in the queue.
    for domain in ["victimco.test", "neighbour.test"] {
        assert_eq!(flags(&sc.lookup_ok(domain)).0, "safe");
    }
    wait_for("both queued", Duration::from_secs(5), || {
        let q = Request::get("/admin/v1/reviews?server=203.0.113.25").send(sc.admin_addr()).json();
        (q["matching"] == 2).then_some(())
    });
    let out = sc.cli().run(&["review", "set", "203.0.113.25", "disposable", "--server", "--note", "abuse"]);
    out.expect_code(0, "mark disposable");
    assert!(out.stdout.contains("blocks the 2 queued domains on 203.0.113.25"), "{}", out.stdout);
    for domain in ["victimco.test", "neighbour.test"] {
        let r = sc.lookup_ok(domain);
        assert_eq!(
            (flags(&r).0, flags(&r).1, result(&r)["blocked"].as_bool()),
            ("disposable", true, Some(false)),
            "{domain}: {r}"
        );
    }
    let q = Request::get("/admin/v1/reviews?server=203.0.113.25").send(sc.admin_addr()).json();
    assert_eq!(q["matching"], 0, "the mark settled them: {q}");
    let history = sc.cli().run(&["review", "history", "203.0.113.25", "--server"]);
    assert!(
        history.stdout.contains("\tdisposable\t") && history.stdout.contains("# applies: disposable"),
        "{}",
        history.stdout
    );
    // Every learned server, with its mark.
    let learned = Request::get("/admin/v1/reviews/learned").send(sc.admin_addr()).json();
    let row = learned["servers"].as_array().unwrap().iter().find(|s| s["server"] == "mx.burnmail.test").cloned();
    assert_eq!(row.map(|r| (r["disposable"].clone(), r["mark"].clone())), Some((4.into(), "safe".into())), "{learned}");
    let r = put("aspmx.l.google.com", r#"{"decision": "disposable"}"#);
    assert_eq!((r.status, r.json()["error"]["code"].as_str()), (409, Some("shared_mx")), "{r}");
}
