//! Sharing one callout per domain between the streams of a worker (`flight.rs`): joining a
//! flight, handing its answer to the waiters, waking them, and a stream's end.

use super::callouts::verdict_of;
use super::*;
use crate::cache::{Ticket, Version};
use crate::flight::Delivery;

impl RequestFilter {
    /// The answer to this stream's callout `token`: when it led a flight, every waiter gets a
    /// copy and is woken.
    pub(super) fn share_answer(&mut self, host: &mut impl Host, token: u32, response: &CalloutResponse) {
        let woken = self.config.flights.land(host.stream_id(), token, response);
        woken.into_iter().for_each(|stream| host.wake(stream));
    }

    /// Woken ([`Host::wake`]): the answers of the flights this stream waits on, or the lead of
    /// one whose leader is gone.
    pub fn on_wake(&mut self, host: &mut impl Host) {
        let me = host.stream_id();
        for (domain, delivery) in self.config.flights.take_mail(me) {
            let waiting = match &mut self.state {
                State::AwaitingVerdicts { judging, .. } => judging
                    .pending
                    .iter()
                    .position(|p| matches!(&p.what, Waiting::Shared { domain: d } if *d == domain)),
                _ => None,
            };
            let Some(at) = waiting else {
                // Answered already (refused for another address): a lead goes to the next waiter.
                if delivery == Delivery::Lead {
                    let woken = self.config.flights.give_up(&domain, me, host.woken_can_call_out());
                    woken.into_iter().for_each(|stream| host.wake(stream));
                }
                continue;
            };
            let State::AwaitingVerdicts { mut judging, then } = std::mem::replace(&mut self.state, State::Passthrough)
            else {
                return;
            };
            judging.pending.swap_remove(at);
            let config = Rc::clone(&self.config);
            let mut ctx = self.ctx(&config, &mut *host);
            match delivery {
                Delivery::Answer(response) => {
                    let judged = ctx.shared_answer(&domain, &response);
                    judging.worst.add(judged);
                }
                Delivery::Lead => ctx.take_lead(&domain, &mut judging),
            }
            let step = ctx.next(judging, then);
            self.settle_held(step, host);
        }
    }

    /// The stream ends: it leaves the flights it waits on; one it leads goes to its first
    /// waiter, or waits for the root context (`flight.rs`): then true, and the host makes the
    /// root's tick due ([`RequestFilter::lead_orphans`]).
    pub fn on_destroy(&mut self, host: &mut impl Host) -> bool {
        let woken = self.config.flights.leave(host.stream_id(), host.woken_can_call_out());
        woken.into_iter().for_each(|stream| host.wake(stream));
        self.config.flights.has_orphans()
    }

    /// The root context's part (Wasm): calls out for each flight whose leader ended and leads
    /// it, its answer coming back through [`RequestFilter::on_callout_response`] of this filter
    /// (which has no request of its own); a callout that cannot start fails the waiters.
    pub fn lead_orphans(&mut self, host: &mut impl Host) {
        let config = Rc::clone(&self.config);
        for domain in config.flights.take_orphans() {
            let mut ctx = Ctx {
                config: &config,
                host: &mut *host,
                request_id: None,
                trace: &NO_TRACE,
                protocol: &REST,
                shadow: false,
            };
            // Whether the waiters found the name in free text is not kept: asked as an address.
            let version = ctx.version();
            let woken = match ctx.call_sidecar(&domain, false) {
                Ok(token) => {
                    config.flights.lead(&domain, ctx.host.stream_id(), token, version);
                    Vec::new()
                }
                Err(_) => config.flights.fail(&domain),
            };
            woken.into_iter().for_each(|stream| host.wake(stream));
        }
    }
}

impl<H: Host> Ctx<'_, H> {
    /// A cache miss for `domain` (under the decisions' `version`) while another stream of this
    /// worker calls out for it under the same version: wait for that answer (true). Only with
    /// the cache: without it every signup asks the sidecar.
    pub(super) fn joined(&mut self, domain: &Domain, version: Version, judging: &mut Judging) -> bool {
        if self.config.cache.is_none() {
            return false;
        }
        let me = self.host.stream_id();
        if !self.config.flights.led_by_another(domain, me, version) || !self.host.prepare_wake() {
            return false;
        }
        self.config.flights.join(domain, me, version);
        judging.pending.push(Pending { token: 0, what: Waiting::Shared { domain: domain.clone() } });
        true
    }

    /// This stream called out for `domain` under `version`: later misses on this worker under
    /// the same version wait for its answer.
    pub(super) fn leads(&mut self, domain: &Domain, token: u32, version: Version) {
        if self.config.cache.is_some() {
            self.config.flights.lead(domain, self.host.stream_id(), token, version);
        }
    }

    /// The decisions' version for a callout made now without a lookup (a flight's new leader);
    /// unreadable: `None`, whose answer the cache then holds for no version that exists.
    fn version(&mut self) -> Version {
        self.config.cache.and_then(|cache| cache.version(&*self.host).ok().flatten())
    }

    /// The leader's answer, read as the leader reads it; the leader wrote the cache.
    fn shared_answer(&mut self, domain: &Domain, response: &CalloutResponse) -> Judged {
        match decision::classify(response) {
            CalloutOutcome::Verdict(summary, _) => verdict_of(domain, &summary, self.config.enforce.no_mx),
            CalloutOutcome::InvalidEmail => Judged::Invalid,
            CalloutOutcome::Failed(bypass) => {
                let status = response.status.map_or_else(|| "no status".to_owned(), |s| s.to_string());
                self.log(
                    LogLevel::Warn,
                    &format!("shared callout answered {status} for {domain}: {}", bypass.as_str()),
                );
                self.no_verdict(domain, bypass)
            }
        }
    }

    /// The flight's leader is gone: this stream calls out for `domain` and leads; a failed
    /// dispatch passes the flight on and follows `failure_mode` here.
    fn take_lead(&mut self, domain: &Domain, judging: &mut Judging) {
        let version = self.version();
        match self.call_sidecar(domain, false) {
            Ok(token) => {
                self.leads(domain, token, version);
                let cas = Ticket { cas: None, version };
                judging.pending.push(Pending { token, what: Waiting::Verdict { domain: domain.clone(), cas } });
            }
            Err(bypass) => {
                let me = self.host.stream_id();
                let woken = self.config.flights.give_up(domain, me, self.host.woken_can_call_out());
                woken.into_iter().for_each(|stream| self.host.wake(stream));
                let judged = self.no_verdict(domain, bypass);
                judging.worst.add(judged);
            }
        }
    }
}
