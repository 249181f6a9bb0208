//! How the workspace names paths: [`Rel`] (a path inside it, judged lexically) and
//! [`PathError`] (every refusal and failure, worded for the model).

use std::ffi::OsStr;
use std::io;
use std::path::{Component, Path, PathBuf};

/// A path inside the workspace, relative and normalized (empty: the workspace itself).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Rel(pub(super) PathBuf);

impl Rel {
    /// The path as the model should write it: relative, `.` for the workspace.
    pub fn shown(&self) -> String {
        if self.0.as_os_str().is_empty() {
            ".".to_owned()
        } else {
            self.0.display().to_string()
        }
    }

    pub fn path(&self) -> &Path {
        &self.0
    }

    /// `self/name` (`name` a plain file name).
    pub fn join(&self, name: &OsStr) -> Rel {
        Rel(self.0.join(name))
    }
}

/// Why a path was not opened: each says it to the model.
#[derive(Debug, thiserror::Error)]
pub enum PathError {
    #[error(
        "path is outside the workspace: {given} (the workspace is {root}; use a path inside \
         it, preferably relative)"
    )]
    Outside { given: String, root: String },
    #[error("path escapes the workspace: {given} (the workspace is {root})")]
    Escapes { given: String, root: String },
    #[error(
        "path escapes the workspace through a symlink: {given} ({link} -> {target} leads out \
         of the workspace {root}; such links are not followed)"
    )]
    Symlink {
        given: String,
        link: String,
        target: String,
        root: String,
    },
    #[error("{given} is in the LazyBoy home ({home}); the file tools never open it")]
    Home { given: String, home: String },
    #[error(
        "refused: {given} is inside the git directory {dir}, which this agent may not change \
         (git runs what its config and hooks name, as the person). Work on the repository's \
         files instead; the person can allow it with `lazyboy team edit <agent> --git-write \
         true`"
    )]
    ReadOnly { given: String, dir: String },
    #[error("no such file or directory: {0}")]
    NotFound(String),
    #[error("{0} is a directory")]
    IsDir(String),
    #[error("{0} is not a directory")]
    NotDir(String),
    #[error("{0} is not a regular file")]
    NotFile(String),
    #[error("cannot open {shown}: {source}")]
    Io { shown: String, source: io::Error },
}

impl PathError {
    /// The same refusal, naming `rel` as the path given (a parent of it was refused).
    pub(super) fn given(self, rel: &Rel) -> PathError {
        match self {
            PathError::Symlink {
                link, target, root, ..
            } => PathError::Symlink {
                given: rel.shown(),
                link,
                target,
                root,
            },
            PathError::Home { home, .. } => PathError::Home {
                given: rel.shown(),
                home,
            },
            other => other,
        }
    }
}

pub(super) fn io_error(rel: &Rel, source: io::Error) -> PathError {
    PathError::Io {
        shown: rel.shown(),
        source,
    }
}

/// Removes `.` and resolves `..` lexically; `None` when `..` climbs above the start (for
/// an absolute path: above `/`).
pub(super) fn normalize(path: &Path) -> Option<PathBuf> {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    return None;
                }
            }
            other => out.push(other),
        }
    }
    Some(out)
}
