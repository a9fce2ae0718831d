//! What an enforcement point does with a verdict, the same in the filter and ext_authz: the
//! flags header's names and order, the bypass values, and the replies it sends instead of
//! forwarding a signup.

use crate::api::Verdict;
use crate::{Domain, VerdictResult};

/// The flags header of a verdict an enforcement point made alone from the strong lists, because
/// no full verdict could be had (the sidecar down or refusing the gateway's key).
pub const LOCAL_FALLBACK_FLAG: &str = "local_fallback";

/// The boolean signals the flags header names, in the order `CONFIG.md` gives them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flag {
    FreeProvider,
    BusinessEmail,
    SharedMx,
    HasMx,
    ReviewRequired,
    Allowlisted,
    Blocked,
    MxIpMatch,
}

impl Flag {
    pub const ALL: [Flag; 8] = [
        Flag::FreeProvider,
        Flag::BusinessEmail,
        Flag::SharedMx,
        Flag::HasMx,
        Flag::ReviewRequired,
        Flag::Allowlisted,
        Flag::Blocked,
        Flag::MxIpMatch,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Flag::FreeProvider => "free_provider",
            Flag::BusinessEmail => "business_email",
            Flag::SharedMx => "shared_mx",
            Flag::HasMx => "has_mx",
            Flag::ReviewRequired => "review_required",
            Flag::Allowlisted => "allowlisted",
            Flag::Blocked => "blocked",
            Flag::MxIpMatch => "mx_ip_match",
        }
    }

    fn bit(self) -> u8 {
        1 << (self as u8)
    }

    fn of(self, r: &VerdictResult) -> bool {
        match self {
            Flag::FreeProvider => r.free_provider,
            Flag::BusinessEmail => r.business_email,
            Flag::SharedMx => r.shared_mx,
            Flag::HasMx => r.has_mx,
            Flag::ReviewRequired => r.review_required,
            Flag::Allowlisted => r.allowlisted,
            Flag::Blocked => r.blocked,
            Flag::MxIpMatch => r.mx_ip_match,
        }
    }
}

/// A set of [`Flag`]s, one bit each.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Flags(u8);

impl Flags {
    pub fn bits(self) -> u8 {
        self.0
    }

    /// `None` for bits no flag uses (an entry written by another format).
    pub fn from_bits(bits: u8) -> Option<Self> {
        let known = Flag::ALL.iter().fold(0, |acc, f| acc | f.bit());
        (bits & !known == 0).then_some(Self(bits))
    }

    pub fn contains(self, flag: Flag) -> bool {
        self.0 & flag.bit() != 0
    }

    /// The names of the set flags, comma-separated, in `CONFIG.md` order.
    pub fn header_value(self) -> String {
        let names: Vec<&str> = Flag::ALL.iter().filter(|f| self.contains(**f)).map(|f| f.name()).collect();
        names.join(",")
    }
}

impl FromIterator<Flag> for Flags {
    fn from_iter<I: IntoIterator<Item = Flag>>(iter: I) -> Self {
        Self(iter.into_iter().fold(0, |acc, f| acc | f.bit()))
    }
}

/// What the filter keeps of a verdict: enough to block or flag, small enough to cache.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerdictSummary {
    pub disposable: bool,
    pub flags: Flags,
    /// The provider domain the checked domain is very probably a typo of (`did_you_mean`, as a
    /// domain: an enforcement point never passes an email's local part on).
    pub suggestion: Option<Domain>,
}

impl VerdictSummary {
    pub fn from_result(r: &VerdictResult) -> Self {
        Self {
            disposable: r.verdict == Verdict::Disposable,
            flags: Flag::ALL.into_iter().filter(|f| f.of(r)).collect(),
            suggestion: None,
        }
    }

    /// With the record's `did_you_mean`: its domain part (an email's local part is dropped), or
    /// nothing when it is not a valid domain.
    pub fn with_suggestion(mut self, did_you_mean: Option<&str>) -> Self {
        self.suggestion = did_you_mean
            .map(|s| s.rsplit_once('@').map_or(s, |(_, domain)| domain))
            .and_then(|d| Domain::parse(d).ok());
        self
    }

    /// The verdict header's value.
    pub fn verdict_name(&self) -> &'static str {
        if self.disposable { "disposable" } else { "safe" }
    }
}

/// Why a request went on without a verdict: the bypass header's value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bypass {
    NoEmail,
    InvalidEmail,
    SidecarError,
    SidecarTimeout,
    SidecarRejected,
    UnreadableBody,
}

impl Bypass {
    pub fn as_str(self) -> &'static str {
        match self {
            Bypass::NoEmail => "no_email",
            Bypass::InvalidEmail => "invalid_email",
            Bypass::SidecarError => "sidecar_error",
            Bypass::SidecarTimeout => "sidecar_timeout",
            Bypass::SidecarRejected => "sidecar_rejected",
            Bypass::UnreadableBody => "unreadable_body",
        }
    }
}

/// An `x-request-id` worth passing on and echoing: one line of 1 to 128 ASCII letters, digits,
/// `-`, `_` or `.` (a client may send its own; nothing else is logged or echoed). The filter and
/// the sidecar apply the same rule.
pub fn plain_request_id(value: &[u8]) -> Option<String> {
    let id = std::str::from_utf8(value).ok()?.trim();
    let plain = (1..=128).contains(&id.len())
        && id.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'));
    plain.then(|| id.to_owned())
}

/// A response sent instead of forwarding the request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocalReply<'a> {
    pub status: u16,
    /// Envoy's response code details (`%RESPONSE_CODE_DETAILS%`), no spaces.
    pub details: &'static str,
    pub body: &'a [u8],
}

/// Each body: a stable `error` code for programs and a `message` a person can read (the signup
/// form's user may see it).
impl LocalReply<'static> {
    pub const MISSING_EMAIL: Self = Self {
        status: 400,
        details: "email_verdict_missing_email",
        body: br#"{"error":"missing_email","message":"This signup needs an email address."}"#,
    };
    pub const INVALID_EMAIL: Self = Self {
        status: 400,
        details: "email_verdict_invalid_email",
        body: br#"{"error":"invalid_email","message":"The email address is not valid."}"#,
    };
    /// Two different addresses in one signup (a field twice, a header and the body, ...).
    pub const CONFLICTING_EMAILS: Self = Self {
        status: 400,
        details: "email_verdict_conflicting_emails",
        body: br#"{"error":"invalid_email","message":"The request gives two different email addresses; send one."}"#,
    };
    pub const UNREADABLE_BODY: Self = Self {
        status: 400,
        details: "email_verdict_unreadable_body",
        body: br#"{"error":"unreadable_body","message":"The request body could not be read in full (its format or encoding), so its email address could not be checked."}"#,
    };
    pub const BODY_TOO_LARGE: Self = Self {
        status: 413,
        details: "email_verdict_body_too_large",
        body: br#"{"error":"body_too_large","message":"The request body is too large."}"#,
    };

    pub fn unavailable(status: u16) -> Self {
        Self {
            status,
            details: "email_verdict_unavailable",
            body: br#"{"error":"verdict_unavailable","message":"The email address could not be checked right now; try again shortly."}"#,
        }
    }

    /// The refusal of an unusable email: two different ones get their own message.
    pub fn invalid(why: Option<crate::signup::extract::Unusable>) -> Self {
        match why {
            Some(crate::signup::extract::Unusable::Conflicting) => Self::CONFLICTING_EMAILS,
            _ => Self::INVALID_EMAIL,
        }
    }
}

impl<'a> LocalReply<'a> {
    pub fn blocked(status: u16, body: &'a [u8]) -> Self {
        Self { status, details: "email_verdict_disposable", body }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_header_lists_set_flags_in_contract_order() {
        let check = |flags: &[Flag], expected: &str| {
            assert_eq!(flags.iter().copied().collect::<Flags>().header_value(), expected);
        };
        check(&[], "");
        check(&[Flag::MxIpMatch, Flag::FreeProvider], "free_provider,mx_ip_match");
        check(
            &Flag::ALL,
            "free_provider,business_email,shared_mx,has_mx,review_required,allowlisted,blocked,mx_ip_match",
        );
        assert_eq!(Flags::from_bits(0xff), Some(Flag::ALL.into_iter().collect()));
        assert_eq!(Flags::from_bits(0), Some(Flags::default()));
    }

    #[test]
    fn the_suggestion_is_a_domain_only() {
        let result = crate::verdict::decide(&Default::default(), &crate::MxInfo::NoDomain, false);
        let check = |did_you_mean: Option<&str>, expected: Option<&str>| {
            let summary = VerdictSummary::from_result(&result).with_suggestion(did_you_mean);
            assert_eq!(summary.suggestion.as_ref().map(Domain::as_str), expected, "{did_you_mean:?}");
        };
        check(None, None);
        check(Some("gmail.com"), Some("gmail.com"));
        check(Some("ann@gmail.com"), Some("gmail.com"));
        check(Some("not a domain"), None);
    }
}
