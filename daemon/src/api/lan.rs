//! The addresses a phone on the same network can reach an all-interfaces listener at: every
//! up, non-loopback interface's IPv4 address, and global IPv6 ones, except container and VM
//! bridges (docker, podman, libvirt), which no phone can reach.

use std::net::{IpAddr, SocketAddr};

use nix::ifaddrs::getifaddrs;
use nix::net::if_::InterfaceFlags;

/// Bridges only this machine's containers and VMs sit on.
const LOCAL_BRIDGES: [&str; 6] = ["docker", "br-", "veth", "virbr", "podman", "cni"];

/// The dashboard's URLs on this machine's network interfaces, for a listener on `addr` (an
/// unspecified address: `0.0.0.0` or `::`); empty for any other listener.
pub fn urls(addr: SocketAddr, tls: bool) -> Vec<String> {
    if !addr.ip().is_unspecified() {
        return Vec::new();
    }
    let scheme = if tls { "https" } else { "http" };
    let Ok(interfaces) = getifaddrs() else {
        return Vec::new();
    };
    let mut urls = Vec::new();
    for interface in interfaces {
        let up = interface.flags.contains(InterfaceFlags::IFF_UP);
        let bridge = LOCAL_BRIDGES
            .iter()
            .any(|prefix| interface.interface_name.starts_with(prefix));
        let Some(address) = interface.address else {
            continue;
        };
        let ip: IpAddr = if let Some(v4) = address.as_sockaddr_in() {
            v4.ip().into()
        } else if let Some(v6) = address.as_sockaddr_in6() {
            // Link-local and unique-local addresses need a zone or are rarely routed.
            let ip = v6.ip();
            if addr.is_ipv4() || (ip.segments()[0] & 0xe000) != 0x2000 {
                continue;
            }
            ip.into()
        } else {
            continue;
        };
        if !up || bridge || ip.is_loopback() {
            continue;
        }
        let url = format!("{scheme}://{}/", SocketAddr::new(ip, addr.port()));
        if !urls.contains(&url) {
            urls.push(url);
        }
    }
    urls
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_unspecified_listeners_have_lan_urls() {
        assert!(urls("127.0.0.1:8787".parse().unwrap(), false).is_empty());
        for url in urls("0.0.0.0:8787".parse().unwrap(), true) {
            assert!(
                url.starts_with("https://") && url.ends_with(":8787/"),
                "{url}"
            );
            assert!(
                !url.contains("0.0.0.0") && !url.contains("127.0.0.1"),
                "{url}"
            );
        }
    }
}
