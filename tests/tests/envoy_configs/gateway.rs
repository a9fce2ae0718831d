//! The Envoy Gateway manifests (envoy/gateway/), with the Wasm filter and with the dynamic module.

use super::*;

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

    let policy = named(&docs, "SecurityPolicy", "email-verdict");
    let ext = &policy["spec"]["extAuth"];
    assert_eq!(ext["http"]["path"], "/ext_authz");
    assert!(ext["bodyToExtAuth"]["maxRequestBytes"].as_i64().is_some_and(|n| n > 0));
    assert_eq!(ext["failOpen"], false);
    // The EnvoyPatchPolicy adds the key and the client (for the counts) to the check only.
    let patch = &named(&docs, "EnvoyPatchPolicy", "email-verdict-key")["spec"]["jsonPatches"][0]["operation"]["value"];
    let added: Vec<&str> =
        patch["headers_to_add"].as_array().unwrap().iter().filter_map(|h| h["key"].as_str()).collect();
    assert_eq!(added, ["x-email-verdict-key", "x-email-verdict-client"]);
    let wasm = &doc_of(&docs, "EnvoyExtensionPolicy")["spec"]["wasm"][0];
    let config = &wasm["config"];
    // Issue 44: the first deploy is a dry run.
    assert_eq!((config["hold_headers"].clone(), config["mode"].clone()), (json!(false), json!("shadow")));
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

fn named(docs: &[Value], kind: &str, name: &str) -> Value {
    docs.iter().find(|d| d["kind"] == kind && d["metadata"]["name"] == name).cloned().expect(name)
}

/// Issue 43: extAuth over gRPC to the sidecar's gRPC port, with the metadata and `pack_as_bytes`
/// of envoy/ext-authz-grpc.yaml patched into the filter EG generates for that policy.
#[test]
fn envoy_gateway_grpc_ext_authz() {
    let docs = load_yaml(&workspace_root().join("envoy/gateway/securitypolicy-grpc.yaml"));
    let policy = named(&docs, "SecurityPolicy", "email-verdict-grpc");
    let ext = &policy["spec"]["extAuth"];
    assert_eq!(ext["grpc"]["backendRefs"][0]["port"], 8082);
    assert!(ext["http"].is_null(), "gRPC, not HTTP");
    assert_eq!(ext["failOpen"], false);
    assert!(ext["bodyToExtAuth"]["maxRequestBytes"].as_i64().is_some_and(|n| n > 0));
    let headers = ext["headersToExtAuth"].as_array().expect("headersToExtAuth");
    for h in [
        "content-type",
        "content-encoding",
        "grpc-encoding",
        "connect-content-encoding",
        "connect-protocol-version",
        "accept",
    ] {
        assert!(headers.contains(&json!(h)), "{h} missing from headersToExtAuth");
    }
    let patches = named(&docs, "EnvoyPatchPolicy", "email-verdict-grpc-metadata")["spec"]["jsonPatches"].clone();
    let filter = "envoy.filters.http.ext_authz/securitypolicy/shop/email-verdict-grpc";
    for p in patches.as_array().expect("jsonPatches") {
        assert!(p["operation"]["jsonPath"].as_str().is_some_and(|j| j.contains(filter)), "{p}");
    }
    let shipped = rendered("envoy/ext-authz-grpc.template.yaml");
    let hcm = &shipped["static_resources"]["listeners"][0]["filter_chains"][0]["filters"][0]["typed_config"];
    let ext_authz =
        hcm["http_filters"].as_array().unwrap().iter().find(|f| f["name"] == "envoy.filters.http.ext_authz");
    let ext_authz = &ext_authz.expect("ext_authz")["typed_config"];
    assert_eq!(patches[0]["operation"]["value"], ext_authz["grpc_service"]["initial_metadata"]);
    assert_eq!(patches[1]["operation"]["path"], "/pack_as_bytes");
    assert_eq!(ext_authz["with_request_body"]["pack_as_bytes"], true);
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

/// Issue 43: the gRPC signup in Envoy Gateway (envoy/gateway/grpcroute.yaml): a GRPCRoute for
/// `acme.v1.Accounts/SignUp`, the filter on it with that call as its signup route and the
/// address at field 1; the filter accepts the configuration.
#[test]
fn envoy_gateway_grpcroute_puts_the_filter_on_the_grpc_signup() {
    let docs = load_yaml(&workspace_root().join("envoy/gateway/grpcroute.yaml"));
    let route = doc_of(&docs, "GRPCRoute");
    let method = &route["spec"]["rules"][0]["matches"][0]["method"];
    assert_eq!((method["service"].as_str(), method["method"].as_str()), (Some("acme.v1.Accounts"), Some("SignUp")));
    let policy = doc_of(&docs, "EnvoyExtensionPolicy");
    assert_eq!(
        policy["spec"]["targetRefs"],
        json!([{"group": "gateway.networking.k8s.io", "kind": "GRPCRoute", "name": route["metadata"]["name"]}])
    );
    let config = &policy["spec"]["wasm"][0]["config"];
    assert_eq!(config["signup_routes"], json!([{"method": "POST", "path": "/acme.v1.Accounts/SignUp"}]));
    let shipped = default_plugin_config();
    assert_eq!(config["email"], shipped["email"], "grpcroute.yaml config.email vs envoy/plugin-config.json");
    assert_eq!(config["email"]["proto_fields"], json!(["1"]));
    assert_eq!((config["hold_headers"].clone(), config["mode"].clone()), (json!(false), json!("block")));
    let dir = TestDir::new("envoy-gateway-grpc");
    let sets = [("WASM_FILE", filter_wasm().display().to_string())];
    let rendered = envoy::render(&dir.join("envoy.yaml"), &sets, config);
    let out = validate(&rendered, dir.path());
    assert!(out.success(), "the filter refuses the configuration of envoy/gateway/grpcroute.yaml\n{out}");
}
