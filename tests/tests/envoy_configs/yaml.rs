//! YAML as JSON, for the checks of the shipped manifests (shared by `envoy_configs.rs` and
//! `module_recipes.rs`).

use serde_json::{Value, json};
use std::path::Path;
use yaml_rust2::{Yaml, YamlLoader};

pub fn to_json(y: &Yaml) -> Value {
    match y {
        Yaml::Real(s) => s.parse::<f64>().map(Value::from).unwrap_or_else(|_| Value::String(s.clone())),
        Yaml::Integer(i) => json!(i),
        Yaml::String(s) => json!(s),
        Yaml::Boolean(b) => json!(b),
        Yaml::Array(a) => Value::Array(a.iter().map(to_json).collect()),
        Yaml::Hash(h) => Value::Object(
            h.iter()
                .map(|(k, v)| {
                    let key = match k {
                        Yaml::String(s) => s.clone(),
                        Yaml::Integer(i) => i.to_string(),
                        Yaml::Boolean(b) => b.to_string(),
                        other => panic!("unsupported YAML key {other:?}"),
                    };
                    (key, to_json(v))
                })
                .collect(),
        ),
        Yaml::Null => Value::Null,
        Yaml::Alias(_) | Yaml::BadValue => panic!("unsupported YAML node {y:?}"),
    }
}

/// Every document of a YAML file, as JSON.
pub fn load_yaml(path: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    let docs = YamlLoader::load_from_str(&text).unwrap_or_else(|e| panic!("{} is not valid YAML: {e}", path.display()));
    docs.iter().map(to_json).collect()
}
