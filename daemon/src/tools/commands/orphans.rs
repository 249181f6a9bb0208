//! What a dead daemon's commands left behind: found by the marker in their environment.

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;

use crate::confine::tree::MARKER;
/// What became of a command a dead daemon left behind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Orphan {
    /// Some of its processes still ran: the group was killed.
    Stopped,
    /// None of its processes runs any more.
    Gone,
    /// This platform cannot tell (no `/proc`).
    Unknown,
}

/// After a restart: stops what is left of command `id` (process group `pgid`) from the
/// previous daemon, as a shutdown would have. Only processes of that group that carry the
/// command's marker count, so a reused pid is never touched.
pub fn stop_orphan(id: &str, pgid: i32) -> Orphan {
    if !cfg!(target_os = "linux") || pgid <= 1 {
        return Orphan::Unknown;
    }
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Orphan::Unknown;
    };
    let marker = format!("{MARKER}={id}");
    let ours = entries.filter_map(Result::ok).any(|entry| {
        let dir = entry.path();
        let in_group = std::fs::read_to_string(dir.join("stat"))
            .ok()
            .and_then(|stat| process_group(&stat))
            == Some(pgid);
        in_group
            && std::fs::read(dir.join("environ"))
                .is_ok_and(|env| env.split(|b| *b == 0).any(|var| var == marker.as_bytes()))
    });
    if !ours {
        return Orphan::Gone;
    }
    match killpg(Pid::from_raw(pgid), Signal::SIGKILL) {
        Ok(()) => Orphan::Stopped,
        Err(_) => Orphan::Gone,
    }
}

/// The process group in a `/proc/<pid>/stat` line (the fields after the command's `)`:
/// state, ppid, pgrp). Zombies have exited already and do not count.
pub(super) fn process_group(stat: &str) -> Option<i32> {
    let (_, rest) = stat.rsplit_once(')')?;
    let mut fields = rest.split_whitespace();
    let state = fields.next()?;
    if state == "Z" || state == "X" {
        return None;
    }
    fields.nth(1)?.parse().ok()
}
