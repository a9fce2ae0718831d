//! The dashboard over plain HTTP: login with the admin token, session cookie attributes, and
//! the CSRF defences (form token, Origin) on every POST.

use email_verdict_tests::{Request, Response, Sidecar, start_with};

const TOKEN: &str = "dashboard-test-token";

fn send(sc: &Sidecar, req: Request) -> Response {
    req.send(sc.admin_addr())
}

/// `(cookie, csrf)` of a fresh dashboard session (GET /dashboard).
fn session(sc: &Sidecar) -> (String, String) {
    let resp = send(sc, Request::get("/dashboard"));
    assert_eq!(resp.status, 200, "{resp}");
    let set = resp.header("set-cookie").unwrap_or_default().to_owned();
    assert!(set.contains("HttpOnly") && set.contains("SameSite=Strict") && set.contains("Path=/dashboard"), "{set}");
    (set.split(';').next().unwrap_or_default().to_owned(), csrf_of(&resp.text()))
}

fn csrf_of(html: &str) -> String {
    html.split("name=\"csrf\" value=\"").nth(1).and_then(|r| r.split('"').next()).unwrap_or_default().to_owned()
}

fn form_post(path: &str, cookie: &str, origin: Option<&str>, body: &str) -> Request {
    let mut req = Request::new("POST", path)
        .header("Cookie", cookie)
        .header("Content-Type", "application/x-www-form-urlencoded")
        .body(body.as_bytes());
    if let Some(o) = origin {
        req = req.header("Origin", o);
    }
    req
}

#[test]
fn dashboard_needs_the_token_and_refuses_cross_site_posts() {
    let (sc, _nsd) = start_with(|b| b.args(&["--admin-token", TOKEN]));
    let here = format!("http://{}", sc.admin_addr());
    let (cookie, csrf) = session(&sc);
    let login_form = send(&sc, Request::get("/dashboard").header("Cookie", &cookie)).text();
    assert!(login_form.contains("name=\"token\"") && !login_form.contains("API keys"), "a login form first");
    let create = "plan=basic&name=evil";
    let resp = send(&sc, form_post("/dashboard/keys", &cookie, Some(&here), &format!("csrf={csrf}&{create}")));
    assert_eq!((resp.status, resp.header("location")), (303, Some("/dashboard")), "not logged in: back to login");
    let wrong = send(&sc, form_post("/dashboard/login", &cookie, Some(&here), &format!("csrf={csrf}&token=nope")));
    assert_eq!(wrong.status, 401, "{wrong}");
    let evil = send(
        &sc,
        form_post("/dashboard/login", &cookie, Some("http://evil.example"), &format!("csrf={csrf}&token={TOKEN}")),
    );
    assert_eq!(evil.status, 403, "login from another origin: {evil}");
    let login = send(&sc, form_post("/dashboard/login", &cookie, Some(&here), &format!("csrf={csrf}&token={TOKEN}")));
    assert_eq!(login.status, 303, "{login}");
    let new_cookie = login.header("set-cookie").unwrap_or_default().split(';').next().unwrap_or_default().to_owned();
    assert_ne!(new_cookie, cookie, "a new session id at login");
    let home = send(&sc, Request::get("/dashboard").header("Cookie", &new_cookie)).text();
    assert!(home.contains("API keys"), "{home}");
    let csrf = csrf_of(&home);
    for (token, origin, why) in [
        ("", Some(here.as_str()), "no form token"),
        ("0000", Some(here.as_str()), "a wrong form token"),
        (csrf.as_str(), Some("http://evil.example"), "another Origin"),
        (csrf.as_str(), Some("null"), "an opaque Origin"),
    ] {
        let resp = send(&sc, form_post("/dashboard/keys", &new_cookie, origin, &format!("csrf={token}&{create}")));
        assert_eq!(resp.status, 403, "{why}: {resp}");
    }
    let referer = form_post("/dashboard/keys", &new_cookie, None, &format!("csrf={csrf}&{create}"))
        .header("Referer", "http://evil.example/page");
    assert_eq!(send(&sc, referer).status, 403, "a foreign Referer without Origin");
    assert!(sc.cli().list().iter().all(|k| k.name != "evil"), "nothing was created");
    let ok =
        send(&sc, form_post("/dashboard/keys", &new_cookie, Some(&here), &format!("csrf={csrf}&plan=pro&name=good")));
    assert_eq!(ok.status, 303, "{ok}");
    assert_eq!(sc.cli().row_named("good").plan, "pro");
    let page = send(&sc, Request::get("/dashboard").header("Cookie", &new_cookie));
    assert_eq!(page.header("cache-control"), Some("no-store"));
    assert!(page.header("content-security-policy").is_some_and(|c| c.contains("frame-ancestors 'none'")));
    let api = send(&sc, Request::get("/admin/v1/keys").header("Cookie", &new_cookie));
    assert_eq!(api.status, 401, "the session is for the dashboard only; the admin API still wants the token");
}

/// A logged-in dashboard session on a sidecar with an admin token: `(cookie, csrf, here)`.
fn logged_in(sc: &Sidecar) -> (String, String, String) {
    let here = format!("http://{}", sc.admin_addr());
    let (cookie, csrf) = session(sc);
    let login = send(sc, form_post("/dashboard/login", &cookie, Some(&here), &format!("csrf={csrf}&token={TOKEN}")));
    assert_eq!(login.status, 303, "{login}");
    let cookie = login.header("set-cookie").unwrap_or_default().split(';').next().unwrap_or_default().to_owned();
    let home = send(sc, Request::get("/dashboard").header("Cookie", &cookie));
    (cookie.clone(), csrf_of(&home.text()), here)
}

/// Issue 25 §3: the admin listener's `/` answered the admin API's JSON 401; it leads to the
/// dashboard now (with or without a token), and the API's paths are as they were.
#[test]
fn the_admin_listeners_root_leads_to_the_dashboard() {
    for token in [Some(TOKEN), None] {
        let (sc, _nsd) = start_with(|b| match token {
            Some(t) => b.args(&["--admin-token", t]),
            None => b,
        });
        let resp = send(&sc, Request::get("/"));
        assert_eq!((resp.status, resp.header("location")), (302, Some("/dashboard")), "token {token:?}: {resp}");
        assert_eq!(send(&sc, Request::new("HEAD", "/")).status, 302);
        let api = send(&sc, Request::get("/admin/v1/nope"));
        assert_ne!(api.status, 302, "{api}");
    }
}

/// Issue 25 §3: the Revoke button revoked at once. Without JavaScript (the dashboard has none):
/// its POST now answers a page naming the key with a second button (`confirm=yes`) that revokes.
#[test]
fn revoking_a_key_asks_first() {
    let (sc, _nsd) = start_with(|b| b.args(&["--admin-token", TOKEN]));
    let (cookie, csrf, here) = logged_in(&sc);
    let id = sc.cli().row_named("test-0").id;
    let target = format!("/dashboard/keys/{id}/revoke");
    let ask = send(&sc, form_post(&target, &cookie, Some(&here), &format!("csrf={csrf}")));
    assert_eq!((ask.status, ask.header("cache-control")), (200, Some("no-store")), "{ask}");
    let page = ask.text();
    assert!(page.contains(&format!("<h1>Revoke key {id}?</h1>")), "{page}");
    assert!(page.contains("name=\"confirm\" value=\"yes\"") && page.contains("href=\"/dashboard\""), "{page}");
    assert!(!page.contains("<script"), "no script");
    assert_eq!(sc.cli().row_named("test-0").status, "active", "asking revokes nothing");
    let wrong = send(&sc, form_post(&target, &cookie, Some(&here), &format!("csrf={csrf}&confirm=no")));
    assert_eq!(wrong.status, 200, "{wrong}");
    assert_eq!(sc.cli().row_named("test-0").status, "active");
    let evil = send(&sc, form_post(&target, &cookie, Some("http://evil.example"), &format!("csrf={csrf}&confirm=yes")));
    assert_eq!(evil.status, 403, "the confirmation is a POST like any other: {evil}");
    let done = send(&sc, form_post(&target, &cookie, Some(&here), &format!("csrf={csrf}&confirm=yes")));
    assert_eq!((done.status, done.header("location")), (303, Some("/dashboard")), "{done}");
    assert_eq!(sc.cli().row_named("test-0").status, "revoked");
    let home = send(&sc, Request::get("/dashboard").header("Cookie", &cookie)).text();
    assert!(home.contains(&format!("Key {id} revoked.")), "{home}");
    let none = send(&sc, form_post("/dashboard/keys/nosuchkey/revoke", &cookie, Some(&here), &format!("csrf={csrf}")));
    assert_eq!(none.status, 404, "{none}");
}

/// Issue 25 §3: a refused key creation (a wrong network) came back with an empty form; what
/// was typed is kept beside the reason, once.
#[test]
fn a_refused_form_keeps_what_was_typed() {
    let (sc, _nsd) = start_with(|b| b.args(&["--admin-token", TOKEN]));
    let (cookie, csrf, here) = logged_in(&sc);
    let body = format!("csrf={csrf}&name=shop%20%3Cfront%3E&plan=pro&allow_ips=192.0.2.0%2F24%2C+10.0.0.0%2F33");
    let refused = send(&sc, form_post("/dashboard/keys", &cookie, Some(&here), &body));
    assert_eq!(refused.status, 303, "{refused}");
    let home = send(&sc, Request::get("/dashboard").header("Cookie", &cookie)).text();
    assert!(home.contains("Key not created: &quot;10.0.0.0/33&quot; is not an IP network"), "the reason: {home}");
    assert!(home.contains("name=\"name\" type=\"text\" maxlength=\"100\" value=\"shop &lt;front&gt;\""), "{home}");
    assert!(home.contains("value=\"192.0.2.0/24, 10.0.0.0/33\""), "the networks as typed: {home}");
    assert!(home.contains("<option value=\"pro\" selected>"), "the plan chosen: {home}");
    assert!(sc.cli().list().iter().all(|k| !k.name.starts_with("shop")), "nothing was created");
    let again = send(&sc, Request::get("/dashboard").header("Cookie", &cookie)).text();
    assert!(!again.contains("shop &lt;front&gt;") && again.contains("<option value=\"basic\" selected>"), "once");
}
