//! HTTP answers of the public pages: the headers every page carries (CSP without scripts or
//! inline styles, nosniff, no referrer, no framing), caching by kind of answer, redirects.

use http::{Response, StatusCode};

use super::lang::Lang;
use super::templates::SITE_CSS;

/// No script at all; styles only from our own stylesheet; forms only to ourselves.
pub const CSP: &str =
    "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'";

/// A domain's page: the same for everyone, a few minutes old at most.
pub const CACHE_PUBLIC: &str = "public, max-age=300";
/// Errors, re-check answers, pages whose URL holds an email address: never stored.
pub const CACHE_NONE: &str = "no-store";
/// Language redirects: they depend on `Accept-Language` (said by `Vary`).
pub const CACHE_REDIRECT: &str = "private, max-age=0";

pub type Headers = Vec<(&'static str, String)>;

/// An HTML page with the security headers.
pub fn html(status: StatusCode, lang: Lang, body: String, cache: &str, extra: Headers) -> Response<Vec<u8>> {
    let mut headers = security_headers();
    headers.push(("Content-Type", "text/html; charset=utf-8".into()));
    headers.push(("Content-Language", lang.code().into()));
    headers.push(("Cache-Control", cache.into()));
    headers.extend(extra);
    build(status, headers, body.into_bytes())
}

/// A redirect to `location` (a path on this server).
pub fn redirect(status: StatusCode, location: &str, cache: &str, extra: Headers) -> Response<Vec<u8>> {
    let mut headers = security_headers();
    headers.push(("Location", location.into()));
    headers.push(("Cache-Control", cache.into()));
    headers.extend(extra);
    build(status, headers, Vec::new())
}

/// `/static/site.css`.
pub fn stylesheet() -> Response<Vec<u8>> {
    let headers = vec![
        ("Content-Type", "text/css; charset=utf-8".into()),
        ("Cache-Control", "public, max-age=3600".into()),
        ("X-Content-Type-Options", "nosniff".into()),
    ];
    build(StatusCode::OK, headers, SITE_CSS.as_bytes().to_vec())
}

/// `/api/v1/openapi.yaml`: the API's description, as the pages' footer links it. Plain text,
/// so that a browser shows it rather than saving it.
pub fn api_description() -> Response<Vec<u8>> {
    let mut headers = security_headers();
    headers.push(("Content-Type", "text/plain; charset=utf-8".into()));
    headers.push(("Cache-Control", "public, max-age=3600".into()));
    build(StatusCode::OK, headers, API_DESCRIPTION.as_bytes().to_vec())
}

/// `docs/openapi.yaml`, checked against the real server by `tests/openapi.rs`.
const API_DESCRIPTION: &str = include_str!("../../../docs/openapi.yaml");

pub fn security_headers() -> Headers {
    vec![
        ("Content-Security-Policy", CSP.into()),
        ("X-Content-Type-Options", "nosniff".into()),
        // Page URLs may hold an email address: never pass them on to another site.
        ("Referrer-Policy", "no-referrer".into()),
        ("X-Frame-Options", "DENY".into()),
    ]
}

pub fn build(status: StatusCode, headers: Headers, body: Vec<u8>) -> Response<Vec<u8>> {
    let mut builder = Response::builder().status(status).header(http::header::CONTENT_LENGTH, body.len());
    for (name, value) in &headers {
        builder = builder.header(*name, value.as_str());
    }
    builder.body(body).unwrap_or_else(|_| Response::new(Vec::new()))
}
