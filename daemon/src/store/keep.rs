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

use super::{Store, StoreError};

super::facade! {
    /// Writes a consistent copy of the whole database to `path` (which must not exist).
    /// SQLite only: PostgreSQL's copy is `pg_dump`'s.
    pub async fn snapshot_into(&self, path: &Path) -> Result<(), StoreError>;
    /// The tasks in an ended state whose row last changed before `cutoff_ms`, oldest first.
    pub async fn ended_tasks_before(&self, cutoff_ms: i64) -> Result<Vec<String>, StoreError>;
    /// Up to `limit` of the task's `tool_result` events after seq `after` whose stored data
    /// is over `min_bytes` (a stub is smaller): `(seq, data)`, oldest first.
    pub async fn retention_batch(
        &self,
        task: &str,
        after: i64,
        min_bytes: i64,
        limit: i64,
    ) -> Result<Vec<(i64, String)>, StoreError>;
    /// Replaces the data of each `(seq, data)` `tool_result` event, in one transaction.
    pub async fn rewrite_results(&self, rows: &[(i64, String)]) -> Result<u64, StoreError>;
    /// Gives the space freed back (SQLite: incremental vacuum, after a one-time conversion
    /// of an older file; PostgreSQL: `VACUUM` of the log).
    pub async fn reclaim(&self) -> Result<(), StoreError>;
    /// The database's size on disk in bytes (SQLite: the file and its WAL; PostgreSQL: the
    /// log's table with its indexes and TOAST).
    pub async fn database_bytes(&self) -> Result<u64, StoreError>;
}

impl Store {
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
