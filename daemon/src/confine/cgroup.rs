//! Every process of a task in one cgroup v2 (Linux): `<base>/<task>/<command>`, where
//! `<base>` is `lazyboy-<hash of the home>` inside the daemon's own cgroup (or the root
//! cgroup when the daemon is there). The helper joins its command's cgroup before anything
//! else (`--cgroup`, see [`super::helper`]), so nothing a command starts, however it
//! detaches (`setsid`, a double fork, a cleared environment), is ever outside it, and one
//! write to `cgroup.kill` ends them all:
//!
//! - a command's cgroup on `kill_command` and its timeout ([`kill_command`]);
//! - a task's when it ends with a verdict, is stopped ([`kill_task`]);
//! - all of them when the daemon stops ([`kill_all`]);
//! - at start, whatever an earlier daemon on this home left (killed -9, or the machine
//!   lost power): [`start`] kills it and remembers which commands still had processes, so
//!   their tasks report them lost "still running" as before ([`was_running`]).
//!
//! Where the daemon may make cgroups: root anywhere; otherwise a delegated subtree, i.e. a
//! systemd unit with `Delegate=yes` (the user service `lazyboy service install` writes),
//! whose cgroup the user owns. Without one, [`status`] says why and containment falls back
//! to the subreaper's process walk ([`super::tree`]). Kernels before 5.14 have no
//! `cgroup.kill`: each process listed in `cgroup.procs` is killed instead, until none is.
//!
//! Names are checked (`[A-Za-z0-9_-]`) before they become paths; every cgroup is removed
//! once empty (bottom up: a cgroup with children or processes cannot be removed).

use std::collections::HashSet;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock, PoisonError};
use std::time::{Duration, Instant};

static BASE: OnceLock<Result<PathBuf, String>> = OnceLock::new();
/// Commands whose cgroups still had processes when this daemon started (and killed them).
static SWEPT: Mutex<Option<HashSet<String>>> = Mutex::new(None);

/// How long a removal waits for killed processes to be gone.
const EMPTY_WAIT: Duration = Duration::from_secs(2);

/// Finds this daemon's base (at most once), creates it, and kills what an earlier daemon on
/// `home` left in it. Returns the base and how many commands were still running. Call after
/// the home's lock is held: only then is everything in the base a dead daemon's.
pub fn start(home: &Path) -> Result<(PathBuf, usize), String> {
    let base = BASE.get_or_init(|| find_base(home)).clone()?;
    let mut swept = HashSet::new();
    for task in subdirs(&base) {
        for command in subdirs(&task) {
            if populated(&command)
                && let Some(name) = command.file_name().and_then(|n| n.to_str())
            {
                swept.insert(name.to_owned());
            }
        }
        kill_dir(&task);
        remove_when_empty(&task);
    }
    let count = swept.len();
    *SWEPT.lock().unwrap_or_else(PoisonError::into_inner) = Some(swept);
    Ok((base, count))
}

/// Where the tasks' cgroups live, or why there are none. `None` before [`start`].
pub fn status() -> Option<Result<&'static Path, &'static str>> {
    BASE.get().map(|r| r.as_deref().map_err(String::as_str))
}

/// Whether command `id`'s cgroup had processes when this daemon started (they were killed).
pub fn was_running(id: &str) -> bool {
    SWEPT
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .as_ref()
        .is_some_and(|swept| swept.contains(id))
}

/// Creates command `command`'s cgroup in task `task`'s. `None` when there are no cgroups.
pub fn command_dir(task: &str, command: &str) -> Option<io::Result<PathBuf>> {
    let base = base()?;
    let (Some(task), Some(command)) = (name(task), name(command)) else {
        return Some(Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "a task or command id that is not a plain name",
        )));
    };
    let dir = base.join(task).join(command);
    Some(std::fs::create_dir_all(&dir).map(|()| dir))
}

/// Kills every process of command `command` of task `task` (its cgroup stays until the
/// task's is removed).
pub fn kill_command(task: &str, command: &str) {
    if let (Some(base), Some(task), Some(command)) = (base(), name(task), name(command)) {
        kill_dir(&base.join(task).join(command));
    }
}

/// Kills every process of task `task`, then removes its cgroups (in the background when
/// called on the runtime: the processes take a moment to be gone).
pub fn kill_task(task: &str) {
    let (Some(base), Some(task)) = (base(), name(task)) else {
        return;
    };
    let dir = base.join(task);
    if !dir.exists() {
        return;
    }
    kill_dir(&dir);
    match tokio::runtime::Handle::try_current() {
        Ok(handle) => {
            handle.spawn_blocking(move || remove_when_empty(&dir));
        }
        Err(_) => remove_when_empty(&dir),
    }
}

/// Kills every task's processes and waits (bounded) until their cgroups are removed: the
/// daemon stops.
pub fn kill_all() {
    let Some(base) = base() else {
        return;
    };
    let tasks = subdirs(base);
    for task in &tasks {
        kill_dir(task);
    }
    for task in &tasks {
        remove_when_empty(task);
    }
    remove_tree(base);
}

fn base() -> Option<&'static Path> {
    BASE.get()?.as_deref().ok()
}

/// A task or command id as a path component, or `None` if it is anything but a plain name.
fn name(id: &str) -> Option<&str> {
    let plain = !id.is_empty()
        && id.len() <= 128
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    plain.then_some(id)
}

fn find_base(home: &Path) -> Result<PathBuf, String> {
    if std::env::var_os("LAZYBOY_CGROUPS").is_some_and(|v| v == "off") {
        return Err("turned off (LAZYBOY_CGROUPS=off)".to_owned());
    }
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo")
        .map_err(|e| format!("cannot read /proc/self/mountinfo: {e}"))?;
    let mount = cgroup2_mount(&mountinfo).ok_or("no cgroup v2 hierarchy is mounted")?;
    let own = std::fs::read_to_string("/proc/self/cgroup")
        .map_err(|e| format!("cannot read /proc/self/cgroup: {e}"))?;
    let own = own_cgroup(&own).ok_or("this process is in no cgroup v2")?;
    let parent = mount.join(own.trim_start_matches('/'));
    let base = parent.join(format!("lazyboy-{:016x}", fnv1a(home.as_os_str())));
    std::fs::create_dir_all(&base).map_err(|e| {
        format!(
            "cannot create {} ({e}): the daemon needs a cgroup subtree of its own (run it as \
             root, or as the service `lazyboy service install` makes, with Delegate=yes)",
            base.display()
        )
    })?;
    // A command's helper moves itself from the daemon's cgroup into one below `base`: it
    // needs to write both `cgroup.procs` files (their common ancestor's rule).
    for procs in [parent.join("cgroup.procs"), base.join("cgroup.procs")] {
        nix::unistd::access(&procs, nix::unistd::AccessFlags::W_OK).map_err(|e| {
            format!(
                "cannot move processes through {} ({e}): the daemon's cgroup is not \
                 delegated to it",
                procs.display()
            )
        })?;
    }
    Ok(base)
}

/// The mount point of the cgroup v2 hierarchy, from `/proc/self/mountinfo`.
pub fn cgroup2_mount(mountinfo: &str) -> Option<PathBuf> {
    mountinfo.lines().find_map(|line| {
        let (fields, rest) = line.split_once(" - ")?;
        (rest.split_whitespace().next()? == "cgroup2")
            .then(|| fields.split_whitespace().nth(4).map(PathBuf::from))
            .flatten()
    })
}

/// This process's cgroup v2 path, from `/proc/self/cgroup` (the `0::` line).
pub fn own_cgroup(text: &str) -> Option<&str> {
    text.lines().find_map(|line| line.strip_prefix("0::"))
}

/// A stable hash (FNV-1a, 64 bits) of the home's path: the same base across restarts and
/// Rust versions, a different one per home.
fn fnv1a(text: &std::ffi::OsStr) -> u64 {
    text.as_encoded_bytes()
        .iter()
        .fold(0xcbf2_9ce4_8422_2325, |hash, byte| {
            (hash ^ u64::from(*byte)).wrapping_mul(0x0000_0100_0000_01b3)
        })
}

fn subdirs(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .map(|e| e.path())
        .collect()
}

/// Whether a cgroup (or one below it) has a process, from its `cgroup.events`.
fn populated(dir: &Path) -> bool {
    std::fs::read_to_string(dir.join("cgroup.events"))
        .is_ok_and(|events| events.lines().any(|line| line == "populated 1"))
}

/// Kills every process in `dir` and below.
fn kill_dir(dir: &Path) {
    match std::fs::write(dir.join("cgroup.kill"), "1") {
        Ok(()) => {}
        Err(error) if error.kind() == io::ErrorKind::NotFound && dir.exists() => {
            kill_listed(dir);
        }
        Err(error) if error.kind() == io::ErrorKind::NotFound => {}
        Err(error) => {
            tracing::warn!(%error, cgroup = %dir.display(), "cannot kill a cgroup");
            kill_listed(dir);
        }
    }
}

/// Without `cgroup.kill` (before Linux 5.14): SIGKILL each listed process, here and below,
/// until none is left (a process forking meanwhile is listed at the next pass).
fn kill_listed(dir: &Path) {
    use nix::sys::signal::{Signal, kill};
    for _ in 0..100 {
        let mut any = false;
        let mut dirs = vec![dir.to_path_buf()];
        while let Some(next) = dirs.pop() {
            dirs.extend(subdirs(&next));
            let listed = std::fs::read_to_string(next.join("cgroup.procs")).unwrap_or_default();
            for pid in listed.split_whitespace().filter_map(|p| p.parse().ok()) {
                any = true;
                let _ = kill(nix::unistd::Pid::from_raw(pid), Signal::SIGKILL);
            }
        }
        if !any {
            return;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// Removes `dir` and the cgroups below it once their processes are gone (bounded wait).
fn remove_when_empty(dir: &Path) {
    let deadline = Instant::now() + EMPTY_WAIT;
    while populated(dir) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(2));
    }
    remove_tree(dir);
}

fn remove_tree(dir: &Path) {
    for child in subdirs(dir) {
        remove_tree(&child);
    }
    if let Err(error) = std::fs::remove_dir(dir)
        && error.kind() != io::ErrorKind::NotFound
    {
        tracing::warn!(%error, cgroup = %dir.display(), "cannot remove a cgroup");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_v2_mount_and_own_cgroup_are_read() {
        let mountinfo = "\
25 30 0:22 / /sys/fs/cgroup rw,nosuid - tmpfs tmpfs rw,mode=755
35 25 0:30 / /sys/fs/cgroup/cpu rw,relatime shared:9 - cgroup cgroup rw,cpu
36 25 0:31 / /sys/fs/cgroup/unified rw,relatime shared:10 - cgroup2 cgroup2 rw
";
        assert_eq!(
            cgroup2_mount(mountinfo),
            Some(PathBuf::from("/sys/fs/cgroup/unified"))
        );
        assert_eq!(cgroup2_mount("1 0 0:1 / / rw - ext4 /dev/sda rw"), None);
        let own = "9:name=systemd:/\n4:memory:/x\n0::/system.slice/lazyboy.service\n";
        assert_eq!(own_cgroup(own), Some("/system.slice/lazyboy.service"));
        assert_eq!(own_cgroup("4:memory:/x\n"), None);
    }

    #[test]
    fn names_are_plain_and_homes_hash_apart() {
        assert_eq!(name("task-019a_b"), Some("task-019a_b"));
        for bad in ["", "..", "a/b", "a b", "x\n"] {
            assert_eq!(name(bad), None, "{bad:?}");
        }
        let a = fnv1a(std::ffi::OsStr::new("/tmp/lbA"));
        assert_eq!(a, fnv1a(std::ffi::OsStr::new("/tmp/lbA")));
        assert_ne!(a, fnv1a(std::ffi::OsStr::new("/tmp/lbB")));
    }
}
