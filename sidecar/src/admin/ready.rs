//! `GET /readyz`: whether this process can answer a lookup now. `/healthz` says the listeners
//! are up and the state files are sound (a liveness probe: restarting does not mend a store
//! outage); `/readyz` also reads the state store the way a lookup's key check does, so a pod whose
//! Redis is gone or wrong is taken out of its Service instead of answering 500s.
//!
//! One read a second at most, whoever probes: the answer is reused for [`REUSE`], and a probe
//! arriving while a read is in flight waits for it (an open endpoint must not turn a flood of
//! probes into a flood of store reads).

use std::time::{Duration, Instant};

use tokio::sync::Mutex;

use super::Admin;

/// How long one read's answer serves the probes that follow.
const REUSE: Duration = Duration::from_secs(1);
/// How long the read may take: a store slower than this cannot serve lookups either.
const DEADLINE: Duration = Duration::from_secs(1);
/// No key has this id: the read finds nothing, through the same path as a real key's.
const PROBE_ID: &str = "readyz-probe";

/// The last read: when, and what it found (`Err`: why the store cannot answer).
static LAST: Mutex<Option<(Instant, Result<(), String>)>> = Mutex::const_new(None);

/// Whether the store answers: `Ok` or why not, from a read at most [`REUSE`] old.
pub async fn store_answers(admin: &Admin) -> Result<(), String> {
    let mut last = LAST.lock().await;
    if let Some((at, answer)) = last.as_ref()
        && at.elapsed() < REUSE
    {
        return answer.clone();
    }
    let answer = match tokio::time::timeout(DEADLINE, admin.store.key_by_id(PROBE_ID)).await {
        Ok(Ok(_)) => Ok(()),
        Ok(Err(e)) => Err(format!("state store unavailable: {e}")),
        Err(_) => Err(format!("state store did not answer within {} ms", DEADLINE.as_millis())),
    };
    if let Err(why) = &answer {
        let was_ready = last.as_ref().is_none_or(|(_, a)| a.is_ok());
        if was_ready {
            tracing::error!("not ready: {why}");
        }
    } else if last.as_ref().is_some_and(|(_, a)| a.is_err()) {
        tracing::info!("ready again: the state store answers");
    }
    *last = Some((Instant::now(), answer.clone()));
    answer
}
