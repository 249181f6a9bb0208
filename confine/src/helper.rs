//! The sandbox helper (Linux): `lazyboy-sandbox [--sandbox-exec] [OPTION]... -- SHELL -c
//! SCRIPT`, the first process of every host command the daemon starts when it contains or
//! confines it. Each step happens before the next, in this order, and a step that fails
//! stops the helper with exit code [`REFUSED`] and the reason on stderr (the command's
//! output): the shell never runs with a layer missing that it was told to apply.
//!
//! 1. `--cgroup DIR`: the command starts inside its cgroup, so every process it ever starts
//!    is in it from the first (the daemon's `confine::cgroup`). The helper leads a session of its own and
//!    forks its child into `DIR` ([`crate::clone_into`]: no migration, whose global lock costs
//!    a grace period); the child goes on with the steps below, the helper only waits for it
//!    and ends as it ended. On a kernel without `CLONE_INTO_CGROUP` the helper instead joins
//!    `DIR` itself (its pid into `DIR/cgroup.procs`) and is the command.
//! 2. The command starts a new session (`setsid`): no controlling terminal, and no process
//!    group the daemon's terminal could signal. It refuses when a descriptor it inherited is
//!    a terminal (the daemon gives commands pipes; a terminal would be a leak to push input
//!    into).
//! 3. `--off`: an unconfined agent's command (`sandbox = "off"`) is exec'd now: contained,
//!    not confined.
//! 4. `--protect PATH`...: a private mount namespace in which each PATH is a read-only bind
//!    mount of itself ([`crate::mounts`]): the repositories' `.git`.
//! 5. As root, every capability but root's say over files is dropped ([`crate::caps`]).
//! 6. Landlock: `-r PATH` read and execute, `-w PATH` write as well; no device ioctls;
//!    signals and abstract UNIX sockets scoped to the sandbox ([`crate::landlock`]).
//! 7. seccomp: no TIOCSTI/TIOCLINUX, no `AF_UNIX` socket, no io_uring ([`crate::seccomp`]).
//! 8. exec of the shell.
//!
//! `--probe` runs steps 4, 6 and 7 on nothing and prints one `layer=ok` or `layer=why` line per
//! layer (`namespace`, `seccomp`, `landlock`): the daemon asks once what this machine allows.
//!
//! It runs first thing in `lazyboyd::cli::main` or as its own small program, before any
//! thread exists (Landlock and seccomp restrict the calling thread, unshare needs a single
//! thread, and an exec keeps all of them).

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use crate::REFUSED;

/// The parsed arguments of the helper.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Spec {
    pub read: Vec<PathBuf>,
    pub write: Vec<PathBuf>,
    /// Made read-only bind mounts of themselves in a mount namespace of the command's own.
    pub protect: Vec<PathBuf>,
    /// The cgroup the command runs in.
    pub cgroup: Option<PathBuf>,
    /// Contain only: no namespace, Landlock or seccomp.
    pub off: bool,
    /// Report what this machine allows instead of running anything.
    pub probe: bool,
    /// The program and its arguments (`bash -c SCRIPT`).
    pub command: Vec<OsString>,
}

/// Why the helper did not run the command.
#[derive(Debug, thiserror::Error)]
pub enum HelperError {
    #[error("{0}")]
    Args(String),
    #[error("cannot join the command's cgroup {}: {source}", path.display())]
    Cgroup {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot start a new session: {0}")]
    Session(std::io::Error),
    #[error("descriptor {fd} is a terminal ({target}): commands get pipes, never a terminal")]
    Terminal { fd: String, target: String },
    #[error("cannot protect the git files: {0}")]
    Protect(String),
    #[error("cannot drop capabilities: {0}")]
    Capabilities(String),
    #[error("{0}")]
    Landlock(String),
    #[error("cannot apply the seccomp filter: {0}")]
    Seccomp(String),
}

/// Parses the arguments after [`crate::HELPER_FLAG`].
pub fn parse(args: impl IntoIterator<Item = OsString>) -> Result<Spec, HelperError> {
    let mut spec = Spec::default();
    let mut args = args.into_iter();
    let missing = |flag: &str| HelperError::Args(format!("{flag} needs a path"));
    while let Some(arg) = args.next() {
        match arg.to_str() {
            Some("-r") => spec
                .read
                .push(args.next().ok_or_else(|| missing("-r"))?.into()),
            Some("-w") => spec
                .write
                .push(args.next().ok_or_else(|| missing("-w"))?.into()),
            Some("--protect") => spec
                .protect
                .push(args.next().ok_or_else(|| missing("--protect"))?.into()),
            Some("--cgroup") => {
                spec.cgroup = Some(args.next().ok_or_else(|| missing("--cgroup"))?.into());
            }
            Some("--off") => spec.off = true,
            Some("--probe") => spec.probe = true,
            Some("--") => {
                spec.command = args.collect();
                break;
            }
            _ => return Err(HelperError::Args(format!("unexpected argument {arg:?}"))),
        }
    }
    if spec.command.is_empty() && !spec.probe {
        return Err(HelperError::Args("no command after --".to_owned()));
    }
    Ok(spec)
}

/// The helper as a process: its arguments, with or without [`crate::HELPER_FLAG`] first
/// (`lazyboyd --sandbox-exec ...` and `lazyboy-sandbox ...` take the same ones).
pub fn helper_main() -> ExitCode {
    let mut args = std::env::args_os().skip(1).peekable();
    if args.peek().map(|arg| arg.as_os_str()) == Some(crate::HELPER_FLAG.as_ref()) {
        args.next();
    }
    let spec = match parse(args) {
        Ok(spec) => spec,
        Err(error) => {
            eprintln!("lazyboy sandbox: {error}");
            return ExitCode::from(REFUSED);
        }
    };
    if spec.probe {
        probe();
        return ExitCode::SUCCESS;
    }
    match prepare(&spec) {
        Ok(Some(child)) => return imp::relay(child),
        Ok(None) => {}
        Err(error) => {
            eprintln!("lazyboy sandbox: not running the command: {error}");
            return ExitCode::from(REFUSED);
        }
    }
    let error = exec(&spec.command);
    eprintln!("lazyboy sandbox: cannot run {:?}: {error}", spec.command[0]);
    ExitCode::from(REFUSED)
}

/// How this process entered the command's cgroup.
pub enum Entered {
    /// It joined it (its pid written to `cgroup.procs`): it is the command.
    Joined,
    /// It is the child born inside it: the command.
    Child,
    /// It stays outside and waits for its child (this pid), the command.
    Parent(i32),
}

/// Steps 1 to 7, in order. `Some(child)`: this process is the helper that waits for the
/// command, `child`, which took the steps after the first.
fn prepare(spec: &Spec) -> Result<Option<i32>, HelperError> {
    let mut leads_session = false;
    if let Some(dir) = &spec.cgroup {
        // The helper's own session (whether it stays the command or waits for it): out of
        // the daemon's process group, and a group the daemon's kill reaches.
        new_session()?;
        leads_session = true;
        match imp::enter_cgroup(dir)? {
            Entered::Parent(child) => return Ok(Some(child)),
            Entered::Child => leads_session = false,
            Entered::Joined => {}
        }
    }
    if !leads_session {
        new_session()?;
    }
    refuse_terminals()?;
    if spec.off {
        return Ok(None);
    }
    if !spec.protect.is_empty() {
        imp::protect(&spec.protect).map_err(HelperError::Protect)?;
    }
    imp::drop_capabilities().map_err(HelperError::Capabilities)?;
    imp::restrict(&spec.read, &spec.write).map_err(HelperError::Landlock)?;
    imp::seccomp().map_err(HelperError::Seccomp)?;
    Ok(None)
}

fn join_cgroup(dir: &Path) -> Result<(), HelperError> {
    std::fs::write(dir.join("cgroup.procs"), std::process::id().to_string()).map_err(|source| {
        HelperError::Cgroup {
            path: dir.to_path_buf(),
            source,
        }
    })
}

fn new_session() -> Result<(), HelperError> {
    #[cfg(unix)]
    nix::unistd::setsid().map_err(|e| HelperError::Session(e.into()))?;
    Ok(())
}

/// Every descriptor this process holds, read from `/proc/self/fd`: none may be a terminal.
/// (Landlock checks a device's ioctl right when the device is opened, so a terminal opened
/// before the sandbox would keep it; seccomp would still refuse TIOCSTI on it.)
fn refuse_terminals() -> Result<(), HelperError> {
    let Ok(entries) = std::fs::read_dir("/proc/self/fd") else {
        return Ok(());
    };
    for entry in entries.filter_map(Result::ok) {
        let Ok(target) = std::fs::read_link(entry.path()) else {
            continue;
        };
        if is_terminal_path(&target) {
            return Err(HelperError::Terminal {
                fd: entry.file_name().to_string_lossy().into_owned(),
                target: target.display().to_string(),
            });
        }
    }
    Ok(())
}

/// A terminal device as `/proc/<pid>/fd` names it.
pub fn is_terminal_path(target: &Path) -> bool {
    let Some(text) = target.to_str() else {
        return false;
    };
    text.starts_with("/dev/pts/")
        || text.starts_with("/dev/tty")
        || text == "/dev/ptmx"
        || text == "/dev/console"
}

/// Execs the command (falling back from bash to sh, as the host does unconfined).
fn exec(command: &[OsString]) -> std::io::Error {
    use std::os::unix::process::CommandExt;
    let run = |program: &OsString| {
        std::process::Command::new(program)
            .args(&command[1..])
            .exec()
    };
    let error = run(&command[0]);
    if error.kind() == std::io::ErrorKind::NotFound && command[0] == "bash" {
        return run(&OsString::from("sh"));
    }
    error
}

/// `--probe`: each layer applied to this throwaway process, in the order a command gets
/// them, one line each.
fn probe() {
    let line = |name: &str, result: Result<(), String>| match result {
        Ok(()) => println!("{name}=ok"),
        Err(why) => println!("{name}={}", why.replace('\n', " ")),
    };
    line("namespace", imp::enter_namespace());
    line(
        "landlock",
        imp::restrict(&[PathBuf::from("/")], &[PathBuf::from("/dev/null")]),
    );
    line("seccomp", imp::seccomp());
}

#[cfg(target_os = "linux")]
mod imp {
    use std::path::{Path, PathBuf};

    use super::{Entered, HelperError};
    use crate::clone_into::{self, Side};

    /// Born inside the cgroup where the kernel can, else joined.
    pub fn enter_cgroup(dir: &Path) -> Result<Entered, HelperError> {
        let me = nix::unistd::getpid();
        let cgroup_error = |source| HelperError::Cgroup {
            path: dir.to_path_buf(),
            source,
        };
        match clone_into::fork_into(dir) {
            Ok(Side::Parent(child)) => Ok(Entered::Parent(child.as_raw())),
            Ok(Side::Child) => {
                clone_into::tie_to_parent(me).map_err(cgroup_error)?;
                Ok(Entered::Child)
            }
            Err(error) if clone_into::unsupported(&error) => {
                super::join_cgroup(dir).map(|()| Entered::Joined)
            }
            Err(error) => Err(cgroup_error(error)),
        }
    }

    pub fn relay(child: i32) -> std::process::ExitCode {
        clone_into::relay(nix::unistd::Pid::from_raw(child))
    }

    pub fn protect(paths: &[PathBuf]) -> Result<(), String> {
        crate::mounts::protect(paths)
    }

    pub fn enter_namespace() -> Result<(), String> {
        crate::mounts::enter_namespace()
    }

    pub fn restrict(read: &[PathBuf], write: &[PathBuf]) -> Result<(), String> {
        crate::landlock::restrict(read, write)
    }

    pub fn seccomp() -> Result<(), String> {
        crate::seccomp::apply()
    }

    pub fn drop_capabilities() -> Result<(), String> {
        crate::caps::drop_all_but_kept()
    }
}

#[cfg(not(target_os = "linux"))]
mod imp {
    use std::path::{Path, PathBuf};

    use super::{Entered, HelperError};

    const LINUX: &str = "this helper confines only on Linux";

    pub fn enter_cgroup(dir: &Path) -> Result<Entered, HelperError> {
        super::join_cgroup(dir).map(|()| Entered::Joined)
    }

    pub fn relay(_child: i32) -> std::process::ExitCode {
        std::process::ExitCode::from(super::REFUSED)
    }

    pub fn protect(_paths: &[PathBuf]) -> Result<(), String> {
        Err(LINUX.to_owned())
    }

    pub fn enter_namespace() -> Result<(), String> {
        Err(LINUX.to_owned())
    }

    pub fn restrict(_read: &[PathBuf], _write: &[PathBuf]) -> Result<(), String> {
        Err(LINUX.to_owned())
    }

    pub fn seccomp() -> Result<(), String> {
        Err(LINUX.to_owned())
    }

    pub fn drop_capabilities() -> Result<(), String> {
        Err(LINUX.to_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn os(args: &[&str]) -> Vec<OsString> {
        args.iter().map(OsString::from).collect()
    }

    #[test]
    fn parses_grants_then_the_command() {
        let spec = parse(os(&[
            "--cgroup",
            "/cg/t/c",
            "-r",
            "/usr",
            "-w",
            "/w",
            "--protect",
            "/w/.git",
            "-r",
            "/etc",
            "--",
            "bash",
            "-c",
            "-r x",
        ]))
        .unwrap();
        assert_eq!(spec.read, [PathBuf::from("/usr"), PathBuf::from("/etc")]);
        assert_eq!(spec.write, [PathBuf::from("/w")]);
        assert_eq!(spec.protect, [PathBuf::from("/w/.git")]);
        assert_eq!(spec.cgroup, Some(PathBuf::from("/cg/t/c")));
        assert!(!spec.off && !spec.probe);
        assert_eq!(spec.command, os(&["bash", "-c", "-r x"]));
        assert!(parse(os(&["--off", "--", "sh"])).unwrap().off);
        assert!(parse(os(&["--probe"])).unwrap().probe);
    }

    #[test]
    fn refuses_what_it_does_not_understand() {
        assert!(parse(os(&["-r"])).is_err());
        assert!(parse(os(&["--cgroup"])).is_err());
        assert!(parse(os(&["--bogus", "--", "sh"])).is_err());
        assert!(parse(os(&["-w", "/w", "--"])).is_err());
    }

    #[test]
    fn terminals_are_told_from_pipes_and_files() {
        for tty in [
            "/dev/pts/3",
            "/dev/tty",
            "/dev/tty1",
            "/dev/ptmx",
            "/dev/console",
        ] {
            assert!(is_terminal_path(Path::new(tty)), "{tty}");
        }
        for other in ["pipe:[1234]", "/dev/null", "/tmp/x", "socket:[9]"] {
            assert!(!is_terminal_path(Path::new(other)), "{other}");
        }
    }
}
