//! Reading a request body whole, bounded in size and in time: for the endpoints that take one
//! (`/ext_authz`, `POST /api/v1/domains`), each only after the caller's key was accepted.
//!
//! Time: at most [`BODY_IDLE`] without a byte, and [`BODY_TIME`] for the whole body (Pingora
//! alone waits 60 s per read, so a client trickling a byte a minute held its connection, and a
//! place in the listener's budget, forever). Envoy sends a check's buffered body at once; an
//! API client has 100 KiB/s at least for a 1 MiB batch.

use std::time::Duration;

use pingora::protocols::http::ServerSession;
use tokio::time::Instant;

/// The longest silence while a body is read.
pub const BODY_IDLE: Duration = Duration::from_secs(5);
/// The longest time to read a whole body.
pub const BODY_TIME: Duration = Duration::from_secs(10);

/// Why a body was not read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unread {
    TooLarge,
    /// The connection failed or the framing was broken.
    Failed,
    /// Not received within [`BODY_IDLE`] / [`BODY_TIME`].
    TimedOut,
}

impl Unread {
    /// What an API caller is told (`invalid_input`): the same words for every endpoint.
    pub fn message(self, max: usize) -> String {
        match self {
            Unread::TooLarge => format!("the body is larger than {max} bytes"),
            Unread::Failed => "the body could not be read".to_owned(),
            Unread::TimedOut => format!(
                "the body was not received in time ({} s without a byte, {} s in all)",
                BODY_IDLE.as_secs(),
                BODY_TIME.as_secs()
            ),
        }
    }
}

/// The whole body, at most `max` bytes. A body not read to its end leaves the connection
/// unusable for another request, so it is not kept alive.
pub async fn read_body(session: &mut ServerSession, max: usize) -> Result<Vec<u8>, Unread> {
    read_body_within(session, max, BODY_IDLE, BODY_TIME).await
}

async fn read_body_within(
    session: &mut ServerSession,
    max: usize,
    idle: Duration,
    whole: Duration,
) -> Result<Vec<u8>, Unread> {
    let deadline = Instant::now() + whole;
    let mut body = Vec::new();
    loop {
        let next = (Instant::now() + idle).min(deadline);
        let read = match tokio::time::timeout_at(next, session.read_request_body()).await {
            Ok(read) => read,
            Err(_) => {
                session.set_keepalive(None);
                return Err(Unread::TimedOut);
            }
        };
        match read {
            Ok(Some(chunk)) if body.len() + chunk.len() > max => {
                session.set_keepalive(None);
                return Err(Unread::TooLarge);
            }
            Ok(Some(chunk)) => body.extend_from_slice(&chunk),
            Ok(None) => return Ok(body),
            Err(_) => {
                session.set_keepalive(None);
                return Err(Unread::Failed);
            }
        }
    }
}
