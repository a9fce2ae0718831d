//! The signup's trace context, carried into the sidecar's callouts so that the sidecar's spans
//! join the signup's trace: W3C Trace Context and B3, as Envoy's tracers and meshes write them.
//!
//! Neither Envoy's Wasm `httpCall` nor the module's callout starts a span of Envoy's own, and
//! Envoy writes its span's context into the request only at the router, after this filter. So
//! the Wasm filter forwards what the request carries (the caller's, or the previous hop's,
//! context); the dynamic module, which can reach Envoy's span, opens a child of it for each
//! callout and sends that (`Host::callout_span`).

use crate::host::RequestHeaders;

/// The headers carried, in the names Envoy's tracers and Istio's sidecars use.
const NAMES: [&str; 8] = [
    "traceparent",
    "tracestate",
    "b3",
    "x-b3-traceid",
    "x-b3-spanid",
    "x-b3-parentspanid",
    "x-b3-sampled",
    "x-b3-flags",
];
/// What W3C asks a vendor to carry of `tracestate` at least; a longer value of any of these is
/// not a trace context we forward.
const MAX_VALUE: usize = 512;
/// Where Envoy's request-id extension writes its tracing decision into a UUID `x-request-id`
/// (`pack_trace_reason`): '9' forced, 'a' sampled, 'b' client, '4' not traced.
const TRACE_BYTE: usize = 14;

/// A request's trace headers, as it carried them.
#[derive(Debug, Default)]
pub struct TraceHeaders {
    carried: Vec<(&'static str, String)>,
    /// Whether a traceparent the gate writes says "sampled" (see [`TraceHeaders::of`]).
    sampled: bool,
}

/// A request without trace headers (the root context's callouts).
pub static NO_TRACE: TraceHeaders = TraceHeaders { carried: Vec::new(), sampled: false };

impl TraceHeaders {
    /// The first value of each trace header (printable ASCII, at most 512 bytes; others are not
    /// forwarded). The sampled flag of a span the gate opens follows the caller's `traceparent`,
    /// else Envoy's decision in a UUID `x-request-id`, else "sampled" (a span exists only when
    /// Envoy traces the request).
    pub fn of(headers: &RequestHeaders) -> Self {
        let carried: Vec<(&'static str, String)> = NAMES
            .iter()
            .filter_map(|&name| {
                let value = headers.first(name)?;
                let usable = value.len() <= MAX_VALUE && value.iter().all(|b| (0x20..0x7f).contains(b));
                usable.then(|| (name, String::from_utf8_lossy(value).into_owned()))
            })
            .collect();
        let from_parent = carried.iter().find(|(name, _)| *name == "traceparent").and_then(|(_, v)| flags_of(v));
        let from_request_id = headers.first("x-request-id").and_then(|id| match id.get(TRACE_BYTE) {
            Some(b'9' | b'a' | b'b') if id.len() == 36 => Some(true),
            Some(b'4') if id.len() == 36 => Some(false),
            _ => None,
        });
        Self { carried, sampled: from_parent.or(from_request_id).unwrap_or(true) }
    }

    /// The `traceparent` of the host's span for a callout (trace and span ids in hex, as Envoy's
    /// spans give them; a 64-bit trace id is widened as OpenTelemetry widens B3's), or `None`
    /// when they are not ids a traceparent can carry.
    pub fn traceparent(&self, (trace_id, span_id): (String, String)) -> Option<String> {
        let hex = |s: &str, len: usize| s.len() == len && s.bytes().all(|b| b.is_ascii_hexdigit());
        let trace_id = if hex(&trace_id, 16) { format!("{trace_id:0>32}") } else { trace_id };
        let valid = hex(&trace_id, 32) && hex(&span_id, 16) && trace_id.bytes().any(|b| b != b'0');
        let flags = if self.sampled { "01" } else { "00" };
        valid.then(|| format!("00-{}-{}-{flags}", trace_id.to_ascii_lowercase(), span_id.to_ascii_lowercase()))
    }

    /// The trace headers of a callout: with the host's own `traceparent`, that and the caller's
    /// `tracestate` (a B3 header beside it would name another parent); else what the request
    /// carried.
    pub fn for_callout<'a>(&'a self, own: Option<&'a str>) -> Vec<(&'static str, &'a str)> {
        match own {
            Some(own) => std::iter::once(("traceparent", own))
                .chain(self.carried.iter().filter(|(name, _)| *name == "tracestate").map(|(n, v)| (*n, v.as_str())))
                .collect(),
            None => self.carried.iter().map(|(name, value)| (*name, value.as_str())).collect(),
        }
    }
}

/// The sampled bit of a `traceparent` (`00-<trace>-<span>-<flags>`), when it is one.
fn flags_of(traceparent: &str) -> Option<bool> {
    let flags = traceparent.split('-').nth(3)?;
    let flags = u8::from_str_radix(flags.get(..2)?, 16).ok()?;
    Some(flags & 1 == 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&str, &str)]) -> RequestHeaders {
        RequestHeaders(pairs.iter().map(|(k, v)| (k.as_bytes().to_vec(), v.as_bytes().to_vec())).collect())
    }

    const PARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    #[test]
    fn the_wasm_filter_forwards_what_the_request_carries() {
        let h = headers(&[
            ("traceparent", PARENT),
            ("tracestate", "congo=t61rcWkgMzE"),
            ("x-b3-traceid", "463ac35c9f6413ad"),
            ("x-request-id", "x"),
        ]);
        let t = TraceHeaders::of(&h);
        assert_eq!(
            t.for_callout(None),
            [("traceparent", PARENT), ("tracestate", "congo=t61rcWkgMzE"), ("x-b3-traceid", "463ac35c9f6413ad")]
        );
    }

    #[test]
    fn an_oversized_or_unprintable_value_is_not_forwarded() {
        let long = "a".repeat(MAX_VALUE + 1);
        let t = TraceHeaders::of(&headers(&[("tracestate", &long), ("b3", "a\u{7}b"), ("x-b3-sampled", "1")]));
        assert_eq!(t.for_callout(None), [("x-b3-sampled", "1")]);
    }

    #[test]
    fn the_modules_own_span_replaces_the_callers_parent_and_keeps_its_state() {
        let t = TraceHeaders::of(&headers(&[("traceparent", PARENT), ("tracestate", "k=v"), ("b3", "1-2-1")]));
        let own = t.traceparent(("4bf92f3577b34da6a3ce929d0e0e4736".into(), "b7ad6b7169203331".into())).unwrap();
        assert_eq!(own, "00-4bf92f3577b34da6a3ce929d0e0e4736-b7ad6b7169203331-01");
        assert_eq!(t.for_callout(Some(&own)), [("traceparent", own.as_str()), ("tracestate", "k=v")]);
    }

    #[test]
    fn the_sampled_flag_follows_the_caller_then_envoys_request_id() {
        let span = || ("0af7651916cd43dd8448eb211c80319c".to_owned(), "b7ad6b7169203331".to_owned());
        let unsampled = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00";
        assert!(
            TraceHeaders::of(&headers(&[("traceparent", unsampled)])).traceparent(span()).unwrap().ends_with("-00")
        );
        let not_traced = "9a9e4f3c-1d2b-4c6e-8f10-2b3c4d5e6f70";
        let sampled = "9a9e4f3c-1d2b-ac6e-8f10-2b3c4d5e6f70";
        assert!(
            TraceHeaders::of(&headers(&[("x-request-id", not_traced)])).traceparent(span()).unwrap().ends_with("-00")
        );
        assert!(TraceHeaders::of(&headers(&[("x-request-id", sampled)])).traceparent(span()).unwrap().ends_with("-01"));
        assert!(TraceHeaders::of(&headers(&[])).traceparent(span()).unwrap().ends_with("-01"));
    }

    #[test]
    fn ids_a_traceparent_cannot_carry_give_none() {
        let t = TraceHeaders::default();
        let short = t.traceparent(("463ac35c9f6413ad".into(), "b7ad6b7169203331".into())).unwrap();
        assert_eq!(short, "00-0000000000000000463ac35c9f6413ad-b7ad6b7169203331-00");
        assert!(t.traceparent(("xyz".into(), "b7ad6b7169203331".into())).is_none());
        assert!(t.traceparent(("0".repeat(32), "b7ad6b7169203331".into())).is_none());
        assert!(t.traceparent(("4bf92f3577b34da6a3ce929d0e0e4736".into(), "12".into())).is_none());
    }
}
