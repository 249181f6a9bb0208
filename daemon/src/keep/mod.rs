//! Keeping a person's work for years: backups (`backup.rs`, the archive's format in
//! `archive.rs`), restore into a stopped home (`restore.rs`), a task's export (`export.rs`,
//! rendered for people by `markdown.rs`), retention that stubs old tool outputs (`retention.rs`)
//! and the timer that runs the configured backups and passes (`timer.rs`).
//!
//! Invariants: a backup is one read transaction of the database (a prefix of the log),
//! written under a temporary name in its directory and renamed only once complete and
//! synced, so no file with a backup's name is ever partial. A restore runs only while it
//! holds the home's lock (no daemon can run meanwhile), checks every entry against the
//! manifest before it moves anything, and moves the replaced files aside rather than
//! deleting them. Retention rewrites only the `output` of tool results of ended tasks, never
//! a message, plan, verdict or deliverable, and every event keeps its seq.

pub mod archive;
pub mod backup;
pub mod export;
pub mod markdown;
pub mod restore;
pub mod retention;
pub mod timer;

use std::path::PathBuf;
use std::time::Duration;

use serde::Deserialize;

use crate::store::{Store, StoreError};

/// What can go wrong keeping the work.
#[derive(Debug, thiserror::Error)]
pub enum KeepError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("{what}: {source}")]
    Io {
        what: String,
        source: std::io::Error,
    },
    /// The database is PostgreSQL: its backup is `pg_dump`'s (`line` is the command).
    #[error(
        "this daemon's database is PostgreSQL: back it up with pg_dump (it asks for the \
         password, or reads PGPASSWORD or ~/.pgpass):\n  {line}"
    )]
    Postgres { line: String },
    /// The request itself is wrong (a relative path, no retention period).
    #[error("{0}")]
    Invalid(String),
    #[error("no task {0:?}")]
    NoSuchTask(String),
}

impl KeepError {
    fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> KeepError {
        let what = what.into();
        move |source| KeepError::Io { what, source }
    }
}

/// `[backup]` in `config.toml`: the daemon's own backups.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BackupSection {
    /// How often (`"1d"`, `"12h"`, `"30m"`); none when absent.
    pub every: Option<String>,
    /// How many of the daemon's own backups stay (default 7); older ones are removed.
    pub keep: Option<usize>,
}

/// `[retention]` in `config.toml`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RetentionSection {
    /// Tool outputs of tasks that ended more than this many days ago are replaced by a
    /// stub (default: never).
    pub tool_output_days: Option<u32>,
    /// How often the daemon runs a pass when `tool_output_days` is set (default `"1d"`).
    pub every: Option<String>,
}

impl BackupSection {
    /// Checks the durations, for the config's own check at start.
    pub fn check(&self) -> Result<(), String> {
        self.every.as_deref().map(parse_every).transpose()?;
        Ok(())
    }
}

impl RetentionSection {
    /// Checks the durations, for the config's own check at start.
    pub fn check(&self) -> Result<(), String> {
        self.every.as_deref().map(parse_every).transpose()?;
        Ok(())
    }
}

/// `"90s"`, `"30m"`, `"12h"`, `"1d"`, `"2w"`: a period of at least a second.
pub fn parse_every(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let number: u64 = number
        .parse()
        .map_err(|_| format!("{text:?} is not a period like \"1d\", \"12h\" or \"30m\""))?;
    let seconds = match unit.trim() {
        "s" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86_400,
        "w" => 7 * 86_400,
        _ => return Err(format!("{text:?}: the unit is s, m, h, d or w")),
    };
    match number.checked_mul(seconds) {
        Some(0) | None => Err(format!("{text:?} is not a usable period")),
        Some(total) => Ok(Duration::from_secs(total)),
    }
}

/// What the routes and the timer reach: the home, the store and the two sections.
pub struct Keep {
    pub home: PathBuf,
    pub store: Store,
    pub backup: BackupSection,
    pub retention: RetentionSection,
    /// The PostgreSQL URL when the database is one (for the `pg_dump` line).
    pub database_url: Option<String>,
    /// Held by a retention pass: one at a time.
    pub passes: tokio::sync::Mutex<()>,
}

#[cfg(test)]
mod tests {
    use super::parse_every;
    use std::time::Duration;

    #[test]
    fn periods() {
        assert_eq!(parse_every("1d"), Ok(Duration::from_secs(86_400)));
        assert_eq!(parse_every("30m"), Ok(Duration::from_secs(1800)));
        assert_eq!(parse_every("90s"), Ok(Duration::from_secs(90)));
        assert!(parse_every("0d").is_err());
        assert!(parse_every("d").is_err());
        assert!(parse_every("3 days").is_err());
    }
}
