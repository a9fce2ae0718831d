//! How a signup ends when it does not simply go on: a local reply in the request's protocol
//! (a refusal, `failure_mode`'s deny), or the bypass header when it goes on without a verdict.

use super::*;

impl<H: Host> Ctx<'_, H> {
    /// `no_mx: block`: the domain cannot receive mail.
    pub(super) fn undeliverable(&mut self, verdict: &AddressVerdict) -> Step {
        self.host.increment(Counter::Checked);
        if self.shadow {
            return self.would_block(Reason::NoMx, Some(&verdict.domain));
        }
        self.host.increment(Counter::BlockedNoMx);
        self.respond(&LocalReply::NO_MX)
    }

    pub(super) fn invalid_because(&mut self, why: Option<Unusable>) -> Step {
        self.host.increment(Counter::InvalidEmail);
        match self.config.enforce.on_invalid_email {
            Policy::Allow => self.bypass(Bypass::InvalidEmail),
            Policy::Deny => self.respond(&LocalReply::invalid(why)),
        }
    }

    /// No verdict could be had: `failure_mode` for this reason.
    pub(super) fn fail(&mut self, bypass: Bypass) -> Step {
        match self.config.failure_mode.for_reason(bypass) {
            Policy::Allow => {
                self.host.increment(Counter::Bypassed);
                if let Some(by_reason) = Counter::bypassed_because(bypass) {
                    self.host.increment(by_reason);
                }
                self.bypass(bypass)
            }
            Policy::Deny => {
                if !self.shadow {
                    self.host.increment(Counter::DeniedOnError);
                }
                self.respond(&LocalReply::unavailable(self.config.failure_status))
            }
        }
    }

    /// A host call failed: logged, then handled like a sidecar error.
    pub(super) fn host_failed(&mut self, what: &str, error: HostError) -> Step {
        self.log(LogLevel::Error, &format!("{what}: {error}"));
        self.fail(Bypass::SidecarError)
    }

    pub(super) fn bypass(&mut self, bypass: Bypass) -> Step {
        if !self.config.hold_headers || self.shadow {
            return Step::Proceed; // the headers have gone upstream, or shadow mode adds none
        }
        if let Err(e) = self.host.set_request_header(&self.config.enforce.flag_headers.bypass, bypass.as_str()) {
            self.log(LogLevel::Error, &format!("could not add the bypass header: {e}"));
        }
        Step::Proceed
    }

    /// Answers the client. If even that fails there is no way to hold the request without
    /// hanging it, so it goes on (logged at error level).
    pub(super) fn respond(&mut self, reply: &LocalReply<'_>) -> Step {
        self.respond_with(reply, &[])
    }

    /// `reply` in the request's protocol (core's `LocalReply::render`), `extra` headers added;
    /// in shadow mode counted and logged instead.
    pub(super) fn respond_with(&mut self, reply: &LocalReply<'_>, extra: &[(&str, &str)]) -> Step {
        if self.shadow {
            return self.would_block(Reason::of(reply), None);
        }
        let out = reply.render(self.protocol, Via::LocalReply, self.request_id);
        let headers: Vec<(&str, &str)> =
            out.headers.iter().map(|(n, v)| (*n, v.as_str())).chain(extra.iter().copied()).collect();
        match self.host.send_local_response(out.status, out.details, &headers, &out.body, out.grpc_status) {
            Ok(()) => Step::Responded,
            Err(e) => {
                self.log(
                    LogLevel::Error,
                    &format!("could not send the {} response, letting the request through: {e}", out.status),
                );
                Step::Proceed
            }
        }
    }
}
