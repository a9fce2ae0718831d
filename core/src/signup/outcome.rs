//! What an enforcement point does with a verdict, the same in the filter and ext_authz: the
//! flags header's names and order, the bypass values, the detail headers, and the replies it
//! sends instead of forwarding a signup.

use std::fmt;

use crate::api::Verdict;
use crate::signup::settings::{DetailHeaders, FlagHeaders};
use crate::verdict::Mail;
use crate::{Domain, EmailAddress, VerdictResult, VerdictSource};

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
    /// What decided it (the sidecar's `x-email-verdict-source`), when told.
    pub source: Option<VerdictSource>,
    /// Where its mail goes (the sidecar's `x-email-verdict-mail`), when told.
    pub mail: Option<Mail>,
}

impl VerdictSummary {
    pub fn from_result(r: &VerdictResult) -> Self {
        Self {
            disposable: r.verdict == Verdict::Disposable,
            flags: Flag::ALL.into_iter().filter(|f| f.of(r)).collect(),
            suggestion: None,
            source: None,
            mail: None,
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

/// What the detail headers say about a signup's address: the lookup record's `details` (the
/// same functions, `crate::details`), computed where the whole address is, since an
/// enforcement point asks the sidecar about the domain alone.
///
/// `Debug` leaves the address out: it must never reach a log line.
#[derive(Clone, PartialEq, Eq)]
pub struct AddressDetails {
    /// The normalized address as a header value, `None` when it is not one ([`header_value`]: an
    /// RFC 6531 local part with non-ASCII characters).
    normalized_email: Option<String>,
    role_account: bool,
    relay: bool,
}

impl AddressDetails {
    /// The details of `email`; `relay`: its domain is on the relay list (`data/relay.txt`).
    pub fn of(email: &EmailAddress, relay: bool) -> Self {
        let normalized = crate::details::normalize_email(email.local(), email.domain());
        Self {
            normalized_email: header_value(&normalized).map(str::to_owned),
            role_account: crate::details::is_role(email.local()),
            relay,
        }
    }

    /// Each detail header's name with its value, in `CONFIG.md` order: `None` when
    /// `detail_headers` switches it off or it has no value. What is `None` is not added (and
    /// ext_authz names it among the headers to remove).
    pub fn headers<'a>(&'a self, names: &'a FlagHeaders, send: DetailHeaders) -> [(&'a str, Option<&'a str>); 3] {
        let yes_no = |b: bool| if b { "true" } else { "false" };
        [
            (&names.normalized_email, self.normalized_email.as_deref().filter(|_| send.normalized_email)),
            (&names.role_account, Some(yes_no(self.role_account)).filter(|_| send.role_account)),
            (&names.relay, Some(yes_no(self.relay)).filter(|_| send.relay)),
        ]
    }
}

impl fmt::Debug for AddressDetails {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AddressDetails")
            .field("normalized_email", &self.normalized_email.as_ref().map(|_| "<address>"))
            .field("role_account", &self.role_account)
            .field("relay", &self.relay)
            .finish()
    }
}

/// `value` when every byte of it may be sent as a header value as it is: printable ASCII
/// (`!`..`~`) and spaces, a space neither first nor last. Anything else (a CR, an LF, any other
/// control, a non-ASCII byte) gives `None`: the header is left out rather than altered.
pub fn header_value(value: &str) -> Option<&str> {
    let printable = value.bytes().all(|b| (b' '..=b'~').contains(&b));
    let trimmed = !value.starts_with(' ') && !value.ends_with(' ');
    (printable && trimmed && !value.is_empty()).then_some(value)
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

/// Envoy's response code details of the replies made at run time (their gRPC code,
/// `LocalReply::code`, is read from them).
pub(crate) const BLOCKED_DETAILS: &str = "email_verdict_disposable";
pub(crate) const UNAVAILABLE_DETAILS: &str = "email_verdict_unavailable";
pub(crate) const TOO_MANY_SIGNUPS_DETAILS: &str = "email_verdict_too_many_signups";

/// A response sent instead of forwarding the request, as a REST client gets it; `render`
/// (`signup::reply`) says it in the request's protocol.
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
    /// More distinct domains than an enforcement point judges for one signup
    /// (`max_domains`, `extract::NAMES_PER_DOMAIN`): refused whatever the policies say.
    pub const TOO_MANY_ADDRESSES: Self = Self {
        status: 400,
        details: "email_verdict_too_many_addresses",
        body: br#"{"error":"too_many_addresses","message":"The request carries too many email addresses."}"#,
    };
    /// `on_subaddressed: deny`.
    pub const SUBADDRESSED: Self = Self {
        status: 400,
        details: "email_verdict_subaddressed",
        body: br#"{"error":"subaddressed_email","message":"Please sign up with your address without a +tag or extra dots."}"#,
    };
    /// `no_mx: block`: the domain has neither MX nor address records, or a null MX.
    pub const NO_MX: Self = Self {
        status: 400,
        details: "email_verdict_no_mx",
        body: br#"{"error":"undeliverable_email","message":"This email address cannot receive mail: its domain has no mail server. Please check it."}"#,
    };
    pub const BODY_TOO_LARGE: Self = Self {
        status: 413,
        details: "email_verdict_body_too_large",
        body: br#"{"error":"body_too_large","message":"The request body is too large."}"#,
    };

    pub fn unavailable(status: u16) -> Self {
        Self {
            status,
            details: UNAVAILABLE_DETAILS,
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
        Self { status, details: BLOCKED_DETAILS, body }
    }

    /// Over a `block` limit of `velocity`: `429` with `velocity::too_many_signups`'s body.
    pub fn too_many_signups(body: &'a [u8]) -> Self {
        Self { status: 429, details: TOO_MANY_SIGNUPS_DETAILS, body }
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

    fn details(email: &str, relay: bool) -> AddressDetails {
        AddressDetails::of(&EmailAddress::parse(email).unwrap(), relay)
    }

    fn values(d: &AddressDetails, send: DetailHeaders) -> Vec<(String, Option<String>)> {
        let names = FlagHeaders::default();
        d.headers(&names, send).iter().map(|(n, v)| (n.to_string(), v.map(str::to_owned))).collect()
    }

    fn pairs(expected: [(&str, Option<&str>); 3]) -> Vec<(String, Option<String>)> {
        expected.iter().map(|(n, v)| (n.to_string(), v.map(str::to_owned))).collect()
    }

    #[test]
    fn detail_headers_carry_the_records_details() {
        let all = DetailHeaders::default();
        let check = |email: &str, relay: bool, expected: [(&str, Option<&str>); 3]| {
            assert_eq!(values(&details(email, relay), all), pairs(expected), "{email}");
        };
        check(
            "J.o.h.n+x@gmail.com",
            false,
            [
                ("x-email-normalized", Some("john@gmail.com")),
                ("x-email-role", Some("false")),
                ("x-email-relay", Some("false")),
            ],
        );
        check(
            "J.O.H.N+x@GoogleMail.com",
            false,
            [
                ("x-email-normalized", Some("john@gmail.com")),
                ("x-email-role", Some("false")),
                ("x-email-relay", Some("false")),
            ],
        );
        check(
            "Postmaster+x@shopco.example",
            false,
            [
                ("x-email-normalized", Some("Postmaster+x@shopco.example")),
                ("x-email-role", Some("true")),
                ("x-email-relay", Some("false")),
            ],
        );
        check(
            "abc123@duck.com",
            true,
            [
                ("x-email-normalized", Some("abc123@duck.com")),
                ("x-email-role", Some("false")),
                ("x-email-relay", Some("true")),
            ],
        );
        // The domain is always the A-label form; a quoted local part with a space is a valid value.
        check(
            "\"john doe\"@Bücher.example",
            false,
            [
                ("x-email-normalized", Some("\"john doe\"@xn--bcher-kva.example")),
                ("x-email-role", Some("false")),
                ("x-email-relay", Some("false")),
            ],
        );
        // A non-ASCII local part (RFC 6531) has no header value: the header is left out.
        check(
            "josé@gmail.com",
            false,
            [("x-email-normalized", None), ("x-email-role", Some("false")), ("x-email-relay", Some("false"))],
        );
    }

    #[test]
    fn each_detail_header_can_be_switched_off_under_its_own_name() {
        let d = details("postmaster@duck.com", true);
        let off = DetailHeaders { normalized_email: false, relay: false, ..DetailHeaders::default() };
        assert_eq!(
            values(&d, off),
            pairs([("x-email-normalized", None), ("x-email-role", Some("true")), ("x-email-relay", None)])
        );
        let none =
            DetailHeaders { normalized_email: false, role_account: false, relay: false, ..DetailHeaders::default() };
        assert!(d.headers(&FlagHeaders::default(), none).iter().all(|(_, v)| v.is_none()));
        let names = FlagHeaders { relay: "x-relay".into(), ..FlagHeaders::default() };
        assert_eq!(d.headers(&names, DetailHeaders::default())[2], ("x-relay", Some("true")));
    }

    #[test]
    fn header_values_are_printable_ascii_only() {
        for ok in ["john@gmail.com", "\"a b\"@x.example", "!#$%&'*+-/=?^_`{|}~@example.com"] {
            assert_eq!(header_value(ok), Some(ok));
        }
        for bad in
            ["", " a@b.c", "a@b.c ", "a\r\nx-forged: 1", "a\nb", "a\rb", "a\tb", "a\0b", "a\x7fb", "josé@x.example"]
        {
            assert_eq!(header_value(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn debug_never_shows_the_address() {
        let shown = format!("{:?}", details("secret.person@gmail.com", false));
        assert!(!shown.contains("secret") && !shown.contains("secretperson"), "{shown}");
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
