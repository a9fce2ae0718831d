//! Logs to stderr through `tracing`; Pingora's `log` records are bridged in.

use tracing_subscriber::EnvFilter;

use crate::config::LogFormat;

/// `RUST_LOG` adds to the default `info`. Pingora's HTTP app is pinned at `info`: at `trace` it
/// prints whole request headers (the API key among them) before our code runs, and at `debug`
/// it logs several lines per request.
pub fn init(format: LogFormat) {
    let base = std::env::var("RUST_LOG").unwrap_or_else(|_| "info".into());
    let filter = EnvFilter::try_new(format!("{base},pingora_core::apps=info"))
        .unwrap_or_else(|_| EnvFilter::new("info,pingora_core::apps=info"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_target(false);
    let _ = match format {
        LogFormat::Json => builder.json().flatten_event(true).try_init(),
        LogFormat::Text => builder.try_init(),
    };
}
