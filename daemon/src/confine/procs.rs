//! The process tree as `/proc` shows it (Linux): a process's state, parent and group, and a
//! process's children and descendants (the reaper finds the orphans it adopted with them).
//! Nothing here decides who may use the API: that is a credential (`api::auth`).
//!
//! Parsing is plain functions with unit tests; the readers return `None`/empty when `/proc`
//! says nothing (the process exited, another platform), and callers decide what that means.

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
    fn this_process_has_no_child_of_its_own_until_it_spawns_one() {
        let me = i32::try_from(std::process::id()).unwrap();
        let mut child = std::process::Command::new("sleep")
            .arg("5")
            .spawn()
            .unwrap();
        let pid = i32::try_from(child.id()).unwrap();
        assert!(children(me).contains(&pid));
        assert!(descendants(me).contains(&pid));
        assert_eq!(stat(pid).unwrap().ppid, me);
        child.kill().unwrap();
        child.wait().unwrap();
    }
}
