//! The callouts of a signup: each domain's verdict (the cache, else the sidecar, else the local
//! decision) and the signup's count (`velocity`), and what their answers mean.

use super::*;
use crate::cache::Ticket;

impl<H: Host> Ctx<'_, H> {
    /// Starts judging every name of `names` not judged yet: the cache, else a callout (which
    /// teaches the sidecar nothing for a name found in free text).
    pub(super) fn judge(&mut self, names: &[Name], mut judging: Judging) -> Judging {
        for Name { domain, mention } in names {
            if judging.judged.contains(domain) {
                continue;
            }
            judging.judged.push(domain.clone());
            match self.cached(domain) {
                Ok(judged) => judging.worst.add(judged),
                // A flight is per domain: a mention that joins an address's lookup, or the
                // other way round, shares its verdict (and its `learn`).
                Err(ticket) if self.joined(domain, ticket.version, &mut judging) => {}
                Err(ticket) => match self.call_sidecar(domain, *mention) {
                    Ok(token) => {
                        self.leads(domain, token, ticket.version);
                        let what = Waiting::Verdict { domain: domain.clone(), cas: ticket };
                        judging.pending.push(Pending { token, what })
                    }
                    Err(bypass) => {
                        let judged = self.no_verdict(domain, bypass);
                        judging.worst.add(judged);
                    }
                },
            }
        }
        judging
    }

    /// The verdict in the cache, or what the write of the miss's answer needs (`cache::Ticket`).
    pub(super) fn cached(&mut self, domain: &Domain) -> Result<Judged, Ticket> {
        let Some(cache) = self.config.cache else { return Err(Ticket::default()) };
        let lookup = self.host.now_ms().and_then(|now| cache.lookup(&mut *self.host, domain, now));
        match lookup {
            Ok(Lookup::Hit(summary)) => {
                self.host.increment(Counter::CacheHits);
                Ok(verdict_of(domain, &summary, self.config.enforce.no_mx))
            }
            Ok(Lookup::Miss(ticket)) => Err(ticket),
            Err(e) => {
                self.log(LogLevel::Warn, &format!("verdict cache unavailable: {e}"));
                Err(Ticket::default()) // no version: its answer is a miss once decisions are synced
            }
        }
    }

    pub(super) fn call_sidecar(&mut self, domain: &Domain, mention: bool) -> Result<u32, Bypass> {
        let sidecar = &self.config.sidecar;
        let path = decision::lookup_path(domain, mention);
        let headers = [
            (":method", "GET"),
            (":path", path.as_str()),
            (":authority", sidecar.authority.as_str()),
            ("authorization", sidecar.authorization.as_str()),
            ("accept", "application/json"),
        ];
        match self.dispatch(&headers, None) {
            Ok(token) => {
                self.host.increment(Counter::Callouts);
                Ok(token)
            }
            Err(e) => {
                let message = format!("callout to cluster {} failed for {domain}: {e}", sidecar.cluster);
                self.log(LogLevel::Warn, &message);
                Err(Bypass::SidecarError)
            }
        }
    }

    /// Calls the sidecar with `headers` and what ties the callout to the signup: Envoy's
    /// request id and the trace context (`trace.rs`).
    fn dispatch(&mut self, headers: &[(&str, &str)], body: Option<&[u8]>) -> Result<u32, HostError> {
        let own = self.host.callout_span().and_then(|ids| self.trace.traceparent(ids));
        let id = self.request_id.map(|id| ("x-request-id", id));
        let trace = self.trace.for_callout(own.as_deref());
        let headers: Vec<(&str, &str)> = headers.iter().copied().chain(id).chain(trace).collect();
        let sidecar = &self.config.sidecar;
        self.host.dispatch_http_call(&sidecar.cluster, &headers, body, sidecar.timeout)
    }

    pub(super) fn sidecar_answered(&mut self, domain: &Domain, ticket: Ticket, response: &CalloutResponse) -> Judged {
        match decision::classify(response) {
            CalloutOutcome::Verdict(summary, keep) => {
                self.remember(domain, &summary, ticket, keep);
                verdict_of(domain, &summary, self.config.enforce.no_mx)
            }
            CalloutOutcome::InvalidEmail => Judged::Invalid,
            CalloutOutcome::Failed(bypass) => {
                let status = response.status.map_or_else(|| "no status".to_owned(), |s| s.to_string());
                self.log(LogLevel::Warn, &format!("sidecar answered {status} for {domain}: {}", bypass.as_str()));
                self.no_verdict(domain, bypass)
            }
        }
    }

    /// Asks the sidecar to count the signup (`POST /api/v1/signups`, with the verdicts'
    /// callouts); a failed dispatch is a count that failed.
    pub(super) fn count(&mut self, secret: &[u8], email: &EmailAddress, judging: &mut Judging) {
        let sidecar = &self.config.sidecar;
        let body = counting::event_body(secret, email, self.host.client_address());
        let headers = [
            (":method", "POST"),
            (":path", counting::SIGNUPS_PATH),
            (":authority", sidecar.authority.as_str()),
            ("authorization", sidecar.authorization.as_str()),
            ("content-type", "application/json"),
            ("accept", "application/json"),
        ];
        match self.dispatch(&headers, Some(&body)) {
            Ok(token) => judging.pending.push(Pending { token, what: Waiting::Count }),
            Err(e) => {
                self.log(LogLevel::Warn, &format!("signup count callout to cluster {} failed: {e}", sidecar.cluster));
                judging.counts = Some(Err(Bypass::SidecarError));
            }
        }
    }

    pub(super) fn counted(&mut self, response: &CalloutResponse) -> Result<Counts, Bypass> {
        if counting::refused_for_the_plan(response) {
            self.host.increment(Counter::CountRefused);
            let message = "sidecar refused the signup count (403): the gateway's API key must be on the gateway plan; \
                           judging the signup without its count";
            self.log(LogLevel::Error, message);
            return Ok(Counts::default());
        }
        let counts = counting::classify(response);
        match &counts {
            Ok(_) => self.host.increment(Counter::Counted),
            Err(bypass) => {
                let status = response.status.map_or_else(|| "no status".to_owned(), |s| s.to_string());
                self.log(
                    LogLevel::Warn,
                    &format!("sidecar answered {status} to the signup count: {}", bypass.as_str()),
                );
            }
        }
        counts
    }

    /// The counts against the limits: a `block` limit passed refuses (`Err`, the step), a
    /// failed count follows `failure_mode` (allowed: on without counts).
    pub(super) fn velocity(&mut self, counts: Option<Result<Counts, Bypass>>) -> Result<Option<Velocity>, Box<Step>> {
        let counts = match counts {
            None => return Ok(None),
            Some(Ok(counts)) => counts,
            Some(Err(bypass)) if self.config.failure_mode.for_reason(bypass) == Policy::Deny => {
                return Err(Box::new(self.fail(bypass)));
            }
            Some(Err(_)) => return Ok(None),
        };
        let limits = self.config.enforce.velocity.as_ref();
        let passed = limits.map(|l| l.passed(&counts)).unwrap_or_default();
        if let Some(block) = passed.iter().find(|p| p.action == LimitAction::Block) {
            if !self.shadow {
                self.host.increment(Counter::TooManySignups);
            }
            let body = too_many_signups(block, None);
            let reply = LocalReply::too_many_signups(&body);
            return Err(Box::new(self.respond_with(&reply, &[("retry-after", &block.retry_after.to_string())])));
        }
        Ok(Some(Velocity { counts, flagged: passed.iter().map(|p| p.scope).collect() }))
    }

    pub(super) fn remember(&mut self, domain: &Domain, summary: &VerdictSummary, ticket: Ticket, keep: Keep) {
        let Some(cache) = self.config.cache else { return };
        let cache = if keep == Keep::Briefly { cache.briefly() } else { cache };
        let stored = self.host.now_ms().and_then(|now| cache.store(&mut *self.host, domain, summary, now, ticket));
        if let Err(e) = stored {
            self.log(LogLevel::Warn, &format!("could not cache the verdict: {e}"));
        }
    }

    /// The sidecar gave no verdict: a name the sidecar's decisions block, or on the embedded
    /// strong lists, is disposable all the same (flagged `local_fallback`, never cached); any
    /// other goes to `failure_mode`.
    pub(super) fn no_verdict(&mut self, domain: &Domain, bypass: Bypass) -> Judged {
        let synced = self.config.decisions.as_ref().filter(|d| d.fallback);
        let decided = synced.and_then(|d| d.stored.decision(&*self.host, domain));
        let why = match decided {
            Some(Decision::Block) => "is blocked by a decision of the sidecar's",
            Some(Decision::Allow) => return Judged::Failed(bypass), // vouched for: never blocked by the lists
            None if self.config.local_lists.is_some_and(|lists| lists.is_listed(domain)) => {
                "is on the embedded strong lists"
            }
            None => return Judged::Failed(bypass),
        };
        self.host.increment(Counter::LocalDecisions);
        self.log(LogLevel::Info, &format!("{domain} {why}: disposable without the sidecar"));
        Judged::Verdict(AddressVerdict::local_fallback(domain))
    }
}

pub(super) fn verdict_of(domain: &Domain, summary: &VerdictSummary, no_mx: NoMx) -> Judged {
    Judged::Verdict(AddressVerdict::of(domain, summary, no_mx))
}
