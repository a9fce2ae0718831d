//! Signup counts (issue 32) as a service: a signup event checked ([`Signup::parse`]), its
//! counters named, the domain's own mail server found without waiting for DNS, and one store
//! call counting it everywhere ([`crate::state::SignupStore`]). Used by `POST /api/v1/signups`
//! (the filter's call) and by `/ext_authz`, which counts in the process.
//!
//! **Waves** (issue 32, item 4): when the signup's domain waits for review with a mail server
//! of its own — as this process last judged it within the hour (`Verdicts::queued_on`), else as
//! the store's queue says (one read, remembered for the hour: the gateway's lookup may have
//! reached another replica) — the signup also counts its registrable domain among the server's
//! new domains of the last hour, beside the count and at the same time. A server reaching
//! [`WAVE_THRESHOLD`] distinct ones counts a wave in the metrics and leads the review queue's
//! grouping by server.
//!
//! **The busiest**: then, off the request's path (a bounded queue, one writer), the signup ranks its mailbox, client and
//! server (by their day counts) and the server's wave (when it grew) on the store's boards; a
//! value whose count cannot enter a full board (not above its floor, as last answered, trusted a
//! minute) costs no store call.

use std::net::IpAddr;
use std::sync::{Arc, Mutex, OnceLock};

use email_verdict_core::Domain;
use email_verdict_core::signup::velocity::{Counts, Scope, SignupEvent, client_network};
use tokio::sync::mpsc;

use crate::clock::Clock;
use crate::metrics::Metrics;
use crate::state::queue::WAVE_THRESHOLD;
use crate::state::signups::{Board, Entry, NewDomain, Wave};
use crate::state::{Counter, StateError, StateStore};
use crate::verdicts::Verdicts;

/// How long a board's floor, as the store last answered it, is trusted.
const FLOOR_TRUSTED_SECS: i64 = 60;
/// Rankings waiting for the one writer; past it they are dropped (and counted): the boards are
/// a view for people, never worth unbounded background work when the store is slow.
const RANK_QUEUE: usize = 256;

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
    metrics: Arc<Metrics>,
    /// Each board's floor (in [`Board::ALL`]'s order) and until when it is trusted (Unix s).
    floors: Arc<Mutex<[(u64, i64); 4]>>,
    /// The ranking queue's sending end; its one writer is started with the first ranking (in
    /// the runtime).
    ranking: OnceLock<mpsc::Sender<(Vec<Entry>, i64)>>,
}

impl Signups {
    pub fn new(store: Arc<dyn StateStore>, clock: Arc<dyn Clock>, metrics: Arc<Metrics>) -> Self {
        Self { store, clock, metrics, floors: Arc::default(), ranking: OnceLock::new() }
    }

    /// Counts `signup` in each of its scopes (the registrable domain always; the server when the
    /// MX cache knows it) in one store call, and a never-seen domain in its server's wave beside
    /// it; the counts, this signup included.
    pub async fn count(&self, verdicts: &Verdicts, signup: &Signup) -> Result<Counts, StateError> {
        crate::telemetry::span("store.count", self.count_now(verdicts, signup), |counted| {
            vec![crate::telemetry::Attribute::new(
                "email_verdict.outcome",
                if counted.is_ok() { "ok" } else { "error" },
            )]
        })
        .await
    }

    async fn count_now(&self, verdicts: &Verdicts, signup: &Signup) -> Result<Counts, StateError> {
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
        // The wave beside the count, at the same time (after one read of the queue when this
        // process did not judge the domain lately).
        let wave = async {
            let on = self.queued_on(verdicts, &signup.domain).await?;
            let wave = self.store.count_new_domain(&NewDomain::new(&on, registrable), now).await;
            Some((on, self.wave(wave)?))
        };
        let (windows, wave) = tokio::join!(self.store.count_signup(&counters, now), wave);
        let windows = windows?;
        let (queued_on, wave) = wave.unzip();
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
        let ranked = [
            (Board::Mailboxes, signup.mailbox.clone(), counts.mailbox.map(|w| w.day)),
            (Board::Clients, signup.client.clone(), counts.client.map(|w| w.day)),
            (Board::Servers, server, counts.server.map(|w| w.day)),
            // Only when the set grew: a domain signing up again changes nothing there.
            (Board::Waves, queued_on, wave.filter(|w| w.added).map(|w| w.new_domains)),
        ];
        let entries =
            ranked.into_iter().filter_map(|(board, value, count)| Some(Entry { board, value: value?, count: count? }));
        self.rank(entries.collect(), now);
        Ok(counts)
    }

    /// The mail server `domain` waits for review on, if it does: as this process last judged
    /// it, else as the store's queue says (remembered for the hour). A store failure here fails
    /// no signup: it is logged and counted, and the signup counts in no wave.
    async fn queued_on(&self, verdicts: &Verdicts, domain: &Domain) -> Option<String> {
        if let Some(known) = verdicts.queued_on(domain) {
            return known;
        }
        match self.store.queued_server(domain.as_str()).await {
            Ok(server) => {
                verdicts.remember_queued_on(domain, server.clone());
                server
            }
            Err(e) => {
                self.metrics.store_error();
                tracing::warn!(error = %e, "could not read the review queue for a signup");
                None
            }
        }
    }

    /// The wave counted (a store failure there fails no signup: logged and counted).
    fn wave(&self, wave: Result<Wave, StateError>) -> Option<Wave> {
        match wave {
            Ok(wave) => {
                self.metrics.new_domain_signup(wave.added && wave.new_domains == WAVE_THRESHOLD);
                Some(wave)
            }
            Err(e) => {
                self.metrics.store_error();
                tracing::warn!(error = %e, "could not count a new domain on its mail server");
                None
            }
        }
    }

    /// Ranks on their boards, in the background, the entries that can enter them: through a
    /// bounded queue with one writer, so the store sees at most one ranking at a time whatever
    /// the signup rate; past the queue a ranking is dropped, counted
    /// (`email_verdict_signup_rankings_dropped_total`) and logged (at most once per [`RANK_QUEUE`] drops).
    fn rank(&self, mut entries: Vec<Entry>, now: i64) {
        {
            let floors = self.floors.lock().unwrap_or_else(|p| p.into_inner());
            entries.retain(|e| {
                let (floor, until) = floors[board_index(e.board)];
                now >= until || e.count > floor
            });
        }
        if entries.is_empty() {
            return;
        }
        let queue = self.ranking.get_or_init(|| self.writer());
        if queue.try_send((entries, now)).is_err() {
            let dropped = self.metrics.ranking_dropped();
            if dropped % RANK_QUEUE as u64 == 1 {
                tracing::warn!(dropped, "signup rankings dropped: the store is slower than the signups");
            }
        }
    }

    /// Starts the one writer of the ranking queue.
    fn writer(&self) -> mpsc::Sender<(Vec<Entry>, i64)> {
        let (queue, mut rankings) = mpsc::channel::<(Vec<Entry>, i64)>(RANK_QUEUE);
        let (store, floors, metrics) = (self.store.clone(), self.floors.clone(), self.metrics.clone());
        tokio::spawn(async move {
            while let Some((entries, now)) = rankings.recv().await {
                match store.rank(&entries, now).await {
                    Ok(answered) => {
                        let mut floors = floors.lock().unwrap_or_else(|p| p.into_inner());
                        for (e, floor) in entries.iter().zip(answered) {
                            floors[board_index(e.board)] = (floor, now + FLOOR_TRUSTED_SECS);
                        }
                    }
                    Err(e) => {
                        metrics.store_error();
                        tracing::warn!(error = %e, "could not rank a signup's values");
                    }
                }
            }
        });
        queue
    }
}

fn board_index(board: Board) -> usize {
    Board::ALL.iter().position(|b| *b == board).unwrap_or(0)
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
