//! What backup and retention (`crate::keep`) need of the database: a consistent snapshot of
//! a live SQLite file, the figures a backup's manifest records, and the one rewrite the log
//! allows (an old tool result's body replaced by its stub) with the space it frees.
//!
//! Invariants: a snapshot is one read transaction (`VACUUM INTO` on a read-only connection),
//! so it holds a prefix of the log and never waits behind, or holds up, the writer. A rewrite
//! changes only the `data` of `tool_result` events, in batches that each hold the writer (or,
//! on PostgreSQL, the log's lock) once, so appends interleave with a long pass; seq, kind,
//! thread, agent, task and time never change (the database's trigger refuses anything else).

use std::path::Path;

use lazyboy_protocol::BackupCounts;

use super::{Backend, Store, StoreError};

impl Store {
    /// Writes a consistent copy of the whole database to `path` (which must not exist).
    /// SQLite only: PostgreSQL's copy is `pg_dump`'s.
    pub async fn snapshot_into(&self, path: &Path) -> Result<(), StoreError> {
        match self.backend() {
            Backend::Sqlite(db) => db.snapshot_into(path).await,
            Backend::Postgres(db) => db.snapshot_into(path).await,
        }
    }

    /// Gives the space freed back (SQLite: incremental vacuum, after a one-time conversion
    /// of an older file; PostgreSQL: `VACUUM` of the log).
    pub async fn reclaim(&self) -> Result<(), StoreError> {
        match self.backend() {
            Backend::Sqlite(db) => db.reclaim().await,
            Backend::Postgres(db) => db.reclaim().await,
        }
    }

    /// The database's size on disk in bytes (SQLite: the file and its WAL; PostgreSQL: the
    /// log's table with its indexes and TOAST).
    pub async fn database_bytes(&self) -> Result<u64, StoreError> {
        match self.backend() {
            Backend::Sqlite(db) => db.database_bytes().await,
            Backend::Postgres(db) => db.database_bytes().await,
        }
    }

    /// What a SQLite snapshot at `path` holds, for its manifest, and its schema version.
    pub async fn snapshot_counts(path: &Path) -> Result<(BackupCounts, i64), StoreError> {
        super::sqlite::keep::counts(path).await
    }

    /// The newest SQLite schema version this build knows (a backup from a newer one is
    /// refused at restore).
    pub fn known_schema_version() -> i64 {
        super::sqlite::keep::known_version()
    }
}
