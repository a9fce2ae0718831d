//! The HTTP/1 connection loop of both listeners, in place of Pingora's default one for a
//! `ServeHttp` app, for what that one gets wrong at the edge:
//! - a request header that cannot be parsed is answered (400, or 431 when it is too large)
//!   instead of a closed socket, and logged as one bounded line naming the error kind: Pingora's
//!   own line would carry up to 2 KiB of the raw request, keys, tokens, cookies and emails included;
//! - a request target over [`MAX_TARGET`] bytes gets 414 before any handler sees it;
//! - a request header must arrive whole within `--header-timeout` (Pingora only bounds each
//!   single read, so a client sending a byte a minute held a connection forever): 408, closed.
//!
//! Everything after the header is Pingora's default loop, unchanged.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use http::StatusCode;
use pingora::apps::http_app::ServeHttp;
use pingora::apps::{HttpPersistentSettings, HttpServerApp, ReusedHttpStream};
use pingora::http::ResponseHeader;
use pingora::protocols::http::ServerSession;
use pingora::server::ShutdownWatch;

/// Longest request target (path and query) served; longer gets 414.
pub const MAX_TARGET: usize = 8 * 1024;
/// Idle time between requests on a kept-alive connection (Pingora's per-read keepalive).
const KEEPALIVE_SECS: u64 = 60;

/// A `ServeHttp` app behind the guarded connection loop.
pub struct Guarded<A> {
    pub app: A,
    /// Time for a whole request header, from the connection's start or the previous answer.
    pub header_timeout: Duration,
}

#[async_trait]
impl<A: ServeHttp + Send + Sync> HttpServerApp for Guarded<A> {
    async fn process_new_http(
        self: &Arc<Self>,
        mut http: ServerSession,
        shutdown: &ShutdownWatch,
    ) -> Option<ReusedHttpStream> {
        match tokio::time::timeout(self.header_timeout, http.read_request()).await {
            Ok(Ok(true)) => {}
            Ok(Ok(false)) => return None, // closed between requests
            Ok(Err(e)) => {
                let parse_error = e.root_cause().downcast_ref::<httparse::Error>().map(ToString::to_string);
                tracing::debug!(error_kind = ?e.etype(), parse_error = parse_error.as_deref(), "unreadable request header");
                return refuse(http, Refusal::of(&e)).await;
            }
            Err(_) => return refuse(http, Refusal::Timeout).await,
        }
        if http.req_header().raw_path().len() > MAX_TARGET {
            return refuse(http, Refusal::TargetTooLong).await;
        }
        http.set_keepalive(if *shutdown.borrow() { None } else { Some(KEEPALIVE_SECS) });
        let response = self.app.response(&mut http).await;
        let (parts, body) = response.into_parts();
        let header: ResponseHeader = parts.into();
        if let Err(e) = http.write_response_header(Box::new(header)).await {
            tracing::debug!(error_kind = ?e.etype(), "could not write a response header");
            return None;
        }
        if !body.is_empty()
            && let Err(e) = http.write_response_body(body.into(), true).await
        {
            tracing::debug!(error_kind = ?e.etype(), "could not write a response body");
            return None;
        }
        let persistent = HttpPersistentSettings::for_session(&http);
        match http.finish().await {
            Ok(stream) => stream.map(|s| ReusedHttpStream::from_reusable_stream(s, persistent)),
            Err(e) => {
                tracing::debug!(error_kind = ?e.etype(), "could not finish a response");
                None
            }
        }
    }
}

/// Why a request header was refused before any handler.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Refusal {
    /// Not valid HTTP/1 (a bad header name, a bad character in the request line, ...).
    Malformed,
    /// More header lines, or more header bytes, than the server reads.
    HeaderTooLarge,
    TargetTooLong,
    Timeout,
    /// The client went away or the read failed: nothing to answer.
    Gone,
}

impl Refusal {
    fn of(e: &pingora::Error) -> Self {
        use pingora::ErrorType::{ConnectionClosed, InvalidHTTPHeader, ReadError, ReadTimedout};
        match e.etype() {
            InvalidHTTPHeader if too_large(e) => Self::HeaderTooLarge,
            InvalidHTTPHeader if target_too_long(e) => Self::TargetTooLong,
            InvalidHTTPHeader => Self::Malformed,
            ReadTimedout => Self::Timeout,
            ConnectionClosed | ReadError => Self::Gone,
            _ => Self::Malformed,
        }
    }

    fn status(self) -> Option<StatusCode> {
        match self {
            Self::Malformed => Some(StatusCode::BAD_REQUEST),
            Self::HeaderTooLarge => Some(StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE),
            Self::TargetTooLong => Some(StatusCode::URI_TOO_LONG),
            Self::Timeout => Some(StatusCode::REQUEST_TIMEOUT),
            Self::Gone => None,
        }
    }

    fn as_str(self) -> &'static str {
        match self {
            Self::Malformed => "malformed request header",
            Self::HeaderTooLarge => "request header too large",
            Self::TargetTooLong => "request target too long",
            Self::Timeout => "request header not received in time",
            Self::Gone => "connection closed before a whole request header",
        }
    }
}

/// Pingora says "too large" only in its error's context, or through httparse's cause.
fn too_large(e: &pingora::Error) -> bool {
    let from_httparse = e.root_cause().downcast_ref::<httparse::Error>() == Some(&httparse::Error::TooManyHeaders);
    from_httparse || e.context.as_ref().is_some_and(|c| c.as_str().contains("larger than"))
}

/// The `http` crate refuses targets of 64 KiB and more, before our own bound; Pingora then
/// says "invalid uri" followed by the whole target (which is why its context is never logged).
fn target_too_long(e: &pingora::Error) -> bool {
    e.context.as_ref().is_some_and(|c| c.as_str().starts_with("invalid uri ") && c.as_str().len() > MAX_TARGET)
}

/// Answers `why` (when there is anyone to answer) and closes the connection. The log line
/// names the kind only: never the bytes received.
async fn refuse(mut http: ServerSession, why: Refusal) -> Option<ReusedHttpStream> {
    let peer = http.client_addr().and_then(|a| a.as_inet()).map(|a| a.ip());
    tracing::info!(peer = ?peer, reason = why.as_str(), "request refused before routing");
    let status = why.status()?;
    let body = format!("{}\n", status.canonical_reason().unwrap_or("refused"));
    http.set_keepalive(None);
    let Ok(mut header) = ResponseHeader::build(status, Some(3)) else { return None };
    let headers = [("content-type", "text/plain"), ("connection", "close")];
    for (name, value) in headers {
        let _ = header.insert_header(name, value);
    }
    let _ = header.insert_header("content-length", body.len().to_string());
    if http.write_response_header(Box::new(header)).await.is_ok() {
        let _ = http.write_response_body(body.into(), true).await;
    }
    let _ = http.finish().await;
    None
}
