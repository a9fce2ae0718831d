//! Issue 25: a signup can be traced end to end. Envoy's `x-request-id` goes with the filter's
//! callout and with the ext_authz check; the sidecar logs it beside its own id; the filter's
//! block carries it (header and body), so an operator holding the 403 finds both log lines.

use email_verdict_tests::envoy::{each_build, gateway_with, gateway_with_on};

fn logged_ids(log: &str, route: &str) -> Vec<String> {
    log.lines()
        .filter(|l| l.contains(&format!("route=\"{route}\"")))
        .filter_map(|l| l.split("upstream_request_id=\"").nth(1)?.split('"').next().map(str::to_owned))
        .collect()
}

#[test]
fn the_filters_block_carries_the_id_the_sidecar_logged() {
    each_build(|build| {
        let g = gateway_with_on(build, |s| s, |b| b.set("/cache/ttl_seconds", serde_json::json!(0)));
        let resp = g.envoy.signup_json("temp@mailinator.com");
        assert_eq!(resp.status, 403, "{resp}");
        let id = resp.header("x-request-id").expect("the block names the request").to_owned();
        assert_eq!(resp.json()["request_id"], id.as_str(), "{resp}");
        assert_eq!(resp.json()["error"], "disposable_email");
        let logged = logged_ids(&g.sidecar.stderr_text(), "lookup");
        assert_eq!(logged, vec![id], "the sidecar logged Envoy's id beside its own");
    });
}

#[test]
fn an_ext_authz_check_logs_envoys_id() {
    let config = email_verdict_tests::workspace_root().join("envoy/ext-authz-config.json");
    let g = gateway_with(|s| s.args(&["--ext-authz-config", config.to_str().unwrap()]), |e| e.ext_authz());
    let resp = g.envoy.signup_json("jane@gmail.com");
    assert_eq!(resp.status, 200, "{resp}");
    let seen = g.app.wait_for_request(1);
    let id = seen.header("x-request-id").expect("Envoy's id reaches the app").to_owned();
    let logged = logged_ids(&g.sidecar.stderr_text(), "ext_authz");
    assert_eq!(logged, vec![id], "the check's log line names the request the app got");
}
