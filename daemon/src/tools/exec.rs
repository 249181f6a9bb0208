//! The execution seam: where a tool's commands run and its files are read and written.
//!
//! A tool names *what* it runs; the [`Machine`] in its context decides *where*. [`Host`] is
//! the person's computer (the workspace, commands as the person, with the daemon's secrets
//! removed from their environment); the box implements the same trait over Docker. The
//! [`CommandRegistry`](super::CommandRegistry) owns the process either way: it gets a
//! spawned child with piped stdio leading its own process group.

use std::io;
use std::path::Path;
use std::process::Stdio;

use futures_util::future::BoxFuture;
use tokio::process::Child;

use super::commands::MARKER;

/// Where commands run and files live.
pub trait Machine: Send + Sync + std::fmt::Debug {
    /// `host` or `box`: results and descriptions name it, so the model knows where it acted.
    fn name(&self) -> &'static str;
    /// Starts `script` under a shell in `workdir`, stdin/stdout/stderr piped, as the leader
    /// of a new process group, with `marker` (the command's id) in its environment under
    /// [`MARKER`].
    fn spawn(&self, script: &str, workdir: &Path, marker: &str) -> io::Result<Child>;
    /// Reads a whole file.
    fn read<'a>(&'a self, path: &'a Path) -> BoxFuture<'a, io::Result<Vec<u8>>>;
    /// Writes a whole file (created or replaced).
    fn write<'a>(&'a self, path: &'a Path, bytes: &'a [u8]) -> BoxFuture<'a, io::Result<()>>;
    /// Whether `path` is a directory to run in (checked before a command starts).
    fn is_dir(&self, path: &Path) -> bool {
        path.is_dir()
    }
    /// Kills what command `marker` left on this machine beyond its process group here (the
    /// box: the processes inside the container, which outlive the `docker exec` client).
    fn kill(&self, _marker: &str) {}
}

/// The person's computer.
#[derive(Debug, Default, Clone, Copy)]
pub struct Host;

impl Machine for Host {
    fn name(&self) -> &'static str {
        "host"
    }

    fn spawn(&self, script: &str, workdir: &Path, marker: &str) -> io::Result<Child> {
        match host_shell("bash", script, workdir, marker) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                host_shell("sh", script, workdir, marker)
            }
            other => other,
        }
    }

    fn read<'a>(&'a self, path: &'a Path) -> BoxFuture<'a, io::Result<Vec<u8>>> {
        Box::pin(tokio::fs::read(path))
    }

    fn write<'a>(&'a self, path: &'a Path, bytes: &'a [u8]) -> BoxFuture<'a, io::Result<()>> {
        Box::pin(tokio::fs::write(path, bytes))
    }
}

fn host_shell(shell: &str, script: &str, workdir: &Path, marker: &str) -> io::Result<Child> {
    let mut command = tokio::process::Command::new(shell);
    for (name, _) in std::env::vars_os() {
        if name.to_str().is_some_and(super::is_secret_env) {
            command.env_remove(name);
        }
    }
    // Marks the command's processes, so a later daemon can tell them from whatever reuses
    // the pid (see `stop_orphan`).
    command.env(MARKER, marker);
    // The person's umask, not the daemon's private 077.
    let script = format!("umask {:03o}\n{script}", super::user_umask());
    command
        .arg("-c")
        .arg(script)
        .current_dir(workdir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
}
