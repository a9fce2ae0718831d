//! Per-client limits for the public pages (page views, re-checks), so that the pages cannot be
//! used to hammer DNS. Approximate and per process (`pingora-limits`' windowed estimator, fixed
//! memory whatever the number of clients): coarse protection, not an exact quota.

use std::net::IpAddr;
use std::time::Duration;

use pingora_limits::rate::Rate;

pub struct ClientLimit {
    rate: Rate,
    /// Events allowed per window and client; 0 turns the limit off.
    max: u32,
    window: Duration,
}

impl ClientLimit {
    pub fn new(max: u32, window: Duration) -> Self {
        Self { rate: Rate::new(window), max, window }
    }

    /// Counts one event for `client`; `Err(seconds)` to wait when over the limit. IPv6 clients
    /// are counted per /64, which one subscriber usually holds whole.
    pub fn check(&self, client: Option<IpAddr>) -> Result<(), u64> {
        if self.max == 0 {
            return Ok(());
        }
        let key = client.map(network_of);
        if self.rate.observe(&key, 1) > self.max as isize {
            // The window's remaining time is not exposed; a whole window is an upper bound.
            return Err(self.window.as_secs().max(1));
        }
        Ok(())
    }
}

/// The unit one client is counted by: its IPv4 address, or its IPv6 /64.
pub(crate) fn network_of(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) if v6.to_ipv4_mapped().is_none() => {
            let mut s = v6.segments();
            s[4..].fill(0);
            IpAddr::from(s)
        }
        IpAddr::V6(v6) => IpAddr::V4(v6.to_ipv4_mapped().unwrap_or(std::net::Ipv4Addr::UNSPECIFIED)),
        v4 => v4,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_per_client_and_per_ipv6_64() {
        let limit = ClientLimit::new(2, Duration::from_secs(60));
        let a = Some("192.0.2.1".parse().unwrap());
        assert_eq!((limit.check(a), limit.check(a)), (Ok(()), Ok(())));
        assert_eq!(limit.check(a), Err(60));
        assert_eq!(limit.check(Some("192.0.2.2".parse().unwrap())), Ok(()));
        let (x, y) = (Some("2001:db8::1".parse().unwrap()), Some("2001:db8::ffff:2".parse().unwrap()));
        assert_eq!((limit.check(x), limit.check(y)), (Ok(()), Ok(())));
        assert!(limit.check(x).is_err(), "one /64");
        let off = ClientLimit::new(0, Duration::from_secs(60));
        assert!((0..10).all(|_| off.check(a).is_ok()));
    }
}
