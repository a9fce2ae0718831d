//! The caller's address, for per-key IP allowlists: the TCP peer, unless the peer is a
//! configured trusted proxy, in which case `X-Forwarded-For` is read from the right, skipping
//! trusted proxies. A client cannot spoof past this: entries it writes itself sit to the left of
//! the first untrusted hop.

use std::net::IpAddr;

use ipnet::IpNet;

pub fn client_ip(peer: Option<IpAddr>, forwarded_for: &[&str], trusted: &[IpNet]) -> Option<IpAddr> {
    let is_trusted = |ip: &IpAddr| trusted.iter().any(|net| net.contains(ip));
    let mut client = peer?;
    if !is_trusted(&client) {
        return Some(client);
    }
    let hops = forwarded_for.iter().flat_map(|h| h.split(',')).map(str::trim).collect::<Vec<_>>();
    for hop in hops.into_iter().rev() {
        let Ok(ip) = hop.parse::<IpAddr>() else { return Some(client) };
        client = ip;
        if !is_trusted(&ip) {
            break;
        }
    }
    Some(client)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(peer: &str, xff: &[&str], trusted: &[&str], want: &str) {
        let trusted: Vec<IpNet> = trusted.iter().map(|t| t.parse().unwrap()).collect();
        let got = client_ip(Some(peer.parse().unwrap()), xff, &trusted);
        assert_eq!(got, Some(want.parse().unwrap()), "peer {peer} xff {xff:?}");
    }

    #[test]
    fn forwarded_for_only_through_trusted_proxies() {
        check("198.51.100.7", &["192.0.2.1"], &["10.0.0.0/8"], "198.51.100.7"); // untrusted peer: header ignored
        check("10.0.0.2", &["192.0.2.1"], &["10.0.0.0/8"], "192.0.2.1");
        check("10.0.0.2", &["6.6.6.6, 192.0.2.1, 10.0.0.9"], &["10.0.0.0/8"], "192.0.2.1"); // spoofed left entry
        check("10.0.0.2", &["6.6.6.6", "192.0.2.1"], &["10.0.0.0/8"], "192.0.2.1"); // several headers
        check("10.0.0.2", &[], &["10.0.0.0/8"], "10.0.0.2");
        check("10.0.0.2", &["garbage, 192.0.2.1"], &["10.0.0.0/8"], "192.0.2.1");
        check("10.0.0.2", &["garbage"], &["10.0.0.0/8"], "10.0.0.2");
        check("::1", &["2001:db8::5"], &["::1/128"], "2001:db8::5");
    }
}
