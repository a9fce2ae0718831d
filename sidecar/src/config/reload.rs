//! SIGHUP: the `--config` file's plans read again while serving.

use std::sync::Arc;

use crate::plans::PlanBook;

/// Reads the `--config` file's `[plans]` again on SIGHUP (the list reloader reloads the lists on
/// the same signal); a file that no longer reads, or a bad plan, keeps the plans in force.
pub struct PlanReloader {
    pub book: Arc<PlanBook>,
    pub file: std::path::PathBuf,
}

#[async_trait::async_trait]
impl pingora::services::background::BackgroundService for PlanReloader {
    async fn start(&self, mut shutdown: pingora::server::ShutdownWatch) {
        use tokio::signal::unix::{SignalKind, signal};
        let Ok(mut hangup) = signal(SignalKind::hangup()) else {
            tracing::error!("cannot listen for SIGHUP: plans are read at start only");
            return;
        };
        loop {
            tokio::select! {
                Some(()) = hangup.recv() => self.reload(),
                _ = shutdown.changed() => return,
            }
        }
    }
}

impl PlanReloader {
    fn reload(&self) {
        match super::plans_of_file(&self.file) {
            Ok(plans) => {
                let names: Vec<String> = plans.iter().map(|p| p.name.to_string()).collect();
                self.book.replace(plans);
                tracing::info!(plans = %names.join(","), "SIGHUP: plans reloaded");
            }
            Err(e) => tracing::error!(error = %format!("{e:#}"), "SIGHUP: plans not reloaded, the ones in force stay"),
        }
    }
}
