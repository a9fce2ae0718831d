//! Every Kubernetes manifest in envoy/istio/, envoy/gateway/ and deploy/kubernetes/ against the schemas of registry
//! packages: `scripts/validate-manifests.py` (run with the project's .venv python) checks the
//! built-in kinds with PyPI's kubernetes-validate (strict: unknown fields are errors) and the
//! Istio, Gateway API, Envoy Gateway and Prometheus Operator custom resources with npm's @kubernetes-models CRD
//! schemas (tests/fixtures/k8s-schemas/). It prints one line per YAML document and exits non-zero
//! on any error. Beyond its exit status, this checks that the kinds it must cover were really
//! validated, not skipped as `no schema`.

use std::path::PathBuf;
use std::process::Command;

use email_verdict_tests::workspace_root;

fn python() -> PathBuf {
    let path = std::env::var_os("MANIFESTS_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace_root().join(".venv/bin/python3"));
    assert!(path.exists(), "{} not found: run scripts/install-deps.sh", path.display());
    path
}

/// (file, kind, name, status) of each document line of the script's output.
fn documents(report: &str) -> Vec<(&str, &str, &str, &str)> {
    report
        .lines()
        .filter(|l| !l.starts_with(' '))
        .filter_map(|l| {
            let mut parts = l.splitn(4, "  ");
            Some((parts.next()?, parts.next()?, parts.next()?, parts.next()?))
        })
        .collect()
}

#[test]
fn every_manifest_matches_its_kubernetes_or_crd_schema() {
    let out = Command::new(python())
        .arg(workspace_root().join("scripts/validate-manifests.py"))
        .current_dir(workspace_root())
        .output()
        .expect("run scripts/validate-manifests.py");
    let report = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "scripts/validate-manifests.py found problems:\n{report}");
    println!("{report}");

    let docs = documents(&report);
    for kind in ["Deployment", "Service", "Secret"] {
        let lines: Vec<_> = docs.iter().filter(|d| d.1 == kind).collect();
        assert!(!lines.is_empty(), "no {kind} in envoy/istio or envoy/gateway?\n{report}");
        for (file, _, name, status) in lines {
            assert!(
                status.starts_with("ok (PyPI kubernetes-validate@"),
                "{file} {kind} {name} was not validated against kubernetes-validate: {status}\n{report}"
            );
        }
    }
    // The custom resources: at least one document against each schema package (a kind none of
    // them covers would say `no schema`, and must say why).
    for package in
        ["istio", "gateway-api", "envoy-gateway", "prometheus-operator"].map(|p| format!("@kubernetes-models/{p}@"))
    {
        assert!(
            docs.iter().any(|d| d.3.starts_with(&format!("ok (npm {package}"))),
            "nothing validated against {package}\n{report}"
        );
    }
    // envoy/gateway/module.yaml: the rest of each document is checked, the dynamic module's fields
    // are said not to be (the schema package predates them), never passed off as validated.
    for kind in ["EnvoyProxy", "EnvoyExtensionPolicy"] {
        let line = docs
            .iter()
            .find(|d| d.0 == "envoy/gateway/module.yaml" && d.1 == kind)
            .unwrap_or_else(|| panic!("no {kind} of envoy/gateway/module.yaml in the report\n{report}"));
        assert!(
            line.3.starts_with("ok (npm @kubernetes-models/envoy-gateway@")
                && line.3.contains("not checked: spec.dynamicModule")
                && line.3.contains("predates dynamicModule"),
            "envoy/gateway/module.yaml {kind}: {}",
            line.3
        );
    }
    for (file, kind, name, status) in &docs {
        if status.starts_with("no schema") {
            assert!(status.len() > "no schema ()".len(), "{file} {kind} {name}: skipped without a reason");
            eprintln!("not validated: {file} {kind} {name}: {status}");
        }
    }
}
