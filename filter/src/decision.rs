//! Pure decisions: what a sidecar answer means, what a verdict looks like on the request, the
//! callout's path and the local responses. No host calls here.

use email_verdict_core::api::Verdict;
use email_verdict_core::{Domain, ErrorBody, ErrorCode, LookupResponse, VerdictResult};

use crate::host::CalloutResponse;

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
}

impl VerdictSummary {
    pub fn from_result(r: &VerdictResult) -> Self {
        Self {
            disposable: r.verdict == Verdict::Disposable,
            flags: Flag::ALL.into_iter().filter(|f| f.of(r)).collect(),
        }
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

/// What a sidecar answer means for the request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CalloutOutcome {
    Verdict(VerdictSummary),
    /// The sidecar said `invalid_input`: handled as `on_invalid_email`.
    InvalidEmail,
    /// No verdict: handled as `failure_mode`, with this bypass value.
    Failed(Bypass),
}

/// Envoy answers a timed-out callout with a synthetic 504 and a refused connection with 503.
pub fn classify(response: &CalloutResponse) -> CalloutOutcome {
    match response.status {
        Some(200) => match serde_json::from_slice::<LookupResponse>(&response.body) {
            Ok(lookup) => CalloutOutcome::Verdict(VerdictSummary::from_result(&lookup.result)),
            Err(_) => CalloutOutcome::Failed(Bypass::SidecarError),
        },
        Some(400) => match serde_json::from_slice::<ErrorBody>(&response.body) {
            Ok(body) if body.error.code == ErrorCode::InvalidInput => CalloutOutcome::InvalidEmail,
            _ => CalloutOutcome::Failed(Bypass::SidecarError),
        },
        Some(504) => CalloutOutcome::Failed(Bypass::SidecarTimeout),
        Some(401 | 402 | 429) => CalloutOutcome::Failed(Bypass::SidecarRejected),
        _ => CalloutOutcome::Failed(Bypass::SidecarError),
    }
}

/// `/api/v1/domain/<domain, percent-encoded>`: only the domain leaves the proxy.
pub fn lookup_path(domain: &Domain) -> String {
    let mut path = String::from("/api/v1/domain/");
    for b in domain.as_str().bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            path.push(char::from(b));
        } else {
            path.push_str(&format!("%{b:02X}"));
        }
    }
    path
}

/// A response the filter sends instead of forwarding the request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocalReply<'a> {
    pub status: u16,
    /// Envoy's response code details (`%RESPONSE_CODE_DETAILS%`), no spaces.
    pub details: &'static str,
    pub body: &'a [u8],
}

impl LocalReply<'static> {
    pub const MISSING_EMAIL: Self =
        Self { status: 400, details: "email_verdict_missing_email", body: br#"{"error":"missing_email"}"# };
    pub const INVALID_EMAIL: Self =
        Self { status: 400, details: "email_verdict_invalid_email", body: br#"{"error":"invalid_email"}"# };
    pub const UNREADABLE_BODY: Self =
        Self { status: 400, details: "email_verdict_unreadable_body", body: br#"{"error":"unreadable_body"}"# };
    pub const BODY_TOO_LARGE: Self =
        Self { status: 413, details: "email_verdict_body_too_large", body: br#"{"error":"body_too_large"}"# };

    pub fn unavailable(status: u16) -> Self {
        Self { status, details: "email_verdict_unavailable", body: br#"{"error":"verdict_unavailable"}"# }
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

    fn response(status: Option<u16>, body: &str) -> CalloutResponse {
        CalloutResponse { status, body: body.as_bytes().to_vec() }
    }

    fn lookup_body(verdict: &str, flags: &[&str]) -> String {
        String::from_utf8(crate::mock_host::lookup_response("mailinator.com", verdict, flags).body).unwrap()
    }

    fn error_body(code: &str) -> String {
        String::from_utf8(crate::mock_host::error_response(400, code).body).unwrap()
    }

    #[test]
    fn classifies_sidecar_answers() {
        use Bypass::{SidecarError, SidecarRejected, SidecarTimeout};
        use CalloutOutcome::*;
        let verdict =
            |disposable, flags: &[Flag]| Verdict(VerdictSummary { disposable, flags: flags.iter().copied().collect() });
        let cases: &[(Option<u16>, String, CalloutOutcome)] = &[
            (Some(200), lookup_body("disposable", &["has_mx"]), verdict(true, &[Flag::HasMx])),
            (
                Some(200),
                lookup_body("safe", &["free_provider", "mx_ip_match"]),
                verdict(false, &[Flag::FreeProvider, Flag::MxIpMatch]),
            ),
            (Some(200), "not json".into(), Failed(SidecarError)),
            (Some(200), "{}".into(), Failed(SidecarError)),
            (Some(400), error_body("invalid_input"), InvalidEmail),
            (Some(400), "garbage".into(), Failed(SidecarError)),
            (Some(401), error_body("api_key_invalid"), Failed(SidecarRejected)),
            (Some(401), error_body("missing_api_key"), Failed(SidecarRejected)),
            (Some(402), error_body("quota_exceeded"), Failed(SidecarRejected)),
            (Some(429), error_body("rate_limit_exceeded"), Failed(SidecarRejected)),
            (Some(500), error_body("internal_error"), Failed(SidecarError)),
            (Some(503), "upstream connect error".into(), Failed(SidecarError)),
            (Some(504), "upstream request timeout".into(), Failed(SidecarTimeout)),
            (Some(404), error_body("not_found"), Failed(SidecarError)),
            (Some(302), String::new(), Failed(SidecarError)),
            (None, String::new(), Failed(SidecarError)),
        ];
        for (status, body, expected) in cases {
            assert_eq!(&classify(&response(*status, body)), expected, "{status:?} {body}");
        }
    }

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
    fn lookup_path_carries_only_the_domain() {
        assert_eq!(lookup_path(&Domain::parse("Mailinator.COM").unwrap()), "/api/v1/domain/mailinator.com");
        assert_eq!(lookup_path(&Domain::parse("bücher.example").unwrap()), "/api/v1/domain/xn--bcher-kva.example");
    }
}
