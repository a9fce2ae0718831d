//! The shipped gateway configuration: envoy/envoy.yaml is the rendered template and Envoy accepts
//! it with the built filter; envoy/module.yaml (the dynamic module) is its template rendered too,
//! and envoy/envoy.yaml with the module as the filter; the Istio manifests parse, carry the same plugin configuration, and
//! their Wasm filter configuration is accepted by Envoy too; a bad plugin configuration is
//! rejected with a log line naming the field. Every list of verdict headers they hold is
//! complete (`envoy_configs/headers.rs`).

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
    assert_eq!(routes.len(), 2, "{routes:#?}");
    let signup = &routes[0];
    assert_eq!(signup["match"]["prefix"], "/");
    assert_eq!(
        signup["match"]["headers"],
        json!([{"name": ":method", "string_match": {"safe_regex": {"regex": "(?i)(?:POST)"}}}]),
        "the methods of the plugin config's signup_routes"
    );
    assert!(signup.get("typed_per_filter_config").is_none(), "the filter must run on the signup methods");
    let rest = &routes[1];
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
    rejected(|c| c["mode"] = json!("shadow"), "mode");
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

// ---- envoy/istio ---------------------------------------------------------------------------------

#[test]
fn every_istio_manifest_parses() {
    let mut kinds = Vec::new();
    let mut files: Vec<_> = std::fs::read_dir(istio_dir())
        .expect("envoy/istio")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "yaml" || e == "yml"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no YAML in envoy/istio");
    for f in &files {
        let docs = load_yaml(f);
        assert!(!docs.is_empty(), "{}: no YAML document", f.display());
        for d in docs {
            if f.file_name().is_some_and(|n| n.to_string_lossy().starts_with("app-proxy-")) {
                // A patch, not a resource.
                assert!(
                    d["spec"]["template"]["spec"]["containers"].is_array(),
                    "{}: not a pod template patch",
                    f.display()
                );
                continue;
            }
            let kind = d["kind"].as_str().unwrap_or_else(|| panic!("{}: a document without kind", f.display()));
            assert!(d["apiVersion"].is_string(), "{}: {kind} without apiVersion", f.display());
            assert!(d["metadata"]["name"].is_string(), "{}: {kind} without metadata.name", f.display());
            kinds.push(kind.to_string());
        }
    }
    for k in ["WasmPlugin", "EnvoyFilter", "Deployment", "Service", "Secret", "ServiceEntry"] {
        assert!(kinds.iter().any(|x| x == k), "no {k} in envoy/istio (found {kinds:?})");
    }
}

#[test]
fn istio_wasmplugin_carries_the_shipped_plugin_config() {
    let wp = istio_doc("wasmplugin.yaml", "WasmPlugin");
    let spec = &wp["spec"];
    // A WasmPlugin cannot set allow_on_headers_stop_iteration: block only (filter/CONFIG.md).
    let mut expected = shipped_config_for_istio();
    expected["hold_headers"] = json!(false);
    // Block-only: no header can reach the app, so the shipped flag limits could do nothing; the
    // WasmPlugin does not count (CONFIG.md: a block limit would work there).
    for field in ["velocity", "mailbox_secret_env"] {
        expected.as_object_mut().unwrap().remove(field);
    }
    assert_eq!(spec["pluginConfig"], expected, "WasmPlugin.spec.pluginConfig vs envoy/plugin-config.json");
    assert_eq!(spec["vmConfig"]["env"], json!([{"name": "EMAIL_VERDICT_API_KEY", "valueFrom": "HOST"}]));
    assert_eq!(spec["phase"], "AUTHN");
    assert_eq!(spec["failStrategy"], "FAIL_RELOAD");
    assert!(spec["url"].as_str().is_some_and(|u| u.starts_with("oci://")), "url");
    let sha = spec["sha256"].as_str().expect("sha256");
    assert!(sha.len() == 64 && sha.bytes().all(|b| b.is_ascii_hexdigit()), "sha256 must match the CRD pattern: {sha}");
    assert!(spec["selector"]["matchLabels"].is_object(), "selector");
}

#[test]
fn istio_envoyfilter_carries_the_shipped_plugin_config_in_flag_mode() {
    let ef = istio_doc("envoyfilter.yaml", "EnvoyFilter");
    let patch = &ef["spec"]["configPatches"][0];
    assert_eq!(patch["applyTo"], "HTTP_FILTER");
    let filter = &patch["patch"]["value"];
    let config = &filter["typed_config"]["config"];
    assert_eq!(config["allow_on_headers_stop_iteration"], true);
    assert_eq!(config["failure_policy"], "FAIL_RELOAD");
    let mut expected = shipped_config_for_istio();
    expected["mode"] = json!("flag");
    assert_eq!(plugin_config_of(filter), expected, "the EnvoyFilter's plugin configuration");
}

/// Issue 13 item 1: the app's inbound connection manager normalizes paths (the filter runs on
/// every request there and matches signup paths itself).
#[test]
fn istio_envoyfilter_normalizes_paths_on_the_inbound_listener() {
    let ef = istio_doc("envoyfilter.yaml", "EnvoyFilter");
    let patches = ef["spec"]["configPatches"].as_array().expect("configPatches");
    let hcm = patches
        .iter()
        .find(|p| p["applyTo"] == "NETWORK_FILTER")
        .expect("a NETWORK_FILTER patch on the connection manager");
    assert_eq!(hcm["match"]["context"], "SIDECAR_INBOUND");
    assert_eq!(
        hcm["match"]["listener"]["filterChain"]["filter"]["name"],
        "envoy.filters.network.http_connection_manager"
    );
    assert_eq!(hcm["patch"]["operation"], "MERGE");
    let cfg = &hcm["patch"]["value"]["typed_config"];
    assert_eq!(
        cfg["@type"],
        "type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager"
    );
    assert_eq!(cfg["normalize_path"], true);
    assert_eq!(cfg["merge_slashes"], true);
    assert_eq!(cfg["path_with_escaped_slashes_action"], "REJECT_REQUEST");
    // The WasmPlugin (no route to set these itself) says what the mesh needs.
    let text = std::fs::read_to_string(istio_dir().join("wasmplugin.yaml")).expect("read wasmplugin.yaml");
    assert!(text.contains("pathNormalization"), "wasmplugin.yaml must say how paths get normalized");
}

#[test]
fn istio_service_makes_the_callout_cluster() {
    // outbound|8080||email-verdict.email-verdict.svc.cluster.local needs Service email-verdict,
    // namespace email-verdict, port 8080.
    let svc = istio_doc("sidecar.yaml", "Service");
    assert_eq!(svc["metadata"]["name"], "email-verdict");
    assert_eq!(svc["metadata"]["namespace"], "email-verdict");
    assert!(svc["spec"]["ports"].as_array().expect("ports").iter().any(|p| p["port"] == 8080));
    let dep = istio_doc("sidecar.yaml", "Deployment");
    let c = &dep["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(c["readinessProbe"]["httpGet"]["path"], "/healthz");
    assert_eq!(c["livenessProbe"]["httpGet"]["path"], "/healthz");
    let env: Vec<&str> = c["env"].as_array().expect("env").iter().filter_map(|e| e["name"].as_str()).collect();
    for k in ["EMAIL_VERDICT_LISTEN", "EMAIL_VERDICT_ADMIN_LISTEN", "EMAIL_VERDICT_ADMIN_TOKEN", "EMAIL_VERDICT_STATE"]
    {
        assert!(env.contains(&k), "{k} missing from the Deployment's env ({env:?})");
    }
}

/// A bootstrap holding `filter` (with the module path replaced by the built one) in front of a
/// router, and a cluster named `cluster`: what the Istio proxy would run, minus Istio's filters.
fn bootstrap_with(filter: &Value, cluster: &str) -> Value {
    let mut filter = filter.clone();
    filter["typed_config"]["config"]["vm_config"]["code"] =
        json!({"local": {"filename": filter_wasm().display().to_string()}});
    json!({
        "static_resources": {
            "listeners": [{
                "name": "inbound",
                "address": {"socket_address": {"address": "127.0.0.1", "port_value": 15006}},
                "filter_chains": [{"filters": [{
                    "name": "envoy.filters.network.http_connection_manager",
                    "typed_config": {
                        "@type": "type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager",
                        "stat_prefix": "inbound",
                        "route_config": {"virtual_hosts": [{"name": "app", "domains": ["*"],
                            "routes": [{"match": {"prefix": "/"}, "route": {"cluster": cluster}}]}]},
                        "http_filters": [filter, {"name": "envoy.filters.http.router", "typed_config": {
                            "@type": "type.googleapis.com/envoy.extensions.filters.http.router.v3.Router"}}]
                    }
                }]}]
            }],
            "clusters": [{
                "name": cluster,
                "type": "STATIC",
                "connect_timeout": "1s",
                "load_assignment": {"cluster_name": cluster, "endpoints": [{"lb_endpoints": [{"endpoint": {
                    "address": {"socket_address": {"address": "127.0.0.1", "port_value": 8080}}}}]}]}
            }]
        }
    })
}

const ISTIO_CLUSTER: &str = "outbound|8080||email-verdict.email-verdict.svc.cluster.local";

#[test]
fn istio_envoyfilter_wasm_config_validates_in_envoy() {
    let ef = istio_doc("envoyfilter.yaml", "EnvoyFilter");
    let filter = &ef["spec"]["configPatches"][0]["patch"]["value"];
    let mut bootstrap = bootstrap_with(filter, ISTIO_CLUSTER);
    // With the connection manager patch merged in, as istiod would.
    let merge = ef["spec"]["configPatches"]
        .as_array()
        .and_then(|p| p.iter().find(|p| p["applyTo"] == "NETWORK_FILTER"))
        .expect("the NETWORK_FILTER patch");
    let hcm = &mut bootstrap["static_resources"]["listeners"][0]["filter_chains"][0]["filters"][0]["typed_config"];
    for (k, v) in merge["patch"]["value"]["typed_config"].as_object().expect("typed_config") {
        hcm[k] = v.clone();
    }
    let dir = TestDir::new("envoy-istio");
    let file = dir.write("envoyfilter-bootstrap.json", &bootstrap.to_string());
    let out = validate(&file, dir.path());
    assert!(out.success(), "Envoy rejects the Wasm filter of envoy/istio/envoyfilter.yaml\n{out}");
}

#[test]
fn istio_wasmplugin_plugin_config_validates_in_envoy() {
    // What Istio makes of the WasmPlugin: the same Wasm filter with pluginConfig as JSON.
    let wp = istio_doc("wasmplugin.yaml", "WasmPlugin");
    let plugin = wp["spec"]["pluginConfig"].to_string();
    let filter = json!({
        "name": "shop.email-verdict",
        "typed_config": {
            "@type": "type.googleapis.com/envoy.extensions.filters.http.wasm.v3.Wasm",
            "config": {
                "name": "shop.email-verdict",
                "vm_config": {"runtime": "envoy.wasm.runtime.v8", "code": {},
                    "environment_variables": {"host_env_keys": ["EMAIL_VERDICT_API_KEY"]}},
                "failure_policy": "FAIL_RELOAD",
                "configuration": {"@type": "type.googleapis.com/google.protobuf.StringValue", "value": plugin}
            }
        }
    });
    let dir = TestDir::new("envoy-istio");
    let file = dir.write("wasmplugin-bootstrap.json", &bootstrap_with(&filter, ISTIO_CLUSTER).to_string());
    let out = validate(&file, dir.path());
    assert!(out.success(), "Envoy rejects the pluginConfig of envoy/istio/wasmplugin.yaml\n{out}");
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

#[test]
fn istio_ext_authz_provider_and_policy() {
    let docs = manifests("istio");
    let config_map = docs.iter().find(|d| d["kind"] == "ConfigMap" && d["metadata"]["name"] == "istio").expect("mesh");
    let mesh = YamlLoader::load_from_str(config_map["data"]["mesh"].as_str().expect("data.mesh")).expect("mesh YAML");
    let mesh = to_json(&mesh[0]);
    let provider = mesh["extensionProviders"]
        .as_array()
        .and_then(|p| p.iter().find(|p| p["name"] == "email-verdict"))
        .expect("extension provider email-verdict");
    let http = &provider["envoyExtAuthzHttp"];
    assert_eq!(http["pathPrefix"], "/ext_authz");
    assert_eq!(http["port"], 8080);
    assert_eq!(http["includeRequestBodyInCheck"]["allowPartialMessage"], false);
    assert!(http["includeRequestHeadersInCheck"].as_array().is_some_and(|h| h.contains(&json!("content-type"))));
    assert_eq!(http["includeAdditionalHeadersInCheck"]["x-email-verdict-key"], "%ENVIRONMENT(EMAIL_VERDICT_API_KEY)%");
    // The client as Envoy sees it, for the shipped configuration's counts.
    assert_eq!(
        http["includeAdditionalHeadersInCheck"]["x-email-verdict-client"],
        "%DOWNSTREAM_REMOTE_ADDRESS_WITHOUT_PORT%"
    );
    assert!(http["timeout"].is_string(), "set a timeout: Istio's default is 600 s");
    assert!(mesh["pathNormalization"]["normalization"].as_str().is_some_and(|n| n.contains("MERGE_SLASHES")));
    let policy = doc_of(&docs, "AuthorizationPolicy");
    assert_eq!(
        (policy["spec"]["action"].clone(), policy["spec"]["provider"]["name"].clone()),
        (json!("CUSTOM"), json!("email-verdict"))
    );
    let operation = &policy["spec"]["rules"][0]["to"][0]["operation"];
    assert_eq!(operation["methods"], json!(["POST"]));
    let paths = operation["paths"].as_array().expect("paths");
    // Issue 23: the ;param spellings servlet containers route to /signup.
    for path in ["/signup", "*/signup", "/;*", "/%3B*", "/%3b*"] {
        assert!(paths.contains(&json!(path)), "{path} missing from the policy's paths: {operation}");
    }
    // The reproduction of what istiod makes of them (envoy/istio-generated-ext-authz.template.yaml)
    // has one RBAC matcher per path, in the same order: x exact, x* prefix, *x suffix.
    let generated = rendered("envoy/istio-generated-ext-authz.template.yaml");
    let hcm = &generated["static_resources"]["listeners"][0]["filter_chains"][0]["filters"][0]["typed_config"];
    let rbac = &hcm["http_filters"][0]["typed_config"]["shadow_rules"]["policies"]["istio-ext-authz-email-verdict-ns[shop]-policy[email-verdict]-rule[0]"];
    let matchers: Vec<Value> = rbac["permissions"][0]["and_rules"]["rules"][1]["or_rules"]["rules"]
        .as_array()
        .expect("the paths' or_rules")
        .iter()
        .map(|r| r["url_path"]["path"].clone())
        .collect();
    let expected: Vec<Value> = paths
        .iter()
        .map(|p| match p.as_str().expect("a path") {
            p if p.len() > 1 && p.ends_with('*') => json!({"prefix": &p[..p.len() - 1]}),
            p if p.len() > 1 && p.starts_with('*') => json!({"suffix": &p[1..]}),
            p => json!({"exact": p}),
        })
        .collect();
    assert_eq!(matchers, expected, "the Istio reproduction's RBAC paths vs envoy/istio/ext-authz.yaml");
    assert_eq!(hcm["common_http_protocol_options"]["headers_with_underscores_action"], "REJECT_REQUEST");
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

/// Issue 23: every way the shipped Istio manifests put Envoy in front of the app refuses header
/// names with an underscore on the app's inbound connection manager.
#[test]
fn istio_manifests_refuse_underscore_headers() {
    let patch_of = |doc: &Value| -> Value {
        let patches = doc["spec"]["configPatches"].as_array().expect("configPatches");
        let hcm = patches
            .iter()
            .find(|p| p["applyTo"] == "NETWORK_FILTER")
            .unwrap_or_else(|| panic!("no NETWORK_FILTER patch in {}", doc["metadata"]["name"]));
        assert_eq!(hcm["match"]["context"], "SIDECAR_INBOUND");
        assert_eq!(
            hcm["match"]["listener"]["filterChain"]["filter"]["name"],
            "envoy.filters.network.http_connection_manager"
        );
        assert_eq!(hcm["patch"]["operation"], "MERGE");
        hcm["patch"]["value"]["typed_config"].clone()
    };
    // ext-authz.yaml and wasmplugin.yaml carry the same EnvoyFilter; envoyfilter.yaml and
    // module-envoyfilter.yaml have it in their own connection manager patch.
    for file in ["ext-authz.yaml", "wasmplugin.yaml", "envoyfilter.yaml", "module-envoyfilter.yaml"] {
        let filters: Vec<Value> =
            load_yaml(&istio_dir().join(file)).into_iter().filter(|d| d["kind"] == "EnvoyFilter").collect();
        let refusing = filters.iter().filter(|f| {
            patch_of(f)["common_http_protocol_options"]["headers_with_underscores_action"] == "REJECT_REQUEST"
        });
        assert_eq!(refusing.count(), 1, "envoy/istio/{file}: one EnvoyFilter refusing underscore headers");
        for f in &filters {
            assert_eq!(f["spec"]["workloadSelector"]["labels"]["app"], "signup", "{file}");
        }
    }
    let separate = |file: &str| {
        load_yaml(&istio_dir().join(file))
            .into_iter()
            .find(|d| d["metadata"]["name"] == "email-verdict-underscore-headers")
            .unwrap_or_else(|| panic!("no EnvoyFilter email-verdict-underscore-headers in {file}"))
    };
    assert_eq!(separate("ext-authz.yaml"), separate("wasmplugin.yaml"), "the two copies differ");
}

#[test]
fn envoy_gateway_manifests() {
    let docs = manifests("gateway");
    // Issue 23: the signup route is the regex of envoy/ext-authz.yaml (;params before the signup
    // segment included), and its reproduction uses it; header names with `_` are refused.
    let route = doc_of(&docs, "HTTPRoute");
    let regex = &route["spec"]["rules"][0]["matches"][0]["path"]["value"];
    let ext_authz_yaml = &load_yaml(&workspace_root().join("envoy/ext-authz.yaml"))[0];
    let signup_route = &ext_authz_yaml["static_resources"]["listeners"][0]["filter_chains"][0]["filters"][0]["typed_config"]
        ["route_config"]["virtual_hosts"][0]["routes"][0];
    assert_eq!(regex, &signup_route["match"]["safe_regex"]["regex"], "HTTPRoute signup vs envoy/ext-authz.yaml");
    let generated = rendered("envoy/gateway-generated-ext-authz.template.yaml");
    let hcm = &generated["static_resources"]["listeners"][0]["default_filter_chain"]["filters"][0]["typed_config"];
    assert_eq!(regex, &hcm["route_config"]["virtual_hosts"][0]["routes"][0]["match"]["safe_regex"]["regex"]);
    assert_eq!(hcm["common_http_protocol_options"]["headers_with_underscores_action"], "REJECT_REQUEST");
    let ctp = doc_of(&docs, "ClientTrafficPolicy");
    assert_eq!(ctp["spec"]["headers"]["withUnderscoresAction"], "RejectRequest");
    let ext_hcm = &ext_authz_yaml["static_resources"]["listeners"][0]["filter_chains"][0]["filters"][0]["typed_config"];
    assert_eq!(ext_hcm["common_http_protocol_options"]["headers_with_underscores_action"], "REJECT_REQUEST");

    let policy = doc_of(&docs, "SecurityPolicy");
    let ext = &policy["spec"]["extAuth"];
    assert_eq!(ext["http"]["path"], "/ext_authz");
    assert!(ext["bodyToExtAuth"]["maxRequestBytes"].as_i64().is_some_and(|n| n > 0));
    assert_eq!(ext["failOpen"], false);
    // The EnvoyPatchPolicy adds the key and the client (for the counts) to the check only.
    let patch = &doc_of(&docs, "EnvoyPatchPolicy")["spec"]["jsonPatches"][0]["operation"]["value"];
    let added: Vec<&str> =
        patch["headers_to_add"].as_array().unwrap().iter().filter_map(|h| h["key"].as_str()).collect();
    assert_eq!(added, ["x-email-verdict-key", "x-email-verdict-client"]);
    let wasm = &doc_of(&docs, "EnvoyExtensionPolicy")["spec"]["wasm"][0];
    let config = &wasm["config"];
    assert_eq!((config["hold_headers"].clone(), config["mode"].clone()), (json!(false), json!("block")));
    // The filter itself accepts it (its own validation, as Envoy runs it on configure).
    let shipped = default_plugin_config();
    for field in [
        "email",
        "block_response",
        "flag_headers",
        "detail_headers",
        "on_missing_email",
        "on_invalid_email",
        "on_unreadable_body",
    ] {
        assert_eq!(config[field], shipped[field], "EnvoyExtensionPolicy config.{field} vs envoy/plugin-config.json");
    }
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

#[test]
fn istio_module_envoyfilter_is_the_wasm_envoyfilter_with_the_module() {
    let wasm = istio_doc("envoyfilter.yaml", "EnvoyFilter");
    let module = istio_doc("module-envoyfilter.yaml", "EnvoyFilter");
    // The same resource (applying one replaces the other), the same place, the same second patch.
    assert_eq!(module["metadata"], wasm["metadata"]);
    assert_eq!(module["spec"]["workloadSelector"], wasm["spec"]["workloadSelector"]);
    let (mp, wp) = (&module["spec"]["configPatches"], &wasm["spec"]["configPatches"]);
    assert_eq!(mp[1], wp[1], "the connection manager patch differs from envoyfilter.yaml's");
    assert_eq!(mp[0]["match"], wp[0]["match"]);
    assert_eq!(mp[0]["patch"]["operation"], "ADD");
    assert_eq!(mp[0]["patch"]["filterClass"], wp[0]["patch"]["filterClass"]);
    let filter = &mp[0]["patch"]["value"];
    assert_eq!(filter["typed_config"]["@type"], DYNAMIC_MODULE_FILTER);
    assert_eq!(filter["typed_config"]["filter_name"], "email_verdict");
    let dm = &filter["typed_config"]["dynamic_module_config"];
    assert_eq!((dm["name"].clone(), dm["do_not_close"].clone()), (json!("email_verdict_filter"), json!(true)));
    // The plugin configuration: the Wasm EnvoyFilter's (flag mode, header hold, counts on).
    let config = module_config_of(filter);
    assert_eq!(config, plugin_config_of(&wp[0]["patch"]["value"]), "the two EnvoyFilters' plugin configurations");
    let mut expected = shipped_config_for_istio();
    expected["mode"] = json!("flag");
    assert_eq!(config, expected, "module-envoyfilter.yaml vs envoy/plugin-config.json");

    // app-proxy-module.yaml: the search path is where the volume is mounted, in istio-proxy.
    let patch = &load_yaml(&istio_dir().join("app-proxy-module.yaml"))[0];
    let annotations = &patch["spec"]["template"]["metadata"]["annotations"];
    let parse = |key: &str| -> Value {
        serde_json::from_str(annotations[key].as_str().unwrap_or_else(|| panic!("annotation {key}")))
            .unwrap_or_else(|e| panic!("annotation {key} is not JSON: {e}"))
    };
    let (volumes, mounts) = (parse("sidecar.istio.io/userVolume"), parse("sidecar.istio.io/userVolumeMount"));
    let mount = mounts["email-verdict-module"]["mountPath"].as_str().expect("the module's mount");
    assert!(volumes["email-verdict-module"]["image"]["reference"].is_string(), "{volumes}");
    let proxy = &patch["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(proxy["name"], "istio-proxy");
    let env = proxy["env"].as_array().expect("env");
    assert!(
        env.contains(&json!({"name": "ENVOY_DYNAMIC_MODULES_SEARCH_PATH", "value": mount})),
        "ENVOY_DYNAMIC_MODULES_SEARCH_PATH must be the mount path {mount}: {env:?}"
    );

    // The reproduction of what istiod generates holds this filter as written.
    let generated = rendered_with("envoy/istio-generated-module.template.yaml", &[], &config);
    let hcm = &generated["static_resources"]["listeners"][0]["filter_chains"][0]["filters"][0]["typed_config"];
    let mut reproduced = hcm["http_filters"][0].clone();
    assert_eq!(module_config_of(&reproduced), config);
    let mut written = filter.clone();
    for f in [&mut reproduced, &mut written] {
        f["typed_config"].as_object_mut().unwrap().remove("filter_config");
    }
    assert_eq!(reproduced, written, "envoy/istio-generated-module.template.yaml vs the EnvoyFilter's filter");
    for (k, v) in mp[1]["patch"]["value"]["typed_config"].as_object().unwrap() {
        assert_eq!(&hcm[k], v, "the reproduction's connection manager: {k}");
    }
}

#[test]
fn envoy_gateway_module_registers_mounts_and_configures_the_module() {
    let gateway = load_yaml(&workspace_root().join("envoy/gateway/gateway.yaml"));
    let module = load_yaml(&workspace_root().join("envoy/gateway/module.yaml"));
    let (base, proxy) = (doc_of(&gateway, "EnvoyProxy"), doc_of(&module, "EnvoyProxy"));
    // gateway.yaml's EnvoyProxy (same name: applying module.yaml replaces it), with the module.
    assert_eq!(proxy["metadata"], base["metadata"]);
    assert_eq!(proxy["spec"]["bootstrap"], base["spec"]["bootstrap"], "the sidecar's static cluster");
    let container = &proxy["spec"]["provider"]["kubernetes"]["envoyDeployment"]["container"];
    let base_env = base["spec"]["provider"]["kubernetes"]["envoyDeployment"]["container"]["env"].as_array().unwrap();
    let env = container["env"].as_array().expect("env");
    for e in base_env {
        assert!(env.contains(e), "gateway.yaml's {e} is missing from module.yaml's EnvoyProxy");
    }
    let env_names: Vec<&str> = env.iter().filter_map(|e| e["name"].as_str()).collect();
    assert!(env_names.contains(&"EMAIL_VERDICT_MAILBOX_SECRET"), "the counts' secret: {env_names:?}");
    assert!(container["image"].as_str().is_some_and(|i| i.contains("envoy") && i.contains("v1.40")), "{container}");
    let registered = &proxy["spec"]["dynamicModules"][0];
    assert_eq!(registered["source"]["type"], "Local");
    let path = registered["source"]["local"]["path"].as_str().expect("source.local.path");
    let (dir, file) = path.rsplit_once('/').expect("an absolute path");
    assert_eq!(file, "libemail_verdict_filter.so");
    let mount = &container["volumeMounts"][0];
    assert_eq!(mount["mountPath"], dir, "the module's directory is the volume's mount");
    let volume = &proxy["spec"]["provider"]["kubernetes"]["envoyDeployment"]["pod"]["volumes"][0];
    assert_eq!(volume["name"], mount["name"]);
    assert!(volume["image"]["reference"].is_string(), "{volume}");

    let policy = doc_of(&module, "EnvoyExtensionPolicy");
    assert_eq!(
        policy["spec"]["targetRefs"],
        doc_of(&manifests("gateway"), "EnvoyExtensionPolicy")["spec"]["targetRefs"]
    );
    let dm = &policy["spec"]["dynamicModule"][0];
    assert_eq!(dm["name"], registered["name"], "the policy names the registered module");
    assert_eq!(dm["filterName"], "email_verdict");
    let config = &dm["config"];
    let mut expected = default_plugin_config();
    expected["sidecar"]["authority"] = json!("email-verdict.email-verdict.svc.cluster.local");
    assert_eq!(config, &expected, "the policy's config vs envoy/plugin-config.json");
    assert!(config.get("hold_headers").is_none(), "the module holds the headers in EG: no block-only mode");

    // The reproduction of what EG generates: the filter EG names, the policy's config as JSON in
    // a StringValue, the registered path as module.local.filename, enabled on the signup route.
    let generated =
        rendered_with("envoy/gateway-generated-module.template.yaml", &[("MODULE_FILE", path.to_string())], config);
    let hcm = &generated["static_resources"]["listeners"][0]["default_filter_chain"]["filters"][0]["typed_config"];
    let filter = &hcm["http_filters"][0];
    let name = "envoy.filters.http.dynamic_modules/envoyextensionpolicy/shop/email-verdict/dynamic-module/0";
    assert_eq!((filter["name"].as_str(), filter["disabled"].as_bool()), (Some(name), Some(true)));
    assert_eq!(filter["typed_config"]["@type"], DYNAMIC_MODULE_FILTER);
    assert_eq!(filter["typed_config"]["filter_name"], dm["filterName"]);
    assert_eq!(
        filter["typed_config"]["dynamic_module_config"],
        json!({"module": {"local": {"filename": path}}, "do_not_close": registered["doNotClose"]})
    );
    assert_eq!(&module_config_of(filter), config);
    let route = &hcm["route_config"]["virtual_hosts"][0]["routes"][0];
    assert_eq!(
        route["typed_per_filter_config"][name]["@type"],
        "type.googleapis.com/envoy.config.route.v3.FilterConfig"
    );
    let regex = &doc_of(&gateway, "HTTPRoute")["spec"]["rules"][0]["matches"][0]["path"]["value"];
    assert_eq!(&route["match"]["safe_regex"]["regex"], regex, "the signup route vs HTTPRoute signup");
}
