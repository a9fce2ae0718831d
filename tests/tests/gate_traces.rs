//! One signup through Envoy gives one trace holding Envoy's span and the sidecar's spans, against
//! a real OTLP receiver (`tests/otlp/receiver.py`): Envoy's OpenTelemetry tracer turned on as the
//! shipped templates carry it (`scripts/render-envoy.py --tracing`), the sidecar exporting over
//! OTLP/HTTP. Through the dynamic module and ext_authz (HTTP and gRPC) the sidecar's spans are
//! under a span of Envoy's for the callout or the check; through the Wasm filter they join the
//! caller's trace beside Envoy's (proxy-wasm gives a filter no span of Envoy's: docs/gateway.md).

use std::time::Duration;

use email_verdict_tests::envoy::{FilterBuild, Gateway, gateway_with_on, grpc_ext_authz_gateway};
use email_verdict_tests::otlp::{OtlpReceiver, Span};
use email_verdict_tests::{SidecarBuilder, wait_for};

const CLIENT_TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const CLIENT_SPAN: &str = "00f067aa0ba902b7";
const ENVOY: &str = "signup-gateway";
const SIDECAR: &str = "email-verdict";
const WAIT: Duration = Duration::from_secs(20);

#[derive(Debug, Clone, Copy, PartialEq)]
enum Point {
    Wasm,
    Module,
    ExtAuthz,
    ExtAuthzGrpc,
}

fn traced_gateway(point: Point, receiver: &OtlpReceiver) -> Gateway {
    let endpoint = receiver.endpoint();
    // Spans sent 100 ms after they end rather than the batch processor's 5 s.
    let sidecar =
        move |s: SidecarBuilder| s.env("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint).env("OTEL_BSP_SCHEDULE_DELAY", "100");
    let collector = receiver.grpc_addr();
    match point {
        Point::Wasm => gateway_with_on(FilterBuild::Wasm, sidecar, |e| e.tracing(collector)),
        Point::Module => gateway_with_on(FilterBuild::Module, sidecar, |e| e.tracing(collector)),
        Point::ExtAuthz => gateway_with_on(FilterBuild::Wasm, sidecar, |e| e.ext_authz().tracing(collector)),
        Point::ExtAuthzGrpc => grpc_ext_authz_gateway(sidecar, |e| e.tracing(collector)).0,
    }
}

/// A signup for `email`, with the caller's trace context when `traced`.
fn signup(g: &Gateway, email: &str, traced: bool) {
    let body = format!(r#"{{"email":"{email}","name":"Ann"}}"#);
    let mut req = email_verdict_tests::envoy::signup("application/json", body.as_bytes());
    if traced {
        req = req.header("traceparent", &format!("00-{CLIENT_TRACE}-{CLIENT_SPAN}-01"));
    }
    let r = g.envoy.send(&req);
    assert_eq!(r.status, 200, "{email}: {}", r.text());
}

/// The span whose id is `id`.
fn by_id<'a>(spans: &'a [Span], id: &str) -> Option<&'a Span> {
    spans.iter().find(|s| s.span_id == id)
}

/// The sidecar's topmost spans in `spans`: its own whose parent is not one of its own.
fn sidecar_roots(spans: &[Span]) -> Vec<&Span> {
    spans
        .iter()
        .filter(|s| s.service_name == SIDECAR)
        .filter(|s| by_id(spans, &s.parent_span_id).is_none_or(|p| p.service_name != SIDECAR))
        .collect()
}

/// Envoy's span for the request itself: Envoy's, whose parent is not Envoy's.
fn envoy_request_span(spans: &[Span]) -> &Span {
    let found: Vec<&Span> = spans
        .iter()
        .filter(|s| s.service_name == ENVOY)
        .filter(|s| by_id(spans, &s.parent_span_id).is_none_or(|p| p.service_name != ENVOY))
        .collect();
    assert_eq!(found.len(), 1, "one request span of Envoy's: {spans:#?}");
    found[0]
}

/// Where the sidecar's spans hang: under a span of Envoy's that is a child of Envoy's request
/// span (the module's callout span, ext_authz's check span), or, for the Wasm filter, beside
/// Envoy's request span under `parent`.
fn assert_shape(point: Point, spans: &[Span], parent: &str) {
    let request = envoy_request_span(spans);
    assert_eq!(request.parent_span_id, parent, "{point:?}: Envoy's span continues the caller's: {spans:#?}");
    let roots = sidecar_roots(spans);
    assert!(!roots.is_empty(), "{point:?}: no span of the sidecar's in the trace: {spans:#?}");
    for root in roots {
        if point == Point::Wasm {
            assert_eq!(root.parent_span_id, parent, "{point:?}: the sidecar's span under the caller's: {root:#?}");
            continue;
        }
        let hop = by_id(spans, &root.parent_span_id)
            .unwrap_or_else(|| panic!("{point:?}: the sidecar's span's parent is not in the trace: {spans:#?}"));
        assert_eq!(hop.service_name, ENVOY, "{point:?}: {hop:#?}");
        assert_eq!(hop.parent_span_id, request.span_id, "{point:?}: Envoy's hop span under its request span");
        if point == Point::Module {
            assert_eq!(hop.name, "email_verdict sidecar", "{point:?}");
        }
    }
    for span in spans {
        for value in span.attributes.values() {
            assert!(!value.to_string().contains("@"), "{point:?}: an address in a span attribute: {span:#?}");
        }
    }
}

/// The whole trace once Envoy's request span and a span of the sidecar's are in, and every span's
/// parent is too (a parent ends after its children, so it may arrive in a later export batch).
fn trace(receiver: &OtlpReceiver, trace_id: &str) -> Vec<Span> {
    receiver.wait_for_trace(trace_id, WAIT, |spans| {
        let closed = spans.iter().all(|s| {
            s.parent_span_id.is_empty() || s.parent_span_id == CLIENT_SPAN || by_id(spans, &s.parent_span_id).is_some()
        });
        closed
            && spans.iter().any(|s| s.service_name == SIDECAR)
            && spans
                .iter()
                .any(|s| s.service_name == ENVOY && (s.parent_span_id.is_empty() || s.parent_span_id == CLIENT_SPAN))
    })
}

fn one_trace_through(point: Point) {
    let receiver = OtlpReceiver::start();
    let g = traced_gateway(point, &receiver);
    signup(&g, "ann@ownmail.example", true);
    let spans = trace(&receiver, CLIENT_TRACE);
    assert_shape(point, &spans, CLIENT_SPAN);
    if point == Point::Wasm {
        return; // without the caller's context, a Wasm callout joins no trace of Envoy's
    }
    // A caller without trace context: Envoy starts the trace, and the sidecar's spans are in it.
    signup(&g, "bob@nomx.example", false);
    let started = wait_for("a trace Envoy started", WAIT, || {
        let spans = receiver.spans();
        spans.iter().find(|s| s.service_name == ENVOY && s.parent_span_id.is_empty()).map(|s| s.trace_id.clone())
    });
    let spans = trace(&receiver, &started);
    assert_shape(point, &spans, "");
}

#[test]
fn through_the_dynamic_module_the_sidecars_spans_are_under_envoys_callout_span() {
    one_trace_through(Point::Module);
}

#[test]
fn through_http_ext_authz_the_sidecars_spans_are_under_envoys_check() {
    one_trace_through(Point::ExtAuthz);
}

#[test]
fn through_grpc_ext_authz_the_sidecars_spans_are_under_envoys_check() {
    one_trace_through(Point::ExtAuthzGrpc);
}

#[test]
fn through_the_wasm_filter_the_sidecars_spans_join_the_callers_trace() {
    one_trace_through(Point::Wasm);
}
