//! `LAZYBOY_HOME`: the directory that holds the database, socket, lock, token and logs.
//! The token is the one credential of the API (`api::auth`): whoever can read the home acts
//! as the person, which is why the sandbox never grants it.
//! The daemon owns it: while one runs, the token file changes only through it
//! (`api::token`), so the file and the token in force agree.
//!
//! One daemon per home: it holds an exclusive `flock` on the lock file for its whole life.
//! The kernel drops the lock when the process dies, however it dies, so a lock file left by
//! a killed daemon never blocks the next start.

use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read, Seek, Write};
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::Path;

use lazyboy_protocol::paths;

/// Creates the home (and its logs dir) private to the user, and tightens an existing one.
pub fn prepare(home: &Path) -> std::io::Result<()> {
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(home.join(paths::LOGS))?;
    std::fs::set_permissions(home, std::fs::Permissions::from_mode(0o700))
}

/// Why the lock could not be taken.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    #[error("another lazyboyd (pid {pid}) is already running on {home}")]
    Held { pid: String, home: String },
    #[error("cannot lock {path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
}

/// The held lock; released when dropped or when the process dies.
#[derive(Debug)]
pub struct HomeLock {
    _file: File,
}

/// Takes the home's lock and writes this process's pid into it.
pub fn lock(home: &Path) -> Result<HomeLock, LockError> {
    let path = home.join(paths::LOCK);
    let io = |source| LockError::Io {
        path: path.display().to_string(),
        source,
    };
    let mut file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode_private()
        .open(&path)
        .map_err(io)?;
    match file.try_lock() {
        Ok(()) => {}
        Err(TryLockError::WouldBlock) => {
            let mut pid = String::new();
            // The holder may be mid-write; an empty pid still names the home.
            let _ = file.read_to_string(&mut pid);
            return Err(LockError::Held {
                pid: pid.trim().to_owned(),
                home: home.display().to_string(),
            });
        }
        Err(TryLockError::Error(e)) => return Err(io(e)),
    }
    file.set_len(0).map_err(io)?;
    file.rewind().map_err(io)?;
    writeln!(file, "{}", std::process::id()).map_err(io)?;
    Ok(HomeLock { _file: file })
}

trait PrivateMode {
    fn mode_private(&mut self) -> &mut Self;
}

impl PrivateMode for OpenOptions {
    fn mode_private(&mut self) -> &mut Self {
        std::os::unix::fs::OpenOptionsExt::mode(self, 0o600)
    }
}

/// `LAZYBOY_TOKEN`, if set and not empty: it wins over `<home>/token`.
pub fn token_from_env() -> Option<String> {
    crate::secrets::var("LAZYBOY_TOKEN").filter(|t| !t.is_empty())
}

/// The credential every API request must carry: `LAZYBOY_TOKEN`, else `<home>/token`,
/// written (random, mode 0600) when the home has none yet.
pub fn ensure_token(home: &Path) -> std::io::Result<String> {
    if let Some(token) = token_from_env() {
        return Ok(token);
    }
    match token_file(home)? {
        Some(token) => Ok(token),
        None => write_new_token(home),
    }
}

/// The token in `<home>/token`, if there is one.
pub fn token_file(home: &Path) -> std::io::Result<Option<String>> {
    match std::fs::read_to_string(home.join(paths::TOKEN)) {
        Ok(token) => Ok(Some(token.trim().to_owned())
            .filter(|t| !t.is_empty())
            .inspect(|t| crate::redact::register("API token", t))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// Writes a new random token (24 bytes, hex) to `<home>/token`, mode 0600, replacing the
/// file in one rename so a reader never sees half of one; returns it.
pub fn write_new_token(home: &Path) -> std::io::Result<String> {
    let mut bytes = [0u8; 24];
    File::open("/dev/urandom")?.read_exact(&mut bytes)?;
    let token: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    let staged = home.join(format!(".{}.new", paths::TOKEN));
    // A file left by a crash may have any mode: start from a fresh one.
    if let Err(e) = std::fs::remove_file(&staged)
        && e.kind() != std::io::ErrorKind::NotFound
    {
        return Err(e);
    }
    let mut file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode_private()
        .open(&staged)?;
    writeln!(file, "{token}")?;
    file.sync_all()?;
    std::fs::rename(&staged, home.join(paths::TOKEN))?;
    crate::redact::register("API token", &token);
    Ok(token)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn second_lock_names_the_holder_and_a_dropped_lock_frees_the_home() {
        let dir = tempfile::tempdir().unwrap();
        prepare(dir.path()).unwrap();
        let held = lock(dir.path()).unwrap();
        match lock(dir.path()) {
            Err(LockError::Held { pid, .. }) => assert_eq!(pid, std::process::id().to_string()),
            other => panic!("expected Held, got {other:?}"),
        }
        drop(held);
        lock(dir.path()).unwrap();
        let mode = std::fs::metadata(dir.path()).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700);
    }

    #[test]
    fn a_new_token_replaces_the_file_privately() {
        let dir = tempfile::tempdir().unwrap();
        let first = write_new_token(dir.path()).unwrap();
        let second = write_new_token(dir.path()).unwrap();
        assert_ne!(first, second);
        assert_eq!(second.len(), 48);
        assert_eq!(token_file(dir.path()).unwrap(), Some(second));
        let mode = std::fs::metadata(dir.path().join(paths::TOKEN))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
    }
}
