//! Waiting for the sidecar's own infrastructure warm-up (`--warmup-rate`) to finish, through
//! `GET /admin/v1/warmup` (`{"total", "remaining", "learned", "failed", ...}`).

use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use email_verdict_tests::{Request, Sidecar};

/// Polls until `remaining` is 0; returns a sentence for the report (what it resolved and
/// learned, and how long it took: a figure of this run, not a target).
pub fn wait(sidecar: &Sidecar, rate: u32, limit: Duration) -> anyhow::Result<String> {
    let started = Instant::now();
    loop {
        let r = Request::get("/admin/v1/warmup")
            .try_send(sidecar.admin_addr())
            .context("GET /admin/v1/warmup (does this build have a warm-up?)")?;
        if r.status != 200 {
            bail!("GET /admin/v1/warmup answered\n{r}");
        }
        let p = r.json();
        let field = |f: &str| p[f].as_u64().with_context(|| format!("no {f} in GET /admin/v1/warmup: {p}"));
        if field("remaining")? == 0 {
            return Ok(format!(
                "built in (`--warmup-rate {rate}`): {} strong-listed domains resolved, {} with mail servers \
                 recorded, {} failed, in {:.0} s",
                field("total")?,
                field("learned")?,
                field("failed")?,
                started.elapsed().as_secs_f64()
            ));
        }
        if started.elapsed() > limit {
            bail!("the warm-up did not finish within {limit:?}: {p}");
        }
        std::thread::sleep(Duration::from_millis(500));
    }
}
