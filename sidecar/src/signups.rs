//! Signup counts (issue 32) as a service: a signup event checked ([`Signup::parse`]), its
//! counters named, the domain's own mail server found without waiting for DNS, and one store
//! call counting it everywhere ([`crate::state::SignupStore`]). Used by `POST /api/v1/signups`
//! (the filter's call) and by `/ext_authz`, which counts in the process.

use std::net::IpAddr;
use std::sync::Arc;

use email_verdict_core::Domain;
use email_verdict_core::signup::velocity::{Counts, Scope, SignupEvent, client_network};

use crate::clock::Clock;
use crate::state::{Counter, StateError, StateStore};
use crate::verdicts::Verdicts;

/// A signup to count, checked: every value in the one form it is counted under.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Signup {
    /// The address's domain (its MX gives the server).
    pub domain: Domain,
    /// 64 lowercase hex digits.
    pub mailbox: Option<String>,
    /// An IPv4 address or an IPv6 /64 (`client_network`).
    pub client: Option<String>,
}

impl Signup {
    /// Checks an event; the error says what is wrong in the API's words.
    pub fn parse(event: &SignupEvent) -> Result<Self, String> {
        let domain = Domain::parse(&event.domain).map_err(|e| format!("domain: {e}"))?;
        let mailbox = event.mailbox.as_deref().map(mailbox).transpose()?;
        let client = event.client.as_deref().map(client).transpose()?;
        Ok(Self { domain, mailbox, client })
    }

    /// From what `/ext_authz` knows: the address's domain, its mailbox hash, the client address.
    pub fn of(domain: Domain, mailbox: Option<String>, client: Option<IpAddr>) -> Self {
        Self { domain, mailbox, client: client.map(client_network) }
    }
}

fn mailbox(hash: &str) -> Result<String, String> {
    let hex = hash.len() == 64 && hash.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
    if hex { Ok(hash.to_owned()) } else { Err("mailbox: must be 64 lowercase hex digits (the keyed hash)".to_owned()) }
}

/// An IP address (an IPv6 one counts as its /64), or an IPv6 network given as its /64.
fn client(text: &str) -> Result<String, String> {
    let wrong = || "client: must be an IP address or an IPv6 /64 network".to_owned();
    if let Some((net, bits)) = text.split_once('/') {
        let Ok(IpAddr::V6(net)) = net.parse::<IpAddr>() else { return Err(wrong()) };
        if bits != "64" || net.segments()[4..].iter().any(|s| *s != 0) {
            return Err(wrong());
        }
        return Ok(client_network(IpAddr::V6(net)));
    }
    text.parse::<IpAddr>().map(client_network).map_err(|_| wrong())
}

/// Counts signups in the shared store.
pub struct Signups {
    store: Arc<dyn StateStore>,
    clock: Arc<dyn Clock>,
}

impl Signups {
    pub fn new(store: Arc<dyn StateStore>, clock: Arc<dyn Clock>) -> Self {
        Self { store, clock }
    }

    /// Counts `signup` in each of its scopes (the registrable domain always; the server when the
    /// MX cache knows it) in one store call; the counts, this signup included.
    pub async fn count(&self, verdicts: &Verdicts, signup: &Signup) -> Result<Counts, StateError> {
        let registrable = signup.domain.registrable().unwrap_or(signup.domain.as_str());
        let server = verdicts.known_mail_server(&signup.domain);
        let counters: Vec<Counter> = [
            signup.mailbox.as_deref().map(|m| Counter::new(Scope::Mailbox, m)),
            signup.client.as_deref().map(|c| Counter::new(Scope::Client, c)),
            Some(Counter::new(Scope::Domain, registrable)),
            server.as_deref().map(|s| Counter::new(Scope::Server, s)),
        ]
        .into_iter()
        .flatten()
        .collect();
        let now = self.clock.now_ms().div_euclid(1000);
        let windows = self.store.count_signup(&counters, now).await?;
        let mut counts = Counts::default();
        for (counter, window) in counters.iter().zip(windows) {
            let slot = match counter.scope() {
                Scope::Mailbox => &mut counts.mailbox,
                Scope::Client => &mut counts.client,
                Scope::Domain => &mut counts.domain,
                Scope::Server => &mut counts.server,
            };
            *slot = Some(window);
        }
        Ok(counts)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(event: (&str, Option<&str>, Option<&str>), expected: Result<(&str, Option<&str>), &str>) {
        let event = SignupEvent {
            domain: event.0.to_owned(),
            mailbox: event.1.map(str::to_owned),
            client: event.2.map(str::to_owned),
        };
        let got = Signup::parse(&event).map(|s| (s.domain.to_string(), s.client));
        let expected = expected.map(|(d, c)| (d.to_owned(), c.map(str::to_owned))).map_err(str::to_owned);
        match (&got, &expected) {
            (Err(got), Err(want)) => assert!(got.starts_with(want.as_str()), "{event:?}: {got}"),
            _ => assert_eq!(got, expected, "{event:?}"),
        }
    }

    #[test]
    fn events_are_checked_in_the_apis_words() {
        let hash = "0123456789abcdef".repeat(4);
        check(("Gmail.COM", Some(&hash), Some("203.0.113.7")), Ok(("gmail.com", Some("203.0.113.7"))));
        check(("a.example", None, Some("2001:db8:1:2:3::9")), Ok(("a.example", Some("2001:db8:1:2::/64"))));
        check(("a.example", None, Some("2001:db8:1:2::/64")), Ok(("a.example", Some("2001:db8:1:2::/64"))));
        check(("a.example", None, Some("::ffff:203.0.113.7")), Ok(("a.example", Some("203.0.113.7"))));
        check(("a.example", None, None), Ok(("a.example", None)));
        check(("not a domain", None, None), Err("domain: "));
        check(("", None, None), Err("domain: "));
        check(("a.example", Some(&hash.to_uppercase()), None), Err("mailbox: must be 64 lowercase hex"));
        check(("a.example", Some("john@gmail.com"), None), Err("mailbox: "));
        check(("a.example", Some(&hash[1..]), None), Err("mailbox: "));
        for bad in ["203.0.113.0/24", "203.0.113.7/32", "2001:db8::/48", "2001:db8::1/64", "host", "203.0.113.7:80"] {
            check(("a.example", None, Some(bad)), Err("client: must be an IP address"));
        }
    }
}
