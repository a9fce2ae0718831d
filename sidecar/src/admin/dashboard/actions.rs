//! The dashboard's POST actions. Each answers with a redirect to the dashboard (POST-redirect-
//! GET) and leaves its outcome as the session's flash message.

use email_verdict_core::Decision;
use http::{Response, StatusCode};
use percent_encoding::percent_decode_str;

use super::DashRequest;
use super::page::{login as login_page, see_other};
use super::session::{self, Flash, KeyDraft, Session, same_secret};
use crate::admin::Admin;
use crate::admin::keys::{create_key as store_key, networks, plan};
use crate::review::{ReviewError, parse_verdict, set_decision};
use crate::state::{KeyChange, StateError};

const HOME: &str = "/dashboard";

pub fn login(admin: &Admin, request: &DashRequest, sess: &Session) -> Response<Vec<u8>> {
    let Some(expected) = &admin.token_hash else { return see_other(HOME, None) };
    let token = request.field("token").trim();
    // Compares digests, as the admin API does. The right token always logs in; only wrong ones
    // are counted, and past the limit refused as such (admin::guard).
    if !same_secret(&hex::encode(crate::admin::hash_token(token)), &hex::encode(expected)) {
        if let Some(wait) = admin.guesses.wrong(request.client) {
            tracing::warn!("dashboard login refused: too many wrong tokens from this client");
            return login_page(
                admin,
                sess,
                Some(&format!("Too many wrong tokens from this address; try again in {wait} s.")),
            );
        }
        tracing::warn!("dashboard login with a wrong token");
        return login_page(admin, sess, Some("That is not the admin token."));
    }
    match admin.dashboard.sessions.login(&sess.id) {
        Ok(new) => see_other(HOME, Some(session::set_cookie(&new.id))),
        Err(_) => super::page::plain(StatusCode::INTERNAL_SERVER_ERROR, "no randomness for a session"),
    }
}

pub fn logout(admin: &Admin, sess: &Session) -> Response<Vec<u8>> {
    admin.dashboard.sessions.remove(&sess.id);
    see_other(HOME, Some(session::clear_cookie()))
}

pub async fn create_key(admin: &Admin, request: &DashRequest, sess: &Session) -> Response<Vec<u8>> {
    let ips: Vec<String> = request
        .field("allow_ips")
        .split([',', ' ', '\n', '\r', '\t'])
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect();
    let name = request.field("name").trim().chars().take(100).collect::<String>();
    let created = match (plan(admin, request.field("plan")), networks(&ips)) {
        (Ok(plan), Ok(nets)) => store_key(admin, plan, name, nets).await,
        (Err(e), _) | (_, Err(e)) => Err(e),
    };
    let flash = match created {
        Ok((key, secret, _)) => Flash::NewKey { id: key.id, secret: secret.expose().to_owned() },
        Err(e) => {
            // The form comes back as it was typed, beside the reason.
            let field = |f: &str| request.field(f).chars().take(1000).collect::<String>();
            let draft = KeyDraft { name: field("name"), plan: field("plan"), allow_ips: field("allow_ips") };
            Flash::KeyRefused { error: format!("Key not created: {}", e.message()), draft }
        }
    };
    finish(admin, sess, flash)
}

/// Revoking asks first: the table's button leads to a page naming the key, whose own button
/// (`confirm=yes`) revokes it. No script needed.
pub async fn revoke(admin: &Admin, request: &DashRequest, sess: &Session, id: &str) -> Response<Vec<u8>> {
    if request.field("confirm") != "yes" {
        return super::page::confirm_revoke(admin, sess, id).await;
    }
    let flash = match admin.store.revoke_key(id).await {
        Ok(true) => Flash::Info(format!("Key {id} revoked.")),
        Ok(false) => Flash::Error(format!("No key with id {id}.")),
        Err(e) => store_failed(&e),
    };
    finish(admin, sess, flash)
}

/// A key's plan changed (applies on every replica within the key cache's half second).
pub async fn change_plan(admin: &Admin, request: &DashRequest, sess: &Session, id: &str) -> Response<Vec<u8>> {
    let changed = match plan(admin, request.field("plan")) {
        Ok(plan) => {
            let change = KeyChange { name: None, plan: Some(plan.clone()), allow_ips: None };
            match admin.store.update_key(id, change).await {
                Ok(Some(_)) => Flash::Info(format!("Key {id} is now on plan {plan}.")),
                Ok(None) => Flash::Error(format!("No key with id {id}.")),
                Err(e) => store_failed(&e),
            }
        }
        Err(e) => Flash::Error(format!("Plan not changed: {}", e.message())),
    };
    finish(admin, sess, changed)
}

pub async fn decide(admin: &Admin, request: &DashRequest, sess: &Session, domain: &str) -> Response<Vec<u8>> {
    let domain = percent_decode_str(domain).decode_utf8_lossy().into_owned();
    let decision = match decision_field(request) {
        Ok(decision) => decision,
        Err(refused) => return finish(admin, sess, refused),
    };
    let note = request.field("note").trim();
    let now = admin.clock.now_ms().div_euclid(1000);
    // Back to the page the decision was made on (the review queue's, with its filters).
    let back = Some(request.field("back")).filter(|b| b.starts_with("/dashboard/reviews")).unwrap_or(HOME);
    let flash =
        match set_decision(&*admin.store, &admin.catalog.current(), &domain, decision, "dashboard", note, now).await {
            Ok(domain) => Flash::Info(format!("{domain}: {}.", crate::state::decision_str(decision))),
            Err(ReviewError::Store(e)) => store_failed(&e),
            Err(e) => Flash::Error(e.to_string()),
        };
    finish_at(admin, sess, flash, back)
}

/// A mark on a mail server for all its domains (`review::servers::mark`, reviewer `dashboard`);
/// back to the server's page, which says what the mark did.
pub async fn mark_server(admin: &Admin, request: &DashRequest, sess: &Session, server: &str) -> Response<Vec<u8>> {
    let decision = match decision_field(request) {
        Ok(decision) => decision,
        Err(refused) => return finish(admin, sess, refused),
    };
    let note = request.field("note").trim();
    let now = admin.clock.now_ms().div_euclid(1000);
    let catalog = admin.catalog.current();
    let (flash, back) =
        match crate::review::servers::mark(&*admin.store, &catalog, server, decision, "dashboard", note, now).await {
            Ok(marked) => {
                let back = format!("/dashboard/servers/{}", marked.report.server.value);
                let what = crate::state::mark_str(decision);
                (Flash::Info(format!("{}: {what}: {}.", marked.report.server, marked.effect)), back)
            }
            Err(ReviewError::Store(e)) => (store_failed(&e), HOME.to_owned()),
            Err(e) => (Flash::Error(e.to_string()), HOME.to_owned()),
        };
    finish_at(admin, sess, flash, &back)
}

/// The `decision` of a reviewer's form: a verdict, or `withdraw` (`None`); else the flash that
/// refuses the form.
fn decision_field(request: &DashRequest) -> Result<Option<Decision>, Flash> {
    match request.field("decision") {
        "withdraw" => Ok(None),
        other => parse_verdict(other).map(Some).ok_or_else(|| Flash::Error("Choose disposable or safe.".into())),
    }
}

/// A failed state store: logged, and said plainly to the user (the error itself stays in the log).
fn store_failed(e: &StateError) -> Flash {
    tracing::error!(error = %e, "state store failed (dashboard)");
    Flash::Error("The state store failed; retry later.".into())
}

fn finish_at(admin: &Admin, sess: &Session, flash: Flash, location: &str) -> Response<Vec<u8>> {
    admin.dashboard.sessions.update(&sess.id, |s| s.flash = Some(flash));
    see_other(location, None)
}

fn finish(admin: &Admin, sess: &Session, flash: Flash) -> Response<Vec<u8>> {
    finish_at(admin, sess, flash, HOME)
}
