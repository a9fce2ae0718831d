//! Zipkin's B3 headers (single `b3` and multi `x-b3-*`), read into a remote span context. Envoy's
//! Zipkin tracer and older meshes send them; a parser of a few lines here rather than a crate.

use opentelemetry::trace::{SpanContext, SpanId, TraceFlags, TraceId, TraceState};

/// The caller's span from `b3`, else from `x-b3-traceid`/`x-b3-spanid`; `None` when neither
/// is present and well formed.
pub fn extract<'a>(header: impl Fn(&str) -> Option<&'a str>) -> Option<SpanContext> {
    if let Some(single) = header("b3") {
        return single_header(single);
    }
    let trace_id = trace_id(header("x-b3-traceid")?)?;
    let span_id = span_id(header("x-b3-spanid")?)?;
    let sampled = match (header("x-b3-flags").map(str::trim), header("x-b3-sampled").map(str::trim)) {
        (Some("1"), _) => true,
        (_, Some("1" | "true")) => true,
        (_, Some("0" | "false")) => false,
        // No decision: defer to ours; the parent-based sampler reads it as sampled.
        (_, _) => true,
    };
    Some(remote(trace_id, span_id, sampled))
}

/// `{trace}-{span}[-{sampled}[-{parent}]]`; a lone `0`/`1`/`d` carries no ids and is ignored.
fn single_header(value: &str) -> Option<SpanContext> {
    let mut parts = value.trim().split('-');
    let trace_id = trace_id(parts.next()?)?;
    let span_id = span_id(parts.next()?)?;
    let sampled = match parts.next() {
        None | Some("1" | "d") => true,
        Some("0") => false,
        Some(_) => return None,
    };
    if let Some(parent) = parts.next() {
        span_id_checked(parent)?;
    }
    if parts.next().is_some() {
        return None;
    }
    Some(remote(trace_id, span_id, sampled))
}

fn remote(trace_id: TraceId, span_id: SpanId, sampled: bool) -> SpanContext {
    let flags = if sampled { TraceFlags::SAMPLED } else { TraceFlags::default() };
    SpanContext::new(trace_id, span_id, flags, true, TraceState::default())
}

/// 16 or 32 lower-case hex digits, not all zero (64-bit ids are widened on the left).
fn trace_id(hex: &str) -> Option<TraceId> {
    let hex = hex.trim();
    if !(hex.len() == 16 || hex.len() == 32) || !is_hex(hex) {
        return None;
    }
    let id = TraceId::from_hex(hex).ok()?;
    (id != TraceId::INVALID).then_some(id)
}

fn span_id(hex: &str) -> Option<SpanId> {
    span_id_checked(hex.trim())
}

fn span_id_checked(hex: &str) -> Option<SpanId> {
    if hex.len() != 16 || !is_hex(hex) {
        return None;
    }
    let id = SpanId::from_hex(hex).ok()?;
    (id != SpanId::INVALID).then_some(id)
}

fn is_hex(s: &str) -> bool {
    s.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

#[cfg(test)]
mod tests {
    use super::*;

    const TRACE: &str = "463ac35c9f6413ad48485a3953bb6124";
    const SPAN: &str = "a2fb4a1d1a96d312";

    fn from(headers: &[(&str, &str)]) -> Option<(String, String, bool)> {
        let found = extract(|name| headers.iter().find(|(n, _)| *n == name).map(|(_, v)| *v))?;
        Some((found.trace_id().to_string(), found.span_id().to_string(), found.is_sampled()))
    }

    fn check(headers: &[(&str, &str)], want: Option<(&str, &str, bool)>) {
        let want = want.map(|(t, s, b)| (t.to_owned(), s.to_owned(), b));
        assert_eq!(from(headers), want, "headers: {headers:?}");
    }

    #[test]
    fn single_header() {
        let full = format!("{TRACE}-{SPAN}-1-0020000000000001");
        check(&[("b3", &full)], Some((TRACE, SPAN, true)));
        check(&[("b3", &format!("{TRACE}-{SPAN}"))], Some((TRACE, SPAN, true)));
        check(&[("b3", &format!("{TRACE}-{SPAN}-0"))], Some((TRACE, SPAN, false)));
        check(&[("b3", &format!("{TRACE}-{SPAN}-d"))], Some((TRACE, SPAN, true)));
        check(&[("b3", &format!("48485a3953bb6124-{SPAN}-1"))], Some(("000000000000000048485a3953bb6124", SPAN, true)));
        for bad in [
            "0",
            "1",
            "",
            "xyz-abc",
            &format!("{TRACE}-{SPAN}-2"),
            &format!("{TRACE}-{SPAN}-1-zz"),
            &format!("{}-{SPAN}", TRACE.to_uppercase()),
            &format!("{TRACE}-0000000000000000"),
            &format!("{TRACE}-{SPAN}-1-0020000000000001-x"),
        ] {
            check(&[("b3", bad)], None);
        }
    }

    #[test]
    fn multi_headers() {
        check(&[("x-b3-traceid", TRACE), ("x-b3-spanid", SPAN), ("x-b3-sampled", "1")], Some((TRACE, SPAN, true)));
        check(&[("x-b3-traceid", TRACE), ("x-b3-spanid", SPAN), ("x-b3-sampled", "0")], Some((TRACE, SPAN, false)));
        check(
            &[("x-b3-traceid", TRACE), ("x-b3-spanid", SPAN), ("x-b3-flags", "1"), ("x-b3-sampled", "0")],
            Some((TRACE, SPAN, true)),
        );
        check(&[("x-b3-traceid", TRACE), ("x-b3-spanid", SPAN)], Some((TRACE, SPAN, true)));
        check(&[("x-b3-traceid", TRACE)], None);
        check(&[("x-b3-traceid", "00000000000000000000000000000000"), ("x-b3-spanid", SPAN)], None);
    }

    #[test]
    fn the_single_header_wins() {
        let other = "0af7651916cd43dd8448eb211c80319c";
        check(
            &[("b3", &format!("{TRACE}-{SPAN}")), ("x-b3-traceid", other), ("x-b3-spanid", SPAN)],
            Some((TRACE, SPAN, true)),
        );
    }
}
