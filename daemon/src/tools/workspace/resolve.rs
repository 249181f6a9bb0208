//! Opening a relative path beneath a directory fd, never leaving it.
//!
//! Two resolvers give the same answer:
//! - **`openat2`** (Linux 5.6+): one syscall with `RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS`;
//!   the kernel follows symlinks only while they stay beneath the fd, refuses `..` above it
//!   and `/proc` magic links, and fails with `EXDEV` (or `EAGAIN` when a concurrent rename
//!   could have moved the walk: it is retried) instead of leaving.
//! - **The walk** (kernels without `openat2`, macOS, and every `EXDEV`): one component at a
//!   time, each opened with `O_NOFOLLOW` relative to the directory fd opened before it; a
//!   symlink is read (`readlinkat`) and its target spliced into the rest of the path, `..`
//!   pops the stack of directory fds the walk came through (never `openat(fd, "..")`). The
//!   kernel never follows a link on the walk's behalf, so a directory swapped for a symlink
//!   between two steps is seen as a symlink and judged like any other.
//!
//! An absolute symlink is beneath the root only when its target names the root's own
//! (canonical) path as a prefix; `openat2` refuses every absolute symlink, so those go
//! through the walk, which rewrites them relative to the root fd. Any other target that
//! leads out is [`Resolve::Escape`], naming the link and its target for the model.
//!
//! Limit of the walk: a directory it holds could be renamed out of the workspace while it
//! descends, which needs write access outside the workspace (a confined command has none).

use std::collections::VecDeque;
use std::ffi::{OsStr, OsString};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use rustix::fs::{Mode, OFlags};
use rustix::io::Errno;

/// How many symlinks one resolution may follow (the kernel's own limit).
const MAX_LINKS: u32 = 40;
/// How often a component that stopped being a symlink between two calls is looked at again.
const MAX_RETRIES: u32 = 8;

/// Why a path could not be opened beneath the root.
#[derive(Debug)]
pub(super) enum Resolve {
    /// The system call failed (`ENOENT`, `ENOTDIR`, `EISDIR`, `EEXIST`, `EACCES`, ...).
    Io(Errno),
    /// A symlink (`link`, relative to the root) leads out of it, to `target`.
    Escape { link: PathBuf, target: PathBuf },
}

impl From<Errno> for Resolve {
    fn from(errno: Errno) -> Resolve {
        Resolve::Io(errno)
    }
}

/// Set once `openat2` turned out missing (old kernel, or a seccomp filter that denies it).
static NO_OPENAT2: AtomicBool = AtomicBool::new(false);

/// Which resolver to use: the kernel's when it has one (tests pin the walk).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum How {
    Auto,
    #[cfg_attr(not(test), allow(dead_code, reason = "only tests pin the walk"))]
    Walk,
}

/// Opens `rel` (relative, already normalized: no `..`, no `.`; empty for the root itself)
/// beneath `root`, whose canonical path is `root_path`, with `flags` (close-on-exec added).
pub(super) fn open_beneath(
    root: BorrowedFd<'_>,
    root_path: &Path,
    rel: &Path,
    flags: OFlags,
    mode: Mode,
    how: How,
) -> Result<OwnedFd, Resolve> {
    let flags = flags | OFlags::CLOEXEC;
    if how == How::Auto && !NO_OPENAT2.load(Ordering::Relaxed) {
        match kernel(root, rel, flags, mode) {
            Kernel::Done(result) => return result.map_err(Resolve::Io),
            Kernel::Missing => NO_OPENAT2.store(true, Ordering::Relaxed),
            // An absolute symlink, or a real escape: the walk tells which, and names it.
            Kernel::Walk => {}
        }
    }
    walk(root, root_path, rel, flags, mode)
}

enum Kernel {
    Done(Result<OwnedFd, Errno>),
    Missing,
    Walk,
}

#[cfg(any(target_os = "linux", target_os = "android"))]
fn kernel(root: BorrowedFd<'_>, rel: &Path, flags: OFlags, mode: Mode) -> Kernel {
    use rustix::fs::ResolveFlags;
    let path: &OsStr = if rel.as_os_str().is_empty() {
        OsStr::new(".")
    } else {
        rel.as_os_str()
    };
    let resolve = ResolveFlags::BENEATH | ResolveFlags::NO_MAGICLINKS;
    for _ in 0..4 {
        match rustix::fs::openat2(root, path, flags, mode, resolve) {
            // A rename raced the lookup of `..` (the kernel could not prove it stayed
            // beneath): try again.
            Err(Errno::AGAIN) => continue,
            Err(Errno::XDEV) => return Kernel::Walk,
            Err(Errno::NOSYS) => return Kernel::Missing,
            // seccomp filters in some container runtimes answer EPERM for syscalls they do
            // not know; a real permission problem answers EACCES.
            Err(Errno::PERM) => return Kernel::Missing,
            other => return Kernel::Done(other),
        }
    }
    Kernel::Walk
}

#[cfg(not(any(target_os = "linux", target_os = "android")))]
fn kernel(_root: BorrowedFd<'_>, _rel: &Path, _flags: OFlags, _mode: Mode) -> Kernel {
    Kernel::Missing
}

/// Flags for an intermediate directory of the walk: only looked through, never read.
#[cfg(any(target_os = "linux", target_os = "android"))]
fn through() -> OFlags {
    OFlags::PATH | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC
}

#[cfg(not(any(target_os = "linux", target_os = "android")))]
fn through() -> OFlags {
    OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC
}

/// The component-by-component resolver (see the module doc).
fn walk(
    root: BorrowedFd<'_>,
    root_path: &Path,
    rel: &Path,
    flags: OFlags,
    mode: Mode,
) -> Result<OwnedFd, Resolve> {
    // The directories the walk is in, below the root; `..` pops one.
    let mut stack: Vec<OwnedFd> = Vec::new();
    // Where the walk is, relative to the root, for naming an escaping link.
    let mut at: Vec<OsString> = Vec::new();
    let mut pending: VecDeque<OsString> = parts(rel);
    let (mut links, mut retries) = (0, 0);
    while let Some(name) = pending.pop_front() {
        if name == ".." {
            if stack.pop().is_none() {
                return Err(Resolve::Escape {
                    link: at.iter().collect(),
                    target: PathBuf::from(".."),
                });
            }
            at.pop();
            continue;
        }
        let last = pending.is_empty();
        let cur = stack.last().map_or(root, |fd| fd.as_fd());
        let opened = if last {
            rustix::fs::openat(cur, name.as_os_str(), flags | OFlags::NOFOLLOW, mode)
        } else {
            rustix::fs::openat(cur, name.as_os_str(), through(), Mode::empty())
        };
        match opened {
            Ok(fd) if last => return Ok(fd),
            Ok(fd) => {
                stack.push(fd);
                at.push(name);
            }
            // A symlink where a directory (ENOTDIR) or a plain file (ELOOP) was asked for;
            // O_CREAT|O_EXCL on a link answers EEXIST, which stands: the caller decides.
            Err(errno @ (Errno::LOOP | Errno::NOTDIR)) => {
                links += 1;
                if links > MAX_LINKS {
                    return Err(Resolve::Io(Errno::LOOP));
                }
                let target = match rustix::fs::readlinkat(cur, name.as_os_str(), Vec::new()) {
                    Ok(target) => PathBuf::from(OsStr::from_bytes(target.as_bytes())),
                    // Not a symlink (any more): swapped back meanwhile, so look again.
                    Err(Errno::INVAL) if retries < MAX_RETRIES => {
                        retries += 1;
                        pending.push_front(name);
                        continue;
                    }
                    // Not a symlink after all (or gone): the original answer stands.
                    Err(_) => return Err(Resolve::Io(errno)),
                };
                let mut link: PathBuf = at.iter().collect();
                link.push(&name);
                let inside = if target.is_absolute() {
                    // Absolute: beneath only through the root's own path.
                    match target.strip_prefix(root_path) {
                        Ok(rest) => {
                            stack.clear();
                            at.clear();
                            rest.to_path_buf()
                        }
                        Err(_) => return Err(Resolve::Escape { link, target }),
                    }
                } else {
                    target.clone()
                };
                // `..` in a target counts from the link's directory; one that climbs above
                // the root is an escape, judged when it is popped (with the link named).
                if climbs_out(&inside, stack.len()) {
                    return Err(Resolve::Escape { link, target });
                }
                for part in parts(&inside).into_iter().rev() {
                    pending.push_front(part);
                }
                if pending.is_empty() {
                    // A link to the root itself (`x -> .`): open it as the last step would.
                    let cur = stack.last().map_or(root, |fd| fd.as_fd());
                    return rustix::fs::openat(cur, ".", flags, mode).map_err(Resolve::Io);
                }
            }
            Err(errno) => return Err(Resolve::Io(errno)),
        }
    }
    // The path was empty, or ended in `..`: the directory the walk is in.
    let cur = stack.last().map_or(root, |fd| fd.as_fd());
    rustix::fs::openat(cur, ".", flags, mode).map_err(Resolve::Io)
}

/// The normal components of `path` and its `..`s, in order (`.` and `/` dropped).
fn parts(path: &Path) -> VecDeque<OsString> {
    path.components()
        .filter_map(|c| match c {
            Component::Normal(name) => Some(name.to_os_string()),
            Component::ParentDir => Some(OsString::from("..")),
            _ => None,
        })
        .collect()
}

/// Whether `target`, read at depth `depth` below the root, climbs above it at some point.
fn climbs_out(target: &Path, depth: usize) -> bool {
    let mut level = depth as i64;
    for part in target.components() {
        match part {
            Component::ParentDir => level -= 1,
            Component::Normal(_) => level += 1,
            _ => {}
        }
        if level < 0 {
            return true;
        }
    }
    false
}
