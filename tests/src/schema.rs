//! The published JSON Schema of the plugin configuration (`envoy/schema/`), read as the tests
//! compare it with the filter's parser and the `validate-config` command.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

/// `envoy/schema/plugin-config.schema.json`.
pub fn plugin_schema() -> Value {
    let path = crate::workspace_root().join("envoy/schema/plugin-config.schema.json");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Every object of named properties in `schema`, by its path of names (`""` for the top,
/// `velocity.mailbox`; an array's items have their array's path), with those names. `$ref`s,
/// `anyOf` and `oneOf` branches are followed.
pub fn objects(schema: &Value) -> BTreeMap<String, BTreeSet<String>> {
    let mut out = BTreeMap::new();
    walk(schema, schema, "", &mut out);
    out
}

/// Every property's path (`sidecar.timeout_ms`), objects included.
pub fn fields(schema: &Value) -> BTreeSet<String> {
    let mut fields = BTreeSet::new();
    for (path, names) in objects(schema) {
        fields.extend(names.iter().map(|n| if path.is_empty() { n.clone() } else { format!("{path}.{n}") }));
    }
    fields
}

fn walk(node: &Value, root: &Value, path: &str, out: &mut BTreeMap<String, BTreeSet<String>>) {
    if let Some(reference) = node.get("$ref").and_then(Value::as_str) {
        let target = root.pointer(reference.trim_start_matches('#'));
        walk(target.unwrap_or_else(|| panic!("no {reference}")), root, path, out);
    }
    if let Some(props) = node.get("properties").and_then(Value::as_object) {
        out.entry(path.to_owned()).or_default().extend(props.keys().cloned());
        for (name, sub) in props {
            let child = if path.is_empty() { name.clone() } else { format!("{path}.{name}") };
            walk(sub, root, &child, out);
        }
    }
    if let Some(items) = node.get("items") {
        walk(items, root, path, out);
    }
    for branches in ["anyOf", "oneOf"] {
        for branch in node.get(branches).and_then(Value::as_array).into_iter().flatten() {
            walk(branch, root, path, out);
        }
    }
}

/// The shipped recipes the schemas judge: every `.yaml` and `.json` file under `envoy/`, sorted,
/// templates (`*.template.yaml`) and the schemas themselves left out.
pub fn shipped_recipes() -> Vec<std::path::PathBuf> {
    fn walk(dir: &std::path::Path, schemas: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            if path.is_dir() {
                if path != schemas {
                    walk(&path, schemas, out);
                }
            } else if (name.ends_with(".yaml") || name.ends_with(".json")) && !name.ends_with(".template.yaml") {
                out.push(path);
            }
        }
    }
    let envoy = crate::workspace_root().join("envoy");
    let mut files = Vec::new();
    walk(&envoy, &envoy.join("schema"), &mut files);
    files.sort();
    files
}
