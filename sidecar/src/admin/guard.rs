//! What the admin listener checks before any handler, against a browser that an attacker
//! steers (cross-site requests, DNS rebinding) and against token guessing:
//! - without an admin token (a loopback listener), `Host` must name this machine: `localhost`
//!   or an IP literal. A rebound DNS name (`rebind.evil.example` pointing at 127.0.0.1) is
//!   refused, so a page of that name cannot talk to the open admin API.
//! - a request that changes something (any method but GET/HEAD) from another origin is refused:
//!   `Origin` (else `Referer`) must name this host, and `Sec-Fetch-Site` must not be
//!   `cross-site`/`same-site`.
//! - an admin API request with a body must say `application/json`: a cross-site `text/plain`
//!   or form POST is what a browser sends without asking first.
//! - after [`MAX_GUESSES`] wrong tokens in [`GUESS_WINDOW`] from one client (IPv6 per /64), that
//!   client's next wrong tokens get 429 instead of 401, until the window has passed. The right
//!   token always passes: behind a TLS proxy every client has the proxy's address, and anyone
//!   could otherwise lock the operator out with ten wrong tokens (issue 23). So the throttle
//!   bounds what failures cost and tells a guesser to stop; what makes guessing hopeless is the
//!   token's length (a long random one: `openssl rand -hex 32`).

use std::net::IpAddr;
use std::num::NonZeroUsize;
use std::sync::Mutex;
use std::time::Duration;

use http::{HeaderMap, Method, StatusCode};
use lru::LruCache;
use tokio::time::Instant;

/// Wrong tokens one client may present per [`GUESS_WINDOW`].
pub const MAX_GUESSES: u32 = 10;
pub const GUESS_WINDOW: Duration = Duration::from_secs(60);
/// Clients tracked; the least recently seen is forgotten first.
const TRACKED: usize = 4096;

/// A request the guard refuses: status, stable code, message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refused(pub StatusCode, pub &'static str, pub &'static str);

/// The checks that need only the request's method and headers. `open` is true when no admin
/// token is set; `api` when the path is under `/admin/`.
pub fn check(method: &Method, headers: &HeaderMap, open: bool, api: bool) -> Result<(), Refused> {
    let text = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    let host = text("host");
    if open && !host.is_none_or(is_local_host) {
        return Err(Refused(StatusCode::FORBIDDEN, "forbidden", "Host must be localhost or an IP address"));
    }
    if matches!(*method, Method::GET | Method::HEAD) {
        return Ok(());
    }
    let host = host.unwrap_or_default();
    let foreign = match (text("origin"), text("referer")) {
        (Some(origin), _) => !same_origin(origin, host),
        (None, Some(referer)) => !same_origin(referer, host),
        (None, None) => false,
    };
    if foreign || matches!(text("sec-fetch-site"), Some("cross-site" | "same-site")) {
        return Err(Refused(StatusCode::FORBIDDEN, "forbidden", "cross-origin requests are refused"));
    }
    let has_body = headers.contains_key("transfer-encoding")
        || text("content-length").is_some_and(|l| l.trim().parse::<u64>().map_or(true, |n| n > 0));
    if api && has_body && !text("content-type").is_some_and(is_json) {
        return Err(Refused(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "unsupported_media_type",
            "admin requests with a body must be Content-Type: application/json",
        ));
    }
    Ok(())
}

/// `localhost`, `*.localhost` (RFC 6761: always this machine) or an IP literal, with any port.
fn is_local_host(host: &str) -> bool {
    let name = match host.strip_prefix('[') {
        Some(v6) => return v6.split_once(']').is_some_and(|(ip, _)| ip.parse::<std::net::Ipv6Addr>().is_ok()),
        None => host.rsplit_once(':').map_or(host, |(name, _)| name),
    };
    let name = name.trim_end_matches('.').to_ascii_lowercase();
    name == "localhost" || name.ends_with(".localhost") || name.parse::<std::net::Ipv4Addr>().is_ok()
}

/// Whether `url` (an `Origin` or `Referer`) is `http(s)://` + `host` (+ a path).
pub fn same_origin(url: &str, host: &str) -> bool {
    !host.is_empty()
        && ["http://", "https://"].iter().any(|scheme| {
            url.strip_prefix(scheme)
                .and_then(|rest| rest.strip_prefix(host))
                .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
        })
}

fn is_json(content_type: &str) -> bool {
    let essence = content_type.split(';').next().unwrap_or_default().trim().to_ascii_lowercase();
    essence == "application/json" || (essence.starts_with("application/") && essence.ends_with("+json"))
}

/// Wrong admin tokens per client (the admin API and the dashboard's login share it).
pub struct GuessThrottle {
    clients: Mutex<LruCache<IpAddr, (Instant, u32)>>,
}

impl Default for GuessThrottle {
    fn default() -> Self {
        Self { clients: Mutex::new(LruCache::new(NonZeroUsize::new(TRACKED).unwrap_or(NonZeroUsize::MIN))) }
    }
}

impl GuessThrottle {
    /// Counts a wrong token from `client`; `Some(seconds)` when that client is now past
    /// [`MAX_GUESSES`] in the window: the answer is then 429 with that `Retry-After`, not 401.
    /// Only failures are counted and refused: a right token is never asked about here.
    pub fn wrong(&self, client: Option<IpAddr>) -> Option<u64> {
        let key = crate::pages::client_limit::network_of(client?);
        let mut clients = self.lock();
        let now = Instant::now();
        let (start, wrong) = match clients.get_mut(&key) {
            Some((start, wrong)) if now.duration_since(*start) < GUESS_WINDOW => {
                *wrong = wrong.saturating_add(1);
                (*start, *wrong)
            }
            _ => {
                clients.put(key, (now, 1));
                (now, 1)
            }
        };
        let left = GUESS_WINDOW.saturating_sub(now.duration_since(start));
        (wrong > MAX_GUESSES).then(|| left.as_secs().max(1))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, LruCache<IpAddr, (Instant, u32)>> {
        self.clients.lock().unwrap_or_else(|p| p.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        pairs.iter().map(|(k, v)| (http::HeaderName::from_static(k), v.parse().unwrap())).collect()
    }

    fn check_with(method: Method, pairs: &[(&'static str, &str)], open: bool) -> Result<(), &'static str> {
        check(&method, &headers(pairs), open, true).map_err(|r| r.2)
    }

    #[test]
    fn open_listener_wants_a_local_host() {
        for host in ["127.0.0.1:8081", "localhost:8081", "LOCALHOST", "[::1]:8081", "a.localhost", "10.1.2.3"] {
            assert_eq!(check_with(Method::GET, &[("host", host)], true), Ok(()), "{host}");
        }
        for host in ["rebind.evil.example", "rebind.evil.example:8081", "localhost.evil.example", "[zz]"] {
            assert!(check_with(Method::GET, &[("host", host)], true).is_err(), "{host}");
        }
        assert_eq!(check_with(Method::GET, &[("host", "admin.internal:8081")], false), Ok(()), "a token guards it");
    }

    #[test]
    fn cross_origin_writes_are_refused() {
        let host = ("host", "127.0.0.1:8081");
        let json = ("content-type", "application/json");
        let len = ("content-length", "20");
        let evil = ("origin", "https://evil.example");
        assert!(check_with(Method::POST, &[host, json, len, evil], true).is_err());
        assert!(check_with(Method::POST, &[host, json, len, evil], false).is_err());
        assert!(check_with(Method::DELETE, &[host, ("referer", "https://evil.example/x")], false).is_err());
        assert!(check_with(Method::POST, &[host, json, len, ("sec-fetch-site", "cross-site")], false).is_err());
        assert_eq!(check_with(Method::POST, &[host, json, len, ("origin", "http://127.0.0.1:8081")], true), Ok(()));
        assert_eq!(check_with(Method::POST, &[host, json, len], true), Ok(()), "curl sends no Origin");
    }

    #[test]
    fn admin_bodies_must_be_json() {
        let host = ("host", "127.0.0.1:8081");
        let len = ("content-length", "20");
        assert!(check_with(Method::POST, &[host, len, ("content-type", "text/plain")], true).is_err());
        assert!(check_with(Method::POST, &[host, len], true).is_err());
        assert!(
            check_with(Method::PATCH, &[host, len, ("content-type", "application/x-www-form-urlencoded")], false)
                .is_err()
        );
        assert_eq!(
            check_with(Method::POST, &[host, len, ("content-type", "Application/JSON; charset=utf-8")], true),
            Ok(())
        );
        assert_eq!(check_with(Method::POST, &[host, ("content-length", "0")], true), Ok(()), "revoke has no body");
        let form = headers(&[host, len, ("content-type", "application/x-www-form-urlencoded")]);
        assert_eq!(check(&Method::POST, &form, true, false), Ok(()), "the dashboard posts forms");
    }

    #[tokio::test(start_paused = true)]
    async fn wrong_tokens_are_throttled_per_client() {
        let throttle = GuessThrottle::default();
        let (a, b) = (Some("192.0.2.1".parse().unwrap()), Some("192.0.2.2".parse().unwrap()));
        for i in 0..MAX_GUESSES {
            assert_eq!(throttle.wrong(a), None, "wrong token {i}: 401");
        }
        assert!(throttle.wrong(a).is_some_and(|wait| (1..=60).contains(&wait)), "past the limit: 429");
        assert!(throttle.wrong(a).is_some(), "and the next ones");
        assert_eq!(throttle.wrong(b), None, "another client is not concerned");
        tokio::time::advance(GUESS_WINDOW).await;
        assert_eq!(throttle.wrong(a), None, "a new window");
        assert_eq!(throttle.wrong(None), None, "no address: nothing to count");
    }
}
