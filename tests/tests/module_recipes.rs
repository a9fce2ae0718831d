//! Issue 33 item 2: the dynamic module shipped like the Wasm filter. What istiod generates for
//! `envoy/istio/module-envoyfilter.yaml` and what Envoy Gateway generates for
//! `envoy/gateway/module.yaml`, reproduced in `envoy/*-generated-module.template.yaml` (sources in
//! `envoy/GENERATED.md`), rendered with the manifests' own plugin configurations and run in a real
//! Envoy with the built module (`make module`) against the real sidecar: disposable signups
//! blocked (or flagged), safe ones reaching the app with the verdict headers, forgeries replaced.

#[path = "envoy_configs/yaml.rs"]
mod yaml;

use email_verdict_tests::envoy::{EnvoyBuilder, FilterBuild, Gateway, filter_module, gateway_with_on, signup};
use email_verdict_tests::{Request, VERDICT_HEADERS, workspace_root};
use serde_json::{Value, json};

/// The HTTP filter the Istio EnvoyFilter adds (its first patch's value).
fn istio_filter() -> Value {
    let docs = yaml::load_yaml(&workspace_root().join("envoy/istio/module-envoyfilter.yaml"));
    let ef = docs.into_iter().find(|d| d["kind"] == "EnvoyFilter").expect("an EnvoyFilter");
    ef["spec"]["configPatches"][0]["patch"]["value"].clone()
}

/// The plugin configuration of a DynamicModuleFilter (its `filter_config` StringValue, as JSON).
fn filter_config_of(filter: &Value) -> Value {
    let cfg = &filter["typed_config"]["filter_config"];
    assert_eq!(cfg["@type"], "type.googleapis.com/google.protobuf.StringValue", "{filter:#}");
    serde_json::from_str(cfg["value"].as_str().expect("a string")).expect("the filter_config is JSON")
}

/// `envoy/gateway/module.yaml`'s EnvoyExtensionPolicy `dynamicModule[0].config`.
fn gateway_config() -> Value {
    let docs = yaml::load_yaml(&workspace_root().join("envoy/gateway/module.yaml"));
    let policy = docs.into_iter().find(|d| d["kind"] == "EnvoyExtensionPolicy").expect("an EnvoyExtensionPolicy");
    policy["spec"]["dynamicModule"][0]["config"].clone()
}

fn json_signup(path: &str, email: &str) -> Request {
    Request::new("POST", path)
        .header("Content-Type", "application/json")
        .body(json!({ "email": email }).to_string().as_bytes())
}

/// The reproduction `template` with the module, the plugin configuration `plugin` and Envoy's
/// environment `env` (the key and the mailbox secret are the harness's).
fn generated(template: &str, plugin: Value, configure: impl FnOnce(EnvoyBuilder) -> EnvoyBuilder) -> Gateway {
    gateway_with_on(FilterBuild::Module, |s| s, |e| configure(e.template(template).plugin_config(plugin)))
}

#[test]
fn what_istiod_generates_for_the_module_envoyfilter_enforces() {
    // The module by name, from the directory istio-proxy's ENVOY_DYNAMIC_MODULES_SEARCH_PATH
    // names (app-proxy-module.yaml).
    let module_dir = filter_module().parent().expect("the module's directory").display().to_string();
    let search_path = |e: EnvoyBuilder| e.env("ENVOY_DYNAMIC_MODULES_SEARCH_PATH", &module_dir);
    let shipped = filter_config_of(&istio_filter());
    assert_eq!(shipped["mode"], "flag", "envoy/istio/module-envoyfilter.yaml ships flag mode");
    let template = "istio-generated-module.template.yaml";
    let g = generated(template, shipped.clone(), search_path);
    let log = g.envoy.log_text();
    assert!(
        log.contains("Dynamic module ABI version v0.2.0 matched."),
        "the module's ABI version, logged at load\n{log}"
    );

    // Flag mode: every signup reaches the app, with the verdict; a client's forgery is replaced.
    let disposable = json_signup("/signup", "temp@mailinator.com").header("x-email-verdict", "safe");
    assert_eq!(g.envoy.send(&disposable).status, 200);
    let seen = g.app.wait_for_request(1);
    assert_eq!(seen.headers_named("x-email-verdict"), ["disposable"], "{:?}", seen.headers);
    assert_eq!(seen.headers_named("x-email-domain"), ["mailinator.com"], "{:?}", seen.headers);
    let safe = signup("application/json", br#"{"email":"ann@gmail.com"}"#).header("x-email-verdict", "disposable");
    assert_eq!(g.envoy.send(&safe).status, 200);
    let seen = g.app.wait_for_request(2);
    assert_eq!(seen.headers_named("x-email-verdict"), ["safe"], "{:?}", seen.headers);
    assert_eq!(seen.headers_named("x-email-domain"), ["gmail.com"]);
    assert_eq!(seen.body, br#"{"email":"ann@gmail.com"}"#, "the body arrives intact");
    // The shipped configuration counts signups (the key and the secret from Envoy's environment).
    assert_eq!(seen.headers_named("x-email-client-signups"), ["2"], "{:?}", seen.headers);
    // Every spelling the app routes to /signup is judged (the listener merges slashes; the
    // filter matches the rest itself), and a request that is no signup loses forged headers.
    for (i, path) in ["//signup", "/SIGNUP", "/signup/", "/signup;x"].into_iter().enumerate() {
        assert_eq!(g.envoy.send(&json_signup(path, "v@mailinator.com")).status, 200, "{path}");
        let seen = g.app.wait_for_request(3 + i);
        assert_eq!(seen.headers_named("x-email-verdict"), ["disposable"], "{path}: {:?}", seen.headers);
    }
    let other = Request::new("GET", "/home").header("x-email-verdict", "safe").header("x-email-domain", "gmail.com");
    assert_eq!(g.envoy.send(&other).status, 200);
    let seen = g.app.wait_for_request(7);
    for h in VERDICT_HEADERS {
        assert!(seen.header(h).is_none(), "a forged {h} reached the app: {:?}", seen.headers);
    }
    assert_eq!(
        g.envoy.counter("dynamicmodulescustom.email_verdict.flagged"),
        Some(6),
        "{}",
        g.envoy.stats_matching("email_verdict")
    );

    // "mode": "block" (what the file says to set to refuse at the proxy): the app never sees it.
    let mut block = shipped;
    block["mode"] = json!("block");
    let blocking =
        search_path(EnvoyBuilder::new(g.sidecar.addr(), g.app.addr()).api_key(g.sidecar.key()).template(template))
            .plugin_config(block)
            .start();
    let resp = blocking.send(&json_signup("/signup", "temp@mailinator.com"));
    assert_eq!((resp.status, resp.json()["error"].clone()), (403, json!("disposable_email")), "{resp}");
    assert_eq!(g.app.count(), 7, "a blocked signup reached the app");
}

#[test]
fn what_envoy_gateway_generates_for_the_module_policy_enforces() {
    let shipped = gateway_config();
    assert_eq!(shipped["mode"], "block", "envoy/gateway/module.yaml ships block mode");
    let module = filter_module().display().to_string();
    let g = generated("gateway-generated-module.template.yaml", shipped, |e| e.placeholder("MODULE_FILE", &module));

    // Blocked before the app sees anything, in every spelling the signup route matches.
    let variants =
        ["/signup", "//signup", "/./signup", "/%73ignup", "/signup/", "/signup;x", "/SiGnUp", "/signup.json"];
    for path in variants {
        let resp = g.envoy.send(&json_signup(path, "temp@mailinator.com").header("x-email-verdict", "safe"));
        assert_eq!((resp.status, resp.json()["error"].clone()), (403, json!("disposable_email")), "{path}\n{resp}");
    }
    assert_eq!(g.app.count(), 0, "the app saw a blocked signup: {:?}", g.app.requests());
    // A safe signup: through, with the verdict headers the filter added (the hold works with
    // EG's shape: the filter disabled in the chain, enabled by the route's empty FilterConfig).
    let safe = signup("application/json", br#"{"email":"ann@gmail.com"}"#).header("x-email-verdict", "disposable");
    assert_eq!(g.envoy.send(&safe).status, 200);
    let seen = g.app.wait_for_request(1);
    assert_eq!(seen.headers_named("x-email-verdict"), ["safe"], "{:?}", seen.headers);
    assert_eq!(seen.headers_named("x-email-domain"), ["gmail.com"]);
    // Signups are counted (the key and the secret from Envoy's environment, as the EnvoyProxy
    // puts them there), by the client this Envoy saw: every refused one too, then this one.
    let judged = (variants.len() + 1).to_string();
    assert_eq!(seen.headers_named("x-email-client-signups"), [judged.as_str()], "{:?}", seen.headers);
    // The app's other routes: no filter, and the ClientTrafficPolicy's early removal drops forgeries.
    let other = Request::new("POST", "/orders").header("x-email-verdict", "safe").body(b"email=x@mailinator.com");
    assert_eq!(g.envoy.send(&other).status, 200);
    let seen = g.app.wait_for_request(2);
    for h in VERDICT_HEADERS {
        assert!(seen.header(h).is_none(), "a forged {h} reached the app: {:?}", seen.headers);
    }
    assert_eq!(
        g.envoy.counter("email_verdict.blocked"),
        Some(variants.len() as u64),
        "{}",
        g.envoy.stats_matching("email_verdict")
    );
}

/// `scripts/module-version.sh` (what `make module` prints and the module image's labels carry)
/// names the Envoy these tests run the module in: the operator's check of docs/gateway.md,
/// "Which Envoy the module needs", done here.
#[test]
fn the_module_is_built_for_the_envoy_the_tests_run() {
    let run = |cmd: &mut std::process::Command| -> String {
        let out = cmd.output().expect("run");
        assert!(out.status.success(), "{cmd:?}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let declared = run(&mut std::process::Command::new(workspace_root().join("scripts/module-version.sh")));
    let field = |name: &str| declared.lines().find_map(|l| l.strip_prefix(name)).expect(name).trim().to_string();
    let version = run(std::process::Command::new(email_verdict_tests::envoy::envoy_binary()).arg("--version"));
    // `<path>  version: <commit>/<release>/Clean/RELEASE/BoringSSL`
    let release = version
        .split_once("version: ")
        .and_then(|(_, v)| v.split('/').nth(1))
        .unwrap_or_else(|| panic!("no release in {version:?}"));
    assert_eq!(release, field("envoy "), "scripts/module-version.sh vs the Envoy of the tests: {version}");
    let minor = release.rsplit_once('.').map(|(m, _)| m).expect("X.Y.Z");
    assert!(field("loads-in ").split(' ').any(|m| m == minor), "{declared}");
}
