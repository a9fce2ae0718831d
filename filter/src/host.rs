//! The proxy as the filter's logic sees it: a small trait, implemented over proxy-wasm by
//! `wasm_host.rs` and by a mock in tests.
//!
//! Every call that can fail returns a `Result`: the proxy-wasm SDK's own wrappers panic on an
//! unexpected status (e.g. `BadArgument` when the request headers are already gone), and a panic
//! kills the VM. The logic turns a failed call into a log line and the `failure_mode` path.

use std::fmt;
use std::time::Duration;

use email_verdict_core::signup::{AddressVerdict, Bypass, LOCAL_FALLBACK_FLAG, Reason};
use email_verdict_core::{Mail, VerdictSource};

pub use crate::cache::{SharedData, SharedDataError};

/// What a request callback answers: let the request go on, or hold it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    Continue,
    Pause,
}

/// Log levels of the proxy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum LogLevel {
    Trace,
    Debug,
    Info,
    Warn,
    Error,
}

/// A host call that did not succeed: which call, and the proxy-wasm status it returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HostError {
    pub call: &'static str,
    pub status: u32,
}

impl HostError {
    pub fn new(call: &'static str, status: u32) -> Self {
        Self { call, status }
    }

    fn status_name(self) -> &'static str {
        match self.status {
            1 => "NotFound",
            2 => "BadArgument",
            3 => "SerializationFailure",
            4 => "ParseFailure",
            7 => "Empty",
            8 => "CasMismatch",
            10 => "InternalFailure",
            12 => "Unimplemented",
            _ => "unknown status",
        }
    }
}

impl fmt::Display for HostError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} failed: {} ({})", self.call, self.status_name(), self.status)
    }
}

impl std::error::Error for HostError {}

/// The filter's counters (Envoy stats), as `CONFIG.md` lists them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Counter {
    Checked,
    Blocked,
    Flagged,
    Bypassed,
    DeniedOnError,
    CacheHits,
    Callouts,
    NoEmail,
    InvalidEmail,
    BodyTooLarge,
    UnreadableBody,
    LocalDecisions,
    DecisionSyncs,
    DecisionSyncFailures,
    /// Signups counted by the sidecar (`velocity`).
    Counted,
    /// Signups refused over a `block` velocity limit (429).
    TooManySignups,
    /// `Bypassed`, by reason: one counter each rather than a label, because a Wasm filter's
    /// metrics have no labels; the names say the reason the bypass header gives.
    BypassedSidecarError,
    BypassedSidecarTimeout,
    BypassedSidecarRejected,
    /// Counts the sidecar refused with 403 (the gateway's key is not on the `gateway` plan):
    /// a configuration error, the signup judged without its count.
    CountRefused,
    /// Verdict headers added, by verdict (`Flagged` is both).
    FlaggedDisposable,
    FlaggedSafe,
    /// Signups judged in shadow (`mode: shadow`, or outside `enforce_percent`).
    Shadowed,
    /// Shadowed signups block mode would have refused, all reasons, then one counter per reason.
    WouldBlock,
    WouldBlockDisposable,
    WouldBlockTooManySignups,
    WouldBlockUnreadableBody,
    WouldBlockTooManyAddresses,
    WouldBlockInvalidEmail,
    WouldBlockMissingEmail,
    WouldBlockSubaddressed,
    WouldBlockBodyTooLarge,
    WouldBlockVerdictUnavailable,
    WouldBlockNoMx,
    /// `no_mx`: refused, or flagged, for a domain that cannot receive mail.
    BlockedNoMx,
    FlaggedNoMx,
    /// Disposable verdicts a signup was refused, flagged or shadowed for, by the source that
    /// decided (the sidecar's `x-email-verdict-source`; `local_fallback` without the sidecar;
    /// `unknown` when an older sidecar did not say).
    DisposableByStrongList,
    DisposableByList,
    DisposableByReviewer,
    DisposableByOperator,
    DisposableByInfrastructure,
    DisposableByLocalFallback,
    DisposableByUnknown,
}

impl Counter {
    pub const ALL: [Counter; 43] = [
        Counter::Checked,
        Counter::Blocked,
        Counter::Flagged,
        Counter::Bypassed,
        Counter::DeniedOnError,
        Counter::CacheHits,
        Counter::Callouts,
        Counter::NoEmail,
        Counter::InvalidEmail,
        Counter::BodyTooLarge,
        Counter::UnreadableBody,
        Counter::LocalDecisions,
        Counter::DecisionSyncs,
        Counter::DecisionSyncFailures,
        Counter::Counted,
        Counter::TooManySignups,
        Counter::BypassedSidecarError,
        Counter::BypassedSidecarTimeout,
        Counter::BypassedSidecarRejected,
        Counter::CountRefused,
        Counter::FlaggedDisposable,
        Counter::FlaggedSafe,
        Counter::Shadowed,
        Counter::WouldBlock,
        Counter::WouldBlockDisposable,
        Counter::WouldBlockTooManySignups,
        Counter::WouldBlockUnreadableBody,
        Counter::WouldBlockTooManyAddresses,
        Counter::WouldBlockInvalidEmail,
        Counter::WouldBlockMissingEmail,
        Counter::WouldBlockSubaddressed,
        Counter::WouldBlockBodyTooLarge,
        Counter::WouldBlockVerdictUnavailable,
        Counter::WouldBlockNoMx,
        Counter::BlockedNoMx,
        Counter::FlaggedNoMx,
        Counter::DisposableByStrongList,
        Counter::DisposableByList,
        Counter::DisposableByReviewer,
        Counter::DisposableByOperator,
        Counter::DisposableByInfrastructure,
        Counter::DisposableByLocalFallback,
        Counter::DisposableByUnknown,
    ];

    /// The metric name defined in Envoy.
    pub fn name(self) -> &'static str {
        match self {
            Counter::Checked => "email_verdict.checked",
            Counter::Blocked => "email_verdict.blocked",
            Counter::Flagged => "email_verdict.flagged",
            Counter::Bypassed => "email_verdict.bypassed",
            Counter::DeniedOnError => "email_verdict.denied_on_error",
            Counter::CacheHits => "email_verdict.cache_hits",
            Counter::Callouts => "email_verdict.callouts",
            Counter::NoEmail => "email_verdict.no_email",
            Counter::InvalidEmail => "email_verdict.invalid_email",
            Counter::BodyTooLarge => "email_verdict.body_too_large",
            Counter::UnreadableBody => "email_verdict.unreadable_body",
            Counter::LocalDecisions => "email_verdict.local_decisions",
            Counter::DecisionSyncs => "email_verdict.decision_syncs",
            Counter::DecisionSyncFailures => "email_verdict.decision_sync_failures",
            Counter::Counted => "email_verdict.counted",
            Counter::TooManySignups => "email_verdict.too_many_signups",
            Counter::BypassedSidecarError => "email_verdict.bypassed_sidecar_error",
            Counter::BypassedSidecarTimeout => "email_verdict.bypassed_sidecar_timeout",
            Counter::BypassedSidecarRejected => "email_verdict.bypassed_sidecar_rejected",
            Counter::CountRefused => "email_verdict.count_refused",
            Counter::FlaggedDisposable => "email_verdict.flagged_disposable",
            Counter::FlaggedSafe => "email_verdict.flagged_safe",
            Counter::Shadowed => "email_verdict.shadowed",
            Counter::WouldBlock => "email_verdict.would_block",
            Counter::WouldBlockDisposable => "email_verdict.would_block_disposable",
            Counter::WouldBlockTooManySignups => "email_verdict.would_block_too_many_signups",
            Counter::WouldBlockUnreadableBody => "email_verdict.would_block_unreadable_body",
            Counter::WouldBlockTooManyAddresses => "email_verdict.would_block_too_many_addresses",
            Counter::WouldBlockInvalidEmail => "email_verdict.would_block_invalid_email",
            Counter::WouldBlockMissingEmail => "email_verdict.would_block_missing_email",
            Counter::WouldBlockSubaddressed => "email_verdict.would_block_subaddressed",
            Counter::WouldBlockBodyTooLarge => "email_verdict.would_block_body_too_large",
            Counter::WouldBlockVerdictUnavailable => "email_verdict.would_block_verdict_unavailable",
            Counter::WouldBlockNoMx => "email_verdict.would_block_no_mx",
            Counter::BlockedNoMx => "email_verdict.blocked_no_mx",
            Counter::FlaggedNoMx => "email_verdict.flagged_no_mx",
            Counter::DisposableByStrongList => "email_verdict.disposable_by_strong_list",
            Counter::DisposableByList => "email_verdict.disposable_by_list",
            Counter::DisposableByReviewer => "email_verdict.disposable_by_reviewer",
            Counter::DisposableByOperator => "email_verdict.disposable_by_operator",
            Counter::DisposableByInfrastructure => "email_verdict.disposable_by_infrastructure",
            Counter::DisposableByLocalFallback => "email_verdict.disposable_by_local_fallback",
            Counter::DisposableByUnknown => "email_verdict.disposable_by_unknown",
        }
    }

    /// The counter of a bypass for want of a verdict (`failure_mode` allow), by its reason;
    /// `None` for the policies' bypasses (no email, invalid, unreadable), which have their own.
    pub fn bypassed_because(reason: Bypass) -> Option<Counter> {
        match reason {
            Bypass::SidecarError => Some(Counter::BypassedSidecarError),
            Bypass::SidecarTimeout => Some(Counter::BypassedSidecarTimeout),
            Bypass::SidecarRejected => Some(Counter::BypassedSidecarRejected),
            Bypass::NoEmail | Bypass::InvalidEmail | Bypass::UnreadableBody => None,
        }
    }

    /// The `would_block` counter of one reason (a Wasm filter's metrics have no labels).
    pub fn would_block(reason: Reason) -> Counter {
        match reason {
            Reason::Disposable => Counter::WouldBlockDisposable,
            Reason::TooManySignups => Counter::WouldBlockTooManySignups,
            Reason::UnreadableBody => Counter::WouldBlockUnreadableBody,
            Reason::TooManyAddresses => Counter::WouldBlockTooManyAddresses,
            Reason::InvalidEmail => Counter::WouldBlockInvalidEmail,
            Reason::MissingEmail => Counter::WouldBlockMissingEmail,
            Reason::Subaddressed => Counter::WouldBlockSubaddressed,
            Reason::BodyTooLarge => Counter::WouldBlockBodyTooLarge,
            Reason::VerdictUnavailable => Counter::WouldBlockVerdictUnavailable,
            Reason::NoMx => Counter::WouldBlockNoMx,
        }
    }

    /// The counter of a disposable verdict's deciding source.
    pub fn disposable_by(verdict: &AddressVerdict) -> Counter {
        match verdict.source {
            Some(VerdictSource::StrongList) => Counter::DisposableByStrongList,
            Some(VerdictSource::List) => Counter::DisposableByList,
            Some(VerdictSource::Reviewer) => Counter::DisposableByReviewer,
            Some(VerdictSource::Operator) => Counter::DisposableByOperator,
            Some(VerdictSource::Infrastructure) => Counter::DisposableByInfrastructure,
            None if verdict.flags == LOCAL_FALLBACK_FLAG => Counter::DisposableByLocalFallback,
            Some(VerdictSource::Rules) | None => Counter::DisposableByUnknown,
        }
    }

    /// Position in [`Counter::ALL`], for hosts that keep metric ids in an array.
    pub fn index(self) -> usize {
        self as usize
    }
}

/// Every request header (pseudo-headers such as `:path` included), in order, as read in one host
/// call: the header phase works on this one consistent snapshot instead of asking per header.
/// Names are lowercase.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RequestHeaders(pub Vec<(Vec<u8>, Vec<u8>)>);

impl RequestHeaders {
    /// Envoy's `x-request-id`, when it is plain (core's `plain_request_id`).
    pub fn request_id(&self) -> Option<String> {
        email_verdict_core::signup::plain_request_id(self.first("x-request-id")?)
    }

    /// `content-length`, when it is a number.
    pub fn content_length(&self) -> Option<u64> {
        std::str::from_utf8(self.first("content-length")?).ok()?.trim().parse().ok()
    }

    /// The first value of `name`.
    pub fn first(&self, name: &str) -> Option<&[u8]> {
        self.0.iter().find(|(k, _)| k == name.as_bytes()).map(|(_, v)| v.as_slice())
    }

    /// Every value of `name`, in order (a repeated header must not hide a second email).
    pub fn values(&self, name: &str) -> Vec<Vec<u8>> {
        self.0.iter().filter(|(k, _)| k == name.as_bytes()).map(|(_, v)| v.clone()).collect()
    }

    /// The first value of `name` as text ("" when absent).
    pub fn text(&self, name: &str) -> String {
        self.first(name).map(|v| String::from_utf8_lossy(v).into_owned()).unwrap_or_default()
    }
}

/// The calls of one HTTP stream's context. Header names are lowercase.
pub trait Host: SharedData {
    /// Every request header, in one call.
    fn request_headers(&self) -> Result<RequestHeaders, HostError>;
    /// Replaces every value of a request header with `value`.
    fn set_request_header(&mut self, name: &str, value: &str) -> Result<(), HostError>;
    /// Removes every value of a request header.
    fn remove_request_header(&mut self, name: &str) -> Result<(), HostError>;
    /// The buffered request body, at most `max_len` bytes of it.
    fn request_body(&self, max_len: usize) -> Result<Vec<u8>, HostError>;
    /// Starts an HTTP callout; the answer arrives through `RequestFilter::on_callout_response`
    /// with the returned token.
    fn dispatch_http_call(
        &mut self,
        cluster: &str,
        headers: &[(&str, &str)],
        body: Option<&[u8]>,
        timeout: Duration,
    ) -> Result<u32, HostError>;
    /// The downstream client's address as Envoy sees it (its trusted-proxy settings applied:
    /// `use_remote_address`, `xff_num_trusted_hops`), when it has one.
    fn client_address(&self) -> Option<std::net::IpAddr>;
    /// Answers the client directly; `details` is Envoy's response code details (no spaces).
    /// `grpc_status`: the gRPC status of an answer to a gRPC request, which `headers` carry as
    /// `grpc-status` too (a host that takes it separately passes it on as well).
    fn send_local_response(
        &mut self,
        status: u16,
        details: &str,
        headers: &[(&str, &str)],
        body: &[u8],
        grpc_status: Option<u8>,
    ) -> Result<(), HostError>;
    /// Lets a paused request go on.
    fn resume_request(&mut self) -> Result<(), HostError>;
    fn increment(&mut self, counter: Counter);
    /// Wall-clock milliseconds since the Unix epoch, as the proxy sees it.
    fn now_ms(&self) -> Result<u64, HostError>;
    fn log(&self, level: LogLevel, message: &str);

    /// A span of the host's tracer for the callout about to be made, as trace and span ids in
    /// hex (the dynamic module: a child of Envoy's span for the request, ended when the answer
    /// comes). `None` where the host cannot reach its tracer (Wasm) or the request is not traced.
    fn callout_span(&mut self) -> Option<(String, String)> {
        None
    }

    /// This stream's number among the worker's streams (`flight.rs`).
    fn stream_id(&self) -> u64 {
        0
    }
    /// Readies this stream to be woken ([`Host::wake`]) before it waits on another stream's
    /// callout; false when it cannot be (then it calls out itself).
    fn prepare_wake(&mut self) -> bool {
        false
    }
    /// Wakes a stream of this worker that waits on a shared callout: its
    /// `RequestFilter::on_wake` runs, now or from the worker's event loop.
    fn wake(&mut self, _stream: u64) {}
    /// True when a woken stream runs in its own context, so that a callout it makes is answered
    /// to it: then it can take over a flight whose leader is gone.
    fn woken_can_call_out(&self) -> bool {
        false
    }
}

/// What the sidecar answered, as read from the callout's response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CalloutResponse {
    /// `:status`, absent or unparseable as `None`.
    pub status: Option<u16>,
    pub body: Vec<u8>,
    /// A verdict's deciding source (`x-email-verdict-source`), when told.
    pub source: Option<VerdictSource>,
    /// Where the domain's mail goes (`x-email-verdict-mail`), when told.
    pub mail: Option<Mail>,
}

impl CalloutResponse {
    /// `header`: the first value of a response header, by lowercase name.
    pub fn read(header: impl Fn(&str) -> Option<Vec<u8>>, body: Vec<u8>) -> Self {
        let status = header(":status").and_then(|s| std::str::from_utf8(&s).ok()?.trim().parse().ok());
        let source = header(VerdictSource::HEADER).and_then(|v| VerdictSource::parse(&v));
        let mail = header(Mail::HEADER).and_then(|v| Mail::parse(&v));
        Self { status, body, source, mail }
    }

    /// An answer of `status` and `body` alone.
    pub fn plain(status: Option<u16>, body: Vec<u8>) -> Self {
        Self { status, body, source: None, mail: None }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_failure_bypass_has_its_counter_named_after_the_header_value() {
        let failures = [Bypass::SidecarError, Bypass::SidecarTimeout, Bypass::SidecarRejected];
        for reason in failures {
            let counter = Counter::bypassed_because(reason).expect("a failure bypass is counted by reason");
            assert_eq!(counter.name(), format!("email_verdict.bypassed_{}", reason.as_str()));
        }
        for policy in [Bypass::NoEmail, Bypass::InvalidEmail, Bypass::UnreadableBody] {
            assert_eq!(Counter::bypassed_because(policy), None, "{policy:?} has its own counter");
        }
    }

    #[test]
    fn each_reason_has_its_would_block_counter_named_after_it() {
        for reason in Reason::ALL {
            assert_eq!(Counter::would_block(reason).name(), format!("email_verdict.would_block_{}", reason.as_str()));
        }
    }

    #[test]
    fn counter_index_matches_all() {
        for (i, c) in Counter::ALL.iter().enumerate() {
            assert_eq!(c.index(), i);
            assert!(c.name().starts_with("email_verdict."));
        }
    }

    #[test]
    fn host_error_names_the_status() {
        assert_eq!(
            HostError::new("proxy_replace_header_map_value", 2).to_string(),
            "proxy_replace_header_map_value failed: BadArgument (2)"
        );
    }
}
