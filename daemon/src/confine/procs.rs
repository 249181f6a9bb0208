//! The process tree as `/proc` shows it (Linux): a process's parent and group, a process's
//! children and descendants, whether it carries a command's marker, and which process holds
//! a TCP socket. The API uses these to tell an agent's process from the person's.
//!
//! Parsing is plain functions with unit tests; the readers return `None`/empty when `/proc`
//! says nothing (the process exited, another platform), and callers decide what that means.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::path::Path;

use crate::tools::commands::MARKER;

/// What `/proc/<pid>/stat` says about a process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stat {
    pub state: char,
    pub ppid: i32,
    pub pgrp: i32,
}

/// Parses a stat line: the fields after the command's last `)` (the name may hold spaces
/// and parentheses) are state, ppid, pgrp.
pub fn parse_stat(line: &str) -> Option<Stat> {
    let (_, rest) = line.rsplit_once(')')?;
    let mut fields = rest.split_whitespace();
    let state = fields.next()?.chars().next()?;
    let ppid = fields.next()?.parse().ok()?;
    let pgrp = fields.next()?.parse().ok()?;
    Some(Stat { state, ppid, pgrp })
}

pub fn stat(pid: i32) -> Option<Stat> {
    parse_stat(&std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)
}

/// Whether `pid` is `ancestor` or one of its descendants (its parent chain reaches it).
pub fn descends_from(pid: i32, ancestor: i32) -> bool {
    let mut current = pid;
    // A chain is never deeper than a few dozen; the bound only guards a corrupt read.
    for _ in 0..256 {
        if current == ancestor {
            return true;
        }
        if current <= 1 {
            return false;
        }
        match stat(current) {
            Some(stat) => current = stat.ppid,
            None => return false,
        }
    }
    false
}

/// The direct children of `pid` (every thread's `children` list: a thread's forks are its
/// own, and a tokio runtime forks from many threads).
pub fn children(pid: i32) -> Vec<i32> {
    let Ok(threads) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for thread in threads.filter_map(Result::ok) {
        if let Ok(text) = std::fs::read_to_string(thread.path().join("children")) {
            out.extend(
                text.split_whitespace()
                    .filter_map(|p| p.parse::<i32>().ok()),
            );
        }
    }
    out
}

/// Every descendant of `pid`, parents before children.
pub fn descendants(pid: i32) -> Vec<i32> {
    let mut out = children(pid);
    let mut next = 0;
    while next < out.len() && out.len() < 100_000 {
        let more = children(out[next]);
        out.extend(more);
        next += 1;
    }
    out
}

/// Whether `pid`'s environment names a command of ours (see `tools::commands::MARKER`):
/// it, or a process it started, was run by an agent (maybe of an earlier daemon).
pub fn has_marker(pid: i32) -> bool {
    let prefix = format!("{MARKER}=");
    std::fs::read(format!("/proc/{pid}/environ")).is_ok_and(|env| {
        env.split(|b| *b == 0)
            .any(|var| var.starts_with(prefix.as_bytes()))
    })
}

/// The inode of the TCP socket whose own address is `local` and whose peer is `remote` (the
/// client's end of a connection to us), from `/proc/net/tcp` and `tcp6`.
pub fn tcp_inode(local: SocketAddr, remote: SocketAddr) -> Option<u64> {
    ["/proc/net/tcp", "/proc/net/tcp6"].iter().find_map(|file| {
        let table = std::fs::read_to_string(file).ok()?;
        table
            .lines()
            .skip(1)
            .filter_map(parse_tcp_line)
            .find(|(l, r, _)| same(*l, local) && same(*r, remote))
            .map(|(_, _, inode)| inode)
    })
}

/// One row of `/proc/net/tcp{,6}`: local address, remote address, inode.
pub fn parse_tcp_line(line: &str) -> Option<(SocketAddr, SocketAddr, u64)> {
    let fields: Vec<&str> = line.split_whitespace().collect();
    let local = parse_hex_addr(fields.get(1)?)?;
    let remote = parse_hex_addr(fields.get(2)?)?;
    let inode = fields.get(9)?.parse().ok()?;
    Some((local, remote, inode))
}

/// `0100007F:1F90` (IPv4) or 32 hex digits and a port (IPv6). The kernel prints each 32-bit
/// word of the address as a number in the host's byte order, so the word's native bytes are
/// the address's bytes in network order.
fn parse_hex_addr(text: &str) -> Option<SocketAddr> {
    let (addr, port) = text.split_once(':')?;
    let port = u16::from_str_radix(port, 16).ok()?;
    let word = |hex: &str| u32::from_str_radix(hex, 16).ok().map(u32::to_ne_bytes);
    let ip = match addr.len() {
        8 => IpAddr::V4(Ipv4Addr::from(word(addr)?)),
        32 => {
            let mut bytes = [0u8; 16];
            for i in 0..4 {
                bytes[i * 4..i * 4 + 4].copy_from_slice(&word(addr.get(i * 8..i * 8 + 8)?)?);
            }
            IpAddr::V6(Ipv6Addr::from(bytes))
        }
        _ => return None,
    };
    Some(SocketAddr::new(ip, port))
}

/// The same endpoint, an IPv4-mapped IPv6 address being its IPv4 one.
fn same(a: SocketAddr, b: SocketAddr) -> bool {
    a.port() == b.port() && a.ip().to_canonical() == b.ip().to_canonical()
}

/// The first of `pids` that has socket `inode` open.
pub fn holder(pids: &[i32], inode: u64) -> Option<i32> {
    let target = format!("socket:[{inode}]");
    pids.iter().copied().find(|pid| {
        let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
            return false;
        };
        fds.filter_map(Result::ok)
            .any(|fd| std::fs::read_link(fd.path()).is_ok_and(|link| link == Path::new(&target)))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_fields_are_read_after_the_name() {
        let stat = parse_stat("4242 (we ird) (name)) S 17 777 777 0 -1 4194304").unwrap();
        assert_eq!(
            stat,
            Stat {
                state: 'S',
                ppid: 17,
                pgrp: 777
            }
        );
        assert_eq!(parse_stat("garbage"), None);
    }

    #[test]
    fn tcp_rows_give_both_ends_and_the_inode() {
        let v4 = "   3: 0100007F:A1B2 0100007F:2253 01 00000000:00000000 00:00000000 00000000     0        0 98765 1 0000000000000000 20 4 30 10 -1";
        let (local, remote, inode) = parse_tcp_line(v4).unwrap();
        assert_eq!(local, "127.0.0.1:41394".parse().unwrap());
        assert_eq!(remote, "127.0.0.1:8787".parse().unwrap());
        assert_eq!(inode, 98765);
        let v6 = "   0: 00000000000000000000000001000000:2253 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 555 1";
        let (local, _, inode) = parse_tcp_line(v6).unwrap();
        assert_eq!(local, "[::1]:8787".parse().unwrap());
        assert_eq!(inode, 555);
        assert!(parse_tcp_line("  sl  local_address rem_address   st").is_none());
        assert!(same(
            "[::ffff:127.0.0.1]:80".parse().unwrap(),
            "127.0.0.1:80".parse().unwrap()
        ));
    }

    #[test]
    fn this_process_descends_from_itself_and_its_socket_is_found() {
        let me = i32::try_from(std::process::id()).unwrap();
        assert!(descends_from(me, me));
        assert!(!descends_from(me, i32::MAX));
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let client = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (_server, _) = listener.accept().unwrap();
        let inode = tcp_inode(client.local_addr().unwrap(), listener.local_addr().unwrap())
            .expect("the client's socket is in /proc/net/tcp");
        assert_eq!(holder(&[me], inode), Some(me));
        assert_eq!(holder(&[], inode), None);
    }
}
