//! Shadow mode's part of the state machine (`mode: shadow`, or outside `enforce_percent`): the
//! body copied as it streams on, and a refusal counted and logged instead of sent.

use std::rc::Rc;

use email_verdict_core::Domain;
use email_verdict_core::signup::{Mode, Reason};

use super::{Ctx, RequestFilter, Step};
use crate::host::{Action, Counter, Host, LogLevel};

impl RequestFilter {
    /// Shadowed: the chunk goes on, a copy of it is kept (within `max_body_bytes`). The chunk that
    /// completes the body is held while the copy is judged, so that the judgement is not lost with
    /// the stream: the one that ends the stream, or, with a `content-length`, the one that reaches
    /// it (an app answers once it has that many bytes, before Envoy's end of stream, and the
    /// stream then ends with its callouts).
    pub(super) fn copy_chunk(&mut self, host: &mut impl Host, size: usize, end_of_stream: bool) -> Action {
        let max = self.config.max_body_bytes;
        if size > 0 {
            let room = max.saturating_sub(self.copy.len());
            match host.request_body(room.saturating_add(1)) {
                Ok(chunk) if chunk.len() <= room => self.copy.extend_from_slice(&chunk),
                Ok(_) => {
                    self.copy = Vec::new();
                    let config = Rc::clone(&self.config);
                    let step = self.ctx(&config, host).body_too_large();
                    return self.settle(step);
                }
                Err(e) => {
                    let config = Rc::clone(&self.config);
                    let step = self.ctx(&config, host).host_failed("could not read the request body", e);
                    return self.settle(step);
                }
            }
        }
        let complete = self.length.is_some_and(|len| u64::try_from(self.copy.len()).is_ok_and(|n| n >= len));
        if end_of_stream || complete { self.body_complete(host) } else { Action::Continue }
    }
}

impl<H: Host> Ctx<'_, H> {
    /// Block mode's judgement: in block mode, and in shadow mode.
    pub(super) fn blocks(&self) -> bool {
        self.shadow || self.config.enforce.mode == Mode::Block
    }

    /// Shadow mode's refusal: counted by reason and logged (the domain, never the address),
    /// the request left as it is.
    pub(super) fn would_block(&mut self, reason: Reason, domain: Option<&Domain>) -> Step {
        self.host.increment(Counter::WouldBlock);
        self.host.increment(Counter::would_block(reason));
        let on = domain.map(|d| format!(" ({d})")).unwrap_or_default();
        let id = self.request_id.map(|id| format!(", request {id}")).unwrap_or_default();
        self.log(LogLevel::Info, &format!("shadow: would block{on}: {}{id}", reason.as_str()));
        Step::Proceed
    }
}
