//! API keys for the load: made through the admin API (the harness's CLI would start a process per
//! key). One pro key admits 50 requests a second, so the load rotates over many.

use anyhow::{Context, bail};
use email_verdict_tests::{Request, Sidecar};

pub fn create(sidecar: &Sidecar, n: usize) -> anyhow::Result<Vec<String>> {
    create_on_plan(sidecar, "pro", n)
}

/// `n` keys of `plan` (a built-in one, or one of the sidecar's settings file).
pub fn create_on_plan(sidecar: &Sidecar, plan: &str, n: usize) -> anyhow::Result<Vec<String>> {
    (0..n)
        .map(|i| {
            let body = serde_json::json!({ "plan": plan, "name": format!("bench-{plan}-{i}") }).to_string();
            let r = Request::new("POST", "/admin/v1/keys")
                .header("Content-Type", "application/json")
                .body(body.as_bytes())
                .try_send(sidecar.admin_addr())?;
            if r.status != 201 {
                bail!("POST /admin/v1/keys answered\n{r}");
            }
            r.json()["key"].as_str().map(str::to_owned).context("no key in the answer of POST /admin/v1/keys")
        })
        .collect()
}
