//! A command's two tasks: the pump (output to the log and memory) and the supervisor (the
//! exit, after the pipes drained).

use std::io;
use std::os::unix::process::ExitStatusExt;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::process::{Child, ChildStderr, ChildStdout};

use super::{Command, DRAIN_GRACE, Exit, KillReason, MEMORY_CAP, TAIL_KEEP};

/// The length of `bytes` without a trailing incomplete UTF-8 sequence.
pub(super) fn complete_len(bytes: &[u8]) -> usize {
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
pub(super) async fn pump(
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
            state.tail.extend_from_slice(chunk);
            if state.tail.len() > 2 * TAIL_KEEP {
                let excess = state.tail.len() - TAIL_KEEP;
                state.tail.drain(..excess);
            }
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
pub(super) async fn supervise(
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
