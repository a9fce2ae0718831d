//! The shipped gateway configuration: envoy/envoy.yaml is the rendered template and Envoy accepts
//! it with the built filter; envoy/module.yaml (the dynamic module) is its template rendered too,
//! and envoy/envoy.yaml with the module as the filter; a bad plugin configuration is rejected
//! with a log line naming the field. The Istio manifests parse, carry the same plugin
//! configuration, and Envoy accepts what they configure (`envoy_configs/istio.rs`); so do Envoy
//! Gateway's (`envoy_configs/gateway.rs`). Every list of verdict headers they hold is complete
//! (`envoy_configs/headers.rs`).

use email_verdict_tests::envoy::{self, EnvoyBuilder, default_plugin_config, filter_wasm, validate};
use email_verdict_tests::{TestDir, UpstreamApp, workspace_root};
use serde_json::{Value, json};
use std::process::Command;
use yaml_rust2::YamlLoader;

#[path = "envoy_configs/headers.rs"]
mod headers;
#[path = "envoy_configs/yaml.rs"]
mod yaml;

use yaml::{load_yaml, to_json};

fn istio_dir() -> std::path::PathBuf {
    workspace_root().join("envoy/istio")
}

fn istio_doc(file: &str, kind: &str) -> Value {
    load_yaml(&istio_dir().join(file))
        .into_iter()
        .find(|d| d["kind"] == kind)
        .unwrap_or_else(|| panic!("no {kind} in envoy/istio/{file}"))
}

/// The shipped plugin config with the sidecar cluster Istio makes for the Service of sidecar.yaml.
fn shipped_config_for_istio() -> Value {
    let mut c = default_plugin_config();
    c["sidecar"]["cluster"] = json!("outbound|8080||email-verdict.email-verdict.svc.cluster.local");
    c["sidecar"]["authority"] = json!("email-verdict.email-verdict.svc.cluster.local");
    c
}

/// The Wasm filter's plugin configuration inside an HTTP filter (its StringValue, as JSON).
fn plugin_config_of(filter: &Value) -> Value {
    let cfg = &filter["typed_config"]["config"]["configuration"];
    assert_eq!(cfg["@type"], "type.googleapis.com/google.protobuf.StringValue", "{filter:#}");
    let text = cfg["value"].as_str().expect("configuration.value is a string");
    serde_json::from_str(text).unwrap_or_else(|e| panic!("the plugin configuration is not JSON: {e}\n{text}"))
}

// ---- envoy/envoy.yaml --------------------------------------------------------------------------

/// `envoy/<shipped>` is what `scripts/render-envoy.py` renders from `envoy/<template>` and the
/// shipped plugin configuration (`None`: the renderer's default template).
fn assert_rendered(template: Option<&str>, shipped: &str) {
    let out = envoy::run({
        let mut c = Command::new("python3");
        c.arg(workspace_root().join("scripts/render-envoy.py"));
        if let Some(template) = template {
            c.arg("--template").arg(workspace_root().join("envoy").join(template));
        }
        c
    });
    assert!(out.success(), "scripts/render-envoy.py ({template:?}) failed\n{out}");
    let text = std::fs::read_to_string(workspace_root().join("envoy").join(shipped)).expect("read the shipped file");
    assert!(
        text == out.stdout,
        "envoy/{shipped} is not what its template and envoy/plugin-config.json render to: run `make envoy-config` \
         (and never edit envoy/{shipped} by hand)"
    );
}

#[test]
fn envoy_yaml_is_the_rendered_template() {
    assert_rendered(None, "envoy.yaml");
}

// ---- envoy/module.yaml (the filter as a dynamic module; loading it: module_abi.rs) -------------

#[test]
fn module_yaml_is_the_rendered_template() {
    assert_rendered(Some("module.template.yaml"), "module.yaml");
}

/// The module's configuration is the Wasm one but for the filter entry, which carries the same
/// plugin configuration: the two templates cannot drift apart.
#[test]
fn module_yaml_is_envoy_yaml_with_the_module_as_the_filter() {
    let mut wasm = load_yaml(&workspace_root().join("envoy/envoy.yaml")).remove(0);
    let mut module = load_yaml(&workspace_root().join("envoy/module.yaml")).remove(0);
    let filter_of = |doc: &mut Value| {
        let filters = &mut doc["static_resources"]["listeners"][0]["filter_chains"][0]["filters"][0]["typed_config"]["http_filters"];
        std::mem::take(&mut filters[0])
    };
    let (wasm_filter, module_filter) = (filter_of(&mut wasm), filter_of(&mut module));
    assert_eq!(module, wasm, "envoy/module.yaml differs from envoy/envoy.yaml outside the filter entry");
    assert_eq!(module_filter["name"], wasm_filter["name"], "the same filter name (per-route switches use it)");
    let typed = &module_filter["typed_config"];
    assert_eq!(
        typed["@type"],
        "type.googleapis.com/envoy.extensions.filters.http.dynamic_modules.v3.DynamicModuleFilter"
    );
    assert_eq!(typed["dynamic_module_config"]["module"]["local"]["filename"], "target/libemail_verdict_filter.so");
    assert_eq!(typed["dynamic_module_config"]["do_not_close"], true);
    let cfg = &typed["filter_config"];
    assert_eq!(cfg["@type"], "type.googleapis.com/google.protobuf.StringValue", "{module_filter:#}");
    let text = cfg["value"].as_str().expect("filter_config.value is a string");
    let plugin: Value = serde_json::from_str(text).expect("the module's plugin configuration is JSON");
    assert_eq!(plugin, plugin_config_of(&wasm_filter), "both builds get the same plugin configuration");
    assert_eq!(plugin, default_plugin_config());
}

#[test]
fn envoy_yaml_has_the_gateway_settings() {
    let doc = &load_yaml(&workspace_root().join("envoy/envoy.yaml"))[0];
    assert_eq!(doc["admin"]["address"]["socket_address"]["port_value"], 9901);
    let listener = &doc["static_resources"]["listeners"][0];
    assert_eq!(listener["address"]["socket_address"], json!({"address": "127.0.0.1", "port_value": 10000}));
    let hcm = &listener["filter_chains"][0]["filters"][0]["typed_config"];
    let wasm = &hcm["http_filters"][0];
    assert_eq!(wasm["name"], "email_verdict");
    let config = &wasm["typed_config"]["config"];
    assert_eq!(config["failure_policy"], "FAIL_RELOAD");
    assert_eq!(config["allow_on_headers_stop_iteration"], true);
    assert_eq!(config["vm_config"]["runtime"], "envoy.wasm.runtime.v8");
    assert_eq!(config["vm_config"]["code"]["local"]["filename"], "target/email_verdict_filter.wasm");
    let env = json!(["EMAIL_VERDICT_API_KEY", "EMAIL_VERDICT_MAILBOX_SECRET"]);
    assert_eq!(config["vm_config"]["environment_variables"]["host_env_keys"], env);
    assert_eq!(plugin_config_of(wasm), default_plugin_config(), "the plugin config in envoy/envoy.yaml");
    assert_eq!(hcm["http_filters"][1]["name"], "envoy.filters.http.router");

    // Issue 13 item 1: the path is normalized before routing and before the filter sees it.
    assert_eq!(hcm["normalize_path"], true);
    assert_eq!(hcm["merge_slashes"], true);
    assert_eq!(hcm["path_with_escaped_slashes_action"], "REJECT_REQUEST");
    // Issue 23: a header name with `_` (`x_email_verdict`) is refused before any filter.
    assert_eq!(hcm["common_http_protocol_options"]["headers_with_underscores_action"], "REJECT_REQUEST");

    // The filter runs on every path for the signup methods; no route matches an exact path
    // (its variants would skip the filter).
    let routes = hcm["route_config"]["virtual_hosts"][0]["routes"].as_array().expect("routes");
    assert_eq!(routes.len(), 3, "{routes:#?}");
    // Issue 43: the app's gRPC service goes to the app over HTTP/2, the filter on.
    let grpc = &routes[0];
    assert_eq!(grpc["match"]["prefix"], "/acme.v1.Accounts/");
    assert_eq!(grpc["match"]["headers"], routes[1]["match"]["headers"], "the signup methods");
    assert_eq!(grpc["route"]["cluster"], "app_grpc");
    assert!(grpc.get("typed_per_filter_config").is_none(), "the filter must run on the gRPC service");
    let signup = &routes[1];
    assert_eq!(signup["match"]["prefix"], "/");
    assert_eq!(
        signup["match"]["headers"],
        json!([{"name": ":method", "string_match": {"safe_regex": {"regex": "(?i)(?:POST)"}}}]),
        "the methods of the plugin config's signup_routes"
    );
    assert!(signup.get("typed_per_filter_config").is_none(), "the filter must run on the signup methods");
    let rest = &routes[2];
    assert_eq!(rest["match"], json!({"prefix": "/"}), "the catch-all comes last");
    assert_eq!(
        rest["typed_per_filter_config"]["email_verdict"],
        json!({"@type": "type.googleapis.com/envoy.config.route.v3.FilterConfig", "disabled": true}),
        "the filter is disabled on every other route"
    );
    let clusters = doc["static_resources"]["clusters"].as_array().expect("clusters");
    let sidecar = clusters.iter().find(|c| c["name"] == "email_verdict").expect("cluster email_verdict");
    assert_eq!(
        sidecar["load_assignment"]["endpoints"][0]["lb_endpoints"][0]["endpoint"]["address"]["socket_address"],
        json!({"address": "127.0.0.1", "port_value": 8080})
    );
    assert!(clusters.iter().any(|c| c["name"] == "app"), "cluster app");
    let grpc = clusters.iter().find(|c| c["name"] == "app_grpc").expect("cluster app_grpc");
    let options = &grpc["typed_extension_protocol_options"]["envoy.extensions.upstreams.http.v3.HttpProtocolOptions"];
    assert_eq!(options["explicit_http_config"], json!({"http2_protocol_options": {}}), "gRPC needs HTTP/2 upstream");
    let signup_routes = default_plugin_config()["signup_routes"].clone();
    assert!(
        signup_routes
            .as_array()
            .expect("signup_routes")
            .contains(&json!({"method": "POST", "path": "/acme.v1.Accounts/SignUp"})),
        "the gRPC signup is a signup route: {signup_routes}"
    );
}

/// Issue 43: ext_authz checks the gRPC signup (the service over HTTP/2) and every GraphQL POST,
/// not the service's other calls, and passes the headers that say how a body is framed and
/// compressed and which refusal the client reads.
#[test]
fn ext_authz_yaml_checks_the_grpc_signup_and_graphql() {
    let doc = &load_yaml(&workspace_root().join("envoy/ext-authz.yaml"))[0];
    let hcm = &doc["static_resources"]["listeners"][0]["filter_chains"][0]["filters"][0]["typed_config"];
    let routes = hcm["route_config"]["virtual_hosts"][0]["routes"].as_array().expect("routes");
    let route = |name: &str| routes.iter().find(|r| r["name"] == name).unwrap_or_else(|| panic!("route {name}"));
    let checked = |r: &Value| r.get("typed_per_filter_config").is_none();
    let (grpc, service, graphql) = (route("grpc_signup"), route("grpc_service"), route("graphql"));
    assert_eq!(grpc["route"]["cluster"], "app_grpc");
    assert!(checked(grpc) && checked(graphql) && !checked(service), "{routes:#?}");
    assert_eq!(service["route"]["cluster"], "app_grpc");
    let names: Vec<&str> = routes.iter().filter_map(|r| r["name"].as_str()).collect();
    assert_eq!(names.last(), Some(&"everything_else"), "{names:?}");
    let ext =
        hcm["http_filters"].as_array().expect("filters").iter().find(|f| f["name"] == "envoy.filters.http.ext_authz");
    let allowed = &ext.expect("ext_authz")["typed_config"]["http_service"]["authorization_request"]["allowed_headers"]
        ["patterns"];
    for h in [
        "content-type",
        "content-encoding",
        "grpc-encoding",
        "connect-content-encoding",
        "connect-protocol-version",
        "accept",
    ] {
        assert!(
            allowed.as_array().expect("patterns").contains(&json!({"exact": h})),
            "{h} not passed to the check: {allowed}"
        );
    }
    let clusters = doc["static_resources"]["clusters"].as_array().expect("clusters");
    let app_grpc = clusters.iter().find(|c| c["name"] == "app_grpc").expect("cluster app_grpc");
    let options =
        &app_grpc["typed_extension_protocol_options"]["envoy.extensions.upstreams.http.v3.HttpProtocolOptions"];
    assert_eq!(options["explicit_http_config"], json!({"http2_protocol_options": {}}));
}

#[test]
fn envoy_yaml_validates_with_the_built_filter() {
    // The module path in envoy/envoy.yaml is relative to the repository root.
    let wasm = filter_wasm(); // panics with "run make filter first"
    let root = workspace_root();
    assert!(
        wasm == root.join("target/email_verdict_filter.wasm"),
        "envoy/envoy.yaml loads target/email_verdict_filter.wasm; EMAIL_VERDICT_FILTER_WASM points elsewhere"
    );
    let out = validate(&root.join("envoy/envoy.yaml"), &root);
    assert!(out.success(), "envoy --mode validate -c envoy/envoy.yaml (from the repo root) failed\n{out}");
}

#[test]
fn envoy_yaml_needs_the_api_key_in_the_environment() {
    filter_wasm();
    let root = workspace_root();
    let out = envoy::validate_with_env(&root.join("envoy/envoy.yaml"), &root, &[]);
    assert!(!out.success(), "envoy/envoy.yaml validated without EMAIL_VERDICT_API_KEY\n{out}");
    assert!(
        out.text().lines().any(|l| l.contains("bad configuration") && l.contains("sidecar.api_key_env")),
        "no log line names sidecar.api_key_env\n{out}"
    );
}

#[test]
fn rendered_template_validates_with_absolute_paths() {
    let dir = TestDir::new("envoy-render");
    let app = UpstreamApp::start();
    let b = EnvoyBuilder::new("127.0.0.1:8080".parse().expect("addr"), app.addr());
    let config = b.render_config(&dir, 10000, 9901);
    // From another directory: nothing in the rendered file depends on the working directory.
    let out = validate(&config, dir.path());
    assert!(out.success(), "envoy --mode validate on the rendered template failed\n{out}");
}

#[test]
fn the_filter_route_follows_the_methods_of_signup_routes() {
    let dir = TestDir::new("envoy-render");
    let mut plugin = default_plugin_config();
    plugin["signup_routes"] =
        json!([{"method": "post", "path": "/signup"}, {"method": "PUT", "path_prefix": "/api/register"}]);
    let sets = [("WASM_FILE", filter_wasm().display().to_string())];
    let config = envoy::render(&dir.join("envoy.yaml"), &sets, &plugin);
    let doc = &load_yaml(&config)[0];
    let hcm = &doc["static_resources"]["listeners"][0]["filter_chains"][0]["filters"][0]["typed_config"];
    let route = &hcm["route_config"]["virtual_hosts"][0]["routes"][0];
    assert_eq!(route["match"]["headers"][0]["string_match"]["safe_regex"]["regex"], "(?i)(?:POST|PUT)");
    let out = validate(&config, dir.path());
    assert!(out.success(), "envoy --mode validate with two signup methods\n{out}");
}

// ---- bad plugin configurations -------------------------------------------------------------------

fn rejected(mutate: impl FnOnce(&mut Value), field: &str) {
    let dir = TestDir::new("envoy-bad-config");
    let mut plugin = default_plugin_config();
    mutate(&mut plugin);
    let sets = [("WASM_FILE", filter_wasm().display().to_string())];
    let config = envoy::render(&dir.join("envoy.yaml"), &sets, &plugin);
    let out = validate(&config, dir.path());
    assert!(!out.success(), "a plugin config with a bad {field} passed envoy --mode validate:\n{plugin:#}\n{out}");
    let text = out.text();
    // `a.b: problem`, or serde's `a: missing field `b`` for a missing member.
    let names = |l: &str| {
        l.contains(field)
            || field
                .rsplit_once('.')
                .is_some_and(|(parent, last)| l.contains(&format!("{parent}: ")) && l.contains(&format!("`{last}`")))
    };
    let line = text.lines().find(|l| l.contains("bad configuration") && names(l));
    assert!(
        line.is_some(),
        "Envoy rejected the config, but no log line says `bad configuration` naming {field:?}\n{out}"
    );
}

#[test]
fn bad_plugin_configs_are_rejected_naming_the_field() {
    rejected(|c| c["sidecar"]["timeout_ms"] = json!(0), "sidecar.timeout_ms");
    rejected(|c| c["sidecar"]["timeout_ms"] = json!("fast"), "sidecar.timeout_ms");
    rejected(|c| c["mode"] = json!("dry_run"), "mode");
    rejected(|c| c["surprise"] = json!(1), "surprise");
    rejected(|c| c["max_body_bytes"] = json!(20_000_000), "max_body_bytes");
    rejected(|c| c["signup_routes"] = json!([]), "signup_routes");
    rejected(|c| c["block_response"]["status"] = json!(200), "block_response.status");
    rejected(
        |c| {
            c["sidecar"].as_object_mut().expect("sidecar").remove("cluster");
        },
        "sidecar.cluster",
    );
    rejected(|c| c["sidecar"]["api_key"] = json!("ev_0000000000000000000000000000000000000000"), "api_key");
}

#[test]
fn a_bad_plugin_config_keeps_envoy_from_serving() {
    let app = UpstreamApp::start();
    let b = EnvoyBuilder::new("127.0.0.1:9".parse().expect("addr"), app.addr()).set("/failure_mode", json!("maybe"));
    match b.try_start() {
        Ok(e) => panic!("Envoy started with failure_mode \"maybe\"; its log:\n{}", e.log_text()),
        Err(f) => assert!(
            f.log.lines().any(|l| l.contains("bad configuration") && l.contains("failure_mode")),
            "Envoy did not start ({}), but no log line names failure_mode:\n{}",
            f.reason,
            f.log
        ),
    }
}

// ---- ext_authz in Istio and Envoy Gateway ----------------------------------------------------------

/// Every document of every YAML file in `envoy/<dir>`, each with kind, apiVersion and a name.
fn manifests(dir: &str) -> Vec<Value> {
    let mut files: Vec<_> = std::fs::read_dir(workspace_root().join("envoy").join(dir))
        .unwrap_or_else(|e| panic!("envoy/{dir}: {e}"))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        // patches, not resources
        .filter(|p| !p.file_name().is_some_and(|n| n.to_string_lossy().starts_with("app-proxy-")))
        .collect();
    files.sort();
    let docs: Vec<Value> = files.iter().flat_map(|f| load_yaml(f)).collect();
    for d in &docs {
        assert!(d["kind"].is_string() && d["apiVersion"].is_string() && d["metadata"]["name"].is_string(), "{d:#}");
    }
    docs
}

fn doc_of(docs: &[Value], kind: &str) -> Value {
    docs.iter().find(|d| d["kind"] == kind).cloned().unwrap_or_else(|| panic!("no {kind}"))
}

/// `envoy/<template>` rendered with its defaults, as JSON.
fn rendered(template: &str) -> Value {
    let out = envoy::run({
        let mut c = Command::new("python3");
        c.arg(workspace_root().join("scripts/render-envoy.py")).arg("--template").arg(workspace_root().join(template));
        c
    });
    assert!(out.success(), "scripts/render-envoy.py --template {template} failed\n{out}");
    let docs = YamlLoader::load_from_str(&out.stdout).unwrap_or_else(|e| panic!("{template} rendered: {e}"));
    to_json(&docs[0])
}

// ---- the dynamic module in Istio and Envoy Gateway ---------------------------------------------

/// The plugin configuration of a DynamicModuleFilter (its `filter_config` StringValue, as JSON).
fn module_config_of(filter: &Value) -> Value {
    let cfg = &filter["typed_config"]["filter_config"];
    assert_eq!(cfg["@type"], "type.googleapis.com/google.protobuf.StringValue", "{filter:#}");
    let text = cfg["value"].as_str().expect("filter_config.value is a string");
    serde_json::from_str(text).unwrap_or_else(|e| panic!("the module's configuration is not JSON: {e}\n{text}"))
}

const DYNAMIC_MODULE_FILTER: &str =
    "type.googleapis.com/envoy.extensions.filters.http.dynamic_modules.v3.DynamicModuleFilter";

/// `envoy/<template>` rendered with these `--set`s and this plugin configuration, as JSON.
fn rendered_with(template: &str, sets: &[(&str, String)], plugin: &Value) -> Value {
    let dir = TestDir::new("envoy-render");
    let out = envoy::render_template(Some(&workspace_root().join(template)), &dir.join("out.yaml"), sets, plugin);
    let text = std::fs::read_to_string(out).expect("read the rendered template");
    to_json(&YamlLoader::load_from_str(&text).unwrap_or_else(|e| panic!("{template} rendered: {e}"))[0])
}

#[path = "envoy_configs/gateway.rs"]
mod gateway;
#[path = "envoy_configs/istio.rs"]
mod istio;
