//! Signup counts beside the verdict: how often the same mailbox, client address, registrable
//! domain and mail server signed up in the last hour and day, counted by the sidecar in the
//! shared state store (every replica, every gateway), and the operator's limits on them.
//!
//! The contract between the enforcement points and the sidecar:
//! - the gateway sends `POST /api/v1/signups` with a [`SignupEvent`] for every judged signup
//!   (the filter; `/ext_authz` counts in the process): the domain of the signup's own address,
//!   its canonical mailbox as a keyed hash ([`mailbox_hash`], computed where the address is,
//!   never the address itself) and the client's network ([`client_network`]);
//! - the sidecar counts the signup in every scope and answers [`SignupCounts`], this one
//!   included;
//! - the gateway applies [`VelocityLimits`]: over a `block` limit the signup gets
//!   [`too_many_signups`]'s 429, over a `flag` limit the `x-email-velocity` header names the scope.

use std::net::IpAddr;

use hmac::{Hmac, Mac};
use serde::{Deserialize, Serialize};
use sha2::Sha256;

use super::settings::{DetailHeaders, FlagHeaders};
use crate::EmailAddress;
use crate::details::normalize_email;

/// What is counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Scope {
    /// One canonical mailbox (every spelling its provider delivers to the same box).
    Mailbox,
    /// One client address: an IPv4 address, or an IPv6 /64.
    Client,
    /// The registrable domain of the signup's address.
    Domain,
    /// The domain's own mail server (its first MX host), when the sidecar knows it.
    Server,
}

impl Scope {
    pub const ALL: [Scope; 4] = [Scope::Mailbox, Scope::Client, Scope::Domain, Scope::Server];

    pub fn as_str(self) -> &'static str {
        match self {
            Scope::Mailbox => "mailbox",
            Scope::Client => "client",
            Scope::Domain => "domain",
            Scope::Server => "server",
        }
    }
}

/// `POST /api/v1/signups`: one signup to count. Everything but the domain is optional: what is
/// absent is not counted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SignupEvent {
    /// The signup's address's domain (as the lookup API takes it).
    pub domain: String,
    /// [`mailbox_hash`]: 64 lowercase hex digits.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mailbox: Option<String>,
    /// [`client_network`]: an IPv4 address or an IPv6 /64 (`2001:db8:1:2::/64`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client: Option<String>,
}

/// Signups in the last hour and the last 24 hours, this one included.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Window {
    pub hour: u64,
    pub day: u64,
}

/// The counts of each scope the event named (`server`: when the sidecar knows the mail server).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counts {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mailbox: Option<Window>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client: Option<Window>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub domain: Option<Window>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<Window>,
}

impl Counts {
    pub fn of(&self, scope: Scope) -> Option<Window> {
        match scope {
            Scope::Mailbox => self.mailbox,
            Scope::Client => self.client,
            Scope::Domain => self.domain,
            Scope::Server => self.server,
        }
    }
}

/// The answer of `POST /api/v1/signups`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SignupCounts {
    pub request_id: String,
    pub counts: Counts,
}

/// What a limit does once it is passed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Action {
    /// `429 too_many_signups` with `Retry-After`.
    Block,
    /// `x-email-velocity: <scope>` for the app.
    Flag,
}

/// One scope's limit: at most `per_hour` signups in the last hour, or `per_day` in the last 24
/// hours (exactly one of them).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Limit {
    #[serde(default)]
    pub per_hour: Option<u64>,
    #[serde(default)]
    pub per_day: Option<u64>,
    pub action: Action,
}

impl Limit {
    /// The window and its bound.
    fn bound(&self) -> Option<(u64, u64)> {
        match (self.per_hour, self.per_day) {
            (Some(n), None) => Some((HOUR, n)),
            (None, Some(n)) => Some((DAY, n)),
            _ => None,
        }
    }
}

const HOUR: u64 = 3600;
const DAY: u64 = 24 * HOUR;

/// The operator's `velocity` settings: a limit per scope, each optional.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VelocityLimits {
    #[serde(default)]
    pub mailbox: Option<Limit>,
    #[serde(default)]
    pub client: Option<Limit>,
    #[serde(default)]
    pub domain: Option<Limit>,
    #[serde(default)]
    pub server: Option<Limit>,
}

/// A limit the counts passed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Passed {
    pub scope: Scope,
    pub action: Action,
    /// Seconds until the window could hold this signup: the window's length, an upper bound
    /// (the store keeps counts, not the time of each signup).
    pub retry_after: u64,
}

impl VelocityLimits {
    pub fn limit(&self, scope: Scope) -> Option<&Limit> {
        match scope {
            Scope::Mailbox => self.mailbox.as_ref(),
            Scope::Client => self.client.as_ref(),
            Scope::Domain => self.domain.as_ref(),
            Scope::Server => self.server.as_ref(),
        }
    }

    /// A limit given both or neither window: `(field, message)` for the operator.
    pub fn validate(&self) -> Result<(), (String, String)> {
        for scope in Scope::ALL {
            if let Some(limit) = self.limit(scope)
                && limit.bound().is_none_or(|(_, n)| n == 0)
            {
                let message = "give exactly one of per_hour and per_day, at least 1".to_owned();
                return Err((format!("velocity.{}", scope.as_str()), message));
            }
        }
        Ok(())
    }

    /// The limits `counts` passed: a `block` one first (the first in scope order), else every
    /// `flag` one in scope order.
    pub fn passed(&self, counts: &Counts) -> Vec<Passed> {
        let mut passed: Vec<Passed> = Scope::ALL
            .into_iter()
            .filter_map(|scope| {
                let limit = self.limit(scope)?;
                let (window, bound) = limit.bound()?;
                let seen = counts.of(scope)?;
                let count = if window == HOUR { seen.hour } else { seen.day };
                (count > bound).then_some(Passed { scope, action: limit.action, retry_after: window })
            })
            .collect();
        if let Some(block) = passed.iter().find(|p| p.action == Action::Block).copied() {
            passed = vec![block];
        }
        passed
    }
}

/// The count headers of a signup let through: `x-email-mailbox-signups` (the mailbox's last 24
/// hours) and `x-email-client-signups` (the client's last hour), each unless `detail_headers`
/// switches it off, and `x-email-velocity` naming the scopes of the `flag` limits passed.
pub fn count_headers<'a>(
    names: &'a FlagHeaders,
    send: DetailHeaders,
    counts: &Counts,
    flagged: &[Scope],
) -> Vec<(&'a str, String)> {
    let mailbox = counts.mailbox.filter(|_| send.mailbox_signups).map(|w| (names.mailbox_signups.as_str(), w.day));
    let client = counts.client.filter(|_| send.client_signups).map(|w| (names.client_signups.as_str(), w.hour));
    let scopes: Vec<&str> = flagged.iter().map(|s| s.as_str()).collect();
    let velocity = (!scopes.is_empty()).then(|| (names.velocity.as_str(), scopes.join(",")));
    mailbox.into_iter().chain(client).map(|(n, count)| (n, count.to_string())).chain(velocity).collect()
}

/// The body of the `429` a signup over a `block` limit gets (`Retry-After` says the same).
pub fn too_many_signups(passed: &Passed, request_id: Option<&str>) -> Vec<u8> {
    let mut body = serde_json::json!({
        "error": "too_many_signups",
        "scope": passed.scope.as_str(),
        "retry_after": passed.retry_after,
        "message": "Too many signups like this one lately; try again later.",
    });
    if let (Some(id), Some(object)) = (request_id, body.as_object_mut()) {
        object.insert("request_id".to_owned(), id.into());
    }
    serde_json::to_vec(&body).unwrap_or_default()
}

/// The least length of the mailbox hash's secret, in bytes (after trimming surrounding
/// whitespace, as both the filter and the sidecar read it): as long as a SHA-256 output, so it
/// cannot be guessed.
pub const MIN_MAILBOX_SECRET: usize = 32;

/// The secret as every reader takes it: surrounding whitespace (a Secret file's trailing line
/// break) trimmed, so the gateway and the sidecar hash with the same bytes; `None` when shorter
/// than [`MIN_MAILBOX_SECRET`].
pub fn mailbox_secret(text: &str) -> Option<Vec<u8>> {
    let secret = text.trim();
    (secret.len() >= MIN_MAILBOX_SECRET).then(|| secret.as_bytes().to_vec())
}

/// The canonical mailbox of `email` (`details::normalize_email`: quotes around a dot-atom, dots,
/// `+tags`, googlemail.com; then case, folded at every domain) as HMAC-SHA256 under the operator's secret, hex: the
/// mailbox leaves the gateway only so. Two gateways and the sidecar with the same secret give
/// the same hash; a new secret starts new counts (the old ones expire with their window).
pub fn mailbox_hash(secret: &[u8], email: &EmailAddress) -> String {
    // Case folded at every domain, documented or not: RFC 5321 lets a server tell `Ann` from
    // `ann`, but practically no mail service delivers them to different boxes, so counting them
    // apart would only give an abuser a new mailbox per spelling (`ANN@outlook.com`).
    let canonical = normalize_email(email.local(), email.domain()).to_lowercase();
    let Ok(mut mac) = Hmac::<Sha256>::new_from_slice(secret) else {
        return String::new(); // HMAC takes a key of any length: never reached
    };
    mac.update(canonical.as_bytes());
    mac.finalize().into_bytes().iter().map(|b| format!("{b:02x}")).collect()
}

/// The client's network as counted: an IPv4 address, or the /64 of an IPv6 one (a home or an
/// office gets a /64; its addresses are the same client). `::ffff:a.b.c.d` is `a.b.c.d`.
pub fn client_network(ip: IpAddr) -> String {
    match ip {
        IpAddr::V4(v4) => v4.to_string(),
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => v4.to_string(),
            None => {
                let s = v6.segments();
                let net = std::net::Ipv6Addr::new(s[0], s[1], s[2], s[3], 0, 0, 0, 0);
                format!("{net}/64")
            }
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_secret_is_trimmed_and_must_keep_32_bytes() {
        let secret = "0123456789abcdef0123456789abcdef";
        assert_eq!(mailbox_secret(&format!("  {secret}\n")), Some(secret.as_bytes().to_vec()));
        assert_eq!(mailbox_secret(&format!(" {} \n", &secret[1..])), None);
        assert_eq!(mailbox_secret(""), None);
    }

    fn hash(email: &str) -> String {
        mailbox_hash(b"secret", &EmailAddress::parse(email).unwrap())
    }

    #[test]
    fn one_mailbox_one_hash_whatever_the_spelling() {
        let john = hash("john@gmail.com");
        for spelling in ["J.o.h.n+1@gmail.com", "john+2@googlemail.com", "JOHN@gmail.com", "\"john\"@gmail.com"] {
            assert_eq!(hash(spelling), john, "{spelling}");
        }
        // Quoting multiplies nothing, case neither, at a domain without rules too.
        for (a, b) in [
            ("\"ann+2\"@gmail.com", "ann@gmail.com"),
            ("\"a.nn\"@gmail.com", "ann@gmail.com"),
            ("ANN@outlook.com", "ann@outlook.com"),
            ("\"Ann\"@outlook.com", "ann@outlook.com"),
            ("\"a\\ b\"@example.com", "\"a b\"@example.com"),
            ("\"A B\"@example.com", "\"a b\"@example.com"),
        ] {
            assert_eq!(hash(a), hash(b), "{a} = {b}");
        }
        assert_ne!(hash("\"a b\"@example.com"), hash("ab@example.com"));
        assert_ne!(hash("jane@gmail.com"), john);
        assert_ne!(mailbox_hash(b"other", &EmailAddress::parse("john@gmail.com").unwrap()), john);
        assert_eq!(john.len(), 64);
        assert!(!john.contains("john"));
    }

    #[test]
    fn clients_are_addresses_and_v6_networks() {
        let ip = |s: &str| s.parse::<IpAddr>().unwrap();
        assert_eq!(client_network(ip("203.0.113.7")), "203.0.113.7");
        assert_eq!(client_network(ip("::ffff:203.0.113.7")), "203.0.113.7");
        assert_eq!(client_network(ip("2001:db8:1:2:3:4:5:6")), "2001:db8:1:2::/64");
        assert_eq!(client_network(ip("2001:db8:1:2::9")), client_network(ip("2001:db8:1:2:ffff::1")));
    }

    #[test]
    fn limits_pass_block_first() {
        let limits: VelocityLimits = serde_json::from_str(
            r#"{"mailbox":{"per_day":2,"action":"flag"},"client":{"per_hour":3,"action":"block"},
                "domain":{"per_hour":100,"action":"flag"}}"#,
        )
        .unwrap();
        limits.validate().unwrap();
        let w = |hour, day| Some(Window { hour, day });
        let counts = Counts { mailbox: w(3, 3), client: w(2, 9), domain: w(1, 1), server: None };
        let flagged = limits.passed(&counts);
        assert_eq!(flagged, [Passed { scope: Scope::Mailbox, action: Action::Flag, retry_after: DAY }]);
        let counts = Counts { client: w(4, 4), ..counts };
        assert_eq!(limits.passed(&counts), [Passed { scope: Scope::Client, action: Action::Block, retry_after: HOUR }]);
        assert!(limits.passed(&Counts::default()).is_empty());
        let both: VelocityLimits =
            serde_json::from_str(r#"{"client":{"per_hour":3,"per_day":9,"action":"block"}}"#).unwrap();
        assert_eq!(both.validate().unwrap_err().0, "velocity.client");
        let zero: VelocityLimits = serde_json::from_str(r#"{"client":{"per_hour":0,"action":"block"}}"#).unwrap();
        assert!(zero.validate().is_err());
    }

    #[test]
    fn the_headers_say_the_mailbox_day_the_client_hour_and_the_flags() {
        let names = FlagHeaders::default();
        let w = |hour, day| Some(Window { hour, day });
        let counts = Counts { mailbox: w(1, 3), client: w(7, 9), domain: w(1, 1), server: None };
        let all = DetailHeaders::default();
        let got = count_headers(&names, all, &counts, &[Scope::Mailbox, Scope::Client]);
        let got: Vec<(&str, &str)> = got.iter().map(|(n, v)| (*n, v.as_str())).collect();
        assert_eq!(
            got,
            [("x-email-mailbox-signups", "3"), ("x-email-client-signups", "7"), ("x-email-velocity", "mailbox,client")]
        );
        assert!(count_headers(&names, all, &Counts::default(), &[]).is_empty());
        let off = DetailHeaders { mailbox_signups: false, ..all };
        assert_eq!(count_headers(&names, off, &counts, &[]), [("x-email-client-signups", "7".to_owned())]);
    }

    #[test]
    fn the_429_says_the_scope_and_when() {
        let passed = Passed { scope: Scope::Client, action: Action::Block, retry_after: HOUR };
        let body: serde_json::Value = serde_json::from_slice(&too_many_signups(&passed, Some("r1"))).unwrap();
        assert_eq!(body["error"], "too_many_signups");
        assert_eq!(body["scope"], "client");
        assert_eq!(body["retry_after"], 3600);
        assert_eq!(body["request_id"], "r1");
    }

    #[test]
    fn events_and_counts_round_trip() {
        let event = SignupEvent { domain: "gmail.com".into(), mailbox: Some(hash("a@gmail.com")), client: None };
        let text = serde_json::to_string(&event).unwrap();
        assert!(!text.contains("client"));
        assert_eq!(serde_json::from_str::<SignupEvent>(&text).unwrap(), event);
        let counts: SignupCounts = serde_json::from_str(
            r#"{"request_id":"r","counts":{"mailbox":{"hour":1,"day":2},"domain":{"hour":1,"day":1}}}"#,
        )
        .unwrap();
        assert_eq!(counts.counts.of(Scope::Mailbox), Some(Window { hour: 1, day: 2 }));
        assert_eq!(counts.counts.of(Scope::Server), None);
    }
}
