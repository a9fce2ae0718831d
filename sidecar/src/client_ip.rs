//! The caller's address, for per-key IP allowlists and the pages' per-client limits: the TCP
//! peer, unless the peer is a configured trusted proxy, in which case `X-Forwarded-For` is read
//! from the right, skipping trusted proxies. A client cannot spoof past this: entries it writes
//! itself sit to the left of the first untrusted hop.
//!
//! Addresses are compared in canonical form: on a dual-stack listener an IPv4 peer arrives as
//! `::ffff:a.b.c.d`, which must match `--allow-ip a.b.c.d`. A hop that cannot be read (garbage,
//! `unknown`) where a client address is due gives no address at all: the caller is unknown,
//! never the trusted proxy that passed it on.

use std::net::{IpAddr, SocketAddr};

use ipnet::IpNet;

pub fn client_ip(peer: Option<IpAddr>, forwarded_for: &[&str], trusted: &[IpNet]) -> Option<IpAddr> {
    let is_trusted = |ip: &IpAddr| trusted.iter().any(|net| net.contains(ip));
    let mut client = peer?.to_canonical();
    if !is_trusted(&client) {
        return Some(client);
    }
    let hops: Vec<&str> =
        forwarded_for.iter().flat_map(|h| h.split(',')).map(str::trim).filter(|h| !h.is_empty()).collect();
    for hop in hops.into_iter().rev() {
        client = parse_hop(hop)?;
        if !is_trusted(&client) {
            break;
        }
    }
    Some(client)
}

/// One `X-Forwarded-For` entry: an address, `a.b.c.d:port`, `[v6]` or `[v6]:port`; canonical.
fn parse_hop(hop: &str) -> Option<IpAddr> {
    let hop = hop.trim_matches('"');
    let ip = hop
        .parse::<IpAddr>()
        .or_else(|_| hop.parse::<SocketAddr>().map(|s| s.ip()))
        .or_else(|_| hop.strip_prefix('[').and_then(|h| h.strip_suffix(']')).unwrap_or("").parse::<IpAddr>())
        .ok()?;
    Some(ip.to_canonical())
}

/// A CIDR network; a bare address means just that host.
pub fn parse_network(s: &str) -> Result<ipnet::IpNet, String> {
    s.parse::<ipnet::IpNet>()
        .or_else(|_| s.parse::<std::net::IpAddr>().map(ipnet::IpNet::from))
        .map_err(|_| format!("{s:?} is not an IP network (e.g. 192.0.2.0/24, 2001:db8::/32, 192.0.2.7)"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn networks() {
        assert_eq!(parse_network("192.0.2.0/24").unwrap().to_string(), "192.0.2.0/24");
        assert_eq!(parse_network("192.0.2.7").unwrap().to_string(), "192.0.2.7/32");
        assert_eq!(parse_network("2001:db8::1").unwrap().to_string(), "2001:db8::1/128");
        assert!(parse_network("192.0.2.0/33").is_err());
        assert!(parse_network("example.com").is_err());
    }

    fn check(peer: &str, xff: &[&str], trusted: &[&str], want: Option<&str>) {
        let trusted: Vec<IpNet> = trusted.iter().map(|t| t.parse().unwrap()).collect();
        let got = client_ip(Some(peer.parse().unwrap()), xff, &trusted);
        assert_eq!(got, want.map(|w| w.parse().unwrap()), "peer {peer} xff {xff:?}");
    }

    #[test]
    fn forwarded_for_only_through_trusted_proxies() {
        let t = &["10.0.0.0/8"];
        check("198.51.100.7", &["192.0.2.1"], t, Some("198.51.100.7")); // untrusted peer: header ignored
        check("10.0.0.2", &["192.0.2.1"], t, Some("192.0.2.1"));
        check("10.0.0.2", &["6.6.6.6, 192.0.2.1, 10.0.0.9"], t, Some("192.0.2.1")); // spoofed left entry
        check("10.0.0.2", &["6.6.6.6", "192.0.2.1"], t, Some("192.0.2.1")); // several headers
        check("10.0.0.2", &[], t, Some("10.0.0.2"));
        check("10.0.0.2", &["garbage, 192.0.2.1"], t, Some("192.0.2.1")); // garbage left of the client: the client's own
        check("::1", &["2001:db8::5"], &["::1/128"], Some("2001:db8::5"));
    }

    #[test]
    fn unreadable_client_hop_fails_closed() {
        let t = &["10.0.0.0/8"];
        check("10.0.0.2", &["garbage"], t, None);
        check("10.0.0.2", &["unknown"], t, None);
        check("10.0.0.2", &["192.0.2.1, unknown"], t, None);
        check("10.0.0.2", &["192.0.2.1, 10.0.0.9:80, nonsense"], t, None);
    }

    #[test]
    fn ports_and_brackets_are_read() {
        let t = &["10.0.0.0/8"];
        check("10.0.0.2", &["192.0.2.1:4711"], t, Some("192.0.2.1"));
        check("10.0.0.2", &["[2001:db8::7]"], t, Some("2001:db8::7"));
        check("10.0.0.2", &["[2001:db8::7]:443"], t, Some("2001:db8::7"));
        check("10.0.0.2", &["\"[2001:db8::7]:443\""], t, Some("2001:db8::7"));
        check("10.0.0.2", &["192.0.2.1, 10.0.0.9:8080"], t, Some("192.0.2.1"));
    }

    #[test]
    fn mapped_ipv4_is_canonical() {
        check("::ffff:198.51.100.7", &[], &["10.0.0.0/8"], Some("198.51.100.7"));
        check("::ffff:127.0.0.1", &["192.0.2.1"], &["127.0.0.1/32"], Some("192.0.2.1"));
        check("::ffff:127.0.0.1", &["::ffff:192.0.2.1"], &["127.0.0.1/32"], Some("192.0.2.1"));
    }
}
