//! Directory walks through fds: a directory's entries read from its fd, a subdirectory or a
//! file opened relative to it with `O_NOFOLLOW`, a symlink read without being followed. A
//! walk built from these (list_dir, search) never leaves the directory it started in,
//! whatever a concurrent process renames meanwhile: an entry swapped for a symlink fails to
//! open (`ELOOP`/`ENOTDIR`) and is skipped.

use std::ffi::{OsStr, OsString};
use std::io;
use std::os::fd::{BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;

use rustix::fs::{AtFlags, FileType, Mode, OFlags};

/// One entry of a directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub name: OsString,
    pub kind: EntryKind,
}

/// What an entry is, as the directory says (a symlink is never followed).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryKind {
    Dir,
    File,
    Symlink,
    Other,
}

/// The entries of the directory open as `dir`, sorted by name, without `.` and `..`.
pub fn entries(dir: BorrowedFd<'_>) -> io::Result<Vec<Entry>> {
    // A fresh fd of the same directory: reading moves its offset.
    let own = rustix::fs::openat(
        dir,
        ".",
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )?;
    let mut out = Vec::new();
    for entry in rustix::fs::Dir::new(own)? {
        let entry = entry?;
        let name = OsStr::from_bytes(entry.file_name().to_bytes());
        if name == "." || name == ".." {
            continue;
        }
        let kind = match entry.file_type() {
            FileType::Directory => EntryKind::Dir,
            FileType::RegularFile => EntryKind::File,
            FileType::Symlink => EntryKind::Symlink,
            FileType::Unknown => {
                // Some filesystems do not fill d_type: ask without following.
                match rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW) {
                    Ok(stat) => match FileType::from_raw_mode(stat.st_mode) {
                        FileType::Directory => EntryKind::Dir,
                        FileType::RegularFile => EntryKind::File,
                        FileType::Symlink => EntryKind::Symlink,
                        _ => EntryKind::Other,
                    },
                    Err(_) => continue, // gone meanwhile
                }
            }
            _ => EntryKind::Other,
        };
        out.push(Entry {
            name: name.to_os_string(),
            kind,
        });
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(out)
}

/// The subdirectory `name` of `dir`, never through a symlink.
pub fn subdir(dir: BorrowedFd<'_>, name: &OsStr) -> io::Result<OwnedFd> {
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    Ok(rustix::fs::openat(dir, name, flags, Mode::empty())?)
}

/// The regular file `name` of `dir`, for reading, never through a symlink; `None` when it is
/// something else (a FIFO never blocks the open: `O_NONBLOCK`).
pub fn open_child(dir: BorrowedFd<'_>, name: &OsStr) -> io::Result<Option<std::fs::File>> {
    let flags =
        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC;
    let fd = rustix::fs::openat(dir, name, flags, Mode::empty())?;
    let stat = rustix::fs::fstat(&fd)?;
    Ok(
        (FileType::from_raw_mode(stat.st_mode) == FileType::RegularFile)
            .then(|| std::fs::File::from(fd)),
    )
}

/// The target of the symlink `name` in `dir` (not followed).
pub fn read_link(dir: BorrowedFd<'_>, name: &OsStr) -> io::Result<PathBuf> {
    let target = rustix::fs::readlinkat(dir, name, Vec::new())?;
    Ok(PathBuf::from(OsStr::from_bytes(target.as_bytes())))
}
