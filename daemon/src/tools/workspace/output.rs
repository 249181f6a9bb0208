//! `.lazyboy-output/`: where the daemon writes for a task (command logs, spilled results,
//! screenshots), inside the workspace so the model can read them with the file tools.
//!
//! Invariants: the daemon writes there only through an fd of a real directory it owns,
//! opened with `O_NOFOLLOW` beneath the workspace fd and checked with `fstat` (a directory,
//! owned by the daemon's user). What it finds there instead is replaced, never written
//! through: a symlink is removed (the link, not its target), anything else (a file, a
//! directory of another user) is moved aside to `.lazyboy-output.moved-<ms>`, and a fresh
//! directory is made. Files in it are created with `O_CREAT | O_EXCL | O_NOFOLLOW`, so a
//! name a command planted (a symlink to `<home>/token`) is never opened; reading one back
//! (a screenshot for the model) uses `O_NOFOLLOW` and takes regular files only. A command's
//! output is read back from the daemon's memory, never from its log (see `commands`).

use std::ffi::OsStr;
use std::io::{self, Read, Write};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::Arc;

use rustix::fs::{AtFlags, FileType, Mode, OFlags};
use rustix::io::Errno;

use super::Root;

/// The directory, relative to the workspace, that holds spilled results and command logs.
pub const OUTPUT_DIR: &str = ".lazyboy-output";

/// How often a replaced `.lazyboy-output` is made again before giving up.
const TRIES: usize = 4;

/// An open, checked `.lazyboy-output` directory.
#[derive(Debug, Clone)]
pub struct OutputDir {
    fd: Arc<OwnedFd>,
}

/// Why nothing could be written in `.lazyboy-output`.
#[derive(Debug, thiserror::Error)]
pub enum OutputError {
    #[error("cannot use {OUTPUT_DIR} in the workspace: {0}")]
    Io(#[from] io::Error),
    #[error("{OUTPUT_DIR} in the workspace keeps being replaced; nothing was written there")]
    Unstable,
}

impl OutputDir {
    /// Finds or makes the workspace's `.lazyboy-output` (see the module doc).
    pub(super) fn open(root: &Root) -> Result<OutputDir, OutputError> {
        let dir = root.fd();
        let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        for _ in 0..TRIES {
            match rustix::fs::openat(dir, OUTPUT_DIR, flags, Mode::empty()) {
                Ok(fd) => {
                    let stat = rustix::fs::fstat(&fd).map_err(io::Error::from)?;
                    if stat.st_uid == rustix::process::geteuid().as_raw() {
                        return Ok(OutputDir { fd: Arc::new(fd) });
                    }
                    tracing::warn!(
                        workspace = %root.path().display(),
                        owner = stat.st_uid,
                        "{OUTPUT_DIR} belongs to another user: moved aside"
                    );
                    move_aside(dir)?;
                }
                Err(Errno::NOENT) => match rustix::fs::mkdirat(dir, OUTPUT_DIR, super::mode(0o700))
                {
                    Ok(()) | Err(Errno::EXIST) => {}
                    Err(errno) => return Err(io::Error::from(errno).into()),
                },
                // Not a directory, or a symlink (to one or not): never written through.
                Err(Errno::LOOP | Errno::NOTDIR) => {
                    let link = rustix::fs::statat(dir, OUTPUT_DIR, AtFlags::SYMLINK_NOFOLLOW)
                        .is_ok_and(|s| FileType::from_raw_mode(s.st_mode) == FileType::Symlink);
                    tracing::warn!(
                        workspace = %root.path().display(),
                        symlink = link,
                        "{OUTPUT_DIR} is not a directory: replaced"
                    );
                    if link {
                        match rustix::fs::unlinkat(dir, OUTPUT_DIR, AtFlags::empty()) {
                            Ok(()) | Err(Errno::NOENT) => {}
                            Err(errno) => return Err(io::Error::from(errno).into()),
                        }
                    } else {
                        move_aside(dir)?;
                    }
                }
                Err(errno) => return Err(io::Error::from(errno).into()),
            }
        }
        Err(OutputError::Unstable)
    }

    pub fn fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }

    /// Creates the file `name`, which must not exist (a planted symlink is not opened).
    pub fn create_new(&self, name: &str) -> io::Result<std::fs::File> {
        let name = plain(name)?;
        let flags = OFlags::WRONLY
            | OFlags::APPEND
            | OFlags::CREATE
            | OFlags::EXCL
            | OFlags::NOFOLLOW
            | OFlags::CLOEXEC;
        let fd = rustix::fs::openat(self.fd(), name, flags, super::mode(0o600))?;
        Ok(std::fs::File::from(fd))
    }

    /// Writes `bytes` as the file `name`, replacing whatever has that name (a symlink is
    /// removed, never followed).
    pub fn replace(&self, name: &str, bytes: &[u8]) -> io::Result<()> {
        for _ in 0..TRIES {
            match self.create_new(name) {
                Ok(mut file) => return file.write_all(bytes),
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                    match rustix::fs::unlinkat(self.fd(), plain(name)?, AtFlags::empty()) {
                        Ok(()) | Err(Errno::NOENT) => {}
                        Err(errno) => return Err(errno.into()),
                    }
                }
                Err(e) => return Err(e),
            }
        }
        Err(io::Error::other(format!(
            "{OUTPUT_DIR}/{name} keeps being replaced"
        )))
    }

    /// The regular file `name`'s bytes (a symlink or anything else is refused).
    pub fn read(&self, name: &str) -> io::Result<Vec<u8>> {
        match super::open_child(self.fd(), plain(name)?)? {
            Some(mut file) => {
                let mut bytes = Vec::new();
                file.read_to_end(&mut bytes)?;
                Ok(bytes)
            }
            None => Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("{OUTPUT_DIR}/{name} is not a regular file"),
            )),
        }
    }
}

/// A file name with no directory part.
fn plain(name: &str) -> io::Result<&OsStr> {
    if name.is_empty() || name == "." || name == ".." || name.contains('/') {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("not a plain file name: {name:?}"),
        ));
    }
    Ok(OsStr::new(name))
}

/// Renames what is at `.lazyboy-output` to `.lazyboy-output.moved-<ms>`, keeping its bytes.
fn move_aside(dir: BorrowedFd<'_>) -> io::Result<()> {
    let ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis());
    let aside = format!("{OUTPUT_DIR}.moved-{ms}");
    match rustix::fs::renameat(dir, OUTPUT_DIR, dir, aside.as_str()) {
        Ok(()) | Err(Errno::NOENT) => Ok(()),
        Err(errno) => Err(errno.into()),
    }
}
