//! The admin listener: `GET /healthz` (open, for probes; 200 once both listeners are up),
//! `GET /readyz` (open; also 503 while the state store cannot answer, `ready.rs`),
//! `GET /metrics` (open, for Prometheus; no key ids or domains in it) and the admin API under
//! `/admin/v1/` (keys, reviews, warm-up, lists, the busiest signups, explain; bearer admin token). The server refuses to
//! listen on a non-loopback address without a token. Errors use the public API's body shape
//! with admin codes. Its HTML face, the operator's dashboard at `/dashboard`, lives in
//! [`dashboard`] and uses the same state and handlers.

pub mod dashboard;
mod explain;
pub(crate) mod guard;
pub(crate) mod keys;
pub(crate) mod lists;
mod ready;
mod reviews;
mod signups;
mod warmup;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use async_trait::async_trait;
use http::{Method, Response, StatusCode};
use pingora::apps::http_app::ServeHttp;
use pingora::protocols::http::ServerSession;
use serde::Serialize;
use sha2::{Digest, Sha256};

use crate::api::json_response;
use crate::clock::Clock;
use crate::metrics::Metrics;
use crate::state::{StateError, StateStore};

/// Largest admin request body accepted.
const MAX_BODY: usize = 64 * 1024;

pub struct Admin {
    pub store: Arc<dyn StateStore>,
    pub clock: Arc<dyn Clock>,
    /// The lists in force (reloaded while serving): for refusing `disposable` decisions on
    /// free webmail, the warm-up's figures and `/admin/v1/lists`.
    pub catalog: Arc<crate::lists::LiveCatalog>,
    /// The plans keys may take (built-in and the `--config` file's).
    pub plans: Arc<crate::plans::PlanBook>,
    /// SHA-256 of the admin token; `None` leaves the API open (loopback only).
    pub token_hash: Option<[u8; 32]>,
    /// The operator dashboard at `/dashboard` (its own login and sessions).
    pub dashboard: crate::admin::dashboard::Dashboard,
    /// Set once both listeners accept connections; `/healthz` answers 503 until then.
    pub ready: Arc<AtomicBool>,
    /// What `/metrics` exposes.
    pub metrics: Arc<Metrics>,
    /// The limiter's leases, whose holdings `/metrics` reads at each scrape.
    pub leases: Arc<crate::leases::Leases>,
    /// Wrong admin tokens per client (API and dashboard login).
    pub guesses: guard::GuessThrottle,
    /// Set once the store's problem (see `/healthz`) has been logged.
    pub problem_logged: AtomicBool,
    /// The lookup's verdicts, for `/admin/v1/explain`.
    pub verdicts: Arc<crate::verdicts::Verdicts>,
    /// `/ext_authz`'s `velocity` limits, when configured (`/admin/v1/explain` shows them).
    pub velocity: Option<email_verdict_core::signup::velocity::VelocityLimits>,
}

pub struct AdminApp(pub Arc<Admin>);

/// An admin API failure: status, stable code, message.
#[derive(Debug)]
pub struct AdminError(StatusCode, &'static str, String);

impl AdminError {
    pub fn bad_request(message: impl Into<String>) -> Self {
        Self(StatusCode::BAD_REQUEST, "invalid_request", message.into())
    }
    pub fn not_found(message: impl Into<String>) -> Self {
        Self(StatusCode::NOT_FOUND, "not_found", message.into())
    }
    pub fn conflict(code: &'static str, message: impl Into<String>) -> Self {
        Self(StatusCode::CONFLICT, code, message.into())
    }
    pub fn message(&self) -> &str {
        &self.2
    }
}

impl From<StateError> for AdminError {
    fn from(e: StateError) -> Self {
        tracing::error!(error = %e, "state store failed (admin)");
        Self(StatusCode::INTERNAL_SERVER_ERROR, "internal_error", "state store failed; retry later".into())
    }
}

/// A handler's successful answer.
pub struct Json(pub StatusCode, pub serde_json::Value);

pub type AdminResult = Result<Json, AdminError>;

#[async_trait]
impl ServeHttp for AdminApp {
    async fn response(&self, session: &mut ServerSession) -> Response<Vec<u8>> {
        let request_id = uuid::Uuid::new_v4().to_string();
        let method = session.req_header().method.clone();
        let path = session.req_header().uri.path().to_owned();
        if path == "/healthz" {
            return self.healthz();
        }
        if path == "/readyz" {
            return self.readyz().await;
        }
        if path == "/metrics" {
            self.review_queue_gauge().await;
            self.0.metrics.leases_held(&self.0.leases.held());
            return metrics(&self.0.metrics);
        }
        let api = !(path.starts_with("/dashboard") || path == "/");
        let open = self.0.token_hash.is_none();
        if let Err(guard::Refused(status, code, message)) =
            guard::check(&method, &session.req_header().headers, open, api)
        {
            tracing::warn!(request_id = %request_id, method = %method, status = status.as_u16(), reason = message, "admin request refused");
            return error_response(status, &request_id, code, message.to_owned(), &[]);
        }
        // The listener's root leads to the dashboard (a person typing the admin address).
        if path == "/" && matches!(method, Method::GET | Method::HEAD) {
            return crate::pages::respond::redirect(StatusCode::FOUND, "/dashboard", "no-store", Vec::new());
        }
        let client = peer(session);
        if path == "/dashboard" || path.starts_with("/dashboard/") {
            return crate::admin::dashboard::serve(&self.0, session, &method, &path, client).await;
        }
        // The right token always passes, however many wrong ones came from the same address
        // (behind a proxy, everyone's): only failures are counted and, past the limit, 429.
        if !self.authorized(session) && session.req_header().headers.contains_key(http::header::AUTHORIZATION) {
            if let Some(wait) = self.0.guesses.wrong(client) {
                tracing::warn!(request_id = %request_id, "admin request refused: too many wrong tokens from this client");
                let message = format!("too many wrong admin tokens from this address; retry in {wait} s");
                return error_response(
                    StatusCode::TOO_MANY_REQUESTS,
                    &request_id,
                    "too_many_attempts",
                    message,
                    &[("retry-after", wait.to_string())],
                );
            }
            tracing::warn!(request_id = %request_id, "admin request with a wrong token");
            return error_response(
                StatusCode::UNAUTHORIZED,
                &request_id,
                "unauthorized",
                "admin token missing or wrong".into(),
                &[],
            );
        }
        let result = self.handle(session, &method, &path).await;
        let status = result.as_ref().map_or_else(|e| e.0, |j| j.0);
        if status == StatusCode::INTERNAL_SERVER_ERROR {
            self.0.metrics.store_error(); // only a store failure gives a 500 here
        }
        let logged_path: String = path.chars().take(MAX_LOGGED_PATH).collect();
        tracing::info!(request_id = %request_id, method = %method, path = %logged_path, status = status.as_u16(), "admin request");
        match result {
            Ok(Json(status, body)) => json_response(status, &request_id, &body, &[]),
            Err(AdminError(status, code, message)) => error_response(status, &request_id, code, message, &[]),
        }
    }
}

/// Characters of an admin path written to the log (ids and domains fit; a flood does not).
const MAX_LOGGED_PATH: usize = 200;

/// The peer's address, canonical (an IPv4 peer of a dual-stack listener is not `::ffff:…`).
fn peer(session: &ServerSession) -> Option<std::net::IpAddr> {
    session.client_addr().and_then(|a| a.as_inet()).map(|a| a.ip().to_canonical())
}

fn error_response(
    status: StatusCode,
    request_id: &str,
    code: &'static str,
    message: String,
    headers: &[(&'static str, String)],
) -> Response<Vec<u8>> {
    json_response(status, request_id, &ErrorJson { request_id, error: Detail { code, message } }, headers)
}

#[derive(Serialize)]
struct ErrorJson<'a> {
    request_id: &'a str,
    error: Detail,
}

#[derive(Serialize)]
struct Detail {
    code: &'static str,
    message: String,
}

impl AdminApp {
    /// Reads the review queue's size into its gauge, at scrape time: one cheap store read,
    /// bounded so that a slow store cannot hold the scrape. On failure the gauge keeps its last
    /// value; the failure is not a `store_errors` one, which counts the store failing callers
    /// (a scraper polling a store that is down would otherwise count its own reads).
    async fn review_queue_gauge(&self) {
        let store = &self.0.store;
        match tokio::time::timeout(std::time::Duration::from_millis(500), store.review_queue_len()).await {
            Ok(Ok(entries)) => self.0.metrics.review_queue(entries, store.queue_capacity()),
            Ok(Err(e)) => tracing::debug!(error = %e, "cannot read the review queue's size for /metrics"),
            Err(_) => tracing::debug!("the review queue's size took over 500 ms to read for /metrics"),
        }
    }

    /// 200 `ok` once both listeners accept; 503 `starting` before, or the store's problem.
    fn healthz(&self) -> Response<Vec<u8>> {
        if !self.0.ready.load(Ordering::Acquire) {
            return text(StatusCode::SERVICE_UNAVAILABLE, "starting");
        }
        match self.0.store.problem() {
            None => text(StatusCode::OK, "ok"),
            Some(problem) => {
                if !self.0.problem_logged.swap(true, Ordering::AcqRel) {
                    tracing::error!("{problem}");
                }
                text(StatusCode::SERVICE_UNAVAILABLE, &problem)
            }
        }
    }

    /// `/healthz`'s answer, and then 503 while the state store cannot answer a read.
    async fn readyz(&self) -> Response<Vec<u8>> {
        let health = self.healthz();
        if health.status() != StatusCode::OK {
            return health;
        }
        match ready::store_answers(&self.0).await {
            Ok(()) => text(StatusCode::OK, "ready"),
            Err(why) => text(StatusCode::SERVICE_UNAVAILABLE, &why),
        }
    }

    async fn handle(&self, session: &mut ServerSession, method: &Method, path: &str) -> AdminResult {
        if !self.authorized(session) {
            // A wrong token was answered before (and counted); this is a request without one.
            return Err(AdminError(StatusCode::UNAUTHORIZED, "unauthorized", "admin token missing or wrong".into()));
        }
        let segments: Vec<&str> = path.trim_matches('/').split('/').collect();
        let body = if matches!(*method, Method::POST | Method::PATCH | Method::PUT) {
            read_body(session).await?
        } else {
            Vec::new()
        };
        let query = session.req_header().uri.query().unwrap_or_default().to_owned();
        match segments.as_slice() {
            ["admin", "v1", "keys", rest @ ..] => keys::route(&self.0, method, rest, &body, &query).await,
            ["admin", "v1", "reviews", rest @ ..] => reviews::route(&self.0, method, rest, &body, &query).await,
            ["admin", "v1", "warmup", rest @ ..] => warmup::route(&self.0, method, rest).await,
            ["admin", "v1", "signups", rest @ ..] => signups::route(&self.0, method, rest, &query).await,
            ["admin", "v1", "lists", rest @ ..] => lists::route(&self.0, method, rest),
            ["admin", "v1", "explain"] | ["admin", "v1", "explain", ""] => {
                explain::route(&self.0, method, &query).await
            }
            _ => Err(AdminError::not_found("no such endpoint")),
        }
    }

    fn authorized(&self, session: &ServerSession) -> bool {
        let Some(expected) = &self.0.token_hash else { return true };
        let presented = session.req_header().headers.get(http::header::AUTHORIZATION).and_then(|v| v.to_str().ok());
        let token = presented.and_then(|h| h.strip_prefix("Bearer ").or_else(|| h.strip_prefix("bearer ")));
        // Comparing digests keeps the comparison independent of where the token differs.
        token.is_some_and(|t| Sha256::digest(t.trim().as_bytes()).as_slice() == expected.as_slice())
    }
}

pub(crate) async fn read_body(session: &mut ServerSession) -> Result<Vec<u8>, AdminError> {
    let mut body = Vec::new();
    loop {
        match session.read_request_body().await {
            Ok(Some(chunk)) => {
                body.extend_from_slice(&chunk);
                if body.len() > MAX_BODY {
                    return Err(AdminError(
                        StatusCode::PAYLOAD_TOO_LARGE,
                        "body_too_large",
                        "request body over 64 KiB".into(),
                    ));
                }
            }
            Ok(None) => return Ok(body),
            Err(e) => return Err(AdminError::bad_request(format!("cannot read the request body: {e}"))),
        }
    }
}

fn text(status: StatusCode, body: &str) -> Response<Vec<u8>> {
    Response::builder()
        .status(status)
        .header(http::header::CONTENT_TYPE, "text/plain")
        .header(http::header::CONTENT_LENGTH, body.len())
        .body(body.as_bytes().to_vec())
        .unwrap_or_else(|_| Response::new(Vec::new()))
}

fn metrics(metrics: &Metrics) -> Response<Vec<u8>> {
    let body = metrics.encode();
    Response::builder()
        .status(StatusCode::OK)
        .header(http::header::CONTENT_TYPE, crate::metrics::CONTENT_TYPE)
        .header(http::header::CONTENT_LENGTH, body.len())
        .header(http::header::CACHE_CONTROL, "no-store")
        .body(body.into_bytes())
        .unwrap_or_else(|_| Response::new(Vec::new()))
}

/// SHA-256 of an admin token, as [`Admin::token_hash`] keeps it.
pub fn hash_token(token: &str) -> [u8; 32] {
    Sha256::digest(token.as_bytes()).into()
}
