//! The git files of a `workspace-write` agent's repositories, read-only (Linux): the helper
//! makes a mount namespace of its own and, in it, a read-only bind mount of each path it is
//! told to protect (each repository's `.git`, see the daemon's `confine::git`) onto itself, before
//! Landlock. Landlock only allows and cannot take a subtree back out of a writable
//! workspace; a mount can. In that namespace:
//!
//! - writes under `.git` fail with `EROFS` (config, hooks, `commondir`, the index: none of
//!   the files git reads programs or other repositories from can change);
//! - `.git` is a mount point, so it cannot be renamed, removed or replaced by another
//!   directory (`EBUSY`);
//! - the command cannot undo any of it: Landlock denies every mount, unmount and remount to
//!   a process in its domain, and the ptrace scope denies it the `/proc/<pid>/root` and
//!   `ns/` of processes outside, the ways into another mount namespace.
//!
//! As root the helper unshares the mount namespace alone. Otherwise it first makes a user
//! namespace mapping only its own uid and gid to themselves (so files keep their owner), in
//! which it may mount; at the exec it loses the capabilities that gave it (its uid is not 0
//! there). Propagation is made private first, so nothing mounted here reaches the person's
//! namespace. The namespace ends with the command's last process.

use std::path::{Path, PathBuf};

use nix::mount::{MsFlags, mount};
use nix::sched::{CloneFlags, unshare};
use nix::sys::statvfs::{FsFlags, statvfs};

/// Enters a private mount namespace (with a user namespace when not root).
pub fn enter_namespace() -> Result<(), String> {
    let uid = nix::unistd::getuid();
    let gid = nix::unistd::getgid();
    if uid.is_root() {
        unshare(CloneFlags::CLONE_NEWNS).map_err(|e| format!("unshare(CLONE_NEWNS): {e}"))?;
    } else {
        unshare(CloneFlags::CLONE_NEWUSER | CloneFlags::CLONE_NEWNS)
            .map_err(|e| format!("unshare(CLONE_NEWUSER | CLONE_NEWNS): {e}"))?;
        let write = |file: &str, text: String| {
            std::fs::write(file, text).map_err(|e| format!("cannot write {file}: {e}"))
        };
        // An unprivileged gid_map needs setgroups denied first.
        write("/proc/self/setgroups", "deny".to_owned())?;
        write("/proc/self/uid_map", format!("{uid} {uid} 1"))?;
        write("/proc/self/gid_map", format!("{gid} {gid} 1"))?;
    }
    mount(
        None::<&str>,
        "/",
        None::<&str>,
        MsFlags::MS_REC | MsFlags::MS_PRIVATE,
        None::<&str>,
    )
    .map_err(|e| format!("cannot make the mounts private: {e}"))
}

/// Enters the namespace, then makes each of `paths` a read-only bind mount of itself.
pub fn protect(paths: &[PathBuf]) -> Result<(), String> {
    enter_namespace()?;
    for path in paths {
        bind_read_only(path).map_err(|e| format!("{}: {e}", path.display()))?;
    }
    Ok(())
}

fn bind_read_only(path: &Path) -> Result<(), nix::Error> {
    // Not recursive: a mount below `.git` would stay writable; a kernel that refuses to
    // hide one (a locked mount in a user namespace) gets the recursive bind.
    let bind = |flags: MsFlags| mount(Some(path), path, None::<&str>, flags, None::<&str>);
    match bind(MsFlags::MS_BIND) {
        Err(nix::Error::EINVAL) => bind(MsFlags::MS_BIND | MsFlags::MS_REC)?,
        other => other?,
    }
    // A remount must keep the flags the mount is locked with in a user namespace.
    let kept = statvfs(path).map(|s| kept_flags(s.flags()))?;
    mount(
        None::<&str>,
        path,
        None::<&str>,
        MsFlags::MS_BIND | MsFlags::MS_REMOUNT | MsFlags::MS_RDONLY | kept,
        None::<&str>,
    )
}

/// The mount flags of `flags` a read-only remount must repeat.
fn kept_flags(flags: FsFlags) -> MsFlags {
    let pairs = [
        (FsFlags::ST_NOSUID, MsFlags::MS_NOSUID),
        (FsFlags::ST_NODEV, MsFlags::MS_NODEV),
        (FsFlags::ST_NOEXEC, MsFlags::MS_NOEXEC),
        (FsFlags::ST_NOATIME, MsFlags::MS_NOATIME),
        (FsFlags::ST_NODIRATIME, MsFlags::MS_NODIRATIME),
        (FsFlags::ST_RELATIME, MsFlags::MS_RELATIME),
    ];
    pairs
        .iter()
        .filter(|(st, _)| flags.contains(*st))
        .fold(MsFlags::empty(), |acc, (_, ms)| acc | *ms)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_remount_keeps_the_locked_flags() {
        let kept = kept_flags(FsFlags::ST_NOSUID | FsFlags::ST_NODEV | FsFlags::ST_RDONLY);
        assert_eq!(kept, MsFlags::MS_NOSUID | MsFlags::MS_NODEV);
        assert_eq!(kept_flags(FsFlags::empty()), MsFlags::empty());
    }
}
