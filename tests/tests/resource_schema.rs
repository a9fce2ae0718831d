//! `envoy/schema/kubernetes-resources.schema.json`: the plugin configuration inside an Istio
//! `WasmPlugin` and an Envoy Gateway `EnvoyExtensionPolicy`, for an editor that applies one schema
//! to a whole YAML file of resources. It must pick the configurations `validate-config` picks
//! (the same "is it email-verdict's" rule) and judge each as the plugin schema does: every shipped
//! recipe passes; a mistake put into each configuration a recipe carries fails, at that place,
//! exactly when `validate-config` finds that configuration; resources that are not ours pass.

use email_verdict::validate_cmd::found::{Kind, configurations, documents};
use email_verdict_tests::schema::shipped_recipes;
use email_verdict_tests::workspace_root;
use serde_json::{Value, json};

/// Serves the schemas beside it (the relative `$ref` to `plugin-config.schema.json`), as an
/// editor does from the schema file's own folder; nothing else.
struct SchemaFolder;

impl jsonschema::Retrieve for SchemaFolder {
    fn retrieve(&self, uri: &jsonschema::Uri<String>) -> Result<Value, Box<dyn std::error::Error + Send + Sync>> {
        let name = uri.as_str().strip_prefix(BASE).ok_or_else(|| format!("outside the schema folder: {uri}"))?;
        let text = std::fs::read_to_string(workspace_root().join("envoy/schema").join(name))?;
        Ok(serde_json::from_str(&text)?)
    }
}

const BASE: &str = "https://email-verdict.invalid/schema/";

fn validator() -> jsonschema::Validator {
    let path = workspace_root().join("envoy/schema/kubernetes-resources.schema.json");
    let schema: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    assert!(jsonschema::meta::is_valid(&schema), "{:?}", jsonschema::meta::validate(&schema));
    jsonschema::options()
        .with_draft(jsonschema::Draft::Draft202012)
        .with_base_uri(format!("{BASE}kubernetes-resources.schema.json"))
        .with_retriever(SchemaFolder)
        .build(&schema)
        .expect("the schema compiles")
}

/// The schema's complaints about `doc`, each with where it is.
fn errors(validator: &jsonschema::Validator, doc: &Value) -> Vec<String> {
    validator.iter_errors(doc).map(|e| format!("{} at {}", e.instance_path(), e)).collect()
}

/// Where a resource may carry a plugin configuration, found or not by `validate-config`'s rule.
fn places(doc: &Value) -> Vec<String> {
    match doc.get("kind").and_then(Value::as_str) {
        Some("WasmPlugin") => vec!["/spec/pluginConfig".to_owned()],
        Some("EnvoyExtensionPolicy") => ["wasm", "dynamicModule"]
            .iter()
            .flat_map(|list| {
                let n = doc.pointer(&format!("/spec/{list}")).and_then(Value::as_array).map_or(0, Vec::len);
                (0..n).map(move |i| format!("/spec/{list}/{i}/config"))
            })
            .collect(),
        _ => Vec::new(),
    }
}

/// The places (`spec.wasm[0].config`) where `validate-config` finds a plugin configuration in `doc`.
fn found_by_validate_config(doc: &Value) -> Vec<String> {
    let text = format!("---\n{doc}\n");
    let found = configurations(&text).unwrap().found;
    let plugins = found.into_iter().filter(|f| f.kind == Some(Kind::Plugin));
    plugins.filter_map(|f| Some(f.place.rsplit_once(" (")?.1.strip_suffix(')')?.to_owned())).collect()
}

/// `/spec/wasm/0/config` as `validate-config` names it: `spec.wasm[0].config`.
fn dotted(pointer: &str) -> String {
    let mut out = String::new();
    for part in pointer.trim_start_matches('/').split('/') {
        if part.parse::<usize>().is_ok() {
            out.push_str(&format!("[{part}]"));
        } else {
            if !out.is_empty() {
                out.push('.');
            }
            out.push_str(part);
        }
    }
    out
}

/// Every document of every YAML recipe under `envoy/` (templates aside), with its file's name.
fn shipped_resources() -> Vec<(String, Value)> {
    let root = workspace_root();
    let mut out = Vec::new();
    for file in shipped_recipes().into_iter().filter(|f| f.extension().is_some_and(|e| e == "yaml")) {
        let name = file.strip_prefix(&root).unwrap().display().to_string();
        let text = std::fs::read_to_string(&file).unwrap();
        for doc in documents(&text).unwrap_or_else(|e| panic!("{name}: {e}")) {
            out.push((name.clone(), doc));
        }
    }
    out
}

#[test]
fn every_shipped_resource_passes() {
    let validator = validator();
    let resources = shipped_resources();
    assert!(resources.len() > 20, "{}", resources.len());
    for (file, doc) in &resources {
        let errors = errors(&validator, doc);
        assert!(errors.is_empty(), "{file}: {errors:?}");
    }
}

/// A mistake in each configuration place of each shipped resource: the schema refuses it at that
/// place exactly when `validate-config` finds a configuration there.
#[test]
fn a_mistake_fails_where_validate_config_finds_a_configuration() {
    let validator = validator();
    let mut checked = 0;
    for (file, doc) in shipped_resources() {
        for place in places(&doc) {
            let Some(config) = doc.pointer(&place) else { continue };
            let ours = found_by_validate_config(&doc).contains(&dotted(&place));
            let mut broken = doc.clone();
            let mut bad = config.clone();
            bad["sidecar"]["timeout_ms"] = json!("soon");
            *broken.pointer_mut(&place).unwrap() = bad;
            let errors = errors(&validator, &broken);
            if ours {
                assert!(
                    errors.iter().any(|e| e.starts_with(&format!("{place}/sidecar/timeout_ms "))),
                    "{file} {place}: {errors:?}"
                );
                checked += 1;
            } else {
                assert!(errors.is_empty(), "{file} {place}: not ours, yet {errors:?}");
            }
        }
    }
    assert!(checked >= 4, "{checked}");
}

/// Resources that are not email-verdict's pass whatever they carry; ours must carry one.
#[test]
fn only_email_verdict_s_resources_are_judged() {
    let validator = validator();
    let anything = json!({ "whatever": ["goes", 1] });
    let other_plugin = json!({ "kind": "WasmPlugin", "metadata": { "name": "rate-limit" },
        "spec": { "url": "oci://registry.example/ratelimit:1", "pluginConfig": anything } });
    assert!(errors(&validator, &other_plugin).is_empty());
    assert!(found_by_validate_config(&other_plugin).is_empty());
    let other_entry = json!({ "kind": "EnvoyExtensionPolicy", "metadata": { "name": "policies" },
        "spec": { "wasm": [{ "name": "waf", "rootID": "coraza", "config": anything }] } });
    assert!(errors(&validator, &other_entry).is_empty());
    assert!(found_by_validate_config(&other_entry).is_empty());
    let service = json!({ "kind": "Service", "metadata": { "name": "email-verdict" }, "spec": anything });
    assert!(errors(&validator, &service).is_empty());

    let ours_without = json!({ "kind": "WasmPlugin", "metadata": { "name": "email-verdict" }, "spec": {} });
    assert!(!errors(&validator, &ours_without).is_empty());
    let entry_without = json!({ "kind": "EnvoyExtensionPolicy", "metadata": { "name": "p" },
        "spec": { "dynamicModule": [{ "name": "email-verdict", "filterName": "email_verdict" }] } });
    assert!(!errors(&validator, &entry_without).is_empty());
    // Named by its URL alone, as validate-config reads it too.
    let by_url = json!({ "kind": "WasmPlugin", "metadata": { "name": "signups" },
        "spec": { "url": "oci://registry.example/email-verdict/filter:0.1.0", "pluginConfig": anything } });
    assert!(!errors(&validator, &by_url).is_empty());
    assert_eq!(found_by_validate_config(&by_url), ["spec.pluginConfig"]);
}
