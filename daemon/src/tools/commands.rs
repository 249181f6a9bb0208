//! Commands the agent started, by id: they belong to the daemon's [`CommandRegistry`], not to
//! the tool call that started them, so they keep running between calls and across turns.
//!
//! Each command runs as `bash -c <cmd>` (`sh -c` when bash is missing) in its own process
//! group, so one `killpg` stops it and everything it spawned. One pump task appends stdout and
//! stderr, in arrival order, to `<workspace>/.lazyboy-output/<id>.log` and then to an
//! in-memory buffer of output the model has not read yet (bounded: the log keeps everything).
//! One supervisor task waits for the exit (or the timeout, which kills the group) and records
//! the [`Exit`] only after the pipes drained (or a short grace, when a background child keeps
//! them open), so a waiter that sees the exit also sees all the output written before it.
//! Every state change bumps a `watch` channel; waiters re-check their condition on each bump.

use std::collections::HashMap;
use std::fmt;
use std::io;
use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::process::{Child, ChildStderr, ChildStdin, ChildStdout};
use tokio::sync::watch;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::exec::Machine;
use super::spill;

/// Unread output kept in memory per command; past it the oldest unread half is dropped.
const MEMORY_CAP: usize = 1 << 20;
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
    /// Already resolved inside the workspace.
    pub workdir: PathBuf,
    /// The task's workspace: the log goes to its `.lazyboy-output/`.
    pub workspace: PathBuf,
    /// The group is killed when the command runs longer.
    pub timeout: Duration,
}

#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("the working directory {0} is not a directory")]
    Workdir(PathBuf),
    #[error("cannot create the command log {path}: {source}")]
    Log { path: PathBuf, source: io::Error },
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
        let dir = spill::output_dir(&spec.workspace);
        let log_error = |path: &PathBuf, source| StartError::Log {
            path: path.clone(),
            source,
        };
        tokio::fs::create_dir_all(&dir)
            .await
            .map_err(|e| log_error(&dir, e))?;
        let (id, log_path, log) = loop {
            let id = new_id();
            let path = dir.join(format!("{id}.log"));
            if self.map().contains_key(&id) {
                continue;
            }
            // `create_new`: ids must not collide with a log from an earlier daemon either.
            let mut options = tokio::fs::OpenOptions::new();
            options.append(true).create_new(true);
            match options.open(&path).await {
                Ok(file) => break (id, path, file),
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(log_error(&path, e)),
            }
        };
        let spawned = spec.machine.spawn(&spec.cmd, &spec.workdir, &id);
        let mut child = match spawned {
            Ok(child) => child,
            Err(e) => {
                let _ = tokio::fs::remove_file(&log_path).await;
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

/// The variable naming the command in its processes' environment.
pub const MARKER: &str = "LAZYBOYD_COMMAND_ID";

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
fn process_group(stat: &str) -> Option<i32> {
    let (_, rest) = stat.rsplit_once(')')?;
    let mut fields = rest.split_whitespace();
    let state = fields.next()?;
    if state == "Z" || state == "X" {
        return None;
    }
    fields.nth(1)?.parse().ok()
}

/// The length of `bytes` without a trailing incomplete UTF-8 sequence.
fn complete_len(bytes: &[u8]) -> usize {
    let n = bytes.len();
    for back in 1..=n.min(4) {
        let lead = bytes[n - back];
        if lead & 0xC0 != 0x80 {
            let needed = match lead {
                0xF0.. => 4,
                0xE0.. => 3,
                0xC0.. => 2,
                _ => 1,
            };
            return if needed > back { n - back } else { n };
        }
    }
    n
}

/// Copies stdout and stderr, in arrival order, to the log and then to memory.
async fn pump(
    cmd: Arc<Command>,
    mut out: ChildStdout,
    mut err: ChildStderr,
    mut log: tokio::fs::File,
) {
    let (mut out_buf, mut err_buf) = (vec![0u8; 8192], vec![0u8; 8192]);
    let (mut out_open, mut err_open, mut log_ok) = (true, true, true);
    while out_open || err_open {
        let (n, from_out) = tokio::select! {
            read = out.read(&mut out_buf), if out_open => (read.unwrap_or(0), true),
            read = err.read(&mut err_buf), if err_open => (read.unwrap_or(0), false),
        };
        if n == 0 {
            *(if from_out {
                &mut out_open
            } else {
                &mut err_open
            }) = false;
            continue;
        }
        let chunk = if from_out {
            &out_buf[..n]
        } else {
            &err_buf[..n]
        };
        if log_ok && let Err(error) = write_log(&mut log, chunk).await {
            tracing::warn!(%error, command = %cmd.info.id, "cannot write the command log");
            log_ok = false;
        }
        {
            let mut state = cmd.state();
            state.unread.extend_from_slice(chunk);
            state.total += n as u64;
            if state.unread.len() > MEMORY_CAP {
                let excess = state.unread.len() - MEMORY_CAP / 2;
                state.unread.drain(..excess);
                state.dropped += excess as u64;
            }
        }
        cmd.bump();
    }
    cmd.state().pipes_closed = true;
    cmd.bump();
}

async fn write_log(log: &mut tokio::fs::File, chunk: &[u8]) -> io::Result<()> {
    log.write_all(chunk).await?;
    // tokio writes in the background: flush so a read_file of the log sees the chunk.
    log.flush().await
}

/// Waits for the shell (killing the group on timeout), lets the pipes drain, records the exit.
async fn supervise(
    cmd: Arc<Command>,
    mut child: Child,
    pump: tokio::task::JoinHandle<()>,
    timeout: Duration,
) {
    let status = match tokio::time::timeout(timeout, child.wait()).await {
        Ok(status) => status,
        Err(_) => {
            cmd.kill(KillReason::Timeout(timeout));
            child.wait().await
        }
    };
    cmd.state().reaped = true;
    // Tokio waited for it: a later process with this pid is the reaper's to wait for.
    crate::confine::reaper::forget(cmd.info.pgid);
    let _ = tokio::time::timeout(DRAIN_GRACE, pump).await;
    *cmd.stdin.lock().await = None;
    let (code, signal) = match &status {
        Ok(status) => (status.code(), status.signal()),
        Err(error) => {
            tracing::warn!(%error, command = %cmd.info.id, "waiting for a command failed");
            (None, None)
        }
    };
    {
        let mut state = cmd.state();
        // A kill that raced a normal exit did not end the command: do not blame it.
        let killed = signal.and(state.killed);
        state.exit = Some(Exit {
            code,
            signal,
            killed,
            elapsed: cmd.started.elapsed(),
        });
    }
    tracing::info!(command = %cmd.info.id, ?code, ?signal, "command ended");
    cmd.bump();
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::handlers::testing;

    #[test]
    fn process_groups_are_read_after_the_command_name() {
        let stat = "4242 (we ird) (name)) S 1 777 777 0 -1 4194304";
        assert_eq!(process_group(stat), Some(777));
        assert_eq!(
            process_group("4242 (sleep) Z 1 777 777"),
            None,
            "a zombie has exited"
        );
        assert_eq!(process_group("garbage"), None);
    }

    #[tokio::test]
    async fn an_orphan_is_stopped_only_through_its_marker() {
        let (_dir, ctx) = testing::ctx();
        let command = ctx.commands.start(spec(&ctx, "sleep 30")).await.unwrap();
        let pgid = command.info().pgid;
        // Another command's id never matches, even in the right group.
        assert_eq!(stop_orphan("cmd-someone-else", pgid), Orphan::Gone);
        assert!(command.exit().is_none());
        assert_eq!(stop_orphan(command.id(), pgid), Orphan::Stopped);
        let end = command
            .wait_exit(Duration::from_secs(10), &CancellationToken::new())
            .await;
        assert_eq!(end, WaitEnd::Exited);
        assert_eq!(stop_orphan(command.id(), pgid), Orphan::Gone);
    }

    fn spec(ctx: &crate::tools::ToolContext, cmd: &str) -> StartSpec {
        StartSpec {
            machine: ctx.machine.clone(),
            task_id: ctx.task_id.clone(),
            cmd: cmd.to_owned(),
            workdir: ctx.workspace.clone(),
            workspace: ctx.workspace.clone(),
            timeout: Duration::from_secs(30),
        }
    }

    #[test]
    fn incomplete_utf8_is_held_back() {
        assert_eq!(complete_len(b"abc"), 3);
        assert_eq!(complete_len("aé".as_bytes()), 3);
        assert_eq!(complete_len(&"aé".as_bytes()[..2]), 1);
        assert_eq!(complete_len(&"😀".as_bytes()[..3]), 0);
        assert_eq!(complete_len(b""), 0);
    }

    #[test]
    fn exit_reads_well() {
        let mut exit = Exit {
            code: Some(0),
            signal: None,
            killed: None,
            elapsed: Duration::ZERO,
        };
        assert_eq!(exit.to_string(), "exited with code 0 after 0.0 s");
        exit = Exit {
            code: None,
            signal: Some(9),
            killed: Some(KillReason::Timeout(Duration::from_secs(2))),
            elapsed: Duration::from_millis(2050),
        };
        let text = exit.to_string();
        assert_eq!(
            text,
            "killed by SIGKILL (timed out: it ran longer than 2000 ms) after 2.0 s"
        );
    }

    #[tokio::test]
    async fn unread_output_is_bounded_in_memory_but_logged_whole() {
        let (_dir, ctx) = testing::ctx();
        let cmd = "head -c 3000000 /dev/zero | tr '\\0' a";
        let command = ctx.commands.start(spec(&ctx, cmd)).await.unwrap();
        let end = command
            .wait_exit(Duration::from_secs(10), &ctx.cancel)
            .await;
        assert_eq!(end, WaitEnd::Exited);
        let text = command.take_output();
        assert!(text.starts_with("[... "), "{}", &text[..100]);
        assert!(text.contains(" bytes of output were not kept in memory"));
        assert!(text.len() <= MEMORY_CAP + 300);
        assert_eq!(
            std::fs::metadata(&command.info().log_path).unwrap().len(),
            3_000_000
        );
        assert_eq!(command.take_output(), "");
    }

    #[tokio::test]
    async fn ids_are_unique_and_dropping_the_registry_kills() {
        let (_dir, ctx) = testing::ctx();
        let registry = CommandRegistry::new();
        let a = registry.start(spec(&ctx, "sleep 30")).await.unwrap();
        let b = registry.start(spec(&ctx, "sleep 30")).await.unwrap();
        assert_ne!(a.id(), b.id());
        assert!(
            a.id().starts_with("cmd-") && a.id().len() == 16,
            "{}",
            a.id()
        );
        assert_eq!(registry.running_for_task(&ctx.task_id).len(), 2);
        drop(registry);
        for command in [a, b] {
            let end = command.wait_exit(Duration::from_secs(5), &ctx.cancel).await;
            assert_eq!(end, WaitEnd::Exited);
            assert!(
                command
                    .exit()
                    .unwrap()
                    .to_string()
                    .contains("the daemon shut down")
            );
        }
    }
}
