//! A public request with tracing on: its server span continues the caller's trace, the work
//! runs in its context, and its log lines carry the trace id.

use http::Response;
use pingora::protocols::http::ServerSession;

use super::{ApiApp, LogFields, batch, decisions, ext_authz, lookup_segment, signups};
use crate::telemetry::{Attribute, ServerSpan};

pub(super) async fn serve(app: &ApiApp, session: &mut ServerSession) -> Response<Vec<u8>> {
    let header = session.req_header();
    let method = header.method.as_str().to_owned();
    let route = http_route(header.uri.path());
    let headers = &header.headers;
    let attributes = vec![Attribute::new("http.request.method", method.clone()), Attribute::new("http.route", route)];
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    let Some(server) = ServerSpan::start(format!("{method} {route}"), attributes, header) else {
        return app.serve(session, &mut LogFields::default()).await;
    };
    let mut log = LogFields::default();
    let response = server.serve(Box::pin(app.serve(session, &mut log))).await;
    let status = response.status().as_u16();
    let mut attributes = outcome(&log);
    attributes.push(Attribute::new("http.response.status_code", i64::from(status)));
    server.finish(status >= 500, attributes);
    response
}

/// The route template of `path` (`http.route`): never the path itself, which may hold an
/// address or a key.
pub(super) fn http_route(path: &str) -> &'static str {
    match path {
        _ if ext_authz::original_path(path).is_some() => "/ext_authz/{path}",
        _ if lookup_segment(path).is_some() => "/api/v1/domain/{input}",
        batch::PATH => batch::PATH,
        decisions::PATH => decisions::PATH,
        signups::PATH => signups::PATH,
        _ => "/{page}",
    }
}

/// The `store.admission` span's attributes: the key's plan and whether it was let in.
pub(super) fn admission<T, E>(key: &crate::state::KeyRecord, admitted: &Result<T, E>) -> Vec<Attribute> {
    vec![
        Attribute::new("email_verdict.plan", key.plan.as_str().to_owned()),
        Attribute::new("email_verdict.admitted", admitted.is_ok()),
    ]
}

/// What the request came to, from the fields its log line has: none is an address or a key.
fn outcome(log: &LogFields) -> Vec<Attribute> {
    let mut out = Vec::new();
    if let Some(cached) = log.cached {
        out.push(Attribute::new("email_verdict.cache_hit", cached));
    }
    if let Some(code) = log.code {
        out.push(Attribute::new("email_verdict.error_code", code));
    }
    if let Some(outcome) = log.outcome {
        out.push(Attribute::new("email_verdict.outcome", outcome));
    }
    if let Some(would_block) = log.would_block {
        out.push(Attribute::new("email_verdict.would_block", would_block));
    }
    if let Some(items) = log.items {
        out.push(Attribute::new("email_verdict.items", items as i64));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes_are_templates() {
        assert_eq!(http_route("/api/v1/domain/someone@example.com"), "/api/v1/domain/{input}");
        assert_eq!(http_route("/api/v1/domain"), "/api/v1/domain/{input}");
        assert_eq!(http_route("/ext_authz/signup?email=a@b.c"), "/ext_authz/{path}");
        assert_eq!(http_route("/api/v1/domains"), "/api/v1/domains");
        assert_eq!(http_route("/domain/example.com"), "/{page}");
    }
}
