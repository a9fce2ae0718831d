//! The HTTP/1 connection loop of both listeners, in place of Pingora's default one for a
//! `ServeHttp` app, for what that one gets wrong at the edge:
//! - a listener holds at most so many connections at once, in all and from one client
//!   ([`Capped`], [`ConnectionCaps`]): one more is answered `503` at once and closed, before
//!   anything is read from it, so a flood of idle or slow connections cannot take the process's
//!   file descriptors, and each listener (public, admin) has its own budget;
//! - a request header that cannot be parsed is answered (400, or 431 when it is too large)
//!   instead of a closed socket, and logged as one bounded line naming the error kind: Pingora's
//!   own line would carry up to 2 KiB of the raw request, keys, tokens, cookies and emails included;
//! - a request target over [`MAX_TARGET`] bytes gets 414 before any handler sees it;
//! - a request header must arrive whole within `--header-timeout` (Pingora only bounds each
//!   single read, so a client sending a byte a minute held a connection forever): 408, closed;
//! - on the public listener a share of the connections is kept for requests with a key in good
//!   standing ([`reserve`]): anonymous clients and spent keys cannot starve the gateway's checks.
//!
//! Everything after the header is Pingora's default loop, unchanged (bodies are read by the
//! handlers that take one, bounded in time: `api::body`).

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use http::StatusCode;
use pingora::apps::http_app::ServeHttp;
use pingora::apps::{HttpPersistentSettings, HttpServerApp, ReusedHttpStream, ServerApp};
use pingora::http::ResponseHeader;
use pingora::protocols::Stream;
use pingora::protocols::http::ServerSession;
use pingora::server::ShutdownWatch;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::time::Instant;

/// Longest request target (path and query) served; longer gets 414.
pub const MAX_TARGET: usize = 8 * 1024;
/// Idle time between requests on a kept-alive connection (Pingora's per-read keepalive).
const KEEPALIVE_SECS: u64 = 60;

mod reserve;

pub use reserve::{KEY_HOLDER_SHARE, KeyCheck, Standing};
use reserve::{Probation, Reserve};

tokio::task_local! {
    /// For a connection in the reserved share ([`reserve`]): its listener's budget and its
    /// probation, set by [`Capped`] around the connection's whole life.
    static ON_PROBATION: Option<(Arc<ConnectionBudget>, Arc<Probation>)>;
}

/// A `ServeHttp` app behind the guarded connection loop.
pub struct Guarded<A> {
    pub app: A,
    /// Time for a whole request header, from the connection's start or the previous answer.
    pub header_timeout: Duration,
    /// Which requests carry a key in good standing, for connections in the reserved share (`None`: the
    /// listener reserves nothing, or every such connection is refused).
    pub keys: Option<Arc<dyn KeyCheck>>,
}

#[async_trait]
impl<A: ServeHttp + Send + Sync> HttpServerApp for Guarded<A> {
    // The refusals are boxed: each request's future is built and moved whole, so it is kept
    // to the size of the path that serves.
    async fn process_new_http(
        self: &Arc<Self>,
        mut http: ServerSession,
        shutdown: &ShutdownWatch,
    ) -> Option<ReusedHttpStream> {
        let probation = ON_PROBATION.try_with(Clone::clone).ok().flatten();
        let evicted = async {
            match &probation {
                Some((_, p)) => p.evicted().await,
                None => std::future::pending().await,
            }
        };
        let read = tokio::select! {
            read = tokio::time::timeout(self.header_timeout, http.read_request()) => read,
            () = evicted => return Box::pin(reserved_for_keys(http, probation.as_ref())).await,
        };
        match read {
            Ok(Ok(true)) => {}
            Ok(Ok(false)) => return None, // closed between requests
            Ok(Err(e)) => {
                let parse_error = e.root_cause().downcast_ref::<httparse::Error>().map(ToString::to_string);
                tracing::debug!(error_kind = ?e.etype(), parse_error = parse_error.as_deref(), "unreadable request header");
                return Box::pin(refuse(http, Refusal::of(&e))).await;
            }
            Err(_) => return Box::pin(refuse(http, Refusal::Timeout)).await,
        }
        if http.req_header().raw_path().len() > MAX_TARGET {
            return Box::pin(refuse(http, Refusal::TargetTooLong)).await;
        }
        if let Some((budget, p)) = &probation
            && !self.prove(&http, budget, p).await
        {
            return Box::pin(reserved_for_keys(http, probation.as_ref())).await;
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

impl<A> Guarded<A> {
    /// Whether the request of a connection on probation carries a key in good standing within its share; if so, the
    /// connection keeps its place in the reserved share.
    async fn prove(&self, http: &ServerSession, budget: &ConnectionBudget, p: &Probation) -> bool {
        let standing = match &self.keys {
            Some(keys) => keys.standing(http).await,
            None => None,
        };
        standing.is_some_and(|s| budget.lock().reserve.proven(p, &s))
    }
}

/// `503` for a connection in the reserved share without a key in good standing, counted (and logged at
/// most once a second) with the connections turned away: a flood must not flood the log.
async fn reserved_for_keys(
    http: ServerSession,
    place: Option<&(Arc<ConnectionBudget>, Arc<Probation>)>,
) -> Option<ReusedHttpStream> {
    if let Some((budget, _)) = place {
        budget.refused(Full::Reserved);
    }
    Box::pin(refuse(http, Refusal::ReservedForKeys)).await
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
    /// The listener is full but for the share kept for requests with a valid API key, and this
    /// connection's request has none (or a newcomer took its place before it sent one).
    ReservedForKeys,
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
            Self::ReservedForKeys => Some(StatusCode::SERVICE_UNAVAILABLE),
            Self::Gone => None,
        }
    }

    fn as_str(self) -> &'static str {
        match self {
            Self::Malformed => "malformed request header",
            Self::HeaderTooLarge => "request header too large",
            Self::TargetTooLong => "request target too long",
            Self::Timeout => "request header not received in time",
            Self::ReservedForKeys => "listener full but for requests with an API key",
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
    if why != Refusal::ReservedForKeys {
        let peer = http.client_addr().and_then(|a| a.as_inet()).map(|a| a.ip());
        tracing::info!(peer = ?peer, reason = why.as_str(), "request refused before routing");
    }
    let status = why.status()?;
    let body = format!("{}\n", status.canonical_reason().unwrap_or("refused"));
    http.set_keepalive(None);
    let Ok(mut header) = ResponseHeader::build(status, Some(3)) else { return None };
    let retry = if why == Refusal::ReservedForKeys { Some(("retry-after", "1")) } else { None };
    let headers = [("content-type", "text/plain"), ("connection", "close")].into_iter().chain(retry);
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

// ---- connection caps ----------------------------------------------------------------------------

/// How many connections one listener holds at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnectionCaps {
    /// In all.
    pub total: usize,
    /// From one client address (an IPv6 /64: one subscriber's usual allocation).
    pub per_peer: usize,
}

/// The admin listener's own budget, apart from the public one: probes, a metrics scraper, an
/// operator's browser and `curl` need a few connections each.
pub const ADMIN_CAPS: ConnectionCaps = ConnectionCaps { total: 128, per_peer: 32 };

/// Time given to a connection turned away to take its `503`: written, then what the client
/// sent read and dropped until it closes (a close with unread bytes is a reset, which can lose
/// the answer on the client's side).
const TURN_AWAY_TIME: Duration = Duration::from_millis(500);
/// Connections turned away that may linger so at once, per listener; beyond, the `503` is
/// written (if the socket takes it at once) and the connection closed: a fast flood of new
/// connections then costs no more open files than the caps and this.
const LINGERING_MAX: usize = 64;
/// At most one log line a second per listener about connections turned away.
const REFUSAL_LOG_INTERVAL: Duration = Duration::from_secs(1);

/// The connections a listener holds, counted in all and per client.
pub struct ConnectionBudget {
    listener: &'static str,
    caps: ConnectionCaps,
    /// Counted against `total` only (the operator's own proxies: every client shares them).
    exempt: Vec<ipnet::IpNet>,
    open: Mutex<Open>,
    /// When connections were last logged as turned away, and how many since.
    refusals: Mutex<(Option<Instant>, u64)>,
    /// Connections turned away still draining (at most [`LINGERING_MAX`]).
    lingering: AtomicUsize,
}

#[derive(Default)]
struct Open {
    total: usize,
    per_peer: HashMap<IpAddr, usize>,
    /// The share kept for requests with a key in good standing (counted in `total` too).
    reserve: Reserve,
}

/// One connection's place in its listener's budget, given back when dropped.
pub struct Slot {
    budget: Arc<ConnectionBudget>,
    peer: Option<IpAddr>,
    /// In the reserved share.
    probation: Option<Arc<Probation>>,
}

/// Why a connection was turned away.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Full {
    Listener,
    Peer,
    /// Let into the reserved share, without a valid key.
    Reserved,
}

impl ConnectionBudget {
    /// `reserved` of the `caps.total` places are kept for requests with a key in good standing
    /// ([`reserve`]; the listener's app then needs a [`KeyCheck`]).
    pub fn new(listener: &'static str, caps: ConnectionCaps, reserved: usize, exempt: Vec<ipnet::IpNet>) -> Arc<Self> {
        let open = Mutex::new(Open { reserve: Reserve::new(reserved.min(caps.total)), ..Open::default() });
        let (refusals, lingering) = (Mutex::default(), Default::default());
        Arc::new(Self { listener, caps, exempt, open, refusals, lingering })
    }

    pub fn caps(&self) -> ConnectionCaps {
        self.caps
    }

    /// A place for a connection from `peer`, or why there is none.
    pub fn take(self: &Arc<Self>, peer: Option<IpAddr>) -> Result<Slot, Full> {
        let key = peer.filter(|ip| !self.exempt.iter().any(|net| net.contains(ip))).map(peer_key);
        let mut open = self.lock();
        let general = open.total - open.reserve.held.min(open.total);
        let reserved_only = general >= self.caps.total - open.reserve.places;
        if reserved_only && !open.reserve.has_room() {
            return Err(Full::Listener);
        }
        if let Some(key) = key
            && open.per_peer.get(&key).is_some_and(|mine| *mine >= self.caps.per_peer)
        {
            return Err(Full::Peer);
        }
        let probation = if reserved_only { open.reserve.admit() } else { None };
        if let Some(key) = key {
            *open.per_peer.entry(key).or_default() += 1;
        }
        open.total += 1;
        Ok(Slot { budget: self.clone(), peer: key, probation })
    }

    /// Connections held now.
    pub fn open(&self) -> usize {
        self.lock().total
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Open> {
        self.open.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Counts a connection turned away; logs (at most once a second) how many were.
    fn refused(&self, why: Full) {
        let mut refusals = self.refusals.lock().unwrap_or_else(|p| p.into_inner());
        refusals.1 += 1;
        if refusals.0.is_some_and(|at| at.elapsed() < REFUSAL_LOG_INTERVAL) {
            return;
        }
        let turned_away = std::mem::take(&mut refusals.1);
        refusals.0 = Some(Instant::now());
        drop(refusals);
        let reason = match why {
            Full::Listener => "listener full",
            Full::Peer => "too many connections from one client",
            Full::Reserved => "listener full but for requests with an API key",
        };
        tracing::warn!(
            listener = self.listener,
            open = self.open(),
            max_connections = self.caps.total,
            max_per_peer = self.caps.per_peer,
            turned_away,
            reason,
            "connections turned away with 503"
        );
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut open = self.budget.lock();
        open.total = open.total.saturating_sub(1);
        if let Some(p) = &self.probation {
            open.reserve.release(p);
        }
        if let Some(key) = self.peer
            && let Some(mine) = open.per_peer.get_mut(&key)
        {
            *mine -= 1;
            if *mine == 0 {
                open.per_peer.remove(&key);
            }
        }
    }
}

/// The address a client is counted under: IPv4 as it is (an IPv4-mapped IPv6 peer of a
/// dual-stack listener included), IPv6 by its /64.
fn peer_key(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => IpAddr::V6((u128::from(v6) & !((1u128 << 64) - 1)).into()),
        },
        v4 => v4,
    }
}

/// An HTTP app behind a [`ConnectionBudget`]: each connection holds a [`Slot`] for its whole
/// life (every request it carries); without one it gets `503` and is closed.
pub struct Capped<A> {
    pub app: Arc<A>,
    pub budget: Arc<ConnectionBudget>,
}

#[async_trait]
impl<A: HttpServerApp + Send + Sync + 'static> ServerApp for Capped<A> {
    async fn process_new(self: &Arc<Self>, stream: Stream, shutdown: &ShutdownWatch) -> Option<Stream> {
        let peer = stream.get_socket_digest().and_then(|d| d.peer_addr().and_then(|a| a.as_inet()).map(|a| a.ip()));
        match self.budget.take(peer) {
            Ok(slot) => {
                let place = slot.probation.clone().map(|p| (self.budget.clone(), p));
                let reused = ON_PROBATION.scope(place, ServerApp::process_new(&self.app, stream, shutdown)).await;
                drop(slot);
                reused
            }
            Err(why) => {
                self.budget.refused(why);
                let lingering = Lingering::enter(&self.budget.lingering);
                Box::pin(turn_away(stream, lingering.allowed)).await;
                None
            }
        }
    }

    async fn cleanup(&self) {
        ServerApp::cleanup(&*self.app).await;
    }
}

/// A connection counted among those turned away; `allowed` when fewer than [`LINGERING_MAX`]
/// others linger.
struct Lingering<'a> {
    count: &'a AtomicUsize,
    allowed: bool,
}

impl<'a> Lingering<'a> {
    fn enter(count: &'a AtomicUsize) -> Self {
        Self { count, allowed: count.fetch_add(1, Ordering::AcqRel) < LINGERING_MAX }
    }
}

impl Drop for Lingering<'_> {
    fn drop(&mut self) {
        self.count.fetch_sub(1, Ordering::AcqRel);
    }
}

/// `503` and closed, without reading a request: whatever the client sends is discarded (for
/// [`TURN_AWAY_TIME`] at most, and only when `linger`).
async fn turn_away(mut stream: Stream, linger: bool) {
    const BODY: &str = "Too many connections: try again later.\n";
    let answer = format!(
        "HTTP/1.1 503 Service Unavailable\r\ncontent-type: text/plain\r\ncontent-length: {}\r\n\
         retry-after: 1\r\nconnection: close\r\n\r\n{BODY}",
        BODY.len()
    );
    let time = if linger { TURN_AWAY_TIME } else { Duration::from_millis(50) };
    let _ = tokio::time::timeout(time, async {
        stream.write_all(answer.as_bytes()).await?;
        stream.flush().await?;
        AsyncWriteExt::shutdown(&mut stream).await?;
        if !linger {
            return Ok(());
        }
        let mut sink = vec![0u8; 4096];
        let mut discarded = 0;
        while discarded < 64 * 1024 {
            match stream.read(&mut sink).await? {
                0 => break,
                n => discarded += n,
            }
        }
        Ok::<_, std::io::Error>(())
    })
    .await;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> Option<IpAddr> {
        Some(s.parse().unwrap())
    }

    #[test]
    fn a_listener_holds_its_caps_in_all_and_per_client() {
        let budget = ConnectionBudget::new("test", ConnectionCaps { total: 5, per_peer: 2 }, 0, Vec::new());
        let a1 = budget.take(ip("192.0.2.1")).unwrap();
        let _a2 = budget.take(ip("192.0.2.1")).unwrap();
        assert_eq!(budget.take(ip("192.0.2.1")).err(), Some(Full::Peer));
        // The same client through a dual-stack listener is the same client.
        assert_eq!(budget.take(ip("::ffff:192.0.2.1")).err(), Some(Full::Peer));
        let _b = budget.take(ip("2001:db8::1")).unwrap();
        let _b2 = budget.take(ip("2001:db8::ffff:2")).unwrap();
        assert_eq!(budget.take(ip("2001:db8::3")).err(), Some(Full::Peer), "one /64 is one client");
        let _c = budget.take(None).unwrap();
        assert_eq!(budget.open(), 5);
        assert_eq!(budget.take(ip("198.51.100.7")).err(), Some(Full::Listener));
        drop(a1);
        assert_eq!(budget.open(), 4);
        let _a3 = budget.take(ip("192.0.2.1")).unwrap();
    }

    #[test]
    fn past_the_general_share_connections_come_in_on_probation_and_newcomers_displace_them() {
        let budget = ConnectionBudget::new("test", ConnectionCaps { total: 4, per_peer: 4 }, 2, Vec::new());
        let general: Vec<_> = (0..2).map(|_| budget.take(ip("192.0.2.1")).unwrap()).collect();
        assert!(general.iter().all(|s| s.probation.is_none()));
        let (a, b) = (budget.take(ip("192.0.2.2")).unwrap(), budget.take(ip("192.0.2.2")).unwrap());
        assert!(a.probation.is_some() && b.probation.is_some());
        let key = |id: &str| Standing { key_id: id.to_owned(), gateway: true };
        assert!(budget.lock().reserve.proven(b.probation.as_ref().unwrap(), &key("b")));
        let c = budget.take(ip("192.0.2.3")).unwrap(); // takes a's place, not b's
        assert!(c.probation.is_some());
        assert!(budget.lock().reserve.proven(c.probation.as_ref().unwrap(), &key("c")));
        assert_eq!(budget.take(ip("192.0.2.4")).err(), Some(Full::Listener), "every reserved place proven");
        drop((a, general));
        assert_eq!(budget.open(), 2);
        assert!(budget.take(ip("192.0.2.4")).unwrap().probation.is_none(), "the general share has room again");
    }

    #[test]
    fn exempt_proxies_count_only_in_all() {
        let proxy = "10.0.0.0/8".parse().unwrap();
        let budget = ConnectionBudget::new("test", ConnectionCaps { total: 3, per_peer: 1 }, 0, vec![proxy]);
        let held: Vec<_> = (0..3).map(|_| budget.take(ip("10.1.2.3")).unwrap()).collect();
        assert_eq!(budget.take(ip("10.1.2.3")).err(), Some(Full::Listener));
        drop(held);
        assert_eq!(budget.open(), 0);
        assert!(budget.lock().per_peer.is_empty());
    }
}
