//! `--ext-authz-grpc-listen`: Envoy's gRPC ext_authz, `envoy.service.auth.v3.Authorization/Check`,
//! on a listener of its own in cleartext HTTP/2 (h2c: Envoy's `envoy_grpc` to a cluster with
//! `http2_protocol_options`; Istio's `envoyExtAuthzGrpc`, Envoy Gateway's `extAuth.grpc`). The
//! check itself is the HTTP check's (`check.rs` on `api::ext_authz::decide`): same settings,
//! key, body reading, verdicts, counts and metrics.
//!
//! HTTP/2 comes from the `h2` crate Pingora already uses; the dozen messages are declared by
//! hand (`proto.rs`). One unary method needs no tonic/hyper/tower stack.
//!
//! **Bounds:** [`MAX_CONNECTIONS`] connections in all (one more is closed at once),
//! [`STREAMS_PER_CONNECTION`] calls at once on each and [`MAX_CALLS`] in all, a handshake
//! within [`HANDSHAKE_TIME`], a
//! request message of at most [`MAX_MESSAGE`] (the HTTP check's body limit plus headers) read
//! within [`MESSAGE_TIME`], a call within the caller's `grpc-timeout` and at most [`CALL_TIME`], a
//! connection without calls closed after [`IDLE_TIME`].
//! Input never panics: frames and messages are checked, protobuf decoding is prost's. Nothing
//! logged names an email, a key or any byte of the request. On shutdown the listener stops
//! accepting, each connection gets a GOAWAY and [`DRAIN_TIME`] to finish its calls.
//! The socket is bound with `SO_REUSEPORT` (Pingora's upgrade hands over only its own
//! listeners), so a `serve --upgrade` binds beside the running process: the port never stops
//! listening.

pub mod check;
pub mod proto;

use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use h2::RecvStream;
use h2::server::SendResponse;
use pingora::server::ShutdownWatch;
use pingora::services::background::BackgroundService;
use prost::Message;
use tokio::net::TcpStream;
use tokio::sync::{Semaphore, watch};
use tokio::task::JoinSet;
use tokio::time::Instant;

use email_verdict_core::signup::Protocol;

use crate::api::ext_authz::{self, Checked, Unread};
use crate::api::{Api, LogFields, Request};
use crate::request::log_request;
use check::{Call, Metadata};
use proto::{CheckRequest, CheckResponse};

/// The one method served.
pub const CHECK_PATH: &str = "/envoy.service.auth.v3.Authorization/Check";
/// Connections held at once (Envoy opens one or a few per worker).
pub const MAX_CONNECTIONS: usize = 1024;
/// Calls at once on one connection (HTTP/2 `SETTINGS_MAX_CONCURRENT_STREAMS`).
pub const STREAMS_PER_CONNECTION: u32 = 128;
/// Calls at once in all (each may hold a message of [`MAX_MESSAGE`]): the public listener's
/// default connections, each with its one request. One more fails at once with `UNAVAILABLE`.
pub const MAX_CALLS: usize = 4096;
/// The largest `CheckRequest`: the HTTP check's body limit, and 1 MiB for headers and the rest.
pub const MAX_MESSAGE: usize = ext_authz::MAX_BODY_BYTES + 1024 * 1024;
/// The most one call takes (the caller's `grpc-timeout` is usually far lower).
pub const CALL_TIME: Duration = Duration::from_secs(15);
/// The most the request message takes to arrive (Envoy sends it at once).
pub const MESSAGE_TIME: Duration = Duration::from_secs(10);
pub const HANDSHAKE_TIME: Duration = Duration::from_secs(10);
/// A connection without a call for this long is closed (GOAWAY; Envoy opens a new one when it
/// needs it), so idle connections cannot hold the places forever.
pub const IDLE_TIME: Duration = Duration::from_secs(300);
/// How long connections have to finish their calls after shutdown began.
pub const DRAIN_TIME: Duration = Duration::from_secs(3);
/// The request's header block (gRPC metadata): Envoy sends a few hundred bytes.
const MAX_HEADER_LIST: u32 = 64 * 1024;
/// Flow-control window per call: a 10 MiB body arrives in a handful of round trips.
const WINDOW: u32 = 1024 * 1024;

/// The gRPC status codes, core's: the refusals' and this service's own answers are one list.
pub use email_verdict_core::signup::reply::Code;

/// A call answered with a status of its own, no `CheckResponse`. The message names what went
/// wrong, never a value of the request.
#[derive(Debug)]
pub struct Failure {
    pub code: Code,
    pub message: String,
}

impl Failure {
    pub fn new(code: Code, message: &str) -> Failure {
        Failure { code, message: message.to_owned() }
    }
}

/// The Pingora background service holding the listener.
pub struct GrpcAuthz {
    api: Arc<Api>,
    listener: Mutex<Option<std::net::TcpListener>>,
}

impl GrpcAuthz {
    /// Binds `addr` now, so a port in use is an operator's error at start.
    pub fn bind(api: Arc<Api>, addr: SocketAddr) -> std::io::Result<GrpcAuthz> {
        use socket2::{Domain, Protocol, Socket, Type};
        let socket = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))?;
        socket.set_reuse_address(true)?;
        socket.set_reuse_port(true)?;
        socket.bind(&addr.into())?;
        socket.listen(1024)?;
        socket.set_nonblocking(true)?;
        Ok(GrpcAuthz { api, listener: Mutex::new(Some(socket.into())) })
    }
}

#[async_trait::async_trait]
impl BackgroundService for GrpcAuthz {
    async fn start(&self, mut shutdown: ShutdownWatch) {
        let Some(listener) = self.listener.lock().ok().and_then(|mut l| l.take()) else { return };
        let listener = match tokio::net::TcpListener::from_std(listener) {
            Ok(listener) => listener,
            Err(e) => return tracing::error!(error = %e, "gRPC ext_authz listener failed"),
        };
        let places = Arc::new(Semaphore::new(MAX_CONNECTIONS));
        let calls = Arc::new(Semaphore::new(MAX_CALLS));
        let (stop, stopping) = watch::channel(false);
        let mut connections = JoinSet::new();
        let mut last_warned: Option<Instant> = None;
        loop {
            tokio::select! {
                accepted = listener.accept() => match accepted {
                    Ok((socket, peer)) => match places.clone().try_acquire_owned() {
                        Ok(place) => {
                            let (api, stopping, calls) = (self.api.clone(), stopping.clone(), calls.clone());
                            let peer = crate::client_ip::client_ip(Some(peer.ip()), &[], &[]);
                            connections.spawn(async move {
                                serve_connection(api, socket, peer, calls, stopping).await;
                                drop(place);
                            });
                        }
                        Err(_) => {
                            drop(socket);
                            if last_warned.is_none_or(|t| t.elapsed() >= Duration::from_secs(10)) {
                                last_warned = Some(Instant::now());
                                tracing::warn!(max = MAX_CONNECTIONS, "gRPC ext_authz: connection closed, at its cap");
                            }
                        }
                    },
                    Err(e) => {
                        // Out of files, most likely: wait rather than spin.
                        tracing::warn!(error = %e, "gRPC ext_authz: accept failed");
                        tokio::time::sleep(Duration::from_millis(100)).await;
                    }
                },
                _ = shutdown.changed() => break,
                Some(_) = connections.join_next(), if !connections.is_empty() => {}
            }
        }
        drop(listener);
        let _ = stop.send(true);
        let drained = tokio::time::timeout(DRAIN_TIME, async { while connections.join_next().await.is_some() {} });
        if drained.await.is_err() {
            tracing::warn!(left = connections.len(), "gRPC ext_authz: connections cut at shutdown");
        }
    }
}

async fn serve_connection(
    api: Arc<Api>,
    socket: TcpStream,
    peer: Option<IpAddr>,
    places: Arc<Semaphore>,
    mut stopping: watch::Receiver<bool>,
) {
    let _ = socket.set_nodelay(true);
    let mut builder = h2::server::Builder::new();
    builder
        .max_concurrent_streams(STREAMS_PER_CONNECTION)
        .max_header_list_size(MAX_HEADER_LIST)
        .initial_window_size(WINDOW)
        .initial_connection_window_size(WINDOW * 4);
    let mut connection = match tokio::time::timeout(HANDSHAKE_TIME, builder.handshake::<_, Bytes>(socket)).await {
        Ok(Ok(connection)) => connection,
        _ => return,
    };
    let mut calls = JoinSet::new();
    let mut draining = false;
    let idle = tokio::time::sleep(IDLE_TIME);
    tokio::pin!(idle);
    loop {
        tokio::select! {
            next = connection.accept() => match next {
                Some(Ok((request, mut respond))) => match places.clone().try_acquire_owned() {
                    Ok(place) => {
                        let call = serve_call(api.clone(), peer, request, respond);
                        calls.spawn(async move {
                            call.await;
                            drop(place);
                        });
                    }
                    // Past the calls in all: our overload, Envoy's failure mode decides.
                    Err(_) => send(&mut respond, Err(unchecked(Code::Unavailable, "too many calls at once"))),
                },
                Some(Err(e)) => {
                    tracing::debug!(error = %e, "gRPC ext_authz: connection ended");
                    break;
                }
                None => break,
            },
            _ = stopping.changed(), if !draining => {
                draining = true;
                connection.graceful_shutdown();
            }
            Some(_) = calls.join_next(), if !calls.is_empty() => {
                idle.as_mut().reset(Instant::now() + IDLE_TIME);
            }
            () = &mut idle, if calls.is_empty() && !draining => {
                draining = true;
                connection.graceful_shutdown();
            }
        }
    }
}

/// One call, answered whatever happens within [`CALL_TIME`] (or the caller's `grpc-timeout`).
async fn serve_call(
    api: Arc<Api>,
    peer: Option<IpAddr>,
    request: http::Request<RecvStream>,
    mut respond: SendResponse<Bytes>,
) {
    let limit = request.headers().get("grpc-timeout").and_then(|v| grpc_timeout(v.as_bytes()));
    let limit = limit.map_or(CALL_TIME, |t| t.min(CALL_TIME));
    let server = crate::telemetry::enabled().then(|| traced_call(request.headers())).flatten();
    // Boxed: a call's future is kilobytes, and both arms below would hold it.
    let work = Box::pin(tokio::time::timeout(limit, answer(&api, peer, request)));
    let answer = match &server {
        Some(server) => server.serve(work).await,
        None => work.await,
    };
    let answer = answer.unwrap_or_else(|_| Err(unchecked(Code::DeadlineExceeded, "the check took too long")));
    if let Some(server) = server {
        let code = answer.as_ref().err().map_or(0, |f| f.code as i64);
        let failed = matches!(code, 2 | 4 | 13 | 14);
        server.finish(failed, vec![crate::telemetry::Attribute::new("rpc.grpc.status_code", code)]);
    }
    send(&mut respond, answer);
}

/// The call's server span, continuing the trace of the metadata's `traceparent` (or B3).
fn traced_call(metadata: &http::HeaderMap) -> Option<crate::telemetry::ServerSpan> {
    use crate::telemetry::Attribute;
    let attributes = vec![
        Attribute::new("rpc.system", "grpc"),
        Attribute::new("rpc.service", "envoy.service.auth.v3.Authorization"),
        Attribute::new("rpc.method", "Check"),
    ];
    let header = |name: &str| metadata.get(name).and_then(|v| v.to_str().ok());
    crate::telemetry::ServerSpan::start("envoy.service.auth.v3.Authorization/Check".to_owned(), attributes, header)
}

/// A call answered without a check (not one it can read, or too slow): the status, and one
/// log line with its fixed message (never a byte of the call), as each check has its line.
fn unchecked(code: Code, message: &str) -> Failure {
    tracing::warn!(route = "ext_authz_grpc", grpc_status = code as i32, message, "call not checked");
    Failure::new(code, message)
}

async fn answer(api: &Api, peer: Option<IpAddr>, request: http::Request<RecvStream>) -> Result<CheckResponse, Failure> {
    let started = Instant::now();
    let (parts, body) = request.into_parts();
    if parts.uri.path() != CHECK_PATH || parts.method != http::Method::POST {
        return Err(unchecked(Code::Unimplemented, "only envoy.service.auth.v3.Authorization/Check is served here"));
    }
    let grpc =
        parts.headers.get(http::header::CONTENT_TYPE).is_some_and(|v| v.as_bytes().starts_with(b"application/grpc"));
    if !grpc {
        return Err(unchecked(Code::InvalidArgument, "content-type must be application/grpc"));
    }
    let mut log = LogFields::default();
    let mut request = Request {
        id: uuid::Uuid::new_v4().to_string(),
        method: http::Method::POST,
        path: CHECK_PATH.to_owned(),
        key: None,
        other_scheme: None,
        upstream_id: None,
        client: peer,
        accept_language: None,
        accept: None,
        query: None,
    };
    // The key from the call's metadata is checked before the message is read, as the HTTP
    // check does before the body.
    let metadata = Metadata::of(&parts.headers);
    if let Some(key) = metadata.key
        && let Some(refused) = ext_authz::key_refused(api, Some(key), &request, &mut log).await
    {
        return finish(api, &request, refused, &Protocol::Rest, &mut log, started);
    }
    let message = match read_message(body).await {
        Ok(message) => message,
        Err(Unread::Failed) => return Err(unchecked(Code::InvalidArgument, "the request message was cut short")),
        // The signup's protocol is not known yet: REST's words.
        Err(unread) => {
            return finish(api, &request, ext_authz::not_read(api, unread), &Protocol::Rest, &mut log, started);
        }
    };
    let message = unframe(&message)?;
    let check = CheckRequest::decode(message).map_err(|_| unchecked(Code::InvalidArgument, "not a CheckRequest"))?;
    let call =
        Call::of(check).ok_or_else(|| unchecked(Code::InvalidArgument, "the CheckRequest has no HTTP request"))?;
    request.method = call.method.clone();
    request.upstream_id =
        call.values("x-request-id").first().and_then(|v| email_verdict_core::signup::plain_request_id(v));
    let checking = Box::pin(check::check(api, &call, &metadata, &request, &mut log));
    let checked = crate::telemetry::span("ext_authz.check", checking, ext_authz::traced).await;
    let protocol = ext_authz::protocol_of(&api.ext_authz.load(), &|name| call.values(name), &call.target);
    finish(api, &request, checked, &protocol, &mut log, started)
}

/// Counts and logs a check, as the HTTP check does, and puts its answer in gRPC's terms.
fn finish(
    api: &Api,
    request: &Request,
    checked: Checked,
    protocol: &Protocol,
    log: &mut LogFields,
    started: Instant,
) -> Result<CheckResponse, Failure> {
    api.metrics.ext_authz(checked.outcome);
    log.outcome = Some(checked.outcome.as_str());
    let response = checked.into_response(protocol);
    log_request(request, "ext_authz_grpc", response.status().as_u16(), log, started);
    check::to_grpc(&response)
}

/// The request's body whole: at most [`MAX_MESSAGE`] and its 5-byte prefix, within [`MESSAGE_TIME`].
async fn read_message(mut body: RecvStream) -> Result<Vec<u8>, Unread> {
    let deadline = Instant::now() + MESSAGE_TIME;
    let mut message = Vec::new();
    loop {
        let chunk = match tokio::time::timeout_at(deadline, body.data()).await {
            Err(_) => return Err(Unread::TimedOut),
            Ok(None) => return Ok(message),
            Ok(Some(Err(_))) => return Err(Unread::Failed),
            Ok(Some(Ok(chunk))) => chunk,
        };
        let _ = body.flow_control().release_capacity(chunk.len());
        if message.len() + chunk.len() > MAX_MESSAGE + 5 {
            return Err(Unread::TooLarge);
        }
        message.extend_from_slice(&chunk);
    }
}

/// The one message of a unary call: a 5-byte prefix (not compressed, its length) and exactly
/// that many bytes.
fn unframe(body: &[u8]) -> Result<&[u8], Failure> {
    let malformed = || unchecked(Code::InvalidArgument, "not one length-prefixed gRPC message");
    let (prefix, message) = body.split_at_checked(5).ok_or_else(malformed)?;
    if prefix[0] != 0 {
        return Err(unchecked(Code::Unimplemented, "compressed messages are not read: leave gRPC compression off"));
    }
    let length = u32::from_be_bytes([prefix[1], prefix[2], prefix[3], prefix[4]]);
    if usize::try_from(length).ok() != Some(message.len()) {
        return Err(malformed());
    }
    Ok(message)
}

/// `grpc-timeout`: up to 8 digits and a unit (`H`, `M`, `S`, `m`, `u`, `n`).
fn grpc_timeout(value: &[u8]) -> Option<Duration> {
    let (&unit, digits) = value.split_last()?;
    if digits.is_empty() || digits.len() > 8 || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let n: u64 = std::str::from_utf8(digits).ok()?.parse().ok()?;
    Some(match unit {
        b'H' => Duration::from_secs(n * 3600),
        b'M' => Duration::from_secs(n * 60),
        b'S' => Duration::from_secs(n),
        b'm' => Duration::from_millis(n),
        b'u' => Duration::from_micros(n),
        b'n' => Duration::from_nanos(n),
        _ => return None,
    })
}

/// Sends the answer: the message and `grpc-status: 0` in trailers, or a trailers-only failure.
/// A peer that went away is no error of ours.
fn send(respond: &mut SendResponse<Bytes>, answer: Result<CheckResponse, Failure>) {
    let head = |status: Option<&Failure>| {
        let mut head = http::Response::builder().status(200).header("content-type", "application/grpc");
        if let Some(failure) = status {
            let message = percent_encoding::utf8_percent_encode(&failure.message, GRPC_MESSAGE).to_string();
            head = head.header("grpc-status", (failure.code as i32).to_string()).header("grpc-message", message);
        }
        head.body(())
    };
    match answer {
        Ok(response) => {
            let Ok(head) = head(None) else { return };
            let Ok(mut stream) = respond.send_response(head, false) else { return };
            let length = u32::try_from(response.encoded_len()).unwrap_or(u32::MAX);
            let mut framed = Vec::with_capacity(5 + response.encoded_len());
            framed.push(0);
            framed.extend_from_slice(&length.to_be_bytes());
            response.encode_raw(&mut framed);
            let _ = stream.send_data(Bytes::from(framed), false);
            let mut trailers = http::HeaderMap::new();
            trailers.insert("grpc-status", http::HeaderValue::from_static("0"));
            let _ = stream.send_trailers(trailers);
        }
        Err(failure) => {
            if let Ok(head) = head(Some(&failure)) {
                let _ = respond.send_response(head, true);
            }
        }
    }
}

/// gRPC's `grpc-message` encoding: printable ASCII but `%` as is.
const GRPC_MESSAGE: &percent_encoding::AsciiSet = &percent_encoding::CONTROLS.add(b'%');

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_message_is_unframed() {
        assert_eq!(unframe(&[0, 0, 0, 0, 2, 8, 1]).unwrap(), [8, 1]);
        assert_eq!(unframe(&[0, 0, 0, 0, 0]).unwrap(), [] as [u8; 0]);
        for bad in [&[][..], &[0, 0, 0], &[0, 0, 0, 0, 3, 8, 1], &[0, 0, 0, 0, 1, 8, 1], &[0, 255, 255, 255, 255]] {
            assert_eq!(unframe(bad).unwrap_err().code, Code::InvalidArgument, "{bad:?}");
        }
        assert_eq!(unframe(&[1, 0, 0, 0, 0]).unwrap_err().code, Code::Unimplemented);
    }

    #[test]
    fn grpc_timeouts() {
        assert_eq!(grpc_timeout(b"200m"), Some(Duration::from_millis(200)));
        assert_eq!(grpc_timeout(b"1S"), Some(Duration::from_secs(1)));
        assert_eq!(grpc_timeout(b"2H"), Some(Duration::from_secs(7200)));
        for bad in [&b""[..], b"m", b"123456789m", b"1x", b"-1S", b"1.5S"] {
            assert_eq!(grpc_timeout(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn a_check_response_decodes_as_sent() {
        let response = CheckResponse {
            status: Some(proto::Status { code: 7, message: "Forbidden".into() }),
            ..Default::default()
        };
        let bytes = response.encode_to_vec();
        assert_eq!(CheckResponse::decode(bytes.as_slice()).unwrap(), response);
        // Garbage never panics.
        for junk in [&[0xff_u8; 7][..], &[0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f], &[0x12, 0x05, 0x0a]] {
            let _ = CheckRequest::decode(junk);
        }
    }
}
