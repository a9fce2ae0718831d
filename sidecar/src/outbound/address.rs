//! Which addresses an outbound request may reach without `--allow-private-outbound`: global
//! unicast only. `IpAddr::is_global` is not stable yet, so the special-purpose registries
//! (IANA, RFC 6890 and later) are spelled out here.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Whether `ip` is a public (globally routed unicast) address: not loopback, private,
/// link-local, unique-local, CGNAT, multicast, unspecified, documentation, benchmarking or
/// reserved. An IPv4-mapped or NAT64 (`64:ff9b::/96`) address is judged by its IPv4 address.
pub fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => is_public_v4(v4),
        IpAddr::V6(v6) => is_public_v6(v6),
    }
}

/// The IPv4 networks that are not public, with why.
const NOT_PUBLIC_V4: [([u8; 4], u8); 15] = [
    ([0, 0, 0, 0], 8),       // "this network", unspecified
    ([10, 0, 0, 0], 8),      // private
    ([100, 64, 0, 0], 10),   // shared address space (CGNAT), RFC 6598
    ([127, 0, 0, 0], 8),     // loopback
    ([169, 254, 0, 0], 16),  // link-local (cloud metadata services live here)
    ([172, 16, 0, 0], 12),   // private
    ([192, 0, 0, 0], 24),    // IETF protocol assignments
    ([192, 0, 2, 0], 24),    // documentation (TEST-NET-1)
    ([192, 88, 99, 0], 24),  // 6to4 relay anycast (deprecated)
    ([192, 168, 0, 0], 16),  // private
    ([198, 18, 0, 0], 15),   // benchmarking
    ([198, 51, 100, 0], 24), // documentation (TEST-NET-2)
    ([203, 0, 113, 0], 24),  // documentation (TEST-NET-3)
    ([224, 0, 0, 0], 4),     // multicast
    ([240, 0, 0, 0], 4),     // reserved, broadcast
];

fn is_public_v4(ip: Ipv4Addr) -> bool {
    let ip = u32::from(ip);
    !NOT_PUBLIC_V4.iter().any(|&(net, len)| (ip ^ u32::from_be_bytes(net)) >> (32 - len) == 0)
}

fn is_public_v6(ip: Ipv6Addr) -> bool {
    if let Some(v4) = ip.to_ipv4_mapped() {
        return is_public_v4(v4);
    }
    let s = ip.segments();
    if s[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        let [a, b] = s[6].to_be_bytes();
        let [c, d] = s[7].to_be_bytes();
        return is_public_v4(Ipv4Addr::new(a, b, c, d));
    }
    // Global unicast is 2000::/3; everything else (::, ::1, fc00::/7, fe80::/10, ff00::/8,
    // 64:ff9b:1::/48, 100::/64...) is not public.
    (s[0] & 0xe000) == 0x2000
        && !(s[0] == 0x2001 && s[1] < 0x0200) // IETF protocol assignments (2001::/23: Teredo, ORCHID...)
        && !(s[0] == 0x2001 && s[1] == 0x0db8) // documentation
        && s[0] != 0x2002 // 6to4: may carry any IPv4 address
        && (s[0] & 0xfff0) != 0x3ff0 // documentation (3fff::/20, RFC 9637)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(ip: &str, public: bool) {
        assert_eq!(is_public(ip.parse().unwrap()), public, "{ip}");
    }

    #[test]
    fn public_addresses_only() {
        for ip in ["1.1.1.1", "8.8.8.8", "93.184.216.34", "100.63.255.255", "100.128.0.1", "172.15.0.1", "172.32.0.1"] {
            check(ip, true);
        }
        for ip in ["192.0.1.1", "198.17.0.1", "198.20.0.1", "223.255.255.254", "2606:4700::1111", "2a00:1450::1"] {
            check(ip, true);
        }
        for ip in ["::ffff:8.8.8.8", "64:ff9b::808:808", "2001:4860::8888"] {
            check(ip, true);
        }
        let refused = [
            "0.0.0.0",
            "0.1.2.3",
            "10.0.0.1",
            "100.64.0.1",
            "100.127.255.255",
            "127.0.0.1",
            "127.1.2.3",
            "169.254.169.254",
            "172.16.0.1",
            "172.31.255.255",
            "192.0.0.8",
            "192.0.2.1",
            "192.88.99.1",
            "192.168.1.1",
            "198.18.0.1",
            "198.19.255.255",
            "198.51.100.7",
            "203.0.113.9",
            "224.0.0.1",
            "239.255.255.250",
            "240.0.0.1",
            "255.255.255.255",
        ];
        for ip in refused {
            check(ip, false);
        }
        let refused = [
            "::",
            "::1",
            "::ffff:127.0.0.1",
            "::ffff:10.1.2.3",
            "64:ff9b::7f00:1",
            "64:ff9b:1::1",
            "100::1",
            "2001::1",
            "2001:db8::1",
            "2002:7f00:1::1",
            "3fff::1",
            "fc00::1",
            "fd12:3456::1",
            "fe80::1",
            "ff02::1",
            "::127.0.0.1",
        ];
        for ip in refused {
            check(ip, false);
        }
    }
}
