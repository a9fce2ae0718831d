//! The dynamic module against the pinned Envoy (`make module`, `scripts/envoy-path.sh`): every
//! `envoy_dynamic_module_callback_*` function the hand-written bindings declare
//! (`filter/src/module/abi.rs`) and every one the built module needs is exported by Envoy; every
//! `envoy_dynamic_module_on_*` hook Envoy resolves is exported by the module; Envoy holds the
//! ABI version the module answers; and Envoy loads the module with `envoy/module.yaml`
//! (`--mode validate`) and with a rendered configuration (a real start, its counters named as
//! filter/CONFIG.md says).

use email_verdict_tests::envoy::{self, FilterBuild, each_build, envoy_binary, eventually, filter_module, gateway_on};
use email_verdict_tests::workspace_root;
use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

/// `nm -D <flags> <file>`: the dynamic symbols' names.
fn dynamic_symbols(file: &Path, flags: &[&str]) -> BTreeSet<String> {
    let mut cmd = Command::new("nm");
    cmd.arg("-D").args(flags).arg(file);
    let out = envoy::run(cmd);
    assert!(out.success(), "nm -D {flags:?} {} failed (binutils installed?)\n{out}", file.display());
    out.stdout.lines().filter_map(|l| l.split_whitespace().last()).map(str::to_owned).collect()
}

fn bindings_source() -> String {
    let path = workspace_root().join("filter/src/module/abi.rs");
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()))
}

/// Every identifier of the bindings that starts with `prefix`.
fn names_in_bindings(prefix: &str) -> BTreeSet<String> {
    let source = bindings_source();
    let mut names = BTreeSet::new();
    let mut rest = source.as_str();
    while let Some(at) = rest.find(prefix) {
        let tail = &rest[at..];
        let end = tail.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(tail.len());
        if end > prefix.len() {
            names.insert(tail[..end].to_owned());
        }
        rest = &tail[end..];
    }
    names
}

#[test]
fn every_declared_callback_is_exported_by_the_pinned_envoy() {
    let exported = dynamic_symbols(&envoy_binary(), &["--defined-only"]);
    let declared = names_in_bindings("envoy_dynamic_module_callback_");
    assert!(declared.len() >= 15, "the bindings declare too few callbacks: {declared:?}");
    let missing: Vec<_> = declared.difference(&exported).collect();
    assert!(missing.is_empty(), "declared in filter/src/module/abi.rs but not exported by Envoy: {missing:?}");
}

#[test]
fn the_module_needs_only_what_envoy_exports() {
    let needed: BTreeSet<String> = dynamic_symbols(&filter_module(), &["--undefined-only"])
        .into_iter()
        .filter(|s| s.starts_with("envoy_dynamic_module_"))
        .collect();
    assert!(!needed.is_empty(), "the module calls no Envoy callback: built without --features dynamic-module?");
    let exported = dynamic_symbols(&envoy_binary(), &["--defined-only"]);
    let missing: Vec<_> = needed.difference(&exported).collect();
    assert!(missing.is_empty(), "the module needs symbols Envoy does not export: {missing:?}");
    let declared = names_in_bindings("envoy_dynamic_module_callback_");
    let undeclared: Vec<_> = needed.difference(&declared).collect();
    assert!(undeclared.is_empty(), "the module calls callbacks the bindings do not list: {undeclared:?}");
}

#[test]
fn the_module_exports_every_hook_envoy_resolves() {
    let exported = dynamic_symbols(&filter_module(), &["--defined-only"]);
    let listed = names_in_bindings("envoy_dynamic_module_on_");
    let missing: Vec<_> = listed.difference(&exported).collect();
    assert!(missing.is_empty(), "hooks listed in abi.rs (HOOKS) but not exported: {missing:?}");
    // The HTTP filter hooks the Envoy binary names (it resolves them when it loads the module).
    let envoy_bytes = std::fs::read(envoy_binary()).expect("read the Envoy binary");
    let wanted: BTreeSet<String> = envoy_bytes
        .split(|b| *b == 0)
        .filter_map(|s| std::str::from_utf8(s).ok())
        .filter(|s| s.starts_with("envoy_dynamic_module_on_http_filter") && s.bytes().all(|b| b.is_ascii_graphic()))
        .map(str::to_owned)
        .collect();
    assert!(wanted.len() >= 20, "too few hook names found in the Envoy binary: {wanted:?}");
    let missing: Vec<_> = wanted.difference(&exported).collect();
    assert!(missing.is_empty(), "Envoy names HTTP filter hooks the module does not export: {missing:?}");
    assert!(exported.contains("envoy_dynamic_module_on_program_init"));
}

#[test]
fn envoy_holds_the_abi_version_the_module_answers() {
    let source = bindings_source();
    let version = source
        .split("pub const ABI_VERSION: &std::ffi::CStr = c\"")
        .nth(1)
        .and_then(|s| s.split('"').next())
        .expect("ABI_VERSION in filter/src/module/abi.rs");
    let envoy_bytes = std::fs::read(envoy_binary()).expect("read the Envoy binary");
    let needle = [b"\0", version.as_bytes(), b"\0"].concat();
    assert!(
        envoy_bytes.windows(needle.len()).any(|w| w == needle.as_slice()),
        "the pinned Envoy holds no ABI version string {version:?}: read its abi.h (ARCHITECTURE.md)"
    );
}

#[test]
fn envoy_loads_the_module_with_module_yaml() {
    let module = filter_module(); // panics with "run make module first"
    let root = workspace_root();
    assert!(
        module == root.join("target/libemail_verdict_filter.so"),
        "envoy/module.yaml loads target/libemail_verdict_filter.so; EMAIL_VERDICT_FILTER_MODULE points elsewhere"
    );
    let out = envoy::validate(&root.join("envoy/module.yaml"), &root);
    assert!(out.success(), "envoy --mode validate -c envoy/module.yaml (from the repo root) failed\n{out}");
    let text = out.text();
    assert!(text.contains("ABI version") && text.contains("matched"), "no ABI version match in the log\n{out}");
    assert!(text.contains("email-verdict filter: configuration loaded"), "the module did not configure\n{out}");
}

#[test]
fn module_yaml_needs_the_api_key_in_the_environment() {
    filter_module();
    let root = workspace_root();
    let out = envoy::validate_with_env(&root.join("envoy/module.yaml"), &root, &[]);
    assert!(!out.success(), "envoy/module.yaml validated without EMAIL_VERDICT_API_KEY\n{out}");
    assert!(
        out.text().lines().any(|l| l.contains("bad configuration") && l.contains("sidecar.api_key_env")),
        "no log line names sidecar.api_key_env\n{out}"
    );
}

/// A real start: both builds count under the same names, after the prefix Envoy gives custom
/// metrics (`wasmcustom.` / `dynamicmodulescustom.`, filter/CONFIG.md).
#[test]
fn both_builds_count_under_the_documented_names() {
    each_build(|build| {
        let g = gateway_on(build, |b| b);
        assert_eq!(g.envoy.signup_json("x@mailinator.com").status, 403);
        let prefix = match build {
            FilterBuild::Wasm => "wasmcustom",
            FilterBuild::Module => "dynamicmodulescustom",
        };
        let name = format!("{prefix}.email_verdict.blocked");
        eventually(&name, || g.envoy.stats().iter().any(|(n, v)| *n == name && v == "1"));
    });
}
