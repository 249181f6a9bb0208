//! `lazyboy backup` and the daemon's own backups: a snapshot of the live database (one read
//! transaction, `VACUUM INTO`), the config and optionally the secret files, tarred with a
//! manifest under a temporary name beside the destination, synced, then renamed.
//!
//! A daemon killed mid-backup leaves only `.lazyboy-backup-*` names, never a file with a
//! backup's name; [`clean_leftovers`] removes them from `<home>/backups/` at the next start.

use std::path::{Path, PathBuf};
use std::time::Instant;

use lazyboy_protocol::{BACKUP_FORMAT, BackupMade, BackupManifest, BackupRequest, paths};

use super::archive::{self, SECRET_FILES};
use super::{Keep, KeepError};
use crate::store::{Store, now_ms};

/// The prefix of every temporary name a backup uses.
const TEMP_PREFIX: &str = ".lazyboy-backup-";
/// The prefix of the daemon's own backups (what pruning may remove).
const NAME_PREFIX: &str = "lazyboy-";
const NAME_SUFFIX: &str = ".tar.gz";

/// Removes what a backup cut short left (temporary names only).
pub fn clean_leftovers(home: &Path) {
    let Ok(dir) = std::fs::read_dir(home.join(paths::BACKUPS)) else {
        return;
    };
    for entry in dir.flatten() {
        if entry.file_name().to_string_lossy().starts_with(TEMP_PREFIX) {
            let path = entry.path();
            let removed = if path.is_dir() {
                std::fs::remove_dir_all(&path)
            } else {
                std::fs::remove_file(&path)
            };
            match removed {
                Ok(()) => tracing::info!(path = %path.display(), "removed a cut-short backup"),
                Err(error) => tracing::warn!(path = %path.display(), %error, "cannot remove"),
            }
        }
    }
}

/// The `pg_dump` line for `url`, without its password (in the user part or the query).
pub fn pg_dump_line(url: &str) -> String {
    let (scheme, rest) = url.split_once("://").unwrap_or(("postgres", url));
    let (rest, query) = rest.split_once('?').unwrap_or((rest, ""));
    let rest = match rest.rsplit_once('@') {
        Some((user, host)) => {
            let user = user.split(':').next().unwrap_or(user);
            format!("{user}@{host}")
        }
        None => rest.to_owned(),
    };
    // libpq reads the rest of the query (sslmode, options such as a search_path) as pg_dump
    // should; only the secrets go.
    let kept: Vec<&str> = query
        .split('&')
        .filter(|pair| !pair.is_empty())
        .filter(|pair| {
            let key = pair.split('=').next().unwrap_or("");
            !matches!(key, "password" | "passfile" | "sslpassword")
        })
        .collect();
    let query = if kept.is_empty() {
        String::new()
    } else {
        format!("?{}", kept.join("&"))
    };
    let quoted = format!("{scheme}://{rest}{query}").replace('\'', "'\\''");
    format!("pg_dump --format=custom --file=lazyboy-$(date +%Y%m%d-%H%M%S).dump '{quoted}'")
}

/// A directory removed when dropped (the staging area of one backup).
struct Staging(PathBuf);

impl Drop for Staging {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

impl Keep {
    /// Makes a backup as `request` asks; see the module doc.
    pub async fn backup(&self, request: &BackupRequest) -> Result<BackupMade, KeepError> {
        if let Some(url) = &self.database_url {
            return Err(KeepError::Postgres {
                line: pg_dump_line(url),
            });
        }
        let started = Instant::now();
        let created_at_ms = now_ms();
        let dest = match &request.path {
            Some(path) if !Path::new(path).is_absolute() => {
                return Err(KeepError::Invalid(format!(
                    "the backup file must be an absolute path, not {path:?}"
                )));
            }
            Some(path) => PathBuf::from(path),
            None => self.default_path(created_at_ms),
        };
        if dest.exists() {
            return Err(KeepError::Invalid(format!(
                "{} exists already; name another file",
                dest.display()
            )));
        }
        let dir = dest
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .ok_or_else(|| KeepError::Invalid(format!("{} has no directory", dest.display())))?
            .to_owned();
        std::fs::create_dir_all(&dir)
            .map_err(KeepError::io(format!("creating {}", dir.display())))?;
        let stamp = format!("{TEMP_PREFIX}{}-{created_at_ms}", std::process::id());
        let staging = Staging(dir.join(&stamp));
        std::fs::create_dir(&staging.0)
            .map_err(KeepError::io(format!("creating {}", staging.0.display())))?;
        let snapshot = staging.0.join(paths::DATABASE);
        self.store.snapshot_into(&snapshot).await?;
        let (counts, schema_version) = Store::snapshot_counts(&snapshot).await?;

        let mut files = vec![(paths::DATABASE.to_owned(), snapshot)];
        let config = self.home.join(paths::CONFIG);
        if config.is_file() {
            files.push((paths::CONFIG.to_owned(), config));
        }
        if request.with_secrets {
            for name in SECRET_FILES {
                let path = self.home.join(name);
                if path.is_file() {
                    files.push((name.to_owned(), path));
                }
            }
        }
        let temp = dir.join(format!("{stamp}{NAME_SUFFIX}"));
        let final_dest = dest.clone();
        let with_secrets = request.with_secrets;
        let manifest = tokio::task::spawn_blocking(move || -> Result<BackupManifest, KeepError> {
            // The config and token are copied as they are now, beside a snapshot of a moment
            // ago; each is checked by its hash as read here.
            let mut described = Vec::new();
            for (name, path) in &files {
                described.push(
                    archive::describe(name, path)
                        .map_err(KeepError::io(format!("reading {}", path.display())))?,
                );
            }
            let manifest = BackupManifest {
                format: BACKUP_FORMAT,
                version: crate::VERSION.to_owned(),
                schema_version,
                created_at_ms,
                with_secrets,
                counts,
                files: described,
            };
            let written = archive::write(&temp, &manifest, &files)
                .and_then(|()| std::fs::rename(&temp, &final_dest))
                .and_then(|()| {
                    std::fs::File::open(final_dest.parent().unwrap_or(Path::new("/")))?.sync_all()
                });
            if let Err(source) = written {
                let _ = std::fs::remove_file(&temp);
                return Err(KeepError::Io {
                    what: format!("writing {}", final_dest.display()),
                    source,
                });
            }
            Ok(manifest)
        })
        .await
        .map_err(|e| KeepError::Invalid(format!("the backup's writer failed: {e}")))??;
        drop(staging);
        let bytes = std::fs::metadata(&dest).map(|m| m.len()).unwrap_or(0);
        tracing::info!(path = %dest.display(), bytes, events = manifest.counts.events, "backup made");
        Ok(BackupMade {
            path: dest.display().to_string(),
            bytes,
            took_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
            manifest,
        })
    }

    /// `<home>/backups/lazyboy-YYYYMMDD-HHMMSS-mmm.tar.gz` (local time): the names sort as
    /// the backups were made, which pruning relies on.
    fn default_path(&self, at_ms: i64) -> PathBuf {
        let time = chrono::DateTime::from_timestamp_millis(at_ms)
            .unwrap_or_default()
            .with_timezone(&chrono::Local);
        self.home.join(paths::BACKUPS).join(format!(
            "{NAME_PREFIX}{}{NAME_SUFFIX}",
            time.format("%Y%m%d-%H%M%S-%3f")
        ))
    }

    /// Removes the oldest of the daemon's own backups beyond `keep`; returns how many.
    pub fn prune(&self, keep: usize) -> u64 {
        let dir = self.home.join(paths::BACKUPS);
        let Ok(entries) = std::fs::read_dir(&dir) else {
            return 0;
        };
        let mut ours: Vec<PathBuf> = entries
            .flatten()
            .map(|e| e.path())
            .filter(|p| {
                p.file_name().is_some_and(|n| {
                    let n = n.to_string_lossy();
                    n.starts_with(NAME_PREFIX) && n.ends_with(NAME_SUFFIX)
                })
            })
            .collect();
        // The names sort by time.
        ours.sort();
        let excess = ours.len().saturating_sub(keep);
        let mut pruned = 0;
        for old in ours.into_iter().take(excess) {
            match std::fs::remove_file(&old) {
                Ok(()) => pruned += 1,
                Err(error) => tracing::warn!(path = %old.display(), %error, "cannot prune"),
            }
        }
        pruned
    }
}

#[cfg(test)]
mod tests {
    use super::pg_dump_line;

    #[test]
    fn the_pg_dump_line_names_no_password() {
        let line =
            pg_dump_line("postgres://me:s3cret@db.local:5433/lazy?sslmode=require&password=x");
        assert!(
            line.contains("'postgres://me@db.local:5433/lazy?sslmode=require'"),
            "{line}"
        );
        assert!(
            !line.contains("s3cret") && !line.contains("password"),
            "{line}"
        );
        assert!(pg_dump_line("postgresql://db/lazy").contains("'postgresql://db/lazy'"));
    }
}
