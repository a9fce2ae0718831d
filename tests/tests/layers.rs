//! The sidecar's modules depend one way (ARCHITECTURE.md, "Layers of the sidecar"): no module
//! names one of a higher layer, and within a layer the allowed direction is listed. Read from
//! the `crate::` paths of the source, so a new upward `use` fails here rather than in review.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Top-level modules by layer, highest first (the picture in ARCHITECTURE.md).
const LAYERS: &[&[&str]] = &[
    &["main", "cli", "config", "server", "keys_cmd", "review_cmd", "check_cmd", "explain_cmd", "validate_cmd"],
    &["api", "pages", "request", "admin", "http_guard", "grpc_authz"],
    &["verdicts", "limits", "leases", "auth", "review", "warmup", "signups", "explain"],
    &["state", "dns", "rdap", "lists", "metrics", "clock", "logging", "client_ip", "outbound"],
    &["plans", "keys"],
    &["telemetry"],
];

/// Same-layer edges allowed, in this direction only.
const SIDEWAYS: &[(&str, &str)] = &[
    ("cli", "config"),
    ("cli", "check_cmd"),
    ("cli", "explain_cmd"),
    ("cli", "validate_cmd"),
    ("validate_cmd", "config"),
    ("explain_cmd", "config"),
    ("check_cmd", "config"),
    ("keys_cmd", "cli"),
    ("keys_cmd", "config"),
    ("review_cmd", "cli"),
    ("review_cmd", "keys_cmd"),
    ("server", "config"),
    ("api", "pages"),
    ("api", "request"),
    ("pages", "request"),
    ("admin", "api"),
    ("admin", "pages"),
    ("grpc_authz", "api"),
    ("grpc_authz", "request"),
    ("review", "verdicts"),
    ("warmup", "verdicts"),
    ("signups", "verdicts"),
    ("explain", "verdicts"),
    ("limits", "leases"),
    ("dns", "metrics"),
    ("lists", "metrics"),
    ("lists", "clock"),
    ("logging", "clock"),
    ("state", "clock"),
    ("rdap", "clock"),
    ("rdap", "metrics"),
    ("rdap", "outbound"),
    ("lists", "outbound"),
];

fn layer_of(module: &str) -> Option<usize> {
    LAYERS.iter().position(|layer| layer.contains(&module))
}

fn rust_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The top-level modules a source text names through `crate::a` or `crate::{a, b::c}`.
fn named_modules(text: &str) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    for (at, _) in text.match_indices("crate::") {
        let rest = &text[at + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let group = &group[..group.find('}').unwrap_or(group.len())];
            for item in group.split(',') {
                let name: String = item.trim().chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
                found.insert(name);
            }
        } else {
            found.insert(rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect());
        }
    }
    found.retain(|name| !name.is_empty());
    found
}

fn dependencies() -> BTreeMap<String, BTreeSet<String>> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../sidecar/src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for file in files {
        let relative = file.strip_prefix(&src).unwrap();
        let first = relative.components().next().unwrap().as_os_str().to_string_lossy();
        let module = first.trim_end_matches(".rs").to_owned();
        let text = std::fs::read_to_string(&file).unwrap();
        let mut named = named_modules(&text);
        named.remove(&module);
        edges.entry(module).or_default().extend(named);
    }
    edges
}

#[test]
fn every_module_has_a_layer() {
    let unplaced: Vec<String> = dependencies().into_keys().filter(|m| m != "lib" && layer_of(m).is_none()).collect();
    assert!(unplaced.is_empty(), "place these in LAYERS and in ARCHITECTURE.md's picture: {unplaced:?}");
}

#[test]
fn dependencies_point_down() {
    let mut wrong = Vec::new();
    for (from, targets) in dependencies() {
        let Some(from_layer) = layer_of(&from) else { continue };
        for to in targets {
            let Some(to_layer) = layer_of(&to) else { continue };
            let sideways_allowed = SIDEWAYS.contains(&(from.as_str(), to.as_str()));
            if to_layer < from_layer || (to_layer == from_layer && !sideways_allowed) {
                wrong.push(format!("{from} -> {to}"));
            }
        }
    }
    assert!(wrong.is_empty(), "dependencies against the layers (ARCHITECTURE.md): {wrong:?}");
}

#[test]
fn the_reader_sees_grouped_and_plain_paths() {
    let text = "use crate::a::B;\nuse crate::{c, d::E};\nfn f() { crate::e::g(); }";
    let names: Vec<String> = named_modules(text).into_iter().collect();
    assert_eq!(names, ["a", "c", "d", "e"]);
}
