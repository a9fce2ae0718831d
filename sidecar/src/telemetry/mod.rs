//! Traces: the caller's trace continued (W3C `traceparent`/`tracestate`, else B3) and our spans
//! exported over OTLP/HTTP protobuf, configured by the standard `OTEL_*` variables and off unless
//! an endpoint is set (docs/operator-guide.md, "Traces").
//!
//! Off is one branch: [`enabled`] reads a `OnceLock`, and every helper here awaits the bare
//! future without building a span, a context or an attribute when it is false. Spans use the
//! OpenTelemetry API directly rather than `tracing` spans, so the log lines stay as they are and
//! no attribute can come from a log field by accident: every attribute is named here or at the
//! call, and none is an address, a key or a path.

pub mod b3;
mod export;
pub mod settings;

use std::sync::OnceLock;
use std::time::Duration;

use futures::future::Either;
use opentelemetry::context::FutureExt;
use opentelemetry::propagation::{Extractor, TextMapPropagator};
use opentelemetry::trace::{SpanContext, SpanKind, Status, TraceContextExt, Tracer, TracerProvider};
use opentelemetry::{Context, KeyValue};
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::{SdkTracer, SdkTracerProvider};

pub use opentelemetry::KeyValue as Attribute;
pub use settings::Settings;

static PIPELINE: OnceLock<(SdkTracerProvider, SdkTracer)> = OnceLock::new();

/// How long the exit waits for the last spans to be sent.
const FLUSH_BOUND: Duration = Duration::from_secs(2);

/// Starts the exporter when the environment asks for one; an error names the variable.
pub fn init_from_env() -> Result<bool, String> {
    let Some(settings) = Settings::from_vars(|name| std::env::var(name).ok())? else {
        return Ok(false);
    };
    let provider = export::provider(&settings)?;
    let tracer = provider.tracer("email-verdict");
    let _ = PIPELINE.set((provider, tracer));
    tracing::info!(endpoint = %settings.endpoint, service = %settings.service_name, "traces: exported over OTLP/HTTP");
    Ok(true)
}

/// Whether spans are made at all.
#[inline]
pub fn enabled() -> bool {
    PIPELINE.get().is_some()
}

/// Sends what is buffered and stops the exporter, waiting [`FLUSH_BOUND`] at most.
pub fn shutdown() {
    if let Some((provider, _)) = PIPELINE.get()
        && let Err(e) = provider.shutdown_with_timeout(FLUSH_BOUND)
    {
        tracing::warn!(error = %e, "traces: the last spans may not have been sent");
    }
}

fn tracer() -> Option<&'static SdkTracer> {
    PIPELINE.get().map(|(_, tracer)| tracer)
}

/// The caller's context from request headers: `traceparent`/`tracestate`, else B3, else none.
pub fn extract<'a>(header: impl Fn(&str) -> Option<&'a str>) -> Context {
    // The marker ties the headers' lifetime to the extractor's, so `get` may lend them.
    struct Headers<'h, 'a, F>(&'h F, std::marker::PhantomData<&'a str>);
    impl<'a, F: Fn(&str) -> Option<&'a str>> Extractor for Headers<'_, 'a, F> {
        fn get(&self, key: &str) -> Option<&str> {
            (self.0)(key)
        }
        fn keys(&self) -> Vec<&str> {
            Vec::new()
        }
    }
    let cx = TraceContextPropagator::new().extract(&Headers(&header, std::marker::PhantomData));
    if cx.span().span_context().is_valid() {
        return cx;
    }
    match b3::extract(&header) {
        Some(remote) => Context::new().with_remote_span_context(remote),
        None => cx,
    }
}

/// A request's server span and the context its work runs in.
pub struct ServerSpan {
    cx: Context,
}

impl ServerSpan {
    /// `None` when tracing is off. The caller's context is read from `header`.
    pub fn start<'a>(
        name: String,
        attributes: Vec<KeyValue>,
        header: impl Fn(&str) -> Option<&'a str>,
    ) -> Option<ServerSpan> {
        let tracer = tracer()?;
        let parent = extract(header);
        let span = tracer
            .span_builder(name)
            .with_kind(SpanKind::Server)
            .with_attributes(attributes)
            .start_with_context(tracer, &parent);
        Some(ServerSpan { cx: parent.with_span(span) })
    }

    /// Runs `work` in the span's context, its log lines carrying the trace id (`trace_id`).
    pub async fn serve<F: Future>(&self, work: F) -> F::Output {
        let trace_id = self.cx.span().span_context().trace_id();
        let in_trace = tracing::info_span!("trace", trace_id = %trace_id);
        tracing::Instrument::instrument(work.with_context(self.cx.clone()), in_trace).await
    }

    /// Ends the span with what the request came to; `failed`: the server's fault (a 5xx).
    pub fn finish(self, failed: bool, attributes: Vec<KeyValue>) {
        let span = self.cx.span();
        span.set_attributes(attributes);
        if failed {
            span.set_status(Status::error(""));
        }
        span.end();
    }
}

/// Awaits `work` inside a span `name`, a child of the current one, described by `describe`
/// from the result. Nothing is built unless tracing is on and a trace is under way (a call
/// outside any request, such as a warm-up, makes no root of its own).
pub async fn span<F: Future>(
    name: &'static str,
    work: F,
    describe: impl FnOnce(&F::Output) -> Vec<KeyValue>,
) -> F::Output {
    let Some(tracer) = tracer() else {
        return work.await;
    };
    let parent = Context::current();
    if !parent.has_active_span() {
        return work.await;
    }
    run_in(tracer, name, parent, work, describe).await
}

/// [`span`], but the root of a trace of its own (background work: the list refresh).
pub async fn root<F: Future>(
    name: &'static str,
    work: F,
    describe: impl FnOnce(&F::Output) -> Vec<KeyValue>,
) -> F::Output {
    let Some(tracer) = tracer() else {
        return work.await;
    };
    run_in(tracer, name, Context::new(), work, describe).await
}

async fn run_in<F: Future>(
    tracer: &SdkTracer,
    name: &'static str,
    parent: Context,
    work: F,
    describe: impl FnOnce(&F::Output) -> Vec<KeyValue>,
) -> F::Output {
    let span = tracer.span_builder(name).with_kind(SpanKind::Internal).start_with_context(tracer, &parent);
    let cx = parent.with_span(span);
    let out = work.with_context(cx.clone()).await;
    let span = cx.span();
    span.set_attributes(describe(&out));
    span.end();
    out
}

/// A synchronous span under `parent` (a span context carried to a worker thread).
pub fn span_under<T>(
    name: &'static str,
    parent: Option<&SpanContext>,
    work: impl FnOnce() -> T,
    describe: impl FnOnce(&T) -> Vec<KeyValue>,
) -> T {
    let (Some(tracer), Some(parent)) = (tracer(), parent) else {
        return work();
    };
    let parent = Context::new().with_remote_span_context(parent.clone());
    let mut span = tracer.span_builder(name).with_kind(SpanKind::Client).start_with_context(tracer, &parent);
    let out = work();
    opentelemetry::trace::Span::set_attributes(&mut span, describe(&out));
    opentelemetry::trace::Span::end(&mut span);
    out
}

/// The current span, to carry to a worker thread; `None` when off or outside a trace.
pub fn current_span() -> Option<SpanContext> {
    tracer()?;
    let cx = Context::current();
    let span = cx.span().span_context().clone();
    span.is_valid().then_some(span)
}

/// `work` keeping the current trace when it is spawned onto another task.
pub fn carry<F: Future>(work: F) -> Either<opentelemetry::context::WithContext<F>, F> {
    if enabled() { Either::Left(work.with_current_context()) } else { Either::Right(work) }
}

/// Adds attributes to the current span (when there is one).
pub fn record(attributes: impl FnOnce() -> Vec<KeyValue>) {
    if enabled() {
        let cx = Context::current();
        if cx.has_active_span() {
            cx.span().set_attributes(attributes());
        }
    }
}
