//! Where the configurations are in a file: the whole of a JSON file, or, in YAML (every
//! document of it), a bare configuration, the `pluginConfig` of an Istio `WasmPlugin`, the
//! `config` of an Envoy Gateway `EnvoyExtensionPolicy`'s `wasm` and `dynamicModule` entries, and
//! the configuration of every email-verdict Wasm or dynamic-module filter in any Envoy resource
//! (an Istio `EnvoyFilter`'s patches, an Envoy bootstrap).
//!
//! A filter or policy entry is email-verdict's when its names (filter name, root id, VM id,
//! code, module name) say `email_verdict` or `email-verdict`; others are skipped, and so are
//! documents that hold no configuration (a Service, a Secret).

use serde_json::{Map, Value};
use yaml_rust2::{Yaml, YamlLoader};

/// Envoy's Wasm HTTP filter and dynamic-module filter: their configuration is ours.
const WASM_TYPE: &str = "type.googleapis.com/envoy.extensions.filters.http.wasm.v3.Wasm";
const MODULE_TYPE: &str = "type.googleapis.com/envoy.extensions.filters.http.dynamic_modules.v3.DynamicModuleFilter";
const STRING_VALUE: &str = "type.googleapis.com/google.protobuf.StringValue";
const STRUCT: &str = "type.googleapis.com/google.protobuf.Struct";

/// Which parser a configuration goes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// The Wasm filter's and the dynamic module's (`filter/CONFIG.md`).
    Plugin,
    /// The sidecar's `--ext-authz-config`.
    ExtAuthz,
}

/// One configuration found, with where it is.
#[derive(Debug)]
pub struct Found {
    /// `WasmPlugin email-verdict (spec.pluginConfig)`, `document 2`, or empty for a JSON file.
    pub place: String,
    /// `None` for a bare document: its kind is chosen by `--kind` or detected.
    pub kind: Option<Kind>,
    /// The JSON text the filter (or the sidecar) would read, or why there is none.
    pub json: Result<Vec<u8>, String>,
    /// True when that text is written here from YAML (istiod and Envoy Gateway do the same), so
    /// a parser's line and column point into nothing the operator wrote.
    pub rewritten: bool,
}

/// What a file holds: its configurations, and the notes for entries skipped as not ours.
#[derive(Debug, Default)]
pub struct Contents {
    pub found: Vec<Found>,
    pub skipped: Vec<String>,
}

/// The configurations of a file's text. A text whose first character is `{` is one JSON
/// document, passed on byte for byte; anything else is YAML.
pub fn configurations(text: &str) -> Result<Contents, String> {
    let trimmed = text.trim_start_matches('\u{feff}').trim_start();
    let mut contents = Contents::default();
    if trimmed.starts_with('{') {
        contents.found.push(Found {
            place: String::new(),
            kind: None,
            json: Ok(trimmed.as_bytes().to_vec()),
            rewritten: false,
        });
        return Ok(contents);
    }
    let docs = documents(text)?;
    let many = docs.len() > 1;
    for (i, doc) in docs.iter().enumerate() {
        let place = if many { format!("document {}", i + 1) } else { String::new() };
        in_document(doc, place, &mut contents);
    }
    Ok(contents)
}

/// Every non-empty document of a YAML text, as JSON (as istiod and Envoy Gateway read them).
pub fn documents(text: &str) -> Result<Vec<Value>, String> {
    let docs = YamlLoader::load_from_str(text).map_err(|e| format!("not YAML or JSON: {e}"))?;
    Ok(docs.iter().map(to_json).filter(|d| !d.is_null()).collect())
}

fn in_document(doc: &Value, place: String, out: &mut Contents) {
    let Some(object) = doc.as_object() else {
        let json = Err("expected a mapping (a JSON object)".into());
        out.found.push(Found { place, kind: None, json, rewritten: false });
        return;
    };
    let kind = object.get("kind").and_then(Value::as_str);
    if ["apiVersion", "kind", "metadata", "spec"].iter().any(|k| object.contains_key(*k)) {
        // A Kubernetes resource, or a patch of one (kubectl patch --patch-file).
        let name = doc.pointer("/metadata/name").and_then(Value::as_str).unwrap_or("(no name)");
        let resource = match kind {
            Some(kind) => format!("{kind} {name}"),
            None if place.is_empty() => "the resource".to_owned(),
            None => place,
        };
        match kind {
            Some("WasmPlugin") => wasm_plugin(doc, &resource, out),
            Some("EnvoyExtensionPolicy") => extension_policy(doc, &resource, out),
            _ => envoy_filters(doc, &resource, "", None, out),
        }
    } else if ["static_resources", "dynamic_resources", "admin"].iter().any(|k| object.contains_key(*k)) {
        let resource =
            if place.is_empty() { "Envoy bootstrap".to_owned() } else { format!("{place}, Envoy bootstrap") };
        envoy_filters(doc, &resource, "", None, out);
    } else {
        out.found.push(Found { place, kind: None, json: to_bytes(doc), rewritten: true });
    }
}

/// Istio's `WasmPlugin`: `spec.pluginConfig`, which istiod hands to the filter as JSON.
fn wasm_plugin(doc: &Value, resource: &str, out: &mut Contents) {
    let names = [doc.pointer("/metadata/name"), doc.pointer("/spec/url")];
    if !names.iter().flatten().any(|v| names_us(v)) {
        out.skipped.push(format!("{resource}: not email-verdict's (its name and url do not say email-verdict)"));
        return;
    }
    let place = format!("{resource} (spec.pluginConfig)");
    let json = match doc.pointer("/spec/pluginConfig") {
        Some(config) => to_bytes(config),
        None => Err("spec.pluginConfig is missing: the filter needs at least sidecar and signup_routes".into()),
    };
    out.found.push(Found { place, kind: Some(Kind::Plugin), json, rewritten: true });
}

/// Envoy Gateway's `EnvoyExtensionPolicy`: `spec.wasm[].config` and `spec.dynamicModule[].config`.
fn extension_policy(doc: &Value, resource: &str, out: &mut Contents) {
    for list in ["wasm", "dynamicModule"] {
        let entries = doc.pointer(&format!("/spec/{list}")).and_then(Value::as_array);
        for (i, entry) in entries.into_iter().flatten().enumerate() {
            let field = format!("spec.{list}[{i}]");
            let mut named = entry.clone();
            if let Some(o) = named.as_object_mut() {
                o.remove("config");
            }
            if !names_us(&named) {
                out.skipped
                    .push(format!("{resource}: {field} is not email-verdict's (its names do not say email_verdict)"));
                continue;
            }
            let json = match entry.get("config") {
                Some(config) => to_bytes(config),
                None => Err(format!("{field}.config is missing: the filter needs at least sidecar and signup_routes")),
            };
            let place = format!("{resource} ({field}.config)");
            out.found.push(Found { place, kind: Some(Kind::Plugin), json, rewritten: true });
        }
    }
}

/// Every Wasm or dynamic-module filter anywhere in `value` (an `EnvoyFilter`'s patch, a bootstrap's
/// listeners): the configuration Envoy would hand to it. `parent` is the object holding `value`:
/// an HTTP filter's `name` sits beside its `typed_config`.
fn envoy_filters(value: &Value, resource: &str, path: &str, parent: Option<&Value>, out: &mut Contents) {
    match value {
        Value::Object(o) => {
            let (config_field, json) = match o.get("@type").and_then(Value::as_str) {
                Some(WASM_TYPE) => {
                    ("config.configuration", o.get("config").map(|c| any_configuration(c.get("configuration"), false)))
                }
                Some(MODULE_TYPE) => ("filter_config", Some(any_configuration(o.get("filter_config"), true))),
                _ => ("", None),
            };
            if let Some(json) = json {
                // Its names, without the configuration (whose values are the operator's).
                let mut named = value.clone();
                if let Some(n) = named.as_object_mut() {
                    n.remove("filter_config");
                    if let Some(c) = n.get_mut("config").and_then(Value::as_object_mut) {
                        c.remove("configuration");
                    }
                }
                let place = format!("{resource} ({}{config_field})", dotted(path));
                let filter_name = parent.and_then(|p| p.get("name")).cloned().unwrap_or_default();
                if names_us(&named) || names_us(&filter_name) {
                    // A StringValue is the operator's text; a Struct is rewritten.
                    let rewritten = value.pointer("/filter_config/@type").and_then(Value::as_str) == Some(STRUCT);
                    out.found.push(Found { place, kind: Some(Kind::Plugin), json, rewritten });
                } else {
                    out.skipped.push(format!("{place}: not email-verdict's (its names do not say email_verdict)"));
                }
                return;
            }
            for (k, v) in o {
                envoy_filters(v, resource, &format!("{path}.{k}"), Some(value), out);
            }
        }
        Value::Array(a) => {
            for (i, v) in a.iter().enumerate() {
                envoy_filters(v, resource, &format!("{path}[{i}]"), Some(value), out);
            }
        }
        _ => {}
    }
}

/// A `google.protobuf.Any` the filter reads as JSON text: a `StringValue` (Envoy passes the
/// string), or for the dynamic module a `Struct` (Envoy passes it as JSON).
fn any_configuration(any: Option<&Value>, module: bool) -> Result<Vec<u8>, String> {
    let Some(any) = any else {
        return Err("no configuration: the filter needs at least sidecar and signup_routes".into());
    };
    match (any.get("@type").and_then(Value::as_str), any.get("value")) {
        (Some(STRING_VALUE), Some(Value::String(text))) => Ok(text.as_bytes().to_vec()),
        (Some(STRUCT), Some(value)) if module => to_bytes(value),
        (Some(STRING_VALUE), _) => Err("the StringValue has no string value".into()),
        _ => Err(format!("@type must be {STRING_VALUE} holding the JSON text")),
    }
}

/// True when any string in `value` names email-verdict.
fn names_us(value: &Value) -> bool {
    match value {
        Value::String(s) => s.contains("email_verdict") || s.contains("email-verdict"),
        Value::Array(a) => a.iter().any(names_us),
        Value::Object(o) => o.values().any(names_us),
        _ => false,
    }
}

fn dotted(path: &str) -> String {
    let path = path.trim_start_matches('.');
    if path.is_empty() { String::new() } else { format!("{path}.") }
}

fn to_bytes(value: &Value) -> Result<Vec<u8>, String> {
    serde_json::to_vec(value).map_err(|e| e.to_string())
}

/// A YAML node as the JSON istiod and Envoy Gateway would hand on (keys as strings).
fn to_json(node: &Yaml) -> Value {
    match node {
        Yaml::Real(text) => real(text),
        Yaml::Integer(n) => Value::from(*n),
        Yaml::String(s) => Value::String(s.clone()),
        Yaml::Boolean(b) => Value::Bool(*b),
        Yaml::Array(items) => Value::Array(items.iter().map(to_json).collect()),
        Yaml::Hash(hash) => {
            let object: Map<String, Value> = hash.iter().map(|(k, v)| (key(k), to_json(v))).collect();
            Value::Object(object)
        }
        Yaml::Alias(_) | Yaml::Null | Yaml::BadValue => Value::Null,
    }
}

/// A YAML float as the JSON the filter gets: istiod (a protobuf `Struct`) and Kubernetes (Go's
/// `encoding/json`) both write an integral one without a fraction (`1e3` as `1000`).
fn real(text: &str) -> Value {
    let Some(x) = text.parse::<f64>().ok().filter(|x| x.is_finite()) else {
        return Value::Null;
    };
    // Within 2^53 an f64 holds every integer exactly.
    if x.fract() == 0.0 && x.abs() < 9_007_199_254_740_992.0 {
        return Value::from(x as i64);
    }
    serde_json::Number::from_f64(x).map_or(Value::Null, Value::Number)
}

fn key(node: &Yaml) -> String {
    match node {
        Yaml::String(s) | Yaml::Real(s) => s.clone(),
        Yaml::Integer(n) => n.to_string(),
        Yaml::Boolean(b) => b.to_string(),
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_is_passed_on_byte_for_byte() {
        let c = configurations(" {\"mode\": \"flag\"} ").unwrap();
        assert_eq!(c.found[0].json.as_ref().unwrap(), b"{\"mode\": \"flag\"} ");
    }

    #[test]
    fn a_module_may_have_a_struct_and_a_wasm_filter_only_a_string() {
        let filter = |t: &str, config: &str| {
            format!(
                "static_resources: {{listeners: [{{name: email_verdict, typed_config: {{'@type': {t}, {config}}}}}]}}\n"
            )
        };
        let module = filter(
            MODULE_TYPE,
            "filter_config: {'@type': type.googleapis.com/google.protobuf.Struct, value: {mode: flag}}",
        );
        let c = configurations(&module).unwrap();
        assert_eq!(c.found[0].json.as_ref().unwrap(), br#"{"mode":"flag"}"#);
        assert!(c.found[0].rewritten && c.found[0].kind == Some(Kind::Plugin));
        let wasm = filter(
            WASM_TYPE,
            "config: {root_id: email_verdict, configuration: {'@type': type.googleapis.com/google.protobuf.Struct, value: {}}}",
        );
        let c = configurations(&wasm).unwrap();
        assert!(c.found[0].json.as_ref().unwrap_err().contains("StringValue"), "{:?}", c.found);
        let text = filter(
            WASM_TYPE,
            "config: {root_id: email_verdict, configuration: {'@type': type.googleapis.com/google.protobuf.StringValue, value: ' {}'}}",
        );
        let c = configurations(&text).unwrap();
        assert_eq!((c.found[0].json.as_deref(), c.found[0].rewritten), (Ok(&b" {}"[..]), false));
        assert!(
            c.found[0].place.starts_with("Envoy bootstrap (static_resources.listeners[0].typed_config."),
            "{:?}",
            c.found
        );
    }

    #[test]
    fn an_integral_float_is_an_integer_as_istiod_writes_it() {
        let c = configurations("timeout_ms: 1e3\nratio: 0.5\nsign: -2.0\n").unwrap();
        assert_eq!(c.found[0].json.as_ref().unwrap(), br#"{"ratio":0.5,"sign":-2,"timeout_ms":1000}"#);
    }

    #[test]
    fn a_patch_file_is_a_resource_not_a_configuration() {
        let c = configurations("spec: {template: {metadata: {annotations: {a: b}}}}\n").unwrap();
        assert!(c.found.is_empty() && c.skipped.is_empty(), "{c:?}");
        let c = configurations("mode: flag\n").unwrap();
        assert_eq!((c.found.len(), c.found[0].kind), (1, None));
    }

    #[test]
    fn other_filters_and_resources_are_not_ours() {
        let yaml = "kind: Service\napiVersion: v1\nmetadata: {name: x}\n---\n\
            apiVersion: extensions.istio.io/v1alpha1\nkind: WasmPlugin\nmetadata: {name: coraza}\nspec: {url: oci://x/coraza, pluginConfig: {}}\n";
        let c = configurations(yaml).unwrap();
        assert!(c.found.is_empty(), "{:?}", c.found);
        assert_eq!(c.skipped.len(), 1);
    }
}
