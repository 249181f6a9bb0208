//! The execution seam: where a tool's commands run and its files are read and written.
//!
//! A tool names *what* it runs; the [`Machine`] in its context decides *where*. [`Host`] is
//! the person's computer (the workspace, commands as the person, with the daemon's secrets
//! removed from their environment); the box implements the same trait over Docker. The
//! [`CommandRegistry`](crate::tools::CommandRegistry) owns the process either way: it gets a
//! spawned child with piped stdio leading its own process group.
//!
//! A confined `Host` (the agent's sandbox is not `off`, see [`crate::confine`]) runs each
//! command through the sandbox helper (`lazyboy-sandbox …`: the git directories read-only,
//! Landlock, seccomp) on Linux and `sandbox-exec` (Seatbelt) on macOS; when the kernel
//! cannot confine, it refuses to start the command rather than run it unconfined. A `Host`
//! of a task ([`Host::in_task`]) puts each command in a cgroup of its own inside the task's
//! (through the helper, which joins it before anything else; unconfined commands too), so
//! [`Machine::kill`] and the task's end reach every process it started. A command started
//! through the helper leads a new session (the helper's `setsid`); otherwise a new process
//! group. Every spawn is recorded with the reaper, so the daemon, as subreaper, reaps only
//! the orphans it adopts.

use std::ffi::OsString;
use std::io;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;

use futures_util::future::BoxFuture;
use tokio::process::Child;

use super::tree::MARKER;
use crate::confine::{self, Confinement};

/// What the person's own processes would get, recorded at daemon start: the daemon runs
/// with umask 077 for its private files, but what agents create in a workspace (its commands
/// here, the files tools write beneath `tools::workspace::Root`) belongs to the person and
/// gets their usual permissions.
static USER_UMASK: std::sync::OnceLock<u32> = std::sync::OnceLock::new();

/// Records the umask the daemon was started with (call once, at start).
pub fn set_user_umask(mask: u32) {
    let _ = USER_UMASK.set(mask & 0o777);
}

/// The person's umask (022 if never recorded).
pub fn user_umask() -> u32 {
    USER_UMASK.get().copied().unwrap_or(0o022)
}

/// Where commands run and files live.
pub trait Machine: Send + Sync + std::fmt::Debug {
    /// `host` or `box`: results and descriptions name it, so the model knows where it acted.
    fn name(&self) -> &'static str;
    /// Starts `script` under a shell in `workdir`, stdin/stdout/stderr piped, as the leader
    /// of a new process group, with `marker` (the command's id) in its environment under
    /// [`MARKER`].
    fn spawn(&self, script: &str, workdir: &Path, marker: &str) -> io::Result<Child>;
    /// Reads a whole file of this machine. Not for the host's workspace: its files are opened
    /// beneath the workspace's fd ([`crate::tools::workspace::Root`]), never by path.
    fn read<'a>(&'a self, path: &'a Path) -> BoxFuture<'a, io::Result<Vec<u8>>>;
    /// Writes a whole file of this machine (created or replaced); the same caveat.
    fn write<'a>(&'a self, path: &'a Path, bytes: &'a [u8]) -> BoxFuture<'a, io::Result<()>>;
    /// Whether `path` is a directory to run in (checked before a command starts).
    fn is_dir(&self, path: &Path) -> bool {
        path.is_dir()
    }
    /// Kills what command `marker` left on this machine beyond its process group here (the
    /// box: the processes inside the container, which outlive the `docker exec` client).
    fn kill(&self, _marker: &str) {}
}

/// The person's computer: commands run as the person, confined when `confinement` says so.
#[derive(Debug, Default, Clone)]
pub struct Host {
    confinement: Option<Arc<Confinement>>,
    /// The task whose commands these are: their cgroups, the process walk at its end.
    task: Option<String>,
}

impl Host {
    /// Commands run in `confinement` (unconfined when its sandbox is `off`).
    pub fn confined(confinement: Confinement) -> Host {
        Host {
            confinement: (!confinement.is_off()).then(|| Arc::new(confinement)),
            task: None,
        }
    }

    /// The same, its commands belonging to task `task` (contained with it).
    pub fn in_task(mut self, task: &str) -> Host {
        self.task = Some(task.to_owned());
        self
    }

    /// The cgroup for command `marker`, made now; `None` without a task or cgroups.
    fn cgroup(&self, marker: &str) -> io::Result<Option<PathBuf>> {
        let Some(task) = &self.task else {
            return Ok(None);
        };
        confine::tree::record(task, marker);
        match confine::cgroup::command_dir(task, marker) {
            None => Ok(None),
            Some(Ok(dir)) => Ok(Some(dir)),
            Some(Err(e)) => Err(io::Error::new(
                e.kind(),
                format!("cannot create the command's cgroup: {e}. Nothing ran."),
            )),
        }
    }
}

impl Machine for Host {
    fn name(&self) -> &'static str {
        "host"
    }

    fn spawn(&self, script: &str, workdir: &Path, marker: &str) -> io::Result<Child> {
        // The person's umask, not the daemon's private 077.
        let script = format!("umask {:03o}\n{script}", user_umask());
        let cgroup = self.cgroup(marker)?;
        let Some(confinement) = &self.confinement else {
            if let Some(dir) = &cgroup {
                let args = confine::contain_args("bash", &script, dir);
                return host_shell(confine::helper().into(), args, workdir, marker, true);
            }
            return match host_shell("bash".into(), shell_args(&script), workdir, marker, false) {
                Err(e) if e.kind() == io::ErrorKind::NotFound => {
                    host_shell("sh".into(), shell_args(&script), workdir, marker, false)
                }
                other => other,
            };
        };
        if let Err(why) = confine::status() {
            return Err(io::Error::new(
                io::ErrorKind::Unsupported,
                format!(
                    "this agent's sandbox ({}) cannot be enforced here: {why}. Nothing ran. \
                     The person can run its commands unconfined with `lazyboy team edit \
                     <agent> --sandbox off`.",
                    confinement.sandbox.as_str()
                ),
            ));
        }
        let (program, args) = confined_command(confinement, &script, cgroup.as_deref());
        host_shell(program, args, workdir, marker, cfg!(target_os = "linux"))
    }

    // The host's files are the workspace's, opened beneath its fd (`workspace::Root`); a
    // path-based read or write here would bring back the check-then-open race.
    fn read<'a>(&'a self, path: &'a Path) -> BoxFuture<'a, io::Result<Vec<u8>>> {
        Box::pin(async move { Err(by_path(path)) })
    }

    fn write<'a>(&'a self, path: &'a Path, _bytes: &'a [u8]) -> BoxFuture<'a, io::Result<()>> {
        Box::pin(async move { Err(by_path(path)) })
    }

    fn kill(&self, marker: &str) {
        if let Some(task) = &self.task {
            confine::cgroup::kill_command(task, marker);
        }
    }
}

fn by_path(path: &Path) -> io::Error {
    io::Error::new(
        io::ErrorKind::Unsupported,
        format!(
            "{}: host files are opened beneath the workspace, not by path",
            path.display()
        ),
    )
}

fn shell_args(script: &str) -> Vec<OsString> {
    vec!["-c".into(), script.into()]
}

/// The sandbox helper running `bash -c script` (Linux), in `cgroup`; the git directories
/// are protected where a mount namespace can be made (`doctor` says when not).
#[cfg(not(target_os = "macos"))]
fn confined_command(
    confinement: &Confinement,
    script: &str,
    cgroup: Option<&Path>,
) -> (OsString, Vec<OsString>) {
    let protect = if confine::layers().namespace.is_ok() {
        confinement.protected_git()
    } else {
        Vec::new()
    };
    (
        confine::helper().into_os_string(),
        confinement.helper_args("bash", script, cgroup, &protect),
    )
}

/// `sandbox-exec -p PROFILE bash -c script` (macOS).
#[cfg(target_os = "macos")]
fn confined_command(
    confinement: &Confinement,
    script: &str,
    _cgroup: Option<&Path>,
) -> (OsString, Vec<OsString>) {
    let profile = confine::seatbelt::profile(confinement).unwrap_or_default();
    let (program, args) = confine::seatbelt::command(&profile, "bash", script);
    (
        program.into(),
        args.into_iter().map(OsString::from).collect(),
    )
}

/// Spawns `program args` for a command: piped stdio, the daemon's secrets out of its
/// environment, its marker in. `helper`: the program is the sandbox helper, which makes
/// itself a session (and so group) leader; a process group leader could not, so only
/// other programs get a group here.
fn host_shell(
    program: OsString,
    args: Vec<OsString>,
    workdir: &Path,
    marker: &str,
    helper: bool,
) -> io::Result<Child> {
    let mut command = tokio::process::Command::new(program);
    for (name, _) in std::env::vars_os() {
        if name.to_str().is_some_and(crate::secret_env::is_secret) {
            command.env_remove(name);
        }
    }
    // Marks the command's processes, so a later daemon can tell them from whatever reuses
    // the pid (see `stop_orphan`), and the API can tell them from the person's.
    command.env(MARKER, marker);
    command
        .args(args)
        .current_dir(workdir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if !helper {
        command.process_group(0);
    }
    confine::reaper::spawn_tracked(|| command.spawn())
}
