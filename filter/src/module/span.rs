//! A span of Envoy's tracer for one sidecar callout: a child of the request's span, so that a
//! trace shows the gate's wait and, under it, the sidecar's own spans (the callout carries its
//! ids in `traceparent`). Envoy's async client would make such a span itself, but the module's
//! callout API does not ask it to.

use super::abi::{self, EnvoyBuffer, FilterEnvoyPtr, ModuleBuffer};

/// The operation name, as Envoy's own egress spans name what they call.
const OPERATION: &str = "email_verdict sidecar";

/// A child span owned by the module: ended when dropped (the answer came, the callout failed to
/// start, or the stream ended first).
#[derive(Debug)]
pub struct CalloutSpan(abi::ChildSpanPtr);

impl CalloutSpan {
    /// A child of the stream's span, or `None` when the request is not traced.
    pub fn start(envoy: FilterEnvoyPtr) -> Option<Self> {
        // SAFETY: Envoy's filter pointer, valid during the hook.
        let active = unsafe { abi::envoy_dynamic_module_callback_http_get_active_span(envoy) };
        if active.is_null() {
            return None;
        }
        // SAFETY: a live span of this stream; the name outlives the call.
        let child = unsafe {
            abi::envoy_dynamic_module_callback_http_span_spawn_child(
                envoy,
                active,
                ModuleBuffer::of(OPERATION.as_bytes()),
            )
        };
        if child.is_null() {
            return None;
        }
        let span = Self(child);
        span.tag("component", "email-verdict");
        Some(span)
    }

    /// Its trace and span ids in hex.
    pub fn ids(&self) -> Option<(String, String)> {
        Some((self.read(Id::Trace)?, self.read(Id::Span)?))
    }

    fn tag(&self, key: &str, value: &str) {
        // SAFETY: our live child span; the buffers outlive the call.
        unsafe {
            abi::envoy_dynamic_module_callback_http_span_set_tag(
                self.0,
                ModuleBuffer::of(key.as_bytes()),
                ModuleBuffer::of(value.as_bytes()),
            )
        }
    }

    fn read(&self, id: Id) -> Option<String> {
        let mut out = EnvoyBuffer::NULL;
        // SAFETY: our live child span; out-pointer to a live local.
        let ok = unsafe {
            match id {
                Id::Trace => abi::envoy_dynamic_module_callback_http_span_get_trace_id(self.0, &mut out),
                Id::Span => abi::envoy_dynamic_module_callback_http_span_get_span_id(self.0, &mut out),
            }
        };
        // SAFETY: Envoy's bytes live until the next tracing call on this thread: copied at once.
        ok.then(|| String::from_utf8_lossy(unsafe { out.bytes() }).into_owned())
    }
}

enum Id {
    Trace,
    Span,
}

impl Drop for CalloutSpan {
    fn drop(&mut self) {
        // SAFETY: made by `start`, ended once, here.
        unsafe { abi::envoy_dynamic_module_callback_http_child_span_finish(self.0) }
    }
}
