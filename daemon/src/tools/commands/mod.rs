//! Commands the agent started, by id: they belong to the daemon's [`CommandRegistry`], not to
//! the tool call that started them, so they keep running between calls and across turns.
//!
//! Each command runs as `bash -c <cmd>` (`sh -c` when bash is missing) in its own process
//! group, so one `killpg` stops it and everything it spawned. One pump task appends stdout and
//! stderr, in arrival order, to `<workspace>/.lazyboy-output/<id>.log` and then to an
//! in-memory buffer of output the model has not read yet (bounded: the log keeps everything)
//! and a short tail (what a revival note quotes). The log is created with `O_EXCL |
//! O_NOFOLLOW` in the checked output directory and written only through the fd opened then;
//! the daemon never reads it back: a command may replace its own log (with a symlink to
//! `<home>/token`, say), and whatever the daemon tells of its output comes from memory.
//!
//! A command belongs to the task that started it: only that task's tools may type into it,
//! wait for it, read it or kill it (see `handlers::command`).
//! One supervisor task waits for the exit (or the timeout, which kills the group) and records
//! the [`Exit`] only after the pipes drained (or a short grace, when a background child keeps
//! them open), so a waiter that sees the exit also sees all the output written before it.
//! Every state change bumps a `watch` channel; waiters re-check their condition on each bump.

use std::collections::HashMap;
use std::fmt;
use std::io;
use std::os::fd::OwnedFd;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use tokio::io::AsyncWriteExt;
use tokio::process::ChildStdin;
use tokio::sync::watch;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::spill;
use super::workspace::OutputDir;
use crate::confine::machine::Machine;

/// Unread output kept in memory per command; past it the oldest unread half is dropped.
const MEMORY_CAP: usize = 1 << 20;
/// The end of the output kept in memory for the revival note (which quotes at most this).
pub const TAIL_KEEP: usize = 4096;
/// How long the exit waits for the pipes to close once the shell has exited.
const DRAIN_GRACE: Duration = Duration::from_millis(300);

/// Every command the daemon started. Dropping it kills those still running.
#[derive(Debug, Default)]
pub struct CommandRegistry {
    commands: Mutex<HashMap<String, Arc<Command>>>,
}

/// What to run, and where.
#[derive(Clone)]
pub struct StartSpec {
    pub machine: Arc<dyn Machine>,
    pub task_id: String,
    pub cmd: String,
    /// Where it runs, as the machine names it (on the host: `/proc/self/fd/N` of
    /// `workdir_fd`, so a path swapped after the check cannot move it).
    pub workdir: PathBuf,
    /// Keeps the host working directory open until the spawn.
    pub workdir_fd: Option<Arc<OwnedFd>>,
    /// The workspace's checked `.lazyboy-output`: the log goes there.
    pub output: OutputDir,
    /// The group is killed when the command runs longer.
    pub timeout: Duration,
}

#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("the working directory {0} is not a directory")]
    Workdir(PathBuf),
    #[error(
        "cannot create the command log {}/{id}.log: {source}",
        spill::OUTPUT_DIR
    )]
    Log { id: String, source: io::Error },
    #[error("cannot start the shell: {0}")]
    Spawn(io::Error),
}

/// A running command, as the agent loop shows it to the model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandInfo {
    pub id: String,
    pub cmd: String,
    /// Its process group (the shell's pid).
    pub pgid: i32,
    pub started_at_ms: u64,
    /// Its log, relative to the workspace (`.lazyboy-output/<id>.log`).
    pub log_path: PathBuf,
}

/// Why the daemon killed a command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KillReason {
    Timeout(Duration),
    /// `kill_command`.
    Requested,
    TaskStopped,
    Shutdown,
}

/// How a command ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Exit {
    pub code: Option<i32>,
    pub signal: Option<i32>,
    pub killed: Option<KillReason>,
    pub elapsed: Duration,
}

impl Exit {
    pub fn success(&self) -> bool {
        self.code == Some(0)
    }
}

impl fmt::Display for Exit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.code, self.signal) {
            (Some(code), _) => write!(f, "exited with code {code}")?,
            (None, Some(signal)) => match Signal::try_from(signal) {
                Ok(name) => write!(f, "killed by {}", name.as_str())?,
                Err(_) => write!(f, "killed by signal {signal}")?,
            },
            (None, None) => write!(f, "ended with an unknown status")?,
        }
        match self.killed {
            Some(KillReason::Timeout(limit)) => {
                write!(
                    f,
                    " (timed out: it ran longer than {} ms)",
                    limit.as_millis()
                )?;
            }
            Some(KillReason::Requested) => write!(f, " (kill_command)")?,
            Some(KillReason::TaskStopped) => write!(f, " (the task was stopped)")?,
            Some(KillReason::Shutdown) => write!(f, " (the daemon shut down)")?,
            None => {}
        }
        write!(f, " after {:.1} s", self.elapsed.as_secs_f64())
    }
}

/// How a wait on a command ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WaitEnd {
    Exited,
    TimedOut,
    Cancelled,
}

/// One command. Shared by the registry, its pump and supervisor tasks, and tool calls.
#[derive(Debug)]
pub struct Command {
    info: CommandInfo,
    task_id: String,
    /// Where it runs: a kill reaches what it left there too.
    machine: Arc<dyn Machine>,
    group: Pid,
    started: Instant,
    state: Mutex<State>,
    changed: watch::Sender<u64>,
    stdin: tokio::sync::Mutex<Option<ChildStdin>>,
}

#[derive(Debug, Default)]
struct State {
    /// Output not yet shown to the model (the read cursor is its start).
    unread: Vec<u8>,
    /// Unread bytes dropped from memory since the last read.
    dropped: u64,
    /// Bytes received so far.
    total: u64,
    /// The last [`TAIL_KEEP`] bytes received (or a little more).
    tail: Vec<u8>,
    pipes_closed: bool,
    /// The shell was waited for: its pid may be reused once the group is empty.
    reaped: bool,
    killed: Option<KillReason>,
    exit: Option<Exit>,
}

impl CommandRegistry {
    pub fn new() -> CommandRegistry {
        CommandRegistry::default()
    }

    /// Starts a command; it runs until it exits, times out or is killed.
    pub async fn start(&self, spec: StartSpec) -> Result<Arc<Command>, StartError> {
        if !spec.machine.is_dir(&spec.workdir) {
            return Err(StartError::Workdir(spec.workdir));
        }
        let (id, log) = loop {
            let id = new_id();
            if self.map().contains_key(&id) {
                continue;
            }
            // Ids must not collide with a log from an earlier daemon either, and a name
            // planted in advance (a symlink) is never opened.
            match spec.output.create_new(&format!("{id}.log")) {
                Ok(file) => break (id, tokio::fs::File::from_std(file)),
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                Err(source) => return Err(StartError::Log { id, source }),
            }
        };
        let log_path = PathBuf::from(spill::OUTPUT_DIR).join(format!("{id}.log"));
        let spawned = spec.machine.spawn(&spec.cmd, &spec.workdir, &id);
        // The child has its working directory now.
        drop(spec.workdir_fd);
        let mut child = match spawned {
            Ok(child) => child,
            Err(e) => {
                let _ = rustix::fs::unlinkat(
                    spec.output.fd(),
                    format!("{id}.log").as_str(),
                    rustix::fs::AtFlags::empty(),
                );
                return Err(StartError::Spawn(e));
            }
        };
        let pid = child.id().and_then(|pid| i32::try_from(pid).ok());
        let (Some(pid), Some(stdout), Some(stderr)) =
            (pid, child.stdout.take(), child.stderr.take())
        else {
            let _ = child.start_kill();
            return Err(StartError::Spawn(io::Error::other(
                "the shell has no pid or pipes",
            )));
        };
        let started_at_ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
        let command = Arc::new(Command {
            info: CommandInfo {
                id: id.clone(),
                cmd: spec.cmd,
                pgid: pid,
                started_at_ms,
                log_path,
            },
            task_id: spec.task_id,
            machine: spec.machine.clone(),
            group: Pid::from_raw(pid),
            started: Instant::now(),
            state: Mutex::new(State::default()),
            changed: watch::Sender::new(0),
            stdin: tokio::sync::Mutex::new(child.stdin.take()),
        });
        tracing::info!(command = %id, task = %command.task_id, pid, "command started");
        let pump = tokio::spawn(pump(command.clone(), stdout, stderr, log));
        tokio::spawn(supervise(command.clone(), child, pump, spec.timeout));
        self.map().insert(id, command.clone());
        Ok(command)
    }

    pub fn get(&self, id: &str) -> Option<Arc<Command>> {
        self.map().get(id).cloned()
    }

    /// The task's commands still running, oldest first.
    pub fn running_for_task(&self, task_id: &str) -> Vec<CommandInfo> {
        let mut running: Vec<CommandInfo> = self
            .map()
            .values()
            .filter(|c| c.task_id == task_id && c.exit().is_none())
            .map(|c| c.info.clone())
            .collect();
        running.sort_by(|a, b| (a.started_at_ms, &a.id).cmp(&(b.started_at_ms, &b.id)));
        running
    }

    /// Kills every running command of the task (on cancellation).
    pub fn kill_task(&self, task_id: &str) {
        for command in self.map().values().filter(|c| c.task_id == task_id) {
            command.kill(KillReason::TaskStopped);
        }
    }

    /// Kills every running command (daemon shutdown).
    pub fn kill_all(&self) {
        for command in self.map().values() {
            command.kill(KillReason::Shutdown);
        }
    }

    fn map(&self) -> MutexGuard<'_, HashMap<String, Arc<Command>>> {
        self.commands.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Drop for CommandRegistry {
    fn drop(&mut self) {
        self.kill_all();
    }
}

impl Command {
    pub fn id(&self) -> &str {
        &self.info.id
    }

    pub fn task_id(&self) -> &str {
        &self.task_id
    }

    /// The machine it runs on (`host` or `box`).
    pub fn machine(&self) -> &'static str {
        self.machine.name()
    }

    pub fn info(&self) -> &CommandInfo {
        &self.info
    }

    /// `None` while running.
    pub fn exit(&self) -> Option<Exit> {
        self.state().exit.clone()
    }

    /// The output the model has not seen yet; advances the read cursor past it.
    pub fn take_output(&self) -> String {
        let mut state = self.state();
        // A multi-byte char split across reads would show as garbage: leave its start for later.
        let take = if state.pipes_closed {
            state.unread.len()
        } else {
            complete_len(&state.unread)
        };
        let bytes: Vec<u8> = state.unread.drain(..take).collect();
        let mut text = String::new();
        if state.dropped > 0 {
            text = format!(
                "[... {} bytes of output were not kept in memory; they are in {}/{}.log ...]\n",
                state.dropped,
                spill::OUTPUT_DIR,
                self.info.id
            );
            state.dropped = 0;
        }
        text.push_str(&String::from_utf8_lossy(&bytes));
        text
    }

    /// The end of its output (at most `max` bytes, cut on a char boundary), from memory: what
    /// the revival note quotes. Says where the rest is when there was more.
    pub fn tail(&self, max: usize) -> String {
        let state = self.state();
        let mut start = state.tail.len().saturating_sub(max);
        // Skip continuation bytes: start on a char boundary.
        while start < state.tail.len() && state.tail[start] & 0xC0 == 0x80 {
            start += 1;
        }
        let text = String::from_utf8_lossy(&state.tail[start..]);
        if state.total > (state.tail.len() - start) as u64 {
            format!(
                "[... earlier output in {}]\n{text}",
                self.info.log_path.display()
            )
        } else {
            text.into_owned()
        }
    }

    /// Waits until the command exits, `timeout` passes or `cancel` fires.
    pub async fn wait_exit(&self, timeout: Duration, cancel: &CancellationToken) -> WaitEnd {
        let deadline = deadline(timeout);
        let mut changes = self.changed.subscribe();
        loop {
            if self.state().exit.is_some() {
                return WaitEnd::Exited;
            }
            tokio::select! {
                _ = changes.changed() => {}
                () = tokio::time::sleep_until(deadline) => return WaitEnd::TimedOut,
                () = cancel.cancelled() => return WaitEnd::Cancelled,
            }
        }
    }

    /// Waits up to `max` for a reply: returns once output arrived and then stayed quiet for
    /// `quiet`, or on exit or `cancel`.
    pub async fn wait_reply(&self, max: Duration, quiet: Duration, cancel: &CancellationToken) {
        let deadline = deadline(max);
        let mut changes = self.changed.subscribe();
        let mut seen = self.state().total;
        let mut wake = deadline;
        loop {
            {
                let state = self.state();
                if state.exit.is_some() {
                    return;
                }
                if state.total != seen {
                    seen = state.total;
                    wake = deadline.min(Instant::now() + quiet);
                }
            }
            if Instant::now() >= wake {
                return;
            }
            tokio::select! {
                _ = changes.changed() => {}
                () = tokio::time::sleep_until(wake) => {}
                () = cancel.cancelled() => return,
            }
        }
    }

    /// Writes to the command's stdin, then closes it when `eof`.
    pub async fn write_stdin(&self, data: &[u8], eof: bool) -> io::Result<()> {
        let mut stdin = self.stdin.lock().await;
        let Some(pipe) = stdin.as_mut() else {
            return Err(io::Error::new(
                io::ErrorKind::BrokenPipe,
                "its stdin is closed",
            ));
        };
        if !data.is_empty() {
            pipe.write_all(data).await?;
            pipe.flush().await?;
        }
        if eof {
            *stdin = None;
        }
        Ok(())
    }

    /// SIGKILLs the process group. Returns false when nothing is left to kill. Once the shell
    /// was reaped and the pipes closed, the group is presumed empty and its id possibly reused.
    pub fn kill(&self, reason: KillReason) -> bool {
        let mut state = self.state();
        if state.reaped && state.pipes_closed {
            return false;
        }
        if state.exit.is_none() && state.killed.is_none() {
            state.killed = Some(reason);
        }
        self.machine.kill(&self.info.id);
        match killpg(self.group, Signal::SIGKILL) {
            Ok(()) => true,
            Err(nix::errno::Errno::ESRCH) => false,
            Err(error) => {
                tracing::warn!(%error, command = %self.info.id, "killpg failed");
                false
            }
        }
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn bump(&self) {
        self.changed.send_modify(|n| *n = n.wrapping_add(1));
    }
}

/// `now + after`, saturating: a model may ask to wait `u64::MAX` ms.
fn deadline(after: Duration) -> Instant {
    let now = Instant::now();
    now.checked_add(after)
        .unwrap_or_else(|| now + Duration::from_secs(365 * 86_400))
}

/// `cmd-` + 12 hex digits: 16 bits of the millisecond clock and 32 random bits (UUID v7).
fn new_id() -> String {
    let uuid = uuid::Uuid::now_v7();
    let b = uuid.as_bytes();
    let hex: String = [b[4], b[5], b[12], b[13], b[14], b[15]]
        .iter()
        .map(|x| format!("{x:02x}"))
        .collect();
    format!("cmd-{hex}")
}

mod orphans;
mod pump;
pub use orphans::{Orphan, stop_orphan};
use pump::{complete_len, pump, supervise};

#[cfg(test)]
mod tests;
