//! Containment without cgroups (Linux, as far as it goes): the daemon is its commands'
//! subreaper ([`super::reaper`]), so whatever a command double-forks stays its descendant
//! while it runs, and this walk over `/proc` finds them:
//!
//! - at a task's end, every descendant whose environment carries the marker of one of the
//!   task's commands ([`record`] keeps which those are);
//! - when the daemon stops, also every process it adopted (a child it did not spawn: an
//!   orphan re-parented to it, marker or not) and everything below it.
//!
//! Each is signalled through a pidfd opened before it is checked again, so a pid reused
//! between the walk and the kill is never hit. What this cannot reach (`doctor` says so): a
//! process that cleared the marker from its environment is not tied to its task, so it lives
//! until the daemon stops; and after the daemon is killed -9 its survivors belong to init.

use std::collections::{HashMap, HashSet};
use std::sync::{Mutex, MutexGuard, PoisonError};

/// The variable naming the command in its processes' environment: set on every command the
/// daemon starts (host or box), read by this walk, by `tools::commands::stop_orphan` after a
/// restart and by the API's peer check. Here, below every room that starts or finds a
/// command, so none of them names another for it.
pub const MARKER: &str = "LAZYBOYD_COMMAND_ID";

/// Each task's command ids (their markers), for the walk at the task's end.
static COMMANDS: Mutex<Option<HashMap<String, HashSet<String>>>> = Mutex::new(None);

fn commands() -> MutexGuard<'static, Option<HashMap<String, HashSet<String>>>> {
    COMMANDS.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Remembers that command `marker` belongs to task `task`.
pub fn record(task: &str, marker: &str) {
    commands()
        .get_or_insert_with(HashMap::new)
        .entry(task.to_owned())
        .or_default()
        .insert(marker.to_owned());
}

/// Forgets task `task`'s commands (its cgroup took care of them).
pub fn forget(task: &str) {
    if let Some(map) = commands().as_mut() {
        map.remove(task);
    }
}

/// Kills the daemon's descendants that carry a marker of task `task`'s commands. Returns
/// how many were signalled.
pub fn kill_task(task: &str) -> usize {
    let Some(markers) = commands().as_mut().and_then(|map| map.remove(task)) else {
        return 0;
    };
    let wanted = |pid: i32| marker_of(pid).is_some_and(|m| markers.contains(&m));
    descendants(me())
        .into_iter()
        .filter(|pid| wanted(*pid) && signal_if(*pid, wanted))
        .count()
}

/// Kills every process the daemon adopted, and what they started (the daemon stops).
/// `tracked` tells the children the daemon spawned itself (tokio owns and kills those).
pub fn kill_adopted(tracked: &dyn Fn(i32) -> bool) -> usize {
    let mut killed = 0;
    for child in children(me()).into_iter().filter(|pid| !tracked(*pid)) {
        // Below first: a parent killed first would hand its children to the daemon again.
        let mut tree = descendants(child);
        tree.reverse();
        tree.push(child);
        for pid in tree {
            if signal_if(pid, |_| true) {
                killed += 1;
            }
        }
    }
    killed
}

fn me() -> i32 {
    i32::try_from(std::process::id()).unwrap_or(0)
}

/// The command id in `pid`'s environment, if any.
fn marker_of(pid: i32) -> Option<String> {
    let env = std::fs::read(format!("/proc/{pid}/environ")).ok()?;
    let prefix = format!("{MARKER}=");
    env.split(|b| *b == 0).find_map(|var| {
        var.strip_prefix(prefix.as_bytes())
            .map(|id| String::from_utf8_lossy(id).into_owned())
    })
}

/// SIGKILLs `pid` through a pidfd if, once the pidfd is open, `still` holds for it.
#[cfg(target_os = "linux")]
fn signal_if(pid: i32, still: impl Fn(i32) -> bool) -> bool {
    use rustix::process::{Pid, PidfdFlags, Signal, pidfd_open, pidfd_send_signal};
    let Some(id) = Pid::from_raw(pid) else {
        return false;
    };
    let Ok(pidfd) = pidfd_open(id, PidfdFlags::empty()) else {
        return false;
    };
    // The pidfd names this process for good: checked now, it is the one signalled.
    still(pid) && pidfd_send_signal(&pidfd, Signal::KILL).is_ok()
}

#[cfg(not(target_os = "linux"))]
fn signal_if(_pid: i32, _still: impl Fn(i32) -> bool) -> bool {
    false
}

/// The direct children of `pid` (every thread's list: each thread forks its own).
fn children(pid: i32) -> Vec<i32> {
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
fn descendants(pid: i32) -> Vec<i32> {
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
    fn a_tasks_marked_descendants_are_killed_and_others_left() {
        let spawn = |marker: &str| {
            std::process::Command::new("sleep")
                .arg("30")
                .env(MARKER, marker)
                .spawn()
                .unwrap()
        };
        let mut ours = spawn("cmd-tree-ours");
        let mut other = spawn("cmd-tree-other");
        record("task-tree-a", "cmd-tree-ours");
        record("task-tree-b", "cmd-tree-other");
        // /proc shows a child's environment once it has exec'd.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while marker_of(i32::try_from(ours.id()).unwrap()).is_none() {
            assert!(std::time::Instant::now() < deadline);
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        assert_eq!(kill_task("task-tree-a"), 1);
        assert!(!ours.wait().unwrap().success());
        assert!(
            other.try_wait().unwrap().is_none(),
            "another task's process"
        );
        assert_eq!(kill_task("task-tree-a"), 0, "forgotten once killed");
        other.kill().unwrap();
        other.wait().unwrap();
    }
}
