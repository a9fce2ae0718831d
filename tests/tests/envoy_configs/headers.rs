//! Every list of verdict header names in the shipped configuration holds all of them: a name
//! left out is a header a client can forge, or one the app never gets.

use email_verdict_tests::{VERDICT_HEADERS, workspace_root};
use serde_json::Value;

use yaml_rust2::YamlLoader;

use super::{load_yaml, rendered, to_json};

/// Every list of header names in `v` that names a verdict header: arrays of names, of
/// `{remove: name}` / `{exact: name}` objects, and `flag_headers` objects; also inside strings
/// that hold a document (Istio's mesh config, a plugin configuration as a StringValue).
fn verdict_header_lists(v: &Value, found: &mut Vec<Vec<String>>) {
    let is_verdict_header = |s: &str| VERDICT_HEADERS.contains(&s.to_ascii_lowercase().as_str());
    match v {
        Value::Array(items) => {
            let names: Vec<String> = items
                .iter()
                .filter_map(|i| match i {
                    Value::String(s) => Some(s.clone()),
                    Value::Object(o) => {
                        o.values().find_map(|x| x.as_str().filter(|s| s.starts_with("x-email"))).map(str::to_owned)
                    }
                    _ => None,
                })
                .collect();
            if names.iter().any(|n| is_verdict_header(n)) {
                found.push(names);
            }
            items.iter().for_each(|i| verdict_header_lists(i, found));
        }
        Value::Object(o) => {
            if o.contains_key("verdict") && o.contains_key("bypass") {
                found.push(o.values().filter_map(|x| x.as_str().map(str::to_owned)).collect());
            }
            o.values().for_each(|x| verdict_header_lists(x, found));
        }
        Value::String(s) if s.contains("x-email-") && s.contains('\n') => {
            let docs = YamlLoader::load_from_str(s).unwrap_or_else(|e| panic!("an embedded document: {e}\n{s}"));
            docs.iter().for_each(|d| verdict_header_lists(&to_json(d), found));
        }
        _ => {}
    }
}

/// Wherever a shipped configuration lists the verdict headers (removed from the client's request,
/// passed upstream from the check's answer, named in a plugin configuration), it lists all eight:
/// a name left out is a header a client can forge, or one the app never gets.
#[test]
fn every_shipped_configuration_lists_every_verdict_header() {
    let root = workspace_root();
    let mut sources: Vec<(String, Vec<Value>)> = vec![
        ("envoy/envoy.yaml".into(), load_yaml(&root.join("envoy/envoy.yaml"))),
        ("envoy/module.yaml".into(), load_yaml(&root.join("envoy/module.yaml"))),
        ("envoy/ext-authz.yaml".into(), load_yaml(&root.join("envoy/ext-authz.yaml"))),
        ("envoy/ext-authz-grpc.yaml".into(), load_yaml(&root.join("envoy/ext-authz-grpc.yaml"))),
        (
            "envoy/istio-generated-ext-authz.template.yaml".into(),
            vec![rendered("envoy/istio-generated-ext-authz.template.yaml")],
        ),
        (
            "envoy/gateway-generated-ext-authz.template.yaml".into(),
            vec![rendered("envoy/gateway-generated-ext-authz.template.yaml")],
        ),
    ];
    for file in ["plugin-config.json", "ext-authz-config.json"] {
        let text = std::fs::read_to_string(root.join("envoy").join(file)).expect(file);
        sources.push((format!("envoy/{file}"), vec![serde_json::from_str(&text).expect(file)]));
    }
    for dir in ["istio", "gateway"] {
        for entry in std::fs::read_dir(root.join("envoy").join(dir)).expect(dir) {
            let path = entry.expect("entry").path();
            if path.extension().is_some_and(|e| e == "yaml") {
                sources
                    .push((format!("envoy/{dir}/{}", path.file_name().unwrap().to_string_lossy()), load_yaml(&path)));
            }
        }
    }
    let mut total = 0;
    for (name, docs) in &sources {
        let mut found = Vec::new();
        docs.iter().for_each(|d| verdict_header_lists(d, &mut found));
        for list in &found {
            let lower: Vec<String> = list.iter().map(|n| n.to_ascii_lowercase()).collect();
            let missing: Vec<&str> =
                VERDICT_HEADERS.iter().copied().filter(|h| !lower.iter().any(|n| n == h)).collect();
            assert!(missing.is_empty(), "{name}: a list of verdict headers without {missing:?}: {list:?}");
        }
        total += found.len();
    }
    // 15 today: the filter's route removal and plugin configurations (envoy.yaml, the Istio and
    // Envoy Gateway manifests, the JSON files), ext_authz's removal and upstream lists (and their
    // reproductions of what istiod and Envoy Gateway generate), Istio's headersToUpstreamOnAllow,
    // Envoy Gateway's headersToBackend and earlyRequestHeaders. Fewer: the walk lost some.
    assert!(
        total >= 15,
        "only {total} lists of verdict headers found: {:?}",
        sources.iter().map(|s| &s.0).collect::<Vec<_>>()
    );
}
