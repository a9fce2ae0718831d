//! Configuration sources: `EMAIL_VERDICT_*` environment variables, and flags winning over them.

use email_verdict_tests::process::free_udp_tcp_port;
use email_verdict_tests::{Nsd, Sidecar};
use std::net::SocketAddr;

#[test]
fn every_serve_setting_can_come_from_the_environment() {
    let nsd = Nsd::start();
    let sc = Sidecar::builder().dns(nsd.addr()).via_env().start();
    let v = sc.lookup_ok("ownmail.example");
    assert_eq!(v["result"]["has_mx"], true, "EMAIL_VERDICT_DNS not used: {v:#}");
}

#[test]
fn a_flag_wins_over_the_environment() {
    let nsd = Nsd::start();
    let dead = SocketAddr::from(([127, 0, 0, 1], free_udp_tcp_port()));
    let sc = Sidecar::builder().dns(nsd.addr()).env("EMAIL_VERDICT_DNS", &dead.to_string()).start();
    let v = sc.lookup_ok("ownmail.example");
    assert_eq!(v["result"]["has_mx"], true, "{v:#}");
}

#[test]
fn environment_list_files_are_read() {
    let nsd = Nsd::start();
    let dir = email_verdict_tests::TestDir::new("env-list");
    let list = dir.write("list.txt", "ownmail.example\n");
    let sc = Sidecar::builder().dns(nsd.addr()).env("EMAIL_VERDICT_DISPOSABLE_LIST", &list.to_string_lossy()).start();
    let v = sc.lookup_ok("ownmail.example");
    assert_eq!(v["result"]["verdict"], "disposable", "{v:#}");
}

#[test]
fn every_serve_setting_can_come_from_a_config_file() {
    let nsd = Nsd::start();
    let sc = Sidecar::builder().dns(nsd.addr()).via_config().start();
    let v = sc.lookup_ok("ownmail.example");
    assert_eq!(v["result"]["has_mx"], true, "dns from the file not used: {v:#}");
}

#[test]
fn the_environment_wins_over_the_config_file() {
    let nsd = Nsd::start();
    let dead = SocketAddr::from(([127, 0, 0, 1], free_udp_tcp_port()));
    let sc = Sidecar::builder().dns(dead).via_config().env("EMAIL_VERDICT_DNS", &nsd.addr().to_string()).start();
    let v = sc.lookup_ok("ownmail.example");
    assert_eq!(v["result"]["has_mx"], true, "{v:#}");
}

#[test]
fn an_unknown_key_in_the_config_file_is_a_usage_error() {
    let dir = email_verdict_tests::TestDir::new("config");
    let file = dir.write("settings.toml", "listen = \"127.0.0.1:0\"\nbogus-setting = 1\n");
    let out = email_verdict_tests::sidecar::run_raw(dir.path(), &["serve", "--config", &file.to_string_lossy()]);
    out.expect_code(2, "serve --config with an unknown key");
    assert!(out.stderr.contains("bogus-setting"), "the message does not name the key\n{out}");
}

#[test]
fn a_bad_flag_value_is_a_usage_error() {
    let dir = email_verdict_tests::TestDir::new("config");
    for args in [
        &["serve", "--listen", "not-an-address"][..],
        &["serve", "--dns", "not an address"],
        &["serve", "--cache-min-ttl", "10", "--cache-max-ttl", "5"],
        &["serve", "--state", "nosuchscheme:x"],
        &["serve", "--review-queue-capacity", "99"],
        &["serve", "--review-queue-capacity", "1000001"],
    ] {
        let out = email_verdict_tests::sidecar::run_raw(dir.path(), args);
        out.expect_code(2, &args.join(" "));
        assert!(!out.stderr.contains("panicked"), "{args:?}\n{out}");
    }
}
