//! The list reloader: a Pingora background service (its own runtime, off the request path)
//! that polls every second (files that changed, URLs that are due) and reloads every list at
//! once on SIGHUP. Pingora itself handles SIGTERM, SIGQUIT and SIGINT, not SIGHUP.

use std::time::Duration;

use async_trait::async_trait;
use pingora::server::ShutdownWatch;
use pingora::services::background::BackgroundService;
use tokio::signal::unix::{Signal, SignalKind, signal};
use tokio::sync::Mutex;

use super::Lists;

/// How often files are looked at and URL schedules checked.
const POLL: Duration = Duration::from_secs(1);

pub struct ListReloader {
    lists: Mutex<Lists>,
}

impl ListReloader {
    pub fn new(lists: Lists) -> Self {
        Self { lists: Mutex::new(lists) }
    }
}

#[async_trait]
impl BackgroundService for ListReloader {
    async fn start(&self, mut shutdown: ShutdownWatch) {
        let mut lists = self.lists.lock().await;
        let mut hangup = match signal(SignalKind::hangup()) {
            Ok(s) => Some(s),
            Err(e) => {
                tracing::error!(error = %e, "cannot listen for SIGHUP: lists reload on their schedule only");
                None
            }
        };
        lists.live().set_watching();
        let mut tick = tokio::time::interval(POLL);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            let force = tokio::select! {
                _ = tick.tick() => false,
                () = next_hangup(&mut hangup) => {
                    tracing::info!("SIGHUP: reloading every list");
                    true
                }
                _ = shutdown.changed() => return,
            };
            // A fetch may take its 30 s: shutting down does not wait for it (a reload cut
            // short changes nothing: the catalog is swapped only at its end).
            tokio::select! {
                changed = lists.reload(force) => {
                    if force {
                        tracing::info!(changed, "SIGHUP: lists reloaded");
                    }
                }
                _ = shutdown.changed() => return,
            }
        }
    }
}

async fn next_hangup(hangup: &mut Option<Signal>) {
    if let Some(s) = hangup
        && s.recv().await.is_some()
    {
        return;
    }
    std::future::pending().await
}

/// Replaces SIGHUP's default action (ending the process) before anything else runs, so that a
/// SIGHUP sent before the reloader listens is ignored rather than fatal: tokio keeps a handler
/// for the life of the process once one is installed.
pub fn install_sighup_handler() -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_io().build()?;
    runtime.block_on(async { signal(SignalKind::hangup()).map(drop) })?;
    Ok(())
}
