//! Signup counts (`velocity`, `CONFIG.md`): the one call per judged signup that the sidecar
//! counts, `POST /api/v1/signups`, and what its answer means. The mailbox leaves the proxy only
//! as a keyed hash computed here; the client is the downstream address as Envoy sees it.

use std::net::IpAddr;

use email_verdict_core::EmailAddress;
use email_verdict_core::signup::velocity::{
    Counts, Scope, SignupCounts, SignupEvent, client_network, count_headers, mailbox_hash,
};
use email_verdict_core::signup::{Bypass, DetailHeaders, FlagHeaders};

use crate::host::CalloutResponse;

pub const SIGNUPS_PATH: &str = "/api/v1/signups";

/// The request body: the address's domain, its mailbox's hash, the client's network.
pub fn event_body(secret: &[u8], email: &EmailAddress, client: Option<IpAddr>) -> Vec<u8> {
    let event = SignupEvent {
        domain: email.domain().as_str().to_owned(),
        mailbox: Some(mailbox_hash(secret, email)),
        client: client.map(client_network),
    };
    serde_json::to_vec(&event).unwrap_or_default()
}

/// What the app learns of a counted signup.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Velocity {
    pub counts: Counts,
    /// The scopes whose `flag` limit the signup passed.
    pub flagged: Vec<Scope>,
}

impl Velocity {
    /// `x-email-mailbox-signups` (the mailbox's last 24 hours), `x-email-client-signups` (the
    /// client's last hour), each unless switched off, and `x-email-velocity` when a flag limit
    /// was passed.
    pub fn headers<'a>(&self, names: &'a FlagHeaders, send: DetailHeaders) -> Vec<(&'a str, String)> {
        count_headers(names, send, &self.counts, &self.flagged)
    }
}

/// `403`: the sidecar writes counts for a key on the `gateway` plan only, so this is the
/// gateway's configuration, not the signup's doing: the signup is judged without its count,
/// never refused for it (whatever `failure_mode` says).
pub fn refused_for_the_plan(response: &CalloutResponse) -> bool {
    response.status == Some(403)
}

/// The counts, or why there are none (the bypass reason `failure_mode` decides by): Envoy
/// answers a timed-out callout with a synthetic 504, a refused connection with 503.
pub fn classify(response: &CalloutResponse) -> Result<Counts, Bypass> {
    match response.status {
        Some(200) => serde_json::from_slice::<SignupCounts>(&response.body)
            .map(|answer| answer.counts)
            .map_err(|_| Bypass::SidecarError),
        Some(504) => Err(Bypass::SidecarTimeout),
        Some(401 | 402 | 429) => Err(Bypass::SidecarRejected),
        _ => Err(Bypass::SidecarError),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use email_verdict_core::signup::velocity::Window;

    #[test]
    fn the_event_carries_no_address() {
        let email = EmailAddress::parse("J.o.h.n+1@gmail.com").unwrap();
        let body = event_body(&[7; 32], &email, Some("2001:db8:1:2::5".parse().unwrap()));
        let event: SignupEvent = serde_json::from_slice(&body).unwrap();
        assert_eq!(event.domain, "gmail.com");
        assert_eq!(event.client.as_deref(), Some("2001:db8:1:2::/64"));
        let text = String::from_utf8(body).unwrap().to_lowercase();
        assert!(!text.contains("john") && !text.contains("j.o.h.n"), "{text}");
    }

    #[test]
    fn answers() {
        let ok = CalloutResponse::plain(
            Some(200),
            br#"{"request_id":"r","counts":{"mailbox":{"hour":1,"day":3}}}"#.to_vec(),
        );
        assert_eq!(classify(&ok).unwrap().mailbox, Some(Window { hour: 1, day: 3 }));
        let status = |s| CalloutResponse::plain(Some(s), Vec::new());
        assert_eq!(classify(&status(200)), Err(Bypass::SidecarError));
        assert_eq!(classify(&status(504)), Err(Bypass::SidecarTimeout));
        assert_eq!(classify(&status(429)), Err(Bypass::SidecarRejected));
        assert_eq!(classify(&status(503)), Err(Bypass::SidecarError));
    }
}
