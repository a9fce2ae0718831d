//! Issue 44: the undeliverable domain at the gate, and the gateway's counts by deciding source,
//! against NSD (`example.zone`), the sidecar and a real Envoy.
//!
//! The lookup API keeps the spec's body (`has_mx` false for any domain without MX records) and
//! says where the domain's mail goes in `x-email-verdict-mail`: `mx`, `implicit` (no MX, an
//! address record: RFC 5321 §5.1 delivers to the name itself) or `none` (no such name, neither
//! MX nor address, a null MX). `no_mx: block` refuses only `none`, through the Wasm filter, the
//! dynamic module and ext_authz; `flag` adds `no_mx` to the flags header.

use email_verdict_tests::envoy::{EnvoyBuilder, FilterBuild, Gateway, builds, gateway_with_on};
use email_verdict_tests::{Nsd, Request, Sidecar, TestDir};
use serde_json::{Value, json};

/// (address's domain, where its mail goes): the zone's names.
const DOMAINS: [(&str, &str); 5] = [
    ("ownmail.example", "mx"),
    ("nomx.example", "implicit"),
    ("noaddr.example", "none"),
    ("nullmx.example", "none"),
    ("no-such-name.example", "none"),
];

#[test]
fn the_lookup_says_where_each_domains_mail_goes_and_keeps_the_spec_body() {
    let nsd = Nsd::start();
    let sc = Sidecar::builder().dns(nsd.addr()).start();
    for (domain, mail) in DOMAINS {
        let r = sc.lookup(domain);
        assert_eq!(r.status, 200, "{domain}: {r}");
        assert_eq!(r.header("x-email-verdict-mail"), Some(mail), "{domain}");
        let v: Value = r.json();
        assert_eq!(v["result"]["verdict"], "safe", "{domain}: the API's verdict is unchanged");
        if mail != "mx" {
            assert_eq!(v["result"]["has_mx"], false, "{domain}: no MX records, as the spec reads it");
            assert_eq!(v["result"]["mx_records"], json!([]), "{domain}");
        }
    }
}

fn signup(gw: &Gateway, email: &str) -> (u16, Value) {
    let body = json!({ "email": email }).to_string();
    let r = Request::new("POST", "/signup")
        .header("Content-Type", "application/json")
        .body(body.as_bytes())
        .send(gw.envoy.addr());
    (r.status, serde_json::from_slice(&r.body).unwrap_or_default())
}

/// Every domain of [`DOMAINS`] through `gw` with `no_mx: block`: `none` refused in its own words,
/// the rest reach the app.
fn only_undeliverable_domains_are_refused(gw: &Gateway, what: &str) {
    for (domain, mail) in DOMAINS {
        let (status, body) = signup(gw, &format!("ann@{domain}"));
        if mail == "none" {
            assert_eq!((status, body["error"].as_str()), (400, Some("undeliverable_email")), "{what}: {domain}");
        } else {
            assert_eq!(status, 200, "{what}: {domain}: {body}");
        }
    }
    let reached = gw.app.requests().len();
    assert_eq!(reached, DOMAINS.iter().filter(|(_, m)| *m != "none").count(), "{what}");
}

#[test]
fn no_mx_block_refuses_only_undeliverable_domains_through_the_filter() {
    for build in builds() {
        let gw = gateway_with_on(build, |s| s, |e| e.set("/no_mx", json!("block")).set("/mode", json!("flag")));
        only_undeliverable_domains_are_refused(&gw, build.name());
        assert_eq!(gw.envoy.counter("email_verdict.blocked_no_mx"), Some(3), "{}", build.name());
        // Again, from the gateway's cache: the same answers, no more callouts.
        let callouts = gw.envoy.counter("email_verdict.callouts");
        let (status, _) = signup(&gw, "bob@noaddr.example");
        assert_eq!(status, 400, "{}: cached", build.name());
        assert_eq!(gw.envoy.counter("email_verdict.callouts"), callouts, "{}", build.name());
    }
}

#[test]
fn no_mx_block_refuses_only_undeliverable_domains_through_ext_authz() {
    let dir = TestDir::new("no-mx");
    let mut config: Value = serde_json::from_slice(
        &std::fs::read(email_verdict_tests::workspace_root().join("envoy/ext-authz-config.json")).unwrap(),
    )
    .unwrap();
    config["no_mx"] = json!("block");
    let path = dir.write("ext-authz.json", &config.to_string());
    let path = path.display().to_string();
    let gw = gateway_with_on(FilterBuild::Wasm, |s| s.args(&["--ext-authz-config", &path]), EnvoyBuilder::ext_authz);
    only_undeliverable_domains_are_refused(&gw, "ext_authz");
}

#[test]
fn no_mx_flag_tells_the_app_and_disposable_verdicts_are_counted_by_source() {
    for build in builds() {
        let gw = gateway_with_on(build, |s| s, |e| e.set("/no_mx", json!("flag")).set("/mode", json!("flag")));
        assert_eq!(signup(&gw, "ann@noaddr.example").0, 200);
        assert_eq!(signup(&gw, "ann@nomx.example").0, 200);
        assert_eq!(signup(&gw, "temp@mailinator.com").0, 200, "flag mode");
        let flags: Vec<String> =
            gw.app.requests().iter().map(|r| r.header("x-email-flags").unwrap_or("-").to_owned()).collect();
        assert_eq!(flags[0], "no_mx", "{}", build.name());
        assert!(!flags[1].contains("no_mx"), "{}: an implicit MX receives mail: {}", build.name(), flags[1]);
        assert_eq!(gw.envoy.counter("email_verdict.flagged_no_mx"), Some(1), "{}", build.name());
        assert_eq!(gw.envoy.counter("email_verdict.disposable_by_strong_list"), Some(1), "{}", build.name());
        assert_eq!(gw.envoy.counter("email_verdict.disposable_by_unknown"), Some(0), "{}", build.name());
    }
}
