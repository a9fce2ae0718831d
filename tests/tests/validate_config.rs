//! `email-verdict validate-config` against the built binary: every shipped recipe passes, a bad
//! value of every field of the plugin configuration fails with one line naming the file and the
//! field, stdin, YAML of several documents, and what is not a configuration.

use email_verdict_tests::TestDir;
use email_verdict_tests::schema::{fields, plugin_schema};
use email_verdict_tests::sidecar::{CliOutput, run_raw, run_with_stdin};
use email_verdict_tests::workspace_root;
use serde_json::{Value, json};

/// The shipped files that hold configurations, and how many each holds.
const SHIPPED: &[(&str, usize)] = &[
    ("envoy/plugin-config.json", 1),
    ("envoy/ext-authz-config.json", 1),
    ("envoy/envoy.yaml", 1),
    ("envoy/module.yaml", 1),
    ("envoy/istio/envoyfilter.yaml", 1),
    ("envoy/istio/module-envoyfilter.yaml", 1),
    ("envoy/istio/wasmplugin.yaml", 1),
    ("envoy/gateway/envoyextensionpolicy.yaml", 1),
    ("envoy/gateway/grpcroute.yaml", 1),
    ("envoy/gateway/module.yaml", 1),
];

fn validate(dir: &TestDir, args: &[&str]) -> CliOutput {
    let mut all = vec!["validate-config"];
    all.extend(args);
    run_raw(dir.path(), &all)
}

/// The shipped plugin configuration, as JSON.
fn plugin_config() -> Value {
    let text = std::fs::read_to_string(workspace_root().join("envoy/plugin-config.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

#[test]
fn every_shipped_recipe_validates() {
    let dir = TestDir::new("validate-shipped");
    let root = workspace_root();
    let paths: Vec<String> = SHIPPED.iter().map(|(f, _)| root.join(f).display().to_string()).collect();
    let args: Vec<&str> = paths.iter().map(String::as_str).collect();
    let out = validate(&dir, &args);
    out.expect_code(0, "validate-config on the shipped recipes");
    for ((file, count), path) in SHIPPED.iter().zip(&paths) {
        let lines = out.stdout.lines().filter(|l| l.starts_with(&format!("ok: {path}"))).count();
        assert_eq!(lines, *count, "{file}\n{out}");
    }
    assert!(out.stdout.contains("ext-authz-config.json: ext_authz configuration"), "{out}");
    assert!(out.stdout.contains("WasmPlugin email-verdict (spec.pluginConfig): plugin configuration"), "{out}");
    assert!(out.stderr.is_empty(), "{out}");
}

/// Changes to a document: JSON pointers and their new values (`None`: removed).
type Changes = Vec<(&'static str, Option<Value>)>;

/// A bad value for every field of the schema: the field, the changes, the field the message
/// must name.
fn bad_values() -> Vec<(&'static str, Changes, &'static str)> {
    let secret_env = ("/mailbox_secret_env", Some(json!("EMAIL_VERDICT_MAILBOX_SECRET")));
    let mut v: Vec<(&str, Changes, &str)> = vec![
        ("sidecar", vec![("/sidecar", Some(json!("email_verdict")))], "sidecar"),
        ("sidecar.cluster", vec![("/sidecar/cluster", Some(json!("")))], "sidecar.cluster"),
        ("sidecar.authority", vec![("/sidecar/authority", Some(json!("a b")))], "sidecar.authority"),
        ("sidecar.timeout_ms", vec![("/sidecar/timeout_ms", Some(json!(0)))], "sidecar.timeout_ms"),
        ("sidecar.api_key", vec![("/sidecar/api_key", Some(json!("ev_x")))], "sidecar.api_key"),
        ("sidecar.api_key_env", vec![("/sidecar/api_key_env", Some(json!("A=B")))], "sidecar.api_key_env"),
        ("signup_routes", vec![("/signup_routes", Some(json!([])))], "signup_routes"),
        ("signup_routes.method", vec![("/signup_routes/0/method", Some(json!("PO ST")))], "signup_routes[0].method"),
        ("signup_routes.path", vec![("/signup_routes/0/path", Some(json!("signup")))], "signup_routes[0].path"),
        ("signup_routes.path_prefix", vec![("/signup_routes/0/path_prefix", Some(json!("/api")))], "signup_routes[0]"),
        ("email", vec![("/email", Some(json!([1])))], "email"),
        ("email.headers", vec![("/email/headers", Some(json!(["x email"])))], "email.headers[0]"),
        ("email.query_params", vec![("/email/query_params", Some(json!([""])))], "email.query_params[0]"),
        ("email.json_pointers", vec![("/email/json_pointers", Some(json!(["email"])))], "email.json_pointers[0]"),
        ("email.form_fields", vec![("/email/form_fields", Some(json!(["", "x"])))], "email.form_fields[0]"),
        ("email.secret_fields", vec![("/email/secret_fields", Some(json!([""])))], "email.secret_fields[0]"),
        ("email.proto_fields", vec![("/email/proto_fields", Some(json!(["0"])))], "email.proto_fields[0]"),
        ("graphql", vec![("/graphql", Some(json!({ "paths": ["/graphql"] })))], "graphql.operations"),
        ("graphql.paths", vec![("/graphql/paths", Some(json!(["graphql"])))], "graphql.paths[0]"),
        ("graphql.operations", vec![("/graphql/operations", Some(json!(["sign-up"])))], "graphql.operations[0]"),
        ("max_domains", vec![("/max_domains", Some(json!(65)))], "max_domains"),
        ("mode", vec![("/mode", Some(json!("dry_run")))], "mode"),
        ("enforce_percent", vec![("/enforce_percent", Some(json!(101)))], "enforce_percent"),
        ("block_response", vec![("/block_response", Some(json!("no")))], "block_response"),
        ("block_response.status", vec![("/block_response/status", Some(json!(200)))], "block_response.status"),
        ("flag_headers", vec![("/flag_headers", Some(json!(true)))], "flag_headers"),
        ("detail_headers", vec![("/detail_headers", Some(json!(1)))], "detail_headers"),
        ("on_missing_email", vec![("/on_missing_email", Some(json!("block")))], "on_missing_email"),
        ("on_invalid_email", vec![("/on_invalid_email", Some(json!("block")))], "on_invalid_email"),
        ("on_unreadable_body", vec![("/on_unreadable_body", Some(json!("block")))], "on_unreadable_body"),
        ("failure_mode", vec![("/failure_mode", Some(json!("maybe")))], "failure_mode"),
        ("failure_status", vec![("/failure_status", Some(json!(200)))], "failure_status"),
        ("local_fallback", vec![("/local_fallback", Some(json!("yes")))], "local_fallback"),
        ("decision_sync_seconds", vec![("/decision_sync_seconds", Some(json!(3601)))], "decision_sync_seconds"),
        ("cache", vec![("/cache", Some(json!("on")))], "cache"),
        ("cache.ttl_seconds", vec![("/cache/ttl_seconds", Some(json!(-1)))], "cache.ttl_seconds"),
        ("cache.max_entries", vec![("/cache/max_entries", Some(json!(0)))], "cache.max_entries"),
        ("max_body_bytes", vec![("/max_body_bytes", Some(json!(0)))], "max_body_bytes"),
        ("hold_headers", vec![("/hold_headers", Some(json!(false))), ("/mode", Some(json!("flag")))], "hold_headers"),
        ("velocity", vec![("/velocity", Some(json!({ "everyone": {} }))), secret_env.clone()], "velocity"),
        ("on_subaddressed", vec![("/on_subaddressed", Some(json!("block")))], "on_subaddressed"),
        ("no_mx", vec![("/no_mx", Some(json!("deny")))], "no_mx"),
        ("mailbox_secret", vec![("/mailbox_secret", Some(json!("short")))], "mailbox_secret"),
        ("mailbox_secret_env", vec![("/mailbox_secret_env", Some(json!(5)))], "mailbox_secret_env"),
    ];
    for (name, path) in FLAG_HEADERS {
        v.push((name, vec![(path, Some(json!("cookie")))], name));
    }
    for (name, path) in DETAIL_HEADERS {
        v.push((name, vec![(path, Some(json!("no")))], name));
    }
    for (name, path) in FAILURE_REASONS {
        v.push((name, vec![("/failure_mode", Some(json!({}))), (path, Some(json!("block")))], "failure_mode"));
    }
    for scope in ["mailbox", "client", "domain", "server"] {
        let at = |field: &str| -> &'static str { format!("velocity.{scope}{field}").leak() };
        let limits = [
            ("", json!({ "action": "flag" }), at("")),
            (".per_day", json!({ "per_day": 0, "action": "flag" }), at("")),
            (".per_hour", json!({ "per_hour": -1, "action": "flag" }), at(".per_hour")),
            (".action", json!({ "per_day": 1, "action": "drop" }), at(".action")),
        ];
        for (field, limit, named) in limits {
            v.push((at(field), vec![("/velocity", Some(json!({ scope: limit }))), secret_env.clone()], named));
        }
    }
    v
}

const FLAG_HEADERS: [(&str, &str); 11] = [
    ("flag_headers.verdict", "/flag_headers/verdict"),
    ("flag_headers.domain", "/flag_headers/domain"),
    ("flag_headers.flags", "/flag_headers/flags"),
    ("flag_headers.bypass", "/flag_headers/bypass"),
    ("flag_headers.suggestion", "/flag_headers/suggestion"),
    ("flag_headers.normalized_email", "/flag_headers/normalized_email"),
    ("flag_headers.role_account", "/flag_headers/role_account"),
    ("flag_headers.relay", "/flag_headers/relay"),
    ("flag_headers.mailbox_signups", "/flag_headers/mailbox_signups"),
    ("flag_headers.client_signups", "/flag_headers/client_signups"),
    ("flag_headers.velocity", "/flag_headers/velocity"),
];
const DETAIL_HEADERS: [(&str, &str); 5] = [
    ("detail_headers.normalized_email", "/detail_headers/normalized_email"),
    ("detail_headers.role_account", "/detail_headers/role_account"),
    ("detail_headers.relay", "/detail_headers/relay"),
    ("detail_headers.mailbox_signups", "/detail_headers/mailbox_signups"),
    ("detail_headers.client_signups", "/detail_headers/client_signups"),
];
const FAILURE_REASONS: [(&str, &str); 3] = [
    ("failure_mode.sidecar_error", "/failure_mode/sidecar_error"),
    ("failure_mode.sidecar_timeout", "/failure_mode/sidecar_timeout"),
    ("failure_mode.sidecar_rejected", "/failure_mode/sidecar_rejected"),
];
/// `doc` with the value at a JSON pointer set (`None`: removed).
fn set(doc: &mut Value, pointer: &str, value: Option<Value>) {
    email_verdict_tests::envoy::put_pointer(doc, pointer, value);
}

#[test]
fn a_bad_value_of_every_field_fails_naming_the_field() {
    let dir = TestDir::new("validate-fields");
    let cases = bad_values();
    // Every field of the schema has its case (the block body takes any JSON value).
    let covered: std::collections::BTreeSet<String> = cases.iter().map(|(name, _, _)| name.to_string()).collect();
    let missing: Vec<String> =
        fields(&plugin_schema()).into_iter().filter(|f| f != "block_response.body" && !covered.contains(f)).collect();
    assert!(missing.is_empty(), "fields without a bad value here: {missing:?}");
    let mut wrong = Vec::new();
    for (name, changes, field) in cases {
        let mut doc = plugin_config();
        for (pointer, value) in changes {
            set(&mut doc, pointer, value);
        }
        let file = dir.write("plugin.json", &serde_json::to_string_pretty(&doc).unwrap());
        let out = validate(&dir, &["plugin.json"]);
        let lines: Vec<&str> = out.stderr.lines().collect();
        let named = lines.len() == 1 && lines[0].starts_with(&format!("plugin.json: plugin configuration: {field}"));
        if out.code != Some(1) || !named || !out.stdout.is_empty() {
            wrong.push(format!("{name} (want a line naming {field}):\n{out}"));
        }
        std::fs::remove_file(file).unwrap();
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n\n"));
}

#[test]
fn stdin_is_read_for_a_dash() {
    let dir = TestDir::new("validate-stdin");
    let good = serde_json::to_vec(&plugin_config()).unwrap();
    let out = run_with_stdin(dir.path(), &["validate-config", "-"], Some(&good));
    out.expect_code(0, "a good plugin configuration on stdin");
    assert_eq!(out.stdout.trim(), "ok: <stdin>: plugin configuration", "{out}");
    let yaml = b"mode: flag\nhold_headers: false\nsidecar: {cluster: ev, api_key_env: KEY}\nsignup_routes: [{method: POST, path: /signup}]\n";
    let out = run_with_stdin(dir.path(), &["validate-config", "-"], Some(yaml));
    out.expect_code(1, "a bad YAML plugin configuration on stdin");
    assert!(out.stderr.starts_with("<stdin>: plugin configuration: hold_headers: false works only with mode"), "{out}");
}

#[test]
fn every_document_of_a_yaml_file_is_checked_and_others_are_ignored() {
    let dir = TestDir::new("validate-docs");
    let wasm_plugin = std::fs::read_to_string(workspace_root().join("envoy/istio/wasmplugin.yaml")).unwrap();
    let policy = std::fs::read_to_string(workspace_root().join("envoy/gateway/envoyextensionpolicy.yaml")).unwrap();
    let bad_policy = policy.replace("timeout_ms: 1000", "timeout_ms: 100000");
    assert_ne!(policy, bad_policy);
    let service = "apiVersion: v1\nkind: Service\nmetadata: {name: signup}\nspec: {ports: [{port: 80}]}\n";
    let text = format!("{service}---\n{wasm_plugin}\n---\n{bad_policy}");
    dir.write("mesh.yaml", &text);
    let out = validate(&dir, &["mesh.yaml"]);
    out.expect_code(1, "one good and one bad configuration among other documents");
    assert_eq!(
        out.stdout.trim(),
        "ok: mesh.yaml: WasmPlugin email-verdict (spec.pluginConfig): plugin configuration",
        "{out}"
    );
    let expected =
        "mesh.yaml: EnvoyExtensionPolicy email-verdict (spec.wasm[0].config): sidecar.timeout_ms: must be 1..=60000";
    assert_eq!(out.stderr.trim(), expected, "{out}");
    assert!(!out.stdout.contains("Service") && !out.stderr.contains("Service"), "{out}");
}

#[test]
fn a_file_without_a_configuration_is_an_error() {
    let dir = TestDir::new("validate-none");
    let out = validate(&dir, &[&workspace_root().join("envoy/istio/sidecar.yaml").display().to_string()]);
    out.expect_code(1, "a file of Deployments and Services");
    assert!(out.stderr.contains("sidecar.yaml: no configuration found"), "{out}");
    dir.write("other.yaml", "apiVersion: extensions.istio.io/v1alpha1\nkind: WasmPlugin\nmetadata: {name: coraza}\nspec: {url: oci://ghcr.io/corazawaf/coraza-proxy-wasm, pluginConfig: {rules: []}}\n");
    let out = validate(&dir, &["other.yaml"]);
    out.expect_code(1, "another vendor's WasmPlugin only");
    assert!(out.stderr.contains("other.yaml: skipped WasmPlugin coraza: not email-verdict's"), "{out}");
    let out = validate(&dir, &["missing.json"]);
    out.expect_code(2, "a file that does not exist");
}

#[test]
fn an_ext_authz_configuration_is_read_as_serve_reads_it() {
    let dir = TestDir::new("validate-ext-authz");
    dir.write("authz.json", r#"{"mode": "flag", "failure_mode": "maybe"}"#);
    let out = validate(&dir, &["authz.json"]);
    out.expect_code(1, "a bad ext_authz failure_mode");
    assert!(out.stderr.starts_with("authz.json: ext_authz configuration: failure_mode: expected"), "{out}");
    dir.write("authz.json", r#"{"mode": "flag", "velocity": {"client": {"per_hour": 10, "action": "flag"}}}"#);
    validate(&dir, &["authz.json"]).expect_code(0, "a good ext_authz configuration");
    let out = validate(&dir, &["--kind", "plugin", "authz.json"]);
    out.expect_code(1, "--kind plugin on an ext_authz configuration");
    assert!(out.stderr.contains("authz.json: plugin configuration: sidecar: missing field `sidecar`"), "{out}");
    dir.write("broken.json", "{\n  \"mode\": \"flag\",\n}\n");
    let out = validate(&dir, &["broken.json"]);
    out.expect_code(1, "a JSON syntax error");
    assert!(out.stderr.starts_with("broken.json: plugin configuration: trailing comma at line 3 column 1"), "{out}");
    let shipped = workspace_root().join("envoy/plugin-config.json").display().to_string();
    let out = validate(&dir, &["--kind", "ext-authz", &shipped]);
    out.expect_code(1, "--kind ext-authz on a plugin configuration");
    let line = out.stderr.trim();
    assert!(line.contains("ext_authz configuration: ") && line.contains(": unknown field `"), "{out}");
    assert!(!line.contains(" at line "), "a position in the document the parser re-wrote: {out}");
}
