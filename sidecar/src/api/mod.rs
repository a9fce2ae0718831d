//! The public listener: `GET /api/v1/domain/:input` on Pingora, and the public HTML pages
//! ([`crate::pages`]) for the paths they own.
//!
//! Every answer carries `X-Request-ID`; every error has the one JSON body of
//! [`email_verdict_core::ErrorBody`]; one log line per request, without the API key or the
//! email address (the query string is dropped and the key stripped from the request before
//! anything, Pingora included, can log it).

mod batch;
mod body;
mod decisions;
pub mod ext_authz;
mod lookup;
mod response;
mod signups;
mod traced;
pub mod velocity;

use std::sync::Arc;

use async_trait::async_trait;
use email_verdict_core::ErrorCode;
use http::{Method, Response};
use pingora::apps::http_app::ServeHttp;
use pingora::protocols::http::ServerSession;
use tokio::time::Instant;

use crate::auth::{AuthError, Authenticator};
use crate::limits::Limiter;
use crate::metrics::{Metrics, Route};
pub use crate::request::{LogFields, Request};
use crate::request::{log_request, take_request};
use crate::state::KeyRecord;
use crate::verdicts::Verdicts;
pub use response::{ApiError, Reply, json_response};

const LOOKUP_PREFIX: &str = "/api/v1/domain";

/// What the handlers share.
pub struct Api {
    pub auth: Authenticator,
    pub limiter: Limiter,
    /// Shared with the admin API (`/admin/v1/explain`).
    pub verdicts: Arc<Verdicts>,
    /// Proxies whose `X-Forwarded-For` is believed.
    pub trusted_proxies: Vec<ipnet::IpNet>,
    pub pages: crate::pages::Pages,
    pub metrics: Arc<Metrics>,
    /// How `/ext_authz` finds the email and answers (`--ext-authz-config`).
    /// `--ext-authz-config`, read again on SIGHUP (`config::ExtAuthzReloader`).
    pub ext_authz: arc_swap::ArcSwap<email_verdict_core::signup::Enforcement>,
    /// Signup counts (`POST /api/v1/signups`, `/ext_authz` with `velocity`).
    pub signups: crate::signups::Signups,
    /// `/ext_authz`'s counting (`velocity` and `--mailbox-secret`); `None`: no counting.
    pub ext_authz_counting: Option<velocity::Counting>,
}

/// The Pingora app serving [`Api`].
pub struct ApiApp(pub Arc<Api>);

#[async_trait]
impl ServeHttp for ApiApp {
    async fn response(&self, session: &mut ServerSession) -> Response<Vec<u8>> {
        // Tracing off: one branch, no span, no context (crate::telemetry).
        if !crate::telemetry::enabled() {
            return self.serve(session, &mut LogFields::default()).await;
        }
        // Boxed, as every large branch below: a future's size is that of its largest branch,
        // and each request's future is built and moved whole (BENCHMARKS section 2, "Futures").
        Box::pin(traced::serve(self, session)).await
    }
}

impl ApiApp {
    /// Routes a request; `log` gathers what its log line (and its span) says.
    async fn serve(&self, session: &mut ServerSession, log: &mut LogFields) -> Response<Vec<u8>> {
        let started = Instant::now();
        let request = take_request(session, &self.0.trusted_proxies);
        if ext_authz::original_path(&request.path).is_some() {
            let mut response = Box::pin(ext_authz::handle(&self.0, session, &request, log)).await;
            if let Ok(id) = request.id.parse() {
                response.headers_mut().insert("x-request-id", id);
            }
            log_request(&request, "ext_authz", response.status().as_u16(), log, started);
            return response;
        }
        if request.path == decisions::PATH {
            let reply = decisions::handle(&self.0, session, &request, log).await;
            return self.finish(&request, reply, log, started);
        }
        if request.path == batch::PATH {
            let reply = batch::handle(&self.0, session, &request, log).await;
            return self.finish(&request, reply, log, started);
        }
        if request.path == signups::PATH {
            let reply = signups::handle(&self.0, session, &request, log).await;
            return self.finish(&request, reply, log, started);
        }
        if !matches!(request.method, Method::GET | Method::HEAD) {
            session.set_keepalive(None); // the body was not read
        }
        if let Some(mut page) = crate::pages::serve(&self.0.pages, &self.0.verdicts, &request, log).await {
            if let Ok(id) = request.id.parse() {
                page.headers_mut().insert("x-request-id", id);
            }
            log_request(&request, "page", page.status().as_u16(), log, started);
            self.0.metrics.request(Route::Page, page.status().as_u16(), None);
            return page;
        }
        let reply = route(&self.0, &request, log).await;
        self.finish(&request, reply, log, started)
    }

    /// Counts and logs an API reply, and makes the response.
    fn finish(&self, request: &Request, reply: Reply, log: &mut LogFields, started: Instant) -> Response<Vec<u8>> {
        let (status, code) = reply.status_and_code();
        count(&self.0.metrics, &request.path, &reply, started);
        log.code = code;
        log_request(request, route_name(&request.path), status, log, started);
        reply.into_response(&request.id)
    }
}

/// Counts an API request, and times it when it is a lookup.
fn count(metrics: &Metrics, path: &str, reply: &Reply, started: Instant) {
    let (status, code) = match reply {
        Reply::Lookup(..) | Reply::Batch(..) => (200, None),
        Reply::Encoded(status, ..) => (status.as_u16(), None),
        Reply::Error(e) => (e.code.status(), Some(e.code)),
    };
    let route = match path {
        _ if lookup_segment(path).is_some() => Route::Lookup,
        batch::PATH => Route::Batch,
        decisions::PATH => Route::Decisions,
        signups::PATH => Route::Signups,
        _ => Route::Other,
    };
    metrics.request(route, status, code);
    if route == Route::Lookup {
        metrics.lookup_latency(started.elapsed());
    }
}

impl Request {
    /// The caller's key record: a non-Bearer `Authorization` header with no `?key=` is named in
    /// the error (it is the usual mistake), else the key is checked.
    pub async fn authenticate(&self, api: &Api) -> Result<Arc<KeyRecord>, AuthError> {
        match (&self.key, &self.other_scheme) {
            (None, Some(scheme)) => Err(AuthError::WrongScheme(scheme.clone())),
            (key, _) => api.auth.authenticate(key.as_deref(), self.client).await,
        }
    }
}

async fn route(api: &Api, request: &Request, log: &mut LogFields) -> Reply {
    let Some(segment) = lookup_segment(&request.path) else {
        return ApiError::new(ErrorCode::NotFound, "no such endpoint").into();
    };
    if !matches!(request.method, Method::GET | Method::HEAD) {
        return ApiError::new(ErrorCode::MethodNotAllowed, "only GET is allowed here")
            .with_header("Allow", "GET, HEAD")
            .into();
    }
    lookup::handle(api, request, segment, log).await
}

/// The raw `:input` segment of a lookup path (`""` when missing), or `None` for other paths.
fn lookup_segment(path: &str) -> Option<&str> {
    let rest = path.strip_prefix(LOOKUP_PREFIX)?;
    match rest.strip_prefix('/') {
        Some(segment) if !segment.contains('/') => Some(segment),
        None if rest.is_empty() => Some(""),
        _ => None,
    }
}

fn route_name(path: &str) -> &'static str {
    match path {
        _ if lookup_segment(path).is_some() => "lookup",
        batch::PATH => "batch",
        decisions::PATH => "decisions",
        signups::PATH => "signups",
        _ => "other",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lookup_paths() {
        assert_eq!(lookup_segment("/api/v1/domain/gmail.com"), Some("gmail.com"));
        assert_eq!(lookup_segment("/api/v1/domain/"), Some(""));
        assert_eq!(lookup_segment("/api/v1/domain"), Some(""));
        assert_eq!(lookup_segment("/api/v1/domain/a/b"), None);
        assert_eq!(lookup_segment("/api/v1/domains/x"), None);
        assert_eq!(lookup_segment("/api/v2/domain/x"), None);
    }
}
