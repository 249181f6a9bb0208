//! `lazyboy restore FILE [--home DIR]` (run as `lazyboyd --restore FILE`): puts a backup
//! back into a home no daemon runs on.
//!
//! Order, so that a refusal changes nothing: take the home's lock (a running daemon holds it:
//! refused, naming its pid; holding it keeps a daemon from starting meanwhile), then read
//! and check the whole archive into a staging directory in the home, and only then move the
//! home's current database (with its WAL), config and token aside as
//! `NAME.before-restore-<time>` and the restored files in. The next daemon start sees the
//! backup's moment as after a crash: tasks that were running resume through recovery (their
//! in-flight calls `unknown`, nothing re-run).

use std::path::{Path, PathBuf};

use lazyboy_protocol::{BackupManifest, paths};

use super::archive::{self, ArchiveError};
use crate::home::{self, LockError};
use crate::store::{Store, now_ms};

/// Why a restore was refused or failed.
#[derive(Debug, thiserror::Error)]
pub enum RestoreError {
    #[error(
        "a lazyboyd (pid {pid}) is running on {home}: stop it first (lazyboy daemon stop), \
         then restore; nothing was changed"
    )]
    Running { pid: String, home: String },
    #[error("{0}; nothing was changed")]
    Lock(LockError),
    #[error("{0}; nothing was changed")]
    Archive(#[from] ArchiveError),
    #[error("{what}: {source}")]
    Io {
        what: String,
        source: std::io::Error,
    },
}

/// A directory removed when dropped.
struct Staging(PathBuf);

impl Drop for Staging {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Restores `archive` into `home` (created if missing); returns the manifest.
pub fn restore(home: &Path, archive_path: &Path) -> Result<BackupManifest, RestoreError> {
    let io = |what: String| move |source| RestoreError::Io { what, source };
    home::prepare(home).map_err(io(format!("cannot create {}", home.display())))?;
    let _lock = home::lock(home).map_err(|e| match e {
        LockError::Held { pid, home } => RestoreError::Running { pid, home },
        other => RestoreError::Lock(other),
    })?;
    let staging = Staging(home.join(format!(".restore-{}-{}", std::process::id(), now_ms())));
    std::fs::create_dir(&staging.0)
        .map_err(io(format!("cannot create {}", staging.0.display())))?;
    let manifest = archive::read(archive_path, &staging.0, Store::known_schema_version())?;

    // Everything checked: from here the home changes.
    let suffix = format!(".before-restore-{}", now_ms());
    let aside = |name: &str| -> Result<(), RestoreError> {
        let path = home.join(name);
        if path.exists() {
            let moved = home.join(format!("{name}{suffix}"));
            std::fs::rename(&path, &moved)
                .map_err(io(format!("cannot move {} aside", path.display())))?;
        }
        Ok(())
    };
    // The old database's WAL and shared memory go with it: a WAL beside the restored file
    // would be replayed into it.
    for name in [
        paths::DATABASE.to_owned(),
        format!("{}-wal", paths::DATABASE),
        format!("{}-shm", paths::DATABASE),
    ] {
        aside(&name)?;
    }
    for file in &manifest.files {
        if file.name != paths::DATABASE {
            aside(&file.name)?;
        }
        let from = staging.0.join(&file.name);
        let to = home.join(&file.name);
        std::fs::rename(&from, &to)
            .map_err(io(format!("cannot move {} into place", to.display())))?;
    }
    std::fs::File::open(home)
        .and_then(|dir| dir.sync_all())
        .map_err(io(format!("cannot sync {}", home.display())))?;
    Ok(manifest)
}

/// `lazyboyd --restore FILE`: restores and prints what came back.
pub fn main(home: &Path, archive_path: &Path) -> std::process::ExitCode {
    match restore(home, archive_path) {
        Ok(manifest) => {
            let c = &manifest.counts;
            println!(
                "restored {} into {}: {} events (up to seq {}), {} agents, {} tasks, {} memories, \
                 {} schedules; from lazyboyd {} at {} (schema {})",
                archive_path.display(),
                home.display(),
                c.events,
                c.last_seq,
                c.agents,
                c.tasks,
                c.memories,
                c.schedules,
                manifest.version,
                chrono::DateTime::from_timestamp_millis(manifest.created_at_ms)
                    .unwrap_or_default()
                    .with_timezone(&chrono::Local)
                    .format("%Y-%m-%d %H:%M:%S"),
                manifest.schema_version,
            );
            println!("the replaced files were kept beside them as *.before-restore-*");
            std::process::ExitCode::SUCCESS
        }
        Err(error) => {
            eprintln!("lazyboy restore: {error}");
            std::process::ExitCode::FAILURE
        }
    }
}
