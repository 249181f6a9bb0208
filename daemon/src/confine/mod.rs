//! Containment and confinement of what agents run on the host. (Who may talk to the daemon
//! is a credential, `api::auth`: the sandbox's part is that a confined command cannot read
//! the home.)
//!
//! - [`Confinement`]: the sandbox an agent's host commands run in (`workspace-write`,
//!   `read-only`, `off`), the paths it grants ([`grants`], a plain function) and the git
//!   directories it keeps read-only ([`git`]). On Linux every host command starts through
//!   our sandbox helper (the `lazyboy-sandbox` crate, `confine/`), the `lazyboy-sandbox`
//!   program beside the daemon (else the daemon's own hidden
//!   mode, `lazyboyd --sandbox-exec`; both [`helper::helper_main`]), which starts the
//!   command inside its cgroup ([`clone_into`]), in a new session, and for a confined agent
//!   protects the git files ([`mounts`]), applies Landlock ([`landlock`]) and seccomp
//!   ([`seccomp`]) to itself and then execs the shell, as codex-rs has codex-linux-sandbox
//!   (no `pre_exec` closure: `unsafe_code` is denied here; the one exception is the helper's
//!   raw `clone3`, single-threaded). On macOS the same rules become a Seatbelt profile for
//!   `sandbox-exec` ([`seatbelt`]).
//! - [`cgroup`]: each task's processes in a cgroup v2 of their own, killed whole when the
//!   task ends, is stopped, or the daemon stops; [`tree`], the process walk without them.
//! - [`workspaces`]: the workspaces a confined agent may not have (the LazyBoy home inside,
//!   or the person's home itself).
//! - [`procs`]: the process tree read from `/proc` (state, children, descendants).
//! - [`reaper`]: the daemon is its agents' child subreaper, so double-forked processes stay
//!   its descendants; it reaps the orphans it adopts.
//!
//! Invariants: a confined sandbox never silently runs unconfined. When the kernel lacks
//! Landlock, [`status`] says so at start and in health, and commands of agents whose sandbox
//! is not `off` are refused with that reason; a layer the helper is told to apply and cannot
//! is a refused command. What this machine allows is probed once ([`layers`], [`start`]) and
//! `doctor` reports each layer.

// The helper's layers are the `lazyboy-sandbox` crate's (so the helper program stays small);
// they keep their names here.
#[cfg(target_os = "linux")]
pub use lazyboy_sandbox::{caps, clone_into, mounts, seccomp};
pub use lazyboy_sandbox::{helper, landlock};
pub mod cgroup;
pub mod git;
pub mod layers;
pub mod machine;
pub mod procs;
pub mod reaper;
pub mod seatbelt;
pub mod tree;
pub mod workspaces;

pub use layers::{Layers, layers, start};

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

pub use lazyboy_protocol::Sandbox;

/// The hidden first argument that makes `lazyboyd` the sandbox helper.
pub use lazyboy_sandbox::HELPER_FLAG;

/// Device files every confined command may write (reading them is covered by `/`); no
/// ioctl on any of them (see [`landlock`]).
const DEVICES: [&str; 6] = [
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/tty",
    "/dev/ptmx",
    "/dev/pts",
];

/// One path a sandboxed command may use, and everything beneath it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grant {
    pub path: PathBuf,
    /// Write (create, remove, truncate, ...) as well as read and execute.
    pub write: bool,
}

/// The sandbox one task's commands run in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Confinement {
    pub sandbox: Sandbox,
    /// The task's workspace (canonical).
    pub workspace: PathBuf,
    /// The LazyBoy home (canonical): never readable from inside.
    pub home: PathBuf,
    /// The system temp dir (canonical).
    pub temp: PathBuf,
    /// Its commands may change the repositories' git directories (`workspace-write` keeps
    /// them read-only otherwise).
    pub git_write: bool,
}

impl Confinement {
    /// The confinement of a task working in `workspace` with `sandbox`, for the daemon's home.
    pub fn new(sandbox: Sandbox, workspace: &Path) -> Confinement {
        let canonical = |p: &Path| p.canonicalize().unwrap_or_else(|_| p.to_path_buf());
        Confinement {
            sandbox,
            workspace: canonical(workspace),
            home: home(),
            temp: canonical(&std::env::temp_dir()),
            git_write: false,
        }
    }

    /// The same, its commands allowed to change git directories or not.
    pub fn with_git_write(mut self, git_write: bool) -> Confinement {
        self.git_write = git_write;
        self
    }

    /// Whether commands run unconfined.
    pub fn is_off(&self) -> bool {
        self.sandbox == Sandbox::Off || self.home.as_os_str().is_empty()
    }

    /// The paths granted, from the filesystem as it is now.
    pub fn grants(&self) -> Vec<Grant> {
        grants(self, &list_dir)
    }

    /// Where its commands may write (before the home is cut out of them).
    pub fn write_roots(&self) -> Vec<PathBuf> {
        match self.sandbox {
            Sandbox::WorkspaceWrite => vec![
                self.workspace.clone(),
                self.temp.clone(),
                PathBuf::from("/dev/shm"),
            ],
            Sandbox::ReadOnly | Sandbox::Off => Vec::new(),
        }
    }

    /// The git directories its commands may not change, from the filesystem as it is now
    /// (none when they may, or when the sandbox writes nowhere).
    pub fn protected_git(&self) -> Vec<PathBuf> {
        if self.git_write || self.is_off() {
            return Vec::new();
        }
        git::protected(&self.workspace, &self.write_roots())
    }

    /// The helper's arguments: [`HELPER_FLAG`], `--cgroup DIR` when given, `--protect PATH`
    /// per path of `protect`, `-r PATH`/`-w PATH` per grant, `--`, then the shell, `-c` and
    /// the script.
    pub fn helper_args(
        &self,
        shell: &str,
        script: &str,
        cgroup: Option<&Path>,
        protect: &[PathBuf],
    ) -> Vec<OsString> {
        let mut args = vec![OsString::from(HELPER_FLAG)];
        if let Some(dir) = cgroup {
            args.push("--cgroup".into());
            args.push(dir.into());
        }
        for path in protect {
            args.push("--protect".into());
            args.push(path.into());
        }
        for grant in self.grants() {
            args.push(OsString::from(if grant.write { "-w" } else { "-r" }));
            args.push(grant.path.into_os_string());
        }
        args.extend(["--", shell, "-c"].map(OsString::from));
        args.push(OsString::from(script));
        args
    }
}

/// The helper's arguments for an unconfined command (`sandbox = "off"`) it only contains:
/// its cgroup and a new session, then the shell.
pub fn contain_args(shell: &str, script: &str, cgroup: &Path) -> Vec<OsString> {
    let mut args: Vec<OsString> = vec![HELPER_FLAG.into(), "--cgroup".into(), cgroup.into()];
    args.extend(["--off", "--", shell, "-c"].map(OsString::from));
    args.push(script.into());
    args
}

static HOME: OnceLock<PathBuf> = OnceLock::new();
static HELPER: OnceLock<PathBuf> = OnceLock::new();
static STATUS: OnceLock<Result<String, String>> = OnceLock::new();

/// Records the LazyBoy home (call once, at start): no sandbox grants it.
pub fn set_home(home: &Path) {
    let _ = HOME.set(home.canonicalize().unwrap_or_else(|_| home.to_path_buf()));
}

/// The LazyBoy home (canonical; empty before [`set_home`]).
pub fn home() -> PathBuf {
    HOME.get().cloned().unwrap_or_default()
}

/// Sets the program run as the helper (default: this executable, `/proc/self/exe`). Benches
/// and tests that use the library in their own process point it at the real `lazyboyd`.
pub fn set_helper(program: &Path) {
    let _ = HELPER.set(program.to_path_buf());
}

/// The program that runs `--sandbox-exec`: `lazyboy-sandbox` beside this executable
/// (`lazyboyd` → `lazyboy-sandbox`, `lazyboyd-under-test` → `lazyboy-sandbox-under-test`),
/// or without it this executable itself in its hidden mode (a daemon copied alone still
/// confines, only slower to start each command).
pub fn helper() -> PathBuf {
    HELPER.get_or_init(beside_this_executable).clone()
}

fn beside_this_executable() -> PathBuf {
    let this = PathBuf::from("/proc/self/exe");
    let Ok(exe) = std::env::current_exe() else {
        return this;
    };
    let name = exe.file_name().and_then(|name| name.to_str()).unwrap_or("");
    match name.strip_prefix("lazyboyd") {
        Some(rest) => {
            let helper = exe.with_file_name(format!("lazyboy-sandbox{rest}"));
            if helper.is_file() { helper } else { this }
        }
        None => this,
    }
}

/// What confines commands on this machine (probed once): `Ok("landlock (ABI 7)")`, or why
/// nothing can.
pub fn status() -> &'static Result<String, String> {
    STATUS.get_or_init(probe)
}

#[cfg(target_os = "linux")]
fn probe() -> Result<String, String> {
    landlock::probe()
}

#[cfg(target_os = "macos")]
fn probe() -> Result<String, String> {
    if Path::new(seatbelt::SANDBOX_EXEC).exists() {
        Ok("seatbelt (sandbox-exec)".to_owned())
    } else {
        Err(format!("{} is missing", seatbelt::SANDBOX_EXEC))
    }
}

#[cfg(not(any(target_os = "linux", target_os = "macos")))]
fn probe() -> Result<String, String> {
    Err("no sandbox is implemented for this platform".to_owned())
}

/// Kills every process of task `task` that is still running: its cgroup whole, or without
/// cgroups the descendants carrying its commands' markers ([`tree`]). The task ended (any
/// verdict) or was stopped.
pub fn end_task(task: &str) {
    if matches!(cgroup::status(), Some(Ok(_))) {
        cgroup::kill_task(task);
        tree::forget(task);
    } else {
        tree::kill_task(task);
    }
}

/// Kills every process of every task: the daemon stops. Without cgroups, also every process
/// the daemon adopted (a command's detached survivor, marker or not).
pub fn end_all() {
    if matches!(cgroup::status(), Some(Ok(_))) {
        cgroup::kill_all();
    } else {
        tree::kill_adopted(&reaper::is_tracked);
    }
}

/// The paths `confinement` grants. `list` gives a directory's entries (full paths).
///
/// Landlock only allows, never denies, so "read everything except the home" becomes: `/`
/// split around the home, i.e. at each level of the home's path, every sibling of the next
/// component (a directory on the way to the home can then not be listed, only entered). A
/// write root that contains the home (the temp dir holding a test home, a workspace that is
/// `$HOME`) is split the same way; one inside the home (the default workspaces,
/// `<home>/workspaces/<name>`) is granted whole.
pub fn grants(confinement: &Confinement, list: &dyn Fn(&Path) -> Vec<PathBuf>) -> Vec<Grant> {
    let home = &confinement.home;
    let mut out: Vec<Grant> = around(Path::new("/"), home, list)
        .into_iter()
        .map(|path| Grant { path, write: false })
        .collect();
    let workspace = &confinement.workspace;
    let mut write_roots = Vec::new();
    match confinement.sandbox {
        Sandbox::WorkspaceWrite => {
            write_roots.push(workspace.clone());
            write_roots.push(confinement.temp.clone());
            write_roots.push(PathBuf::from("/dev/shm"));
        }
        Sandbox::ReadOnly => {
            if workspace.starts_with(home) {
                out.push(Grant {
                    path: workspace.clone(),
                    write: false,
                });
            }
        }
        Sandbox::Off => return Vec::new(),
    }
    for root in write_roots {
        let parts = if root.starts_with(home) {
            vec![root]
        } else {
            around(&root, home, list)
        };
        out.extend(parts.into_iter().map(|path| Grant { path, write: true }));
    }
    out.extend(DEVICES.iter().map(|dev| Grant {
        path: PathBuf::from(dev),
        write: true,
    }));
    out
}

/// `root`, or when `exclude` lies inside it, the parts of `root` that are not on the way to
/// `exclude` (nothing when they are the same).
fn around(root: &Path, exclude: &Path, list: &dyn Fn(&Path) -> Vec<PathBuf>) -> Vec<PathBuf> {
    let Ok(rest) = exclude.strip_prefix(root) else {
        return vec![root.to_path_buf()];
    };
    let mut out = Vec::new();
    let mut dir = root.to_path_buf();
    for part in rest.components() {
        let next = dir.join(part);
        out.extend(list(&dir).into_iter().filter(|entry| *entry != next));
        dir = next;
    }
    out
}

fn list_dir(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut out: Vec<PathBuf> = entries.filter_map(|e| Some(e.ok()?.path())).collect();
    out.sort();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fake_fs(dir: &Path) -> Vec<PathBuf> {
        let names: &[&str] = match dir.to_str().unwrap_or("") {
            "/" => &["bin", "etc", "root", "tmp", "usr"],
            "/root" => &[".bashrc", ".local", "projects"],
            "/root/.local" => &["share", "bin"],
            "/root/.local/share" => &["lazyboy", "fonts"],
            "/tmp" => &["lbhome", "ws", "other"],
            _ => &[],
        };
        names.iter().map(|n| dir.join(n)).collect()
    }

    fn conf(sandbox: Sandbox, workspace: &str, home: &str) -> Confinement {
        Confinement {
            sandbox,
            workspace: workspace.into(),
            home: home.into(),
            temp: "/tmp".into(),
            git_write: false,
        }
    }

    fn paths(grants: &[Grant], write: bool) -> Vec<String> {
        grants
            .iter()
            .filter(|g| g.write == write)
            .map(|g| g.path.display().to_string())
            .collect()
    }

    #[test]
    fn reads_reach_everything_but_the_home() {
        let c = conf(
            Sandbox::WorkspaceWrite,
            "/root/projects/app",
            "/root/.local/share/lazyboy",
        );
        let grants = grants(&c, &fake_fs);
        assert_eq!(
            paths(&grants, false),
            [
                "/bin",
                "/etc",
                "/tmp",
                "/usr",
                "/root/.bashrc",
                "/root/projects",
                "/root/.local/bin",
                "/root/.local/share/fonts"
            ]
        );
        let writes = paths(&grants, true);
        assert_eq!(writes[..3], ["/root/projects/app", "/tmp", "/dev/shm"]);
        assert!(writes.contains(&"/dev/null".to_owned()));
        assert!(
            !writes
                .iter()
                .chain(&paths(&grants, false))
                .any(|p| p.contains("lazyboy"))
        );
    }

    #[test]
    fn a_home_in_the_temp_dir_is_cut_out_of_it_and_a_workspace_inside_the_home_is_granted() {
        let c = conf(
            Sandbox::WorkspaceWrite,
            "/tmp/lbhome/workspaces/a",
            "/tmp/lbhome",
        );
        let grants = grants(&c, &fake_fs);
        let reads = paths(&grants, false);
        assert!(reads.contains(&"/tmp/ws".to_owned()) && !reads.contains(&"/tmp".to_owned()));
        let writes = paths(&grants, true);
        assert_eq!(
            writes[..3],
            ["/tmp/lbhome/workspaces/a", "/tmp/ws", "/tmp/other"]
        );
        assert!(!writes.contains(&"/tmp".to_owned()));
    }

    #[test]
    fn a_workspace_holding_the_home_is_split_around_it() {
        let c = conf(
            Sandbox::WorkspaceWrite,
            "/root",
            "/root/.local/share/lazyboy",
        );
        let writes = paths(&grants(&c, &fake_fs), true);
        assert!(writes.contains(&"/root/projects".to_owned()));
        assert!(writes.contains(&"/root/.local/share/fonts".to_owned()));
        assert!(!writes.contains(&"/root".to_owned()));
    }

    #[test]
    fn read_only_writes_only_devices_and_off_grants_nothing() {
        let c = conf(Sandbox::ReadOnly, "/tmp/lbhome/workspaces/a", "/tmp/lbhome");
        let grants = grants(&c, &fake_fs);
        assert!(paths(&grants, true).iter().all(|p| p.starts_with("/dev/")));
        assert!(paths(&grants, false).contains(&"/tmp/lbhome/workspaces/a".to_owned()));
        let off = conf(Sandbox::Off, "/w", "/tmp/lbhome");
        assert!(super::grants(&off, &fake_fs).is_empty());
    }

    #[test]
    fn helper_arguments_end_with_the_shell_and_script() {
        let c = conf(Sandbox::ReadOnly, "/w", "/nonexistent-home");
        let protect = [PathBuf::from("/w/.git")];
        let args = c.helper_args("bash", "echo hi", Some(Path::new("/cg/t/c")), &protect);
        assert_eq!(
            args[..5],
            [HELPER_FLAG, "--cgroup", "/cg/t/c", "--protect", "/w/.git"]
        );
        let n = args.len();
        assert_eq!(
            args[n - 4..],
            ["--", "bash", "-c", "echo hi"].map(OsString::from)
        );
        let off = contain_args("bash", "echo hi", Path::new("/cg/t/c"));
        assert_eq!(
            off,
            [
                HELPER_FLAG,
                "--cgroup",
                "/cg/t/c",
                "--off",
                "--",
                "bash",
                "-c",
                "echo hi"
            ]
            .map(OsString::from)
        );
    }
}
