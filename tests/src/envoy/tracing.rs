//! The traces settings the shipped configurations carry commented.

use std::net::SocketAddr;

use super::EnvoyBuilder;

/// Envoy's OpenTelemetry tracer sends its spans every 5 s or 5 spans; a test wants each at once.
const FLUSH_NOW: &str = r#"{"layered_runtime":{"layers":[{"name":"flush_spans_now","static_layer":{"tracing.opentelemetry.flush_interval_ms":100,"tracing.opentelemetry.min_flush_spans":1}}]}}"#;

impl EnvoyBuilder {
    /// The template's tracer on (`scripts/render-envoy.py --tracing`), exporting to `collector`'s
    /// OTLP/gRPC port, its spans sent as they end.
    pub fn tracing(mut self, collector: SocketAddr) -> Self {
        self.render_args.extend(["--tracing".to_owned(), collector.to_string()]);
        self.envoy_args.extend(["--config-yaml".to_owned(), FLUSH_NOW.to_owned()]);
        self
    }
}

/// `text` with each `# >>> tracing` ... `# <<< tracing` block uncommented (the traces settings
/// the shipped recipes carry commented; scripts/render-envoy.py --tracing does the same to the
/// Envoy templates).
pub fn enable_tracing(text: &str) -> String {
    let mut inside = false;
    let mut out = String::new();
    for line in text.split_inclusive('\n') {
        let trimmed = line.trim_start();
        if trimmed.starts_with("# >>> tracing") {
            inside = true;
        } else if trimmed.starts_with("# <<< tracing") {
            inside = false;
        } else if inside && let Some(rest) = trimmed.strip_prefix("# ") {
            out.push_str(&line[..line.len() - trimmed.len()]);
            out.push_str(rest);
            continue;
        }
        out.push_str(line);
    }
    out
}
