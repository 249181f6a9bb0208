//! The workspace as the daemon touches it: every file a tool names, and every file the daemon
//! writes or reads for a task, is opened beneath one directory fd ([`Root`]), never by
//! "canonicalize, check, then open" (a command racing the daemon could swap a directory for a
//! symlink between the check and the open, and did).
//!
//! Invariants:
//! - A [`Root`] holds an fd of the workspace directory, opened once (per turn) from its
//!   canonical path. Paths are first judged lexically ([`Root::rel`]: `..` that climbs out and
//!   absolute paths elsewhere are refused with a message naming the workspace), then opened
//!   beneath the fd ([`resolve`]: `openat2(RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS)` on Linux,
//!   else a component-by-component walk with `O_NOFOLLOW`). Symlinks that stay inside work,
//!   absolute ones included when they name the workspace's own path; ones that lead out are
//!   refused ([`PathError::Symlink`], naming the link and its target).
//! - What is opened is then used through its fd only: read, written, truncated, listed
//!   ([`dir`]: walks descend with `openat(dirfd, name, O_NOFOLLOW)`), or handed to a child
//!   as its working directory (`/proc/self/fd/N`). Opens never block on a FIFO
//!   (`O_NONBLOCK`), and only regular files are read or written (`read_file` alone waits on
//!   a named pipe, through `/proc/self/fd/N` of the pipe it checked, as `cat` would).
//! - The LazyBoy home is never reached through the file tools, even when the workspace
//!   contains it (a second line: confined agents are refused such workspaces): when the
//!   home lies in the workspace, each opened file's real path (`/proc/self/fd/N`, macOS
//!   `F_GETPATH`) is checked against it before any byte is read or written, and directory
//!   walks never enter a directory whose device and inode are the home's. A workspace inside
//!   the home (the default `<home>/workspaces/<agent>`) cannot reach the rest of it.
//! - The daemon's own files (command logs, spills, screenshots) live in `.lazyboy-output/`,
//!   found or created and checked through its fd ([`output`]).
//!
//! Fallback (kernels before 5.6, seccomp filters that deny `openat2`, macOS): the walk. It
//! gives the same answers, race-free against swaps inside the workspace, at one syscall per
//! component; its limit is a directory it holds being moved out of the workspace while it
//! descends, which needs write access outside (a confined command has none). On macOS the
//! working directory of a command is a path again (no `/proc/self/fd`), checked just before
//! the spawn, and the home check reads the path through `F_GETPATH`.

mod dir;
mod output;
mod path;
mod resolve;
#[cfg(test)]
mod tests;

use std::io::{self, Read, Write};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::path::{Component, Path, PathBuf};
use std::sync::OnceLock;

use rustix::fs::{FileType, Mode, OFlags, Stat};
use rustix::io::Errno;

pub use dir::{Entry, EntryKind, entries, open_child, read_link, subdir};
pub use output::{OUTPUT_DIR, OutputDir, OutputError};
pub use path::{PathError, Rel};
use path::{io_error, normalize};
use resolve::{How, Resolve, open_beneath};

/// The LazyBoy home (canonical), recorded at start: the file tools never open it.
static HOME: OnceLock<PathBuf> = OnceLock::new();

/// Records the LazyBoy home (call once, at start).
pub fn set_home(home: &Path) {
    let _ = HOME.set(home.canonicalize().unwrap_or_else(|_| home.to_path_buf()));
}

/// An open workspace: every path of a task is opened beneath it.
#[derive(Debug)]
pub struct Root {
    fd: OwnedFd,
    path: PathBuf,
    /// Set when the home lies in the workspace: opened files are checked against it.
    guard: Option<Guard>,
    /// Directories the file tools may not write beneath (canonical): the git directories a
    /// confined agent may not change (`confine::Confinement::protected_git`). Checked on
    /// the opened directory or file, so a swapped symlink cannot walk a write into them.
    read_only: Vec<PathBuf>,
    how: How,
}

#[derive(Debug)]
struct Guard {
    home: PathBuf,
    dev: u64,
    ino: u64,
}

/// What a path is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    File,
    Dir,
    Other,
}

const READ: OFlags = OFlags::RDONLY.union(OFlags::NONBLOCK).union(OFlags::NOCTTY);

impl Root {
    /// Opens the workspace at `path` (canonicalized here), guarded against the recorded home.
    pub fn open(path: &Path) -> io::Result<Root> {
        Root::open_with_home(path, HOME.get().map(PathBuf::as_path))
    }

    /// [`Root::open`] with an explicit home (`None`: no home to guard).
    pub fn open_with_home(path: &Path, home: Option<&Path>) -> io::Result<Root> {
        let path = path.canonicalize()?;
        let fd = rustix::fs::open(
            &path,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )?;
        // Only a home inside the workspace can be reached beneath it.
        let guard = match home {
            Some(home) if home.starts_with(&path) => {
                let stat = rustix::fs::stat(home)?;
                let (dev, ino) = dev_ino(&stat);
                Some(Guard {
                    home: home.to_path_buf(),
                    dev,
                    ino,
                })
            }
            _ => None,
        };
        Ok(Root {
            fd,
            path,
            guard,
            read_only: Vec::new(),
            how: How::Auto,
        })
    }

    /// The same root, with `dirs` closed to writes (see [`Root`]'s `read_only`).
    pub fn with_read_only(mut self, dirs: Vec<PathBuf>) -> Root {
        self.read_only = dirs
            .into_iter()
            .map(|dir| dir.canonicalize().unwrap_or(dir))
            .collect();
        self
    }

    /// Refuses a write whose directory or file, as opened (`fd`), lies in a read-only one.
    fn writable(&self, rel: &Rel, fd: BorrowedFd<'_>) -> Result<(), PathError> {
        if self.read_only.is_empty() {
            return Ok(());
        }
        // Unknown where it is: refuse (it can only be a platform without /proc or F_GETPATH).
        let Some(real) = real_path(fd) else {
            return Err(PathError::ReadOnly {
                given: rel.shown(),
                dir: "(unknown)".into(),
            });
        };
        match self.read_only.iter().find(|dir| real.starts_with(dir)) {
            Some(dir) => Err(PathError::ReadOnly {
                given: rel.shown(),
                dir: dir.display().to_string(),
            }),
            None => Ok(()),
        }
    }

    /// Pins the component walk (the fallback), for tests of it on kernels with `openat2`.
    #[cfg(test)]
    pub(crate) fn walk_only(mut self) -> Root {
        self.how = How::Walk;
        self
    }

    /// The workspace's canonical path (for messages, and for the sandbox's grants).
    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }

    /// Judges `given` (relative, or absolute inside the workspace) without touching the disk.
    pub fn rel(&self, given: &str) -> Result<Rel, PathError> {
        let path = Path::new(given);
        let inside = if path.is_absolute() {
            match normalize(path) {
                Some(abs) if abs.starts_with(&self.path) => abs
                    .strip_prefix(&self.path)
                    .map(Path::to_path_buf)
                    .unwrap_or_default(),
                _ => {
                    return Err(PathError::Outside {
                        given: given.to_owned(),
                        root: self.shown_root(),
                    });
                }
            }
        } else {
            normalize(path).ok_or_else(|| PathError::Escapes {
                given: given.to_owned(),
                root: self.shown_root(),
            })?
        };
        Ok(Rel(inside))
    }

    /// `rel` opened with `flags`, checked against the home.
    fn open_at(&self, rel: &Rel, flags: OFlags, mode: Mode) -> Result<OwnedFd, PathError> {
        let fd = open_beneath(self.fd(), &self.path, rel.path(), flags, mode, self.how)
            .map_err(|e| self.fail(rel, e))?;
        self.check(rel, fd.as_fd())?;
        Ok(fd)
    }

    /// What `rel` is, following symlinks that stay inside.
    pub fn kind(&self, rel: &Rel) -> Result<Kind, PathError> {
        let fd = self.open_at(rel, READ, Mode::empty())?;
        Ok(kind(&stat(rel, fd.as_fd())?))
    }

    /// A regular file, open for reading, and its size.
    pub fn open_file(&self, rel: &Rel) -> Result<(std::fs::File, u64), PathError> {
        let fd = self.open_at(rel, READ, Mode::empty())?;
        let stat = stat(rel, fd.as_fd())?;
        match kind(&stat) {
            Kind::File => Ok((
                std::fs::File::from(fd),
                u64::try_from(stat.st_size).unwrap_or(0),
            )),
            Kind::Dir => Err(PathError::IsDir(rel.shown())),
            Kind::Other => Err(PathError::NotFile(rel.shown())),
        }
    }

    /// A regular file's bytes.
    pub fn read(&self, rel: &Rel) -> Result<Vec<u8>, PathError> {
        let (mut file, size) = self.open_file(rel)?;
        let mut bytes = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
        file.read_to_end(&mut bytes).map_err(|e| io_error(rel, e))?;
        Ok(bytes)
    }

    /// What `read_file` reads: a regular file's bytes, or what a named pipe delivers until
    /// its writers close it (as `cat` would: the pipe is opened without blocking, checked
    /// through its fd, then opened again through `/proc/self/fd/N`, the same pipe, to wait
    /// for a writer). Sockets and devices are refused.
    pub fn read_file(&self, rel: &Rel) -> Result<Vec<u8>, PathError> {
        let fd = self.open_at(rel, READ, Mode::empty())?;
        let mut file = match FileType::from_raw_mode(stat(rel, fd.as_fd())?.st_mode) {
            FileType::RegularFile => std::fs::File::from(fd),
            FileType::Fifo if cfg!(any(target_os = "linux", target_os = "android")) => {
                std::fs::File::open(format!("/proc/self/fd/{}", fd.as_raw_fd()))
                    .map_err(|e| io_error(rel, e))?
            }
            FileType::Directory => return Err(PathError::IsDir(rel.shown())),
            _ => return Err(PathError::NotFile(rel.shown())),
        };
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes).map_err(|e| io_error(rel, e))?;
        Ok(bytes)
    }

    /// A regular file open for reading and writing (nothing changed yet).
    pub fn open_rw(&self, rel: &Rel) -> Result<std::fs::File, PathError> {
        let flags = OFlags::RDWR | OFlags::NONBLOCK | OFlags::NOCTTY;
        let fd = self.open_at(rel, flags, Mode::empty())?;
        self.writable(rel, fd.as_fd())?;
        match kind(&stat(rel, fd.as_fd())?) {
            Kind::File => Ok(std::fs::File::from(fd)),
            Kind::Dir => Err(PathError::IsDir(rel.shown())),
            Kind::Other => Err(PathError::NotFile(rel.shown())),
        }
    }

    /// A directory, open for listing.
    pub fn open_dir(&self, rel: &Rel) -> Result<OwnedFd, PathError> {
        let fd = self.open_at(rel, OFlags::RDONLY | OFlags::DIRECTORY, Mode::empty())?;
        Ok(fd)
    }

    /// Creates or replaces the file `rel` with `bytes`, making missing parent directories;
    /// `true` when it was created. A symlink that stays inside is written through (a
    /// dangling one creates its target); nothing is truncated before the home check.
    pub fn write(&self, rel: &Rel, bytes: &[u8]) -> Result<bool, PathError> {
        let (mut file, created) = self.create(rel)?;
        file.set_len(0).map_err(|e| io_error(rel, e))?;
        file.write_all(bytes).map_err(|e| io_error(rel, e))?;
        Ok(created)
    }

    /// `rel` open for writing (not truncated), created if missing; `true` when created.
    pub fn create(&self, rel: &Rel) -> Result<(std::fs::File, bool), PathError> {
        let mut rel = rel.clone();
        for _ in 0..40 {
            let (Some(parent), Some(name)) = (rel.path().parent(), rel.path().file_name()) else {
                return Err(PathError::IsDir(rel.shown()));
            };
            let parent = Rel(parent.to_path_buf());
            let dir = self.make_dirs(&parent).map_err(|e| e.given(&rel))?;
            self.writable(&rel, dir.as_fd())?;
            let new = OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW;
            match rustix::fs::openat(&dir, name, new | OFlags::CLOEXEC, mode(0o600)) {
                Ok(fd) => {
                    let bits = 0o666 & !crate::confine::machine::user_umask();
                    // Created under the daemon's umask 077: the person's usual mode.
                    let _ = rustix::fs::fchmod(&fd, mode(bits));
                    return Ok((std::fs::File::from(fd), true));
                }
                Err(Errno::EXIST) => {}
                Err(Errno::ISDIR) => return Err(PathError::IsDir(rel.shown())),
                Err(errno) => return Err(io_error(&rel, errno.into())),
            }
            let flags = OFlags::WRONLY | OFlags::NONBLOCK | OFlags::NOCTTY;
            match self.open_at(&rel, flags, Mode::empty()) {
                Ok(fd) => {
                    self.writable(&rel, fd.as_fd())?;
                    return match kind(&stat(&rel, fd.as_fd())?) {
                        Kind::File => Ok((std::fs::File::from(fd), false)),
                        Kind::Dir => Err(PathError::IsDir(rel.shown())),
                        Kind::Other => Err(PathError::NotFile(rel.shown())),
                    };
                }
                // A dangling symlink: follow it by hand, so its target's directory is made
                // and checked like any other.
                Err(PathError::NotFound(_)) => {
                    let Ok(target) = read_link(dir.as_fd(), name) else {
                        continue; // it changed under us: judge it again
                    };
                    let joined = parent.path().join(&target);
                    let given = joined.to_string_lossy().into_owned();
                    rel = if target.is_absolute() {
                        self.rel(&target.to_string_lossy())
                    } else {
                        self.rel(&given)
                    }
                    .map_err(|_| PathError::Symlink {
                        given: rel.shown(),
                        link: rel.shown(),
                        target: target.display().to_string(),
                        root: self.shown_root(),
                    })?;
                }
                Err(other) => return Err(other),
            }
        }
        Err(io_error(&rel, Errno::LOOP.into()))
    }

    /// Opens the directory `rel`, creating what is missing of it (with the person's mode).
    pub fn make_dirs(&self, rel: &Rel) -> Result<OwnedFd, PathError> {
        match self.open_dir(rel) {
            Err(PathError::NotFound(_)) => {}
            other => return other,
        }
        let mut at = Rel(PathBuf::new());
        let mut dir = self.open_dir(&at)?;
        for part in rel.path().components() {
            let Component::Normal(name) = part else {
                continue;
            };
            let next = at.join(name);
            self.writable(&next, dir.as_fd())?;
            match rustix::fs::mkdirat(&dir, name, mode(0o700)) {
                Ok(()) => {
                    let made = self.open_dir(&next)?;
                    let bits = 0o777 & !crate::confine::machine::user_umask();
                    let _ = rustix::fs::fchmod(&made, mode(bits));
                    dir = made;
                }
                Err(Errno::EXIST) => dir = self.open_dir(&next)?,
                Err(errno) => return Err(io_error(&next, errno.into())),
            }
            at = next;
        }
        Ok(dir)
    }

    /// The workspace's `.lazyboy-output`, found or made, and checked.
    pub fn output(&self) -> Result<OutputDir, OutputError> {
        OutputDir::open(self)
    }

    /// Whether the directory open as `fd` is the LazyBoy home (walks never enter it).
    pub fn is_home(&self, fd: BorrowedFd<'_>) -> bool {
        let Some(guard) = &self.guard else {
            return false;
        };
        rustix::fs::fstat(fd).is_ok_and(|s| dev_ino(&s) == (guard.dev, guard.ino))
    }

    /// Refuses what lies in the home, by the opened file's real path.
    fn check(&self, rel: &Rel, fd: BorrowedFd<'_>) -> Result<(), PathError> {
        let Some(guard) = &self.guard else {
            return Ok(());
        };
        let refused = || PathError::Home {
            given: rel.shown(),
            home: guard.home.display().to_string(),
        };
        if self.is_home(fd) {
            return Err(refused());
        }
        match real_path(fd) {
            Some(real) if !real.starts_with(&guard.home) => Ok(()),
            // In the home, or unknown (no /proc): refused, this check is the second line.
            _ => Err(refused()),
        }
    }

    fn shown_root(&self) -> String {
        self.path.display().to_string()
    }

    fn fail(&self, rel: &Rel, error: Resolve) -> PathError {
        match error {
            Resolve::Escape { link, target } => PathError::Symlink {
                given: rel.shown(),
                link: Rel(link).shown(),
                target: target.display().to_string(),
                root: self.shown_root(),
            },
            Resolve::Io(Errno::NOENT) => PathError::NotFound(rel.shown()),
            Resolve::Io(Errno::NOTDIR) => PathError::NotDir(rel.shown()),
            Resolve::Io(Errno::ISDIR) => PathError::IsDir(rel.shown()),
            // A socket (or a FIFO opened for writing with no reader).
            Resolve::Io(Errno::NXIO) => PathError::NotFile(rel.shown()),
            Resolve::Io(errno) => io_error(rel, errno.into()),
        }
    }
}

fn stat(rel: &Rel, fd: BorrowedFd<'_>) -> Result<Stat, PathError> {
    rustix::fs::fstat(fd).map_err(|e| io_error(rel, e.into()))
}

/// A file's device and inode, whatever their widths on this platform.
#[allow(
    clippy::unnecessary_cast,
    reason = "the widths differ between Linux and macOS"
)]
pub(super) fn dev_ino(stat: &Stat) -> (u64, u64) {
    (stat.st_dev as u64, stat.st_ino as u64)
}

/// Permission bits as the platform's mode type.
#[allow(
    clippy::unnecessary_cast,
    reason = "mode_t is u32 on Linux, u16 on macOS"
)]
pub(super) fn mode(bits: u32) -> Mode {
    Mode::from_bits_truncate(bits as rustix::fs::RawMode)
}

fn kind(stat: &Stat) -> Kind {
    match FileType::from_raw_mode(stat.st_mode) {
        FileType::RegularFile => Kind::File,
        FileType::Directory => Kind::Dir,
        _ => Kind::Other,
    }
}

/// Where the open file `fd` is now.
#[cfg(any(target_os = "linux", target_os = "android"))]
fn real_path(fd: BorrowedFd<'_>) -> Option<PathBuf> {
    std::fs::read_link(format!("/proc/self/fd/{}", fd.as_raw_fd())).ok()
}

#[cfg(target_vendor = "apple")]
fn real_path(fd: BorrowedFd<'_>) -> Option<PathBuf> {
    use std::ffi::OsStr;
    use std::os::unix::ffi::OsStrExt;
    let path = rustix::fs::getpath(fd).ok()?;
    Some(PathBuf::from(OsStr::from_bytes(path.as_bytes())))
}

#[cfg(not(any(target_os = "linux", target_os = "android", target_vendor = "apple")))]
fn real_path(_fd: BorrowedFd<'_>) -> Option<PathBuf> {
    None
}

/// A directory fd as a path a child process can `chdir` to: `/proc/self/fd/N` resolves, in
/// the child that inherited the fd, to that very directory (a swap of the path afterwards
/// changes nothing). Without `/proc`, the directory's path as it is now.
pub fn dir_path(fd: BorrowedFd<'_>, fallback: &Path) -> PathBuf {
    let proc = PathBuf::from(format!("/proc/self/fd/{}", fd.as_raw_fd()));
    if cfg!(any(target_os = "linux", target_os = "android")) && proc.is_dir() {
        return proc;
    }
    real_path(fd).unwrap_or_else(|| fallback.to_path_buf())
}
