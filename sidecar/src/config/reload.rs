//! SIGHUP: the `--config` file's plans and the `--ext-authz-config` file read again while serving.

use std::sync::Arc;

use crate::api::Api;
use crate::plans::PlanBook;

/// Reads the `--config` file's `[plans]` again on SIGHUP (the list reloader reloads the lists on
/// the same signal); a file that no longer reads, or a bad plan, keeps the plans in force.
pub struct PlanReloader {
    pub book: Arc<PlanBook>,
    pub file: std::path::PathBuf,
}

#[async_trait::async_trait]
impl pingora::services::background::BackgroundService for PlanReloader {
    async fn start(&self, shutdown: pingora::server::ShutdownWatch) {
        on_each_sighup(shutdown, "plans are read at start only", || self.reload()).await;
    }
}

/// Calls `reload` on each SIGHUP until shutdown; `unable`: what a failure to listen means.
async fn on_each_sighup(mut shutdown: pingora::server::ShutdownWatch, unable: &str, reload: impl Fn()) {
    use tokio::signal::unix::{SignalKind, signal};
    let Ok(mut hangup) = signal(SignalKind::hangup()) else {
        tracing::error!("cannot listen for SIGHUP: {unable}");
        return;
    };
    loop {
        tokio::select! {
            Some(()) = hangup.recv() => reload(),
            _ = shutdown.changed() => return,
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

/// Reads `--ext-authz-config` again on SIGHUP, so that `mode` and `enforce_percent` (a rollout's
/// steps) and every other shared setting change without a restart. Adding or removing
/// `velocity` needs the mailbox secret checked at start: refused, the settings in force stay.
pub struct ExtAuthzReloader {
    pub api: Arc<Api>,
    pub file: std::path::PathBuf,
}

#[async_trait::async_trait]
impl pingora::services::background::BackgroundService for ExtAuthzReloader {
    async fn start(&self, shutdown: pingora::server::ShutdownWatch) {
        on_each_sighup(shutdown, "--ext-authz-config is read at start only", || self.reload()).await;
    }
}

impl ExtAuthzReloader {
    fn reload(&self) {
        let kept = "SIGHUP: --ext-authz-config not reloaded, the settings in force stay";
        match super::ext_authz_settings(Some(&self.file)) {
            Ok((settings, _)) if settings.velocity.is_some() != self.api.ext_authz_counting.is_some() => {
                tracing::error!(error = "velocity added or removed: that needs a restart", "{kept}");
            }
            Ok((settings, _)) => {
                let (mode, percent) = (settings.mode, settings.enforce_percent);
                self.api.ext_authz.store(Arc::new(settings));
                tracing::info!(mode = ?mode, enforce_percent = percent, "SIGHUP: --ext-authz-config reloaded");
            }
            Err(e) => tracing::error!(error = %format!("{e:#}"), "{kept}"),
        }
    }
}
