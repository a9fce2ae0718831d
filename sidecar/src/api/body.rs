//! Reading a request body whole, bounded: for the endpoints that take one (`/ext_authz`,
//! `POST /api/v1/domains`).

use pingora::protocols::http::ServerSession;

/// Why a body was not read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unread {
    TooLarge,
    /// The connection failed or the framing was broken.
    Failed,
}

/// The whole body, at most `max` bytes. A body not read to its end leaves the connection
/// unusable for another request, so it is not kept alive.
pub async fn read_body(session: &mut ServerSession, max: usize) -> Result<Vec<u8>, Unread> {
    let mut body = Vec::new();
    loop {
        match session.read_request_body().await {
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
