//! Dashboard sessions: a random id in an `HttpOnly; SameSite=Strict` cookie, kept in memory by
//! this process (a restart logs operators out), each with its own CSRF token and one-shot flash
//! message. Bounded: expired sessions go first, then the least recently used *of the same
//! kind*: anonymous visits (each gets a session for the login form's CSRF token) can only push
//! out other anonymous ones, never an operator who logged in.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use sha2::{Digest, Sha256};
use tokio::time::Instant;

pub const COOKIE: &str = "ev_dashboard";
/// A session ends after this long without a request.
const IDLE: Duration = Duration::from_secs(8 * 3600);
const MAX_SESSIONS: usize = 1024;

/// Shown once on the next page, then gone (a new key's secret, an error; a refused key
/// creation's error with the form as it was typed, to fill it in again).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Flash {
    NewKey { id: String, secret: String },
    Info(String),
    Error(String),
    KeyRefused { error: String, draft: KeyDraft },
}

/// The key creation form's fields as typed.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct KeyDraft {
    pub name: String,
    pub plan: String,
    pub allow_ips: String,
}

#[derive(Debug, Clone)]
pub struct Session {
    pub id: String,
    pub csrf: String,
    pub authenticated: bool,
    pub flash: Option<Flash>,
    seen: Instant,
}

#[derive(Default)]
pub struct Sessions {
    map: Mutex<HashMap<String, Session>>,
}

impl Sessions {
    /// The live session named by the cookie header, else a new one (not yet authenticated).
    pub fn get_or_create(&self, cookie_header: Option<&str>) -> Result<Session, getrandom::Error> {
        let now = Instant::now();
        let mut map = self.lock();
        if let Some(id) = cookie_header.and_then(cookie_value)
            && let Some(s) = map.get_mut(id)
            && now.duration_since(s.seen) < IDLE
        {
            s.seen = now;
            return Ok(s.clone());
        }
        let session = Session { id: random_hex()?, csrf: random_hex()?, authenticated: false, flash: None, seen: now };
        make_room(&mut map, now, false);
        map.insert(session.id.clone(), session.clone());
        Ok(session)
    }

    /// Changes a session (`f` sees the stored one).
    pub fn update(&self, id: &str, f: impl FnOnce(&mut Session)) {
        if let Some(s) = self.lock().get_mut(id) {
            f(s);
        }
    }

    /// Takes the flash message out.
    pub fn take_flash(&self, id: &str) -> Option<Flash> {
        self.lock().get_mut(id).and_then(|s| s.flash.take())
    }

    /// Logging in: a new id and CSRF token for the authenticated session (no fixation).
    pub fn login(&self, old: &str) -> Result<Session, getrandom::Error> {
        let now = Instant::now();
        let session = Session { id: random_hex()?, csrf: random_hex()?, authenticated: true, flash: None, seen: now };
        let mut map = self.lock();
        map.remove(old);
        make_room(&mut map, now, true);
        map.insert(session.id.clone(), session.clone());
        Ok(session)
    }

    pub fn remove(&self, id: &str) {
        self.lock().remove(id);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Session>> {
        self.map.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// Room for one more session of the kind `authenticated`, each kind bounded by [`MAX_SESSIONS`].
fn make_room(map: &mut HashMap<String, Session>, now: Instant, authenticated: bool) {
    map.retain(|_, s| now.duration_since(s.seen) < IDLE);
    while map.values().filter(|s| s.authenticated == authenticated).count() >= MAX_SESSIONS {
        let oldest = map.values().filter(|s| s.authenticated == authenticated).min_by_key(|s| s.seen);
        let Some(id) = oldest.map(|s| s.id.clone()) else { break };
        map.remove(&id);
    }
}

/// `Set-Cookie` for a session: script-proof, never sent by another site, dashboard paths only.
pub fn set_cookie(id: &str) -> String {
    format!("{COOKIE}={id}; Path=/dashboard; HttpOnly; SameSite=Strict")
}

pub fn clear_cookie() -> String {
    format!("{COOKIE}=; Path=/dashboard; HttpOnly; SameSite=Strict; Max-Age=0")
}

fn cookie_value(header: &str) -> Option<&str> {
    header.split(';').filter_map(|c| c.trim().split_once('=')).find(|(k, _)| *k == COOKIE).map(|(_, v)| v)
}

/// Compares secrets by their digests, so the time taken does not depend on where they differ.
pub fn same_secret(a: &str, b: &str) -> bool {
    Sha256::digest(a.as_bytes()) == Sha256::digest(b.as_bytes())
}

fn random_hex() -> Result<String, getrandom::Error> {
    let mut bytes = [0u8; 24];
    getrandom::fill(&mut bytes)?;
    Ok(hex::encode(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn sessions_are_found_by_cookie_and_renewed_on_login() {
        let sessions = Sessions::default();
        let a = sessions.get_or_create(None).unwrap();
        assert!(!a.authenticated);
        let header = format!("other=1; {COOKIE}={}", a.id);
        assert_eq!(sessions.get_or_create(Some(&header)).unwrap().csrf, a.csrf);
        assert_ne!(sessions.get_or_create(Some("ev_dashboard=forged")).unwrap().id, "forged");
        let b = sessions.login(&a.id).unwrap();
        assert!(b.authenticated && b.id != a.id && b.csrf != a.csrf);
        assert_ne!(sessions.get_or_create(Some(&header)).unwrap().id, a.id, "the old id is gone");
        sessions.update(&b.id, |s| s.flash = Some(Flash::Info("x".into())));
        assert_eq!(sessions.take_flash(&b.id), Some(Flash::Info("x".into())));
        assert_eq!(sessions.take_flash(&b.id), None);
        assert!(same_secret("abc", "abc") && !same_secret("abc", "abd"));
    }

    #[tokio::test]
    async fn anonymous_visits_do_not_evict_an_operator() {
        let sessions = Sessions::default();
        let anonymous = sessions.get_or_create(None).unwrap();
        let operator = sessions.login(&anonymous.id).unwrap();
        let cookie = format!("{COOKIE}={}", operator.id);
        for _ in 0..MAX_SESSIONS + 100 {
            sessions.get_or_create(None).unwrap();
        }
        let again = sessions.get_or_create(Some(&cookie)).unwrap();
        assert!(again.authenticated && again.id == operator.id);
    }
}
