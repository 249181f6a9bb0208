//! The daemon as its agents' child subreaper (Linux, `PR_SET_CHILD_SUBREAPER`): a process an
//! agent's command double-forks (`setsid`, `nohup … &`, a daemonizing server) is re-parented
//! to the daemon instead of init when its parent exits, so it stays a descendant and the API
//! keeps refusing it ([`crate::api::peers`]).
//!
//! Adopted processes are the daemon's children but not tokio's: when they exit, nobody else
//! waits for them, so [`run`] reaps them (on SIGCHLD, and every 30 s in case a signal was
//! coalesced). It must never reap a child tokio spawned (tokio's `wait` would then fail), so
//! every spawn goes through [`spawn_tracked`], which records the pid under the same lock the
//! reaper holds; the pid is forgotten once tokio has waited for it ([`forget`]).

use std::collections::BTreeSet;
use std::io;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::procs;

/// Pids of the children the daemon spawned itself (tokio waits for those).
static SPAWNED: Mutex<BTreeSet<i32>> = Mutex::new(BTreeSet::new());

fn spawned() -> MutexGuard<'static, BTreeSet<i32>> {
    SPAWNED.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Makes this process the subreaper of its descendants (Linux; elsewhere orphans go to init
/// and only direct children are recognized).
pub fn become_subreaper() -> io::Result<()> {
    #[cfg(target_os = "linux")]
    nix::sys::prctl::set_child_subreaper(true).map_err(io::Error::from)?;
    Ok(())
}

/// Spawns a child with `spawn` and records its pid, so the reaper leaves it to tokio.
pub fn spawn_tracked(
    spawn: impl FnOnce() -> io::Result<tokio::process::Child>,
) -> io::Result<tokio::process::Child> {
    track(spawn, tokio::process::Child::id)
}

/// [`spawn_tracked`] for a child inside something else (an MCP server inside its transport):
/// `pid` finds it. Nothing tells when tokio waits for such a child, so its pid stays recorded
/// (should the kernel hand that pid to an adopted orphan later, that one zombie stays).
pub fn track<T>(
    spawn: impl FnOnce() -> io::Result<T>,
    pid: impl FnOnce(&T) -> Option<u32>,
) -> io::Result<T> {
    // Held across the spawn: a child that exits at once must not be reaped before its pid is
    // recorded.
    let mut spawned = spawned();
    let child = spawn()?;
    if let Some(pid) = pid(&child).and_then(|pid| i32::try_from(pid).ok()) {
        spawned.insert(pid);
    }
    Ok(child)
}

/// Whether `pid` is a child the daemon spawned itself (not an adopted orphan).
pub fn is_tracked(pid: i32) -> bool {
    spawned().contains(&pid)
}

/// Tokio has waited for `pid`: from now on that pid, if reused by an adopted process, is
/// the reaper's.
pub fn forget(pid: i32) {
    spawned().remove(&pid);
}

/// Reaps adopted orphans until `shutdown`.
pub async fn run(shutdown: CancellationToken) {
    #[cfg(unix)]
    let mut chld = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::child()) {
        Ok(signal) => signal,
        Err(error) => {
            tracing::warn!(%error, "cannot watch SIGCHLD; adopted processes are reaped every 30 s");
            return poll(shutdown).await;
        }
    };
    loop {
        tokio::select! {
            _ = chld.recv() => {}
            () = tokio::time::sleep(Duration::from_secs(30)) => {}
            () = shutdown.cancelled() => return,
        }
        reap_adopted();
    }
}

async fn poll(shutdown: CancellationToken) {
    loop {
        tokio::select! {
            () = tokio::time::sleep(Duration::from_secs(30)) => {
                reap_adopted();
            }
            () = shutdown.cancelled() => return,
        }
    }
}

/// Waits for every exited child that tokio does not own. Returns how many were reaped.
pub fn reap_adopted() -> usize {
    let me = i32::try_from(std::process::id()).unwrap_or(0);
    let spawned = spawned();
    let mut reaped = 0;
    for pid in procs::children(me) {
        if spawned.contains(&pid) {
            continue;
        }
        if procs::stat(pid).is_some_and(|s| s.state == 'Z') && reap(pid) {
            reaped += 1;
        }
    }
    reaped
}

#[cfg(unix)]
fn reap(pid: i32) -> bool {
    use nix::sys::wait::{WaitPidFlag, waitpid};
    waitpid(nix::unistd::Pid::from_raw(pid), Some(WaitPidFlag::WNOHANG)).is_ok()
}
