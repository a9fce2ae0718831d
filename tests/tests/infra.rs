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
