//! Which addresses the image fetcher may connect to: public unicast only, unless a network
//! is allowed by `--fetch-allow`. Keeps a picture URL from being a way into the host's network.

use ipnet::IpNet;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Networks the operator allowed although they are not public (tests allow 127.0.0.1/32).
#[derive(Debug, Clone, Default)]
pub struct AllowedNets(pub Vec<IpNet>);

impl AllowedNets {
    /// Whether the fetcher may connect to `ip`.
    pub fn permits(&self, ip: IpAddr) -> bool {
        is_public(ip) || self.0.iter().any(|net| net.contains(&ip))
    }
}

/// Public unicast: not loopback, private, link-local, unspecified, shared (CGNAT),
/// multicast, broadcast, documentation or reserved; IPv6 forms embedding an IPv4 address
/// (mapped, compatible, 6to4, NAT64) are judged by that address.
pub fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => is_public_v4(v4),
        IpAddr::V6(v6) => match embedded_v4(v6) {
            Some(v4) => is_public_v4(v4),
            None => is_public_v6(v6),
        },
    }
}

fn is_public_v4(ip: Ipv4Addr) -> bool {
    let [a, b, ..] = ip.octets();
    let shared = a == 100 && (64..128).contains(&b);
    let this_network = a == 0;
    let reserved = a >= 240;
    let protocol_assignments = a == 192 && b == 0 && ip.octets()[2] == 0;
    !(ip.is_loopback()
        || ip.is_private()
        || ip.is_link_local()
        || ip.is_unspecified()
        || ip.is_multicast()
        || ip.is_broadcast()
        || ip.is_documentation()
        || shared
        || this_network
        || reserved
        || protocol_assignments)
}

fn is_public_v6(ip: Ipv6Addr) -> bool {
    let first = ip.segments()[0];
    let unique_local = first & 0xfe00 == 0xfc00;
    let link_local = first & 0xffc0 == 0xfe80;
    let site_local = first & 0xffc0 == 0xfec0;
    let documentation = first == 0x2001 && ip.segments()[1] == 0x0db8;
    !(ip.is_loopback()
        || ip.is_unspecified()
        || ip.is_multicast()
        || unique_local
        || link_local
        || site_local
        || documentation)
}

/// The IPv4 address inside an IPv4-mapped (`::ffff:a.b.c.d`), IPv4-compatible
/// (`::a.b.c.d`), 6to4 (`2002:abcd::/16`) or NAT64 (`64:ff9b::/96`) address.
fn embedded_v4(ip: Ipv6Addr) -> Option<Ipv4Addr> {
    let s = ip.segments();
    let from = |hi: u16, lo: u16| {
        let [a, b] = hi.to_be_bytes();
        let [c, d] = lo.to_be_bytes();
        Ipv4Addr::new(a, b, c, d)
    };
    if ip.is_loopback() || ip.is_unspecified() {
        return None;
    }
    match s {
        [0, 0, 0, 0, 0, 0xffff, hi, lo] | [0, 0, 0, 0, 0, 0, hi, lo] => Some(from(hi, lo)),
        [0x64, 0xff9b, 0, 0, 0, 0, hi, lo] => Some(from(hi, lo)),
        [0x2002, hi, lo, ..] => Some(from(hi, lo)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn public(text: &str) -> bool {
        is_public(text.parse().expect("address"))
    }

    #[test]
    fn ipv4_private_and_special_ranges_are_refused() {
        for refused in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "0.0.0.0",
            "255.255.255.255",
            "224.0.0.1",
            "100.64.0.1",
            "240.0.0.1",
        ] {
            assert!(!public(refused), "{refused}");
        }
        for allowed in ["93.184.216.34", "8.8.8.8", "172.32.0.1"] {
            assert!(public(allowed), "{allowed}");
        }
    }

    #[test]
    fn ipv6_special_ranges_and_embedded_ipv4_are_refused() {
        for refused in [
            "::1",
            "::",
            "fe80::1",
            "fc00::1",
            "fd12:3456::1",
            "ff02::1",
            "::ffff:127.0.0.1",
            "::ffff:10.0.0.1",
            "::ffff:169.254.169.254",
            "::127.0.0.1",
            "64:ff9b::a00:1",
            "2002:c0a8:101::1",
        ] {
            assert!(!public(refused), "{refused}");
        }
        for allowed in ["2606:4700::1111", "::ffff:8.8.8.8", "2002:808:808::1"] {
            assert!(public(allowed), "{allowed}");
        }
    }

    #[test]
    fn an_allowed_network_permits_its_addresses_only() {
        let allow = AllowedNets(vec!["127.0.0.1/32".parse().expect("net")]);
        assert!(allow.permits("127.0.0.1".parse().expect("ip")));
        assert!(!allow.permits("127.0.0.2".parse().expect("ip")));
        assert!(!AllowedNets::default().permits("127.0.0.1".parse().expect("ip")));
    }
}
