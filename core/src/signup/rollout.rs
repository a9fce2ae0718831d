//! Switching a gate on in stages: `mode: "shadow"` judges every signup exactly as block mode
//! would and refuses none, and `enforce_percent` enforces for a share of clients only (the
//! rest are shadowed). What block mode would have refused is counted by [`Reason`].
//!
//! The share is chosen by a stable hash of the client's address (an IPv6 client by its /64,
//! which one device keeps while its privacy addresses rotate): the same client gets the same
//! answer on every retry, on every gateway and replica, across restarts. A signup whose client
//! is unknown is enforced (fail closed).

use std::net::IpAddr;

use super::outcome::{BLOCKED_DETAILS, LocalReply, TOO_MANY_SIGNUPS_DETAILS, UNAVAILABLE_DETAILS};
use super::settings::Mode;

/// Why block mode would have refused a signup: the `would_block` counters' reasons, a bounded set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Reason {
    Disposable,
    TooManySignups,
    UnreadableBody,
    TooManyAddresses,
    InvalidEmail,
    MissingEmail,
    Subaddressed,
    BodyTooLarge,
    /// No verdict could be had and `failure_mode` denies (`deny`'s reply).
    VerdictUnavailable,
    /// `no_mx: block`: the domain cannot receive mail.
    NoMx,
}

impl Reason {
    pub const ALL: [Reason; 10] = [
        Reason::Disposable,
        Reason::TooManySignups,
        Reason::UnreadableBody,
        Reason::TooManyAddresses,
        Reason::InvalidEmail,
        Reason::MissingEmail,
        Reason::Subaddressed,
        Reason::BodyTooLarge,
        Reason::VerdictUnavailable,
        Reason::NoMx,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Reason::Disposable => "disposable",
            Reason::TooManySignups => "too_many_signups",
            Reason::UnreadableBody => "unreadable_body",
            Reason::TooManyAddresses => "too_many_addresses",
            Reason::InvalidEmail => "invalid_email",
            Reason::MissingEmail => "missing_email",
            Reason::Subaddressed => "subaddressed",
            Reason::BodyTooLarge => "body_too_large",
            Reason::VerdictUnavailable => "verdict_unavailable",
            Reason::NoMx => "no_mx",
        }
    }

    /// The reason of a refusal, by its response code details (every `LocalReply` has one).
    pub fn of(reply: &LocalReply<'_>) -> Reason {
        Self::of_details(reply.details)
    }

    pub fn of_details(details: &str) -> Reason {
        match details {
            BLOCKED_DETAILS => Reason::Disposable,
            TOO_MANY_SIGNUPS_DETAILS => Reason::TooManySignups,
            UNAVAILABLE_DETAILS => Reason::VerdictUnavailable,
            d if d == LocalReply::UNREADABLE_BODY.details => Reason::UnreadableBody,
            d if d == LocalReply::TOO_MANY_ADDRESSES.details => Reason::TooManyAddresses,
            d if d == LocalReply::MISSING_EMAIL.details => Reason::MissingEmail,
            d if d == LocalReply::SUBADDRESSED.details => Reason::Subaddressed,
            d if d == LocalReply::BODY_TOO_LARGE.details => Reason::BodyTooLarge,
            d if d == LocalReply::NO_MX.details => Reason::NoMx,
            // INVALID_EMAIL, CONFLICTING_EMAILS
            _ => Reason::InvalidEmail,
        }
    }
}

/// Whether a signup from `client` is enforced (`mode` block or flag, within `enforce_percent`)
/// or shadowed.
pub fn enforces(mode: Mode, enforce_percent: u8, client: Option<IpAddr>) -> bool {
    match (mode, enforce_percent) {
        (Mode::Shadow, _) | (_, 0) => false,
        (_, 100..) => true,
        (_, percent) => client.is_none_or(|ip| bucket(ip) < percent),
    }
}

/// The client's bucket, 0..100: FNV-1a of its IPv4 address or its IPv6 /64 (an IPv4-mapped
/// IPv6 address is its IPv4 address).
pub fn bucket(ip: IpAddr) -> u8 {
    let octets: Vec<u8> = match ip.to_canonical() {
        IpAddr::V4(v4) => v4.octets().to_vec(),
        IpAddr::V6(v6) => v6.octets()[..8].to_vec(),
    };
    let bytes = &octets;
    let hash = bytes.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3));
    // The high bits: FNV's low bits mix least.
    ((hash >> 32) % 100) as u8
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_refusal_has_its_reason() {
        let cases = [
            (LocalReply::blocked(403, b"{}"), Reason::Disposable),
            (LocalReply::too_many_signups(b"{}"), Reason::TooManySignups),
            (LocalReply::unavailable(503), Reason::VerdictUnavailable),
            (LocalReply::UNREADABLE_BODY, Reason::UnreadableBody),
            (LocalReply::TOO_MANY_ADDRESSES, Reason::TooManyAddresses),
            (LocalReply::INVALID_EMAIL, Reason::InvalidEmail),
            (LocalReply::CONFLICTING_EMAILS, Reason::InvalidEmail),
            (LocalReply::MISSING_EMAIL, Reason::MissingEmail),
            (LocalReply::SUBADDRESSED, Reason::Subaddressed),
            (LocalReply::BODY_TOO_LARGE, Reason::BodyTooLarge),
            (LocalReply::NO_MX, Reason::NoMx),
        ];
        for (reply, reason) in cases {
            assert_eq!(Reason::of(&reply), reason, "{}", reply.details);
        }
        let names: std::collections::HashSet<&str> = Reason::ALL.iter().map(|r| r.as_str()).collect();
        assert_eq!(names.len(), Reason::ALL.len());
    }

    #[test]
    fn shadow_and_the_ends_of_the_share() {
        let ip: Option<IpAddr> = Some("192.0.2.7".parse().unwrap());
        assert!(!enforces(Mode::Shadow, 100, ip));
        assert!(!enforces(Mode::Block, 0, ip));
        assert!(!enforces(Mode::Block, 0, None));
        assert!(enforces(Mode::Block, 100, ip));
        assert!(enforces(Mode::Flag, 100, None));
        // Unknown client: enforced (fail closed) within a partial share.
        assert!(enforces(Mode::Block, 1, None));
    }

    #[test]
    fn the_share_is_stable_and_in_proportion() {
        let clients: Vec<IpAddr> =
            (0..10_000u32).map(|i| IpAddr::from((0x0a00_0000u32 + i * 7919).to_be_bytes())).collect();
        for percent in [1u8, 30, 50, 99] {
            let enforced = clients.iter().filter(|ip| enforces(Mode::Block, percent, Some(**ip))).count();
            // Binomial: n = 10,000, sd <= 50; 5 sd either side.
            let expected = usize::from(percent) * 100;
            assert!(enforced.abs_diff(expected) <= 250, "{percent}%: {enforced} of 10,000");
            // The same client, the same answer; a larger share keeps every client of a smaller one.
            for ip in &clients[..200] {
                assert_eq!(enforces(Mode::Block, percent, Some(*ip)), enforces(Mode::Block, percent, Some(*ip)));
                if enforces(Mode::Block, percent, Some(*ip)) {
                    assert!(enforces(Mode::Block, percent.saturating_add(1), Some(*ip)));
                }
            }
        }
    }

    #[test]
    fn an_ipv6_client_is_its_64_and_a_mapped_ipv4_is_its_ipv4() {
        let a: IpAddr = "2001:db8:1:2:aaaa::1".parse().unwrap();
        let b: IpAddr = "2001:db8:1:2:bbbb:cccc:dddd:eeee".parse().unwrap();
        assert_eq!(bucket(a), bucket(b));
        let v4: IpAddr = "198.51.100.9".parse().unwrap();
        let mapped: IpAddr = "::ffff:198.51.100.9".parse().unwrap();
        assert_eq!(bucket(v4), bucket(mapped));
    }
}
