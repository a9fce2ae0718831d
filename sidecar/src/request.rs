//! A request on the public listener as its handlers (the API, ext_authz, the pages) see it, and
//! its one log line: the key is taken out first, so nothing later can log it.

use std::net::IpAddr;

use http::Method;
use pingora::protocols::http::ServerSession;
use tokio::time::Instant;

use crate::auth::{other_scheme, presented_key, redact_query};
use crate::client_ip::client_ip;
use crate::logging::{self, Value};

/// What a handler learned, for the request's log line.
#[derive(Debug, Default)]
pub struct LogFields {
    pub key_id: Option<String>,
    pub domain: Option<String>,
    pub cached: Option<bool>,
    /// The error code answered (ext_authz: the one behind a failure).
    pub code: Option<&'static str>,
    /// ext_authz: what the check came to.
    pub outcome: Option<&'static str>,
    /// ext_authz in shadow: why block mode would have refused the signup.
    pub would_block: Option<&'static str>,
    /// A batch: how many inputs it had.
    pub items: Option<usize>,
}

/// A request as the handlers see it: the key already taken out.
pub struct Request {
    pub id: String,
    pub method: Method,
    pub path: String,
    pub key: Option<String>,
    /// The scheme of an `Authorization` header that is not `Bearer`, for the `401` message.
    pub other_scheme: Option<String>,
    /// The caller's `x-request-id` (Envoy's, from the filter's callout or an ext_authz check),
    /// logged beside our own id when it is plain: one id finds a signup in both logs.
    pub upstream_id: Option<String>,
    /// The caller's address (see [`client_ip`]).
    pub client: Option<IpAddr>,
    /// For the pages: the language wanted, and the query (without `key`).
    pub accept_language: Option<String>,
    /// For the pages: the media types wanted (a browser's unknown path gets an HTML 404).
    pub accept: Option<String>,
    pub query: Option<String>,
}

/// The one log line of a request: never the path or the query (they may hold an email or a
/// key); fields a route does not have are left out. Written by [`logging::write_line`] where it
/// can (the same bytes as `tracing`'s formatter, for less), else through `tracing`.
pub fn log_request(request: &Request, route: &'static str, status: u16, log: &LogFields, started: Instant) {
    let micros = started.elapsed().as_micros() as u64;
    // The fields gathered only for the fast line; elsewhere `tracing` below records them.
    if tracing::enabled!(tracing::Level::INFO) && logging::fast_line_on() {
        let fields = [
            ("request_id", Some(Value::Display(&request.id))),
            ("upstream_request_id", request.upstream_id.as_deref().map(Value::Str)),
            ("method", Some(Value::Display(&request.method))),
            ("route", Some(Value::Str(route))),
            ("status", Some(Value::U64(status.into()))),
            ("code", log.code.map(Value::Str)),
            ("outcome", log.outcome.map(Value::Str)),
            ("would_block", log.would_block.map(Value::Str)),
            ("key_id", log.key_id.as_deref().map(Value::Str)),
            ("domain", log.domain.as_deref().map(Value::Str)),
            ("cached", log.cached.map(Value::Bool)),
            ("items", log.items.map(|n| Value::U64(n as u64))),
            ("micros", Some(Value::U64(micros))),
        ];
        if logging::write_line("request", &fields) {
            return;
        }
    }
    tracing::info!(
        request_id = %request.id,
        upstream_request_id = request.upstream_id.as_deref(),
        method = %request.method,
        route,
        status,
        code = log.code,
        outcome = log.outcome,
        would_block = log.would_block,
        key_id = log.key_id.as_deref(),
        domain = log.domain.as_deref(),
        cached = log.cached,
        items = log.items,
        micros,
        "request"
    );
}

/// Reads what the handlers need and removes the key from the request (so no later log can
/// show it).
pub fn take_request(session: &mut ServerSession, trusted_proxies: &[ipnet::IpNet]) -> Request {
    let header = session.req_header();
    let query = header.uri.query();
    let authorization = header.headers.get(http::header::AUTHORIZATION).map(|v| v.as_bytes());
    let key = presented_key(authorization, query);
    let other_scheme = other_scheme(authorization);
    let method = header.method.clone();
    let path = header.uri.path().to_owned();
    if let Some(query) = query {
        let redacted = redact_query(query);
        let target = if redacted.is_empty() { path.clone() } else { format!("{path}?{redacted}") };
        if let Ok(uri) = target.parse() {
            session.req_header_mut().set_uri(uri);
        }
    }
    session.req_header_mut().remove_header(&http::header::AUTHORIZATION);
    let peer = session.client_addr().and_then(|a| a.as_inet()).map(|a| a.ip());
    let forwarded: Vec<&str> =
        session.req_header().headers.get_all("x-forwarded-for").iter().filter_map(|v| v.to_str().ok()).collect();
    let client = client_ip(peer, &forwarded, trusted_proxies);
    let accept_language = session
        .req_header()
        .headers
        .get(http::header::ACCEPT_LANGUAGE)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let accept =
        session.req_header().headers.get(http::header::ACCEPT).and_then(|v| v.to_str().ok()).map(str::to_owned);
    let query = session.req_header().uri.query().map(str::to_owned);
    let id = uuid::Uuid::new_v4().to_string();
    let upstream_id = session
        .req_header()
        .headers
        .get("x-request-id")
        .and_then(|v| email_verdict_core::signup::plain_request_id(v.as_bytes()));
    Request { id, method, path, key, other_scheme, upstream_id, client, accept_language, accept, query }
}
