//! The operator dashboard on the admin listener (the spec's "API Keys dashboard"): keys (list,
//! create — the new key shown once —, revoke, with plan, IP allowlist and today's usage) and
//! the review queue with its decision buttons.
//!
//! Access: with `--admin-token`, a login form takes the token and opens a session (cookie
//! `HttpOnly; SameSite=Strict`); without one (a loopback admin listener only) it is open.
//! CSRF: every form carries the session's token, checked on every POST, and a POST whose
//! `Origin` (or, without it, `Referer`) is not this host is refused. Every change goes through
//! the same code as the admin API and the CLI (key creation, `review::set_decision`).

mod actions;
mod page;
mod reviews;
pub mod session;

use std::net::IpAddr;
use std::sync::Arc;

use http::{Method, Response, StatusCode};
use pingora::protocols::http::ServerSession;

use crate::admin::Admin;
use crate::pages::templates::Templates;
use session::{Session, Sessions, same_secret};

pub struct Dashboard {
    pub sessions: Sessions,
    pub templates: Arc<Templates>,
}

impl Dashboard {
    pub fn new(templates: Arc<Templates>) -> Self {
        Self { sessions: Sessions::default(), templates }
    }
}

/// What a dashboard request carries.
pub struct DashRequest {
    pub method: Method,
    pub path: String,
    /// The query string (the review pages' filters and paging).
    pub query: String,
    pub form: Vec<(String, String)>,
    cookie: Option<String>,
    origin: Option<String>,
    referer: Option<String>,
    host: Option<String>,
    /// For the admin token's guess throttle.
    pub client: Option<IpAddr>,
}

impl DashRequest {
    pub fn field(&self, name: &str) -> &str {
        self.form.iter().find(|(k, _)| k == name).map_or("", |(_, v)| v.as_str())
    }
}

pub async fn serve(
    admin: &Admin,
    session: &mut ServerSession,
    method: &Method,
    path: &str,
    client: Option<IpAddr>,
) -> Response<Vec<u8>> {
    if path == "/dashboard/site.css" {
        return crate::pages::respond::stylesheet();
    }
    let request = match read(session, method, path, client).await {
        Ok(r) => r,
        Err(e) => return page::plain(StatusCode::BAD_REQUEST, &e),
    };
    let dash = &admin.dashboard;
    let Ok(mut sess) = dash.sessions.get_or_create(request.cookie.as_deref()) else {
        return page::plain(StatusCode::INTERNAL_SERVER_ERROR, "no randomness for a session");
    };
    if admin.token_hash.is_none() && !sess.authenticated {
        dash.sessions.update(&sess.id, |s| s.authenticated = true);
        sess.authenticated = true;
    }
    let mut response = route(admin, &request, &sess).await;
    // A new session gets its cookie (a login sets its own).
    let known = request.cookie.as_deref().is_some_and(|c| c.contains(&sess.id));
    if !known
        && !response.headers().contains_key("set-cookie")
        && let Ok(v) = session::set_cookie(&sess.id).parse()
    {
        response.headers_mut().insert("set-cookie", v);
    }
    tracing::info!(method = %method, status = response.status().as_u16(), "dashboard request");
    response
}

async fn route(admin: &Admin, request: &DashRequest, sess: &Session) -> Response<Vec<u8>> {
    let segments: Vec<&str> = request.path.trim_end_matches('/').split('/').skip(2).collect();
    if request.method == Method::POST {
        if let Err(why) = check_post(request, sess) {
            tracing::warn!(reason = why, "dashboard POST refused");
            return page::plain(StatusCode::FORBIDDEN, why);
        }
    } else if !matches!(request.method, Method::GET | Method::HEAD) {
        return page::plain(StatusCode::METHOD_NOT_ALLOWED, "method not allowed");
    }
    let post = request.method == Method::POST;
    match (post, segments.as_slice()) {
        (false, []) if sess.authenticated => page::home(admin, sess).await,
        (false, []) => page::login(admin, sess, None),
        (true, ["login"]) => actions::login(admin, request, sess),
        (_, _) if !sess.authenticated => page::see_other("/dashboard", None),
        (true, ["logout"]) => actions::logout(admin, sess),
        (true, ["keys"]) => actions::create_key(admin, request, sess).await,
        (true, ["keys", id, "revoke"]) => actions::revoke(admin, request, sess, id).await,
        (true, ["keys", id, "plan"]) => actions::change_plan(admin, request, sess, id).await,
        (true, ["reviews", domain]) => actions::decide(admin, request, sess, domain).await,
        (false, ["reviews"]) => reviews::queue_page(admin, sess, &request.query).await,
        (false, ["servers", server]) => reviews::server_page(admin, sess, &percent_decode(server)).await,
        (true, ["servers", server]) => actions::mark_server(admin, request, sess, &percent_decode(server)).await,
        _ => page::plain(StatusCode::NOT_FOUND, "no such dashboard page"),
    }
}

/// The CSRF defences of a POST: same origin (when the browser says; the admin listener's guard
/// checked it already, this keeps the dashboard safe on its own), and the session's token.
fn check_post(request: &DashRequest, sess: &Session) -> Result<(), &'static str> {
    let host = request.host.as_deref().unwrap_or_default();
    let same = |url: &str| crate::admin::guard::same_origin(url, host);
    match (&request.origin, &request.referer) {
        (Some(origin), _) if !same(origin) => return Err("cross-origin request"),
        (None, Some(referer)) if !same(referer) => return Err("cross-site referer"),
        _ => {}
    }
    if !same_secret(request.field("csrf"), &sess.csrf) {
        return Err("missing or stale form token; reload the dashboard");
    }
    Ok(())
}

async fn read(
    session: &mut ServerSession,
    method: &Method,
    path: &str,
    client: Option<IpAddr>,
) -> Result<DashRequest, String> {
    let header = |name: http::HeaderName| {
        session.req_header().headers.get(name).and_then(|v| v.to_str().ok()).map(str::to_owned)
    };
    let (cookie, origin, referer) =
        (header(http::header::COOKIE), header(http::header::ORIGIN), header(http::header::REFERER));
    let host = header(http::header::HOST);
    let form = if *method == Method::POST {
        let body = crate::admin::read_body(session).await.map_err(|e| e.message().to_owned())?;
        form_urlencoded::parse(&body).map(|(k, v)| (k.into_owned(), v.into_owned())).collect()
    } else {
        Vec::new()
    };
    let query = session.req_header().uri.query().unwrap_or_default().to_owned();
    Ok(DashRequest {
        method: method.clone(),
        path: path.to_owned(),
        query,
        form,
        cookie,
        origin,
        referer,
        host,
        client,
    })
}

fn percent_decode(segment: &str) -> String {
    percent_encoding::percent_decode_str(segment).decode_utf8_lossy().into_owned()
}
