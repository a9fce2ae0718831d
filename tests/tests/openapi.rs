//! The OpenAPI description (`docs/openapi.yaml`) against the real server: schemathesis generates
//! inputs for the lookup endpoint; no answer may be a 5xx, and every answer must match the
//! schema (status, headers, body). DNS is NSD authoritative for the root, so generated names
//! are NXDOMAIN rather than REFUSED.
//!
//! Two checks are excluded, because the contract makes them fire on correct behaviour:
//! `positive_data_acceptance` (a schema cannot say which strings are valid domains or email
//! addresses, so schema-valid inputs may rightly get 400 `invalid_input`) and `ignored_auth`
//! (the valid `Authorization` header it is given wins over a generated bad `?key=`, as the spec
//! says). Authentication is covered by `auth.rs`.

use std::path::PathBuf;
use std::process::Command;

use email_verdict_tests::{Nsd, Sidecar, workspace_root};

fn schemathesis() -> PathBuf {
    let path = std::env::var_os("SCHEMATHESIS_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace_root().join(".venv/bin/schemathesis"));
    assert!(path.exists(), "{} not found: run scripts/install-deps.sh", path.display());
    path
}

#[test]
fn generated_requests_get_no_5xx_and_match_the_schema() {
    let bin = schemathesis();
    let nsd = Nsd::start_with_root();
    let sc = Sidecar::builder().dns(nsd.addr()).start();
    let spec = workspace_root().join("docs/openapi.yaml");
    let out = Command::new(bin)
        .current_dir(sc.dir()) // its cache and reports stay in the test's directory
        .arg("--config-file")
        .arg(workspace_root().join("tests/schemathesis.toml"))
        .arg("run")
        .arg(&spec)
        .args(["--url", &format!("http://{}", sc.addr())])
        .args(["-H", &format!("Authorization: Bearer {}", sc.key())])
        .args(["--checks", "all", "--exclude-checks", "positive_data_acceptance,ignored_auth"])
        .args(["--max-examples", "300", "--seed", "1", "--no-color"])
        .env("SCHEMATHESIS_HOOKS", "")
        .output()
        .expect("run schemathesis");
    let report = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "schemathesis found problems:\n{report}");
    assert!(!sc.stderr_text().contains("status=500"), "a generated request got a 500:\n{report}");
}
