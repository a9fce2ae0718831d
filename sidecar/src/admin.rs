//! The admin listener. For now: `GET /healthz`. Key management, the review queue and metrics
//! come here (they need the admin token and must never share the public listener).

use async_trait::async_trait;
use http::{Response, StatusCode};
use pingora::apps::http_app::ServeHttp;
use pingora::protocols::http::ServerSession;

pub struct AdminApp;

#[async_trait]
impl ServeHttp for AdminApp {
    async fn response(&self, session: &mut ServerSession) -> Response<Vec<u8>> {
        let (status, body) = match session.req_header().uri.path() {
            "/healthz" => (StatusCode::OK, "ok"),
            _ => (StatusCode::NOT_FOUND, "not found"),
        };
        Response::builder()
            .status(status)
            .header(http::header::CONTENT_TYPE, "text/plain")
            .header(http::header::CONTENT_LENGTH, body.len())
            .body(body.as_bytes().to_vec())
            .unwrap_or_else(|_| Response::new(Vec::new()))
    }
}
