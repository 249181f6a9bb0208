//! Which addresses `web_fetch` may reach: public unicast only, unless the person named the
//! host in `[web] allow_hosts`.
//!
//! The check runs on the addresses a name resolved to (never on the name alone), so a public
//! name pointing at 127.0.0.1 is refused like the literal. Everything that is not plainly a
//! public unicast address counts as not public: loopback, private (RFC 1918, IPv6 ULA),
//! link-local, CGNAT, multicast, broadcast, unspecified, documentation, benchmarking,
//! reserved, and IPv6 forms that embed an IPv4 address which is itself not public.
//!
//! Above every rule: the daemon's own listeners are never reached ([`is_own_listener`]),
//! whatever `allow_hosts` says: an entry such as `localhost` must not let an agent read or
//! drive its own daemon.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::{PoisonError, RwLock};

/// The daemon's TCP listeners (set once they are bound).
static OWN_LISTENERS: RwLock<Vec<SocketAddr>> = RwLock::new(Vec::new());

/// Records the daemon's own TCP listener, which `web_fetch` must never reach.
pub fn set_own_listener(addr: SocketAddr) {
    let mut own = OWN_LISTENERS
        .write()
        .unwrap_or_else(PoisonError::into_inner);
    if !own.contains(&addr) {
        own.push(addr);
    }
}

/// Whether a connection to `addr` would reach one of the daemon's own listeners: same port,
/// and the listener's address, or any address of this machine when it listens on all of
/// them (loopback always counts: a loopback listener answers any 127.x or ::1 name of it).
pub fn is_own_listener(addr: SocketAddr) -> bool {
    let own = OWN_LISTENERS.read().unwrap_or_else(PoisonError::into_inner);
    own.iter().any(|listener| {
        listener.port() == addr.port()
            && (listener.ip() == addr.ip()
                || addr.ip().is_loopback()
                || addr.ip().is_unspecified()
                || (listener.ip().is_unspecified() && is_local_address(addr.ip())))
    })
}

/// Whether `ip` is one of this machine's interface addresses.
fn is_local_address(ip: IpAddr) -> bool {
    let Ok(interfaces) = nix::ifaddrs::getifaddrs() else {
        // Cannot tell: take it for ours (refusing a fetch is the safe mistake).
        return true;
    };
    interfaces.filter_map(|i| i.address).any(|address| {
        address.as_sockaddr_in().map(|v4| IpAddr::from(v4.ip())) == Some(ip)
            || address.as_sockaddr_in6().map(|v6| IpAddr::from(v6.ip())) == Some(ip)
    })
}

/// Why an address is not public (`None`: it is).
pub fn non_public(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(v4) => non_public_v4(v4),
        IpAddr::V6(v6) => non_public_v6(v6),
    }
}

fn non_public_v4(ip: Ipv4Addr) -> Option<&'static str> {
    let [a, b, c, _] = ip.octets();
    let kind = match (a, b, c) {
        (0, _, _) => "unspecified (0.0.0.0/8)",
        (127, _, _) => "loopback",
        (10, _, _) => "private (10.0.0.0/8)",
        (172, 16..=31, _) => "private (172.16.0.0/12)",
        (192, 168, _) => "private (192.168.0.0/16)",
        (169, 254, _) => "link-local",
        (100, 64..=127, _) => "shared address space (CGNAT, 100.64.0.0/10)",
        (192, 0, 0) => "IETF protocol assignments (192.0.0.0/24)",
        (192, 0, 2) | (198, 51, 100) | (203, 0, 113) => "documentation",
        (198, 18..=19, _) => "benchmarking (198.18.0.0/15)",
        (192, 88, 99) => "6to4 relay anycast",
        (224..=239, _, _) => "multicast",
        (240..=255, _, _) => "reserved (240.0.0.0/4, broadcast)",
        _ => return None,
    };
    Some(kind)
}

fn non_public_v6(ip: Ipv6Addr) -> Option<&'static str> {
    if let Some(v4) = ip.to_ipv4_mapped() {
        return non_public_v4(v4);
    }
    let s = ip.segments();
    let kind = match s {
        [0, 0, 0, 0, 0, 0, 0, 0] => "unspecified",
        [0, 0, 0, 0, 0, 0, 0, 1] => "loopback",
        // IPv4-compatible (deprecated) and other forms under ::/8.
        [0, ..] => "reserved (::/8)",
        // NAT64: the embedded IPv4 address decides.
        [0x64, 0xff9b, 0, 0, 0, 0, hi, lo] => {
            let v4 = Ipv4Addr::new((hi >> 8) as u8, hi as u8, (lo >> 8) as u8, lo as u8);
            return non_public_v4(v4);
        }
        [0x64, 0xff9b, 1, ..] => "NAT64 local use (64:ff9b:1::/48)",
        [0x100, 0, 0, 0, ..] => "discard-only (100::/64)",
        // 6to4: the embedded IPv4 address decides.
        [0x2002, hi, lo, ..] => {
            let v4 = Ipv4Addr::new((hi >> 8) as u8, hi as u8, (lo >> 8) as u8, lo as u8);
            return non_public_v4(v4);
        }
        [0x2001, 0x0db8, ..] => "documentation (2001:db8::/32)",
        [0x3fff, b, ..] if b < 0x1000 => "documentation (3fff::/20)",
        // Teredo, ORCHID, benchmarking and other IETF assignments.
        [0x2001, b, ..] if b < 0x0200 => "IETF protocol assignments (2001::/23)",
        [a, ..] if a & 0xfe00 == 0xfc00 => "unique local (fc00::/7)",
        [a, ..] if a & 0xffc0 == 0xfe80 => "link-local",
        [a, ..] if a & 0xffc0 == 0xfec0 => "site-local (deprecated)",
        [a, ..] if a & 0xff00 == 0xff00 => "multicast",
        // Only global unicast (2000::/3) is public.
        [a, ..] if a & 0xe000 != 0x2000 => "reserved",
        _ => return None,
    };
    Some(kind)
}

/// `[web] allow_hosts`: entries `host` (any port) or `host:port`; IPv6 as `[::1]` or
/// `[::1]:8080` (a bare `::1` also works). Names compare case-insensitively, without a
/// trailing dot.
#[derive(Debug, Clone, Default)]
pub struct AllowList {
    entries: Vec<(String, Option<u16>)>,
}

impl AllowList {
    /// Parses the entries; a malformed one is an error naming it.
    pub fn parse(entries: &[String]) -> Result<AllowList, String> {
        let mut parsed = Vec::new();
        for entry in entries {
            let entry = entry.trim();
            let bad = || format!("[web] allow_hosts: {entry:?} is not `host` or `host:port`");
            let (host, port) = if let Some(rest) = entry.strip_prefix('[') {
                let (host, tail) = rest.split_once(']').ok_or_else(bad)?;
                let port = match tail.strip_prefix(':') {
                    Some(p) => Some(p.parse::<u16>().map_err(|_| bad())?),
                    None if tail.is_empty() => None,
                    None => return Err(bad()),
                };
                (host.to_owned(), port)
            } else if entry.parse::<Ipv6Addr>().is_ok() {
                (entry.to_owned(), None)
            } else if let Some((host, port)) = entry.rsplit_once(':') {
                (
                    host.to_owned(),
                    Some(port.parse::<u16>().map_err(|_| bad())?),
                )
            } else {
                (entry.to_owned(), None)
            };
            if host.is_empty() || host.contains('/') {
                return Err(bad());
            }
            parsed.push((normalize(&host), port));
        }
        Ok(AllowList { entries: parsed })
    }

    /// Whether the person allowed `host` (a name or an IP literal, without brackets) on
    /// `port`.
    pub fn allows(&self, host: &str, port: u16) -> bool {
        let host = normalize(host);
        self.entries
            .iter()
            .any(|(h, p)| *h == host && p.is_none_or(|p| p == port))
    }
}

fn normalize(host: &str) -> String {
    let host = host.trim_end_matches('.').to_ascii_lowercase();
    match host.parse::<IpAddr>() {
        Ok(ip) => ip.to_string(),
        Err(_) => host,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(text: &str) -> IpAddr {
        text.parse().unwrap()
    }

    #[test]
    fn the_daemons_own_listener_is_never_reachable() {
        set_own_listener("127.0.0.1:48787".parse().unwrap());
        for own in [
            "127.0.0.1:48787",
            "127.0.0.2:48787",
            "[::1]:48787",
            "0.0.0.0:48787",
        ] {
            assert!(is_own_listener(own.parse().unwrap()), "{own}");
        }
        for other in ["127.0.0.1:48788", "93.184.216.34:48787"] {
            assert!(!is_own_listener(other.parse().unwrap()), "{other}");
        }
    }

    #[test]
    fn only_public_unicast_is_public() {
        for public in [
            "1.1.1.1",
            "8.8.8.8",
            "93.184.216.34",
            "172.32.0.1",
            "100.128.0.1",
            "2606:4700:4700::1111",
            "2a00:1450:4001:80b::200e",
            "::ffff:8.8.8.8",
            "64:ff9b::808:808",
        ] {
            assert_eq!(non_public(ip(public)), None, "{public}");
        }
        for (private, kind) in [
            ("127.0.0.1", "loopback"),
            ("127.8.9.10", "loopback"),
            ("10.1.2.3", "private"),
            ("172.16.0.1", "private"),
            ("172.31.255.255", "private"),
            ("192.168.1.1", "private"),
            ("169.254.169.254", "link-local"),
            ("100.64.0.1", "CGNAT"),
            ("0.0.0.0", "unspecified"),
            ("224.0.0.1", "multicast"),
            ("255.255.255.255", "broadcast"),
            ("192.0.2.1", "documentation"),
            ("198.18.0.1", "benchmarking"),
            ("::1", "loopback"),
            ("::", "unspecified"),
            ("::ffff:127.0.0.1", "loopback"),
            ("::ffff:10.0.0.1", "private"),
            ("::127.0.0.1", "reserved"),
            ("64:ff9b::a00:1", "private"),
            ("2002:a00:1::", "private"),
            ("fd00::1", "unique local"),
            ("fe80::1", "link-local"),
            ("ff02::1", "multicast"),
            ("2001:db8::1", "documentation"),
            ("2001::1", "IETF"),
            ("4000::1", "reserved"),
        ] {
            let got = non_public(ip(private)).unwrap_or_else(|| panic!("{private} is public?"));
            assert!(got.contains(kind), "{private}: {got}");
        }
    }

    #[test]
    fn allow_list_entries_name_a_host_or_a_host_and_port() {
        let list = AllowList::parse(&[
            "127.0.0.1:8080".into(),
            "Intranet.Example.".into(),
            "[::1]:9000".into(),
            "fd00::5".into(),
            "[fe80::1]".into(),
        ])
        .unwrap();
        assert!(list.allows("127.0.0.1", 8080));
        assert!(!list.allows("127.0.0.1", 8081));
        assert!(list.allows("intranet.example", 80));
        assert!(list.allows("INTRANET.example.", 443));
        assert!(list.allows("::1", 9000));
        assert!(!list.allows("::1", 9001));
        assert!(list.allows("fd00:0::5", 1));
        assert!(list.allows("fe80::1", 22));
        assert!(!list.allows("localhost", 8080));
        for bad in ["", "host:port", "[::1", "[::1]x", "a/b:1"] {
            assert!(AllowList::parse(&[bad.into()]).is_err(), "{bad}");
        }
    }
}
