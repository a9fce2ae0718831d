//! What an enforcement point does with a signup request, shared by the Envoy filter and the
//! sidecar's ext_authz endpoint so that both read the same email from the same request and
//! answer the same way: the shared settings ([`settings`]), finding the email ([`extract`]),
//! what a verdict or its absence looks like on the request ([`outcome`]), and a refusal in the
//! words of the request's protocol ([`protocol`], [`reply`]).

pub mod extract;
pub mod judgement;
pub mod outcome;
pub mod path;
pub mod protocol;
pub mod reply;
pub mod rollout;
pub mod settings;
pub mod velocity;

pub use judgement::{AddressVerdict, Judged, Refusing, Settled, Worst};
pub use outcome::{
    AddressDetails, Bypass, Flag, Flags, LOCAL_FALLBACK_FLAG, LocalReply, VerdictSummary, header_value,
    plain_request_id,
};
pub use protocol::Protocol;
pub use reply::{Code, Rendered, Via};
pub use rollout::Reason;
pub use settings::{
    BlockResponse, ConfigError, DetailHeaders, EmailSources, Enforcement, EnforcementConfig, FlagHeaders, GraphQl,
    Mode, NoMx, Policy, Subaddressed,
};
