//! A refusal of the check, said in the signup's protocol at the edge (core's `LocalReply::render`).

use email_verdict_core::signup::{LocalReply, Protocol, Via};
use http::{Response, StatusCode};

use super::response;

/// A [`LocalReply`] with its body owned, and velocity's `retry-after`.
pub(super) struct Refusal {
    pub status: u16,
    pub details: &'static str,
    pub body: Vec<u8>,
    pub retry_after: Option<u64>,
}

impl Refusal {
    pub fn of(reply: &LocalReply<'_>) -> Self {
        Self { status: reply.status, details: reply.details, body: reply.body.to_vec(), retry_after: None }
    }

    /// In the words of `protocol` (core's `LocalReply::render`), as a denial: never a `200`,
    /// which Envoy would read as allow. Envoy hands its status, headers and body to the client
    /// (a gRPC request's as `200` with our `grpc-status`).
    pub fn render(&self, protocol: &Protocol) -> Response<Vec<u8>> {
        let reply = LocalReply { status: self.status, details: self.details, body: &self.body };
        let out = reply.render(protocol, Via::ExtAuthz, None);
        let retry_after = self.retry_after.map(|s| s.to_string());
        let headers: Vec<(&str, &str)> = out
            .headers
            .iter()
            .map(|(n, v)| (*n, v.as_str()))
            .chain(retry_after.as_deref().map(|s| ("retry-after", s)))
            .collect();
        let status = StatusCode::from_u16(out.status).ok().filter(|s| *s != StatusCode::OK);
        response(status.unwrap_or(StatusCode::FORBIDDEN), &headers, out.body)
    }
}
