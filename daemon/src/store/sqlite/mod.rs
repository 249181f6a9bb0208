//! The SQLite backend: the file in the home, one daemon.
//!
//! Writes go through a single connection behind a mutex, so appends are serialized in-process
//! exactly as SQLite serializes them on disk; each write publishes its events to the [`Bus`]
//! after its commit and before it releases the mutex, so live subscribers see events in `seq`
//! order. Reads use a separate pool and never wait behind a write (WAL). The home's lock
//! makes this daemon the file's only writer, so claims need no more than the mutex.

mod agents;
mod claims;
mod conversation;
mod events;
pub(in crate::store) mod keep;
mod memories;
mod nodes;
mod notify;
pub(in crate::store) mod projections;
mod schedules;
mod tasks;

use std::path::Path;
use std::str::FromStr;
use std::time::Duration;

use sqlx::ConnectOptions;
use sqlx::sqlite::{
    SqliteAutoVacuum, SqliteConnectOptions, SqliteConnection, SqliteJournalMode, SqlitePool,
    SqlitePoolOptions, SqliteSynchronous,
};
use tokio::sync::Mutex;

use super::{Fleet, StoreError};
use crate::bus::Bus;

/// The migrations, compiled in. Their names and contents predate the PostgreSQL backend
/// (they lived in `migrations/`): kept byte for byte so existing databases match the
/// versions and checksums they recorded.
static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("../migrations/sqlite");

pub(in crate::store) struct Sqlite {
    writer: Mutex<SqliteConnection>,
    reader: SqlitePool,
    pub(in crate::store) bus: Bus,
    pub(in crate::store) fleet: Fleet,
}

impl Sqlite {
    /// Opens (creating if needed) the database at `path`, refuses a newer schema, and applies
    /// the compiled-in migrations.
    pub(in crate::store) async fn open(
        path: &Path,
        bus: Bus,
        fleet: Fleet,
    ) -> Result<Sqlite, StoreError> {
        let options = SqliteConnectOptions::from_str("sqlite:")?
            .filename(path)
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            // NORMAL in WAL mode: a killed process loses nothing that was committed; only an OS
            // crash or power cut can roll back the last few commits.
            .synchronous(SqliteSynchronous::Normal)
            .foreign_keys(true)
            .busy_timeout(Duration::from_secs(5))
            .log_statements(tracing::log::LevelFilter::Trace);
        // A new file frees retention's pages incrementally (an older one is converted by
        // its first pass, see `keep.rs`); the setting means nothing to the readers. Only a new
        // one: on an existing file the pragma is a write (the header's change counter), and a
        // database this build refuses must be left byte for byte as it was.
        let mut writer = if path.exists() {
            options.clone()
        } else {
            options.clone().auto_vacuum(SqliteAutoVacuum::Incremental)
        }
        .connect()
        .await?;
        let applied = refuse_newer_schema(&mut writer, path).await?;
        crate::store::say_pending(&MIGRATOR, applied);
        MIGRATOR.run_direct(&mut writer).await?;
        let reader = SqlitePoolOptions::new()
            .max_connections(4)
            .min_connections(0)
            // Idle readers close, returning their page caches: an idle daemon stays small.
            .idle_timeout(Duration::from_secs(30))
            .connect_with(
                options
                    .read_only(true)
                    // Replays read sequentially; the OS page cache serves them as well.
                    .pragma("cache_size", "-512"),
            )
            .await?;
        Ok(Sqlite {
            writer: Mutex::new(writer),
            reader,
            bus,
            fleet,
        })
    }

    /// Closes every connection; later calls fail.
    pub(in crate::store) async fn close(&self) {
        self.reader.close().await;
        let mut writer = self.writer.lock().await;
        // Folds the WAL back into the main file so the next start opens quickly.
        if let Err(error) = sqlx::query("PRAGMA wal_checkpoint(TRUNCATE)")
            .execute(&mut *writer)
            .await
        {
            tracing::warn!(%error, "checkpoint at close failed");
        }
    }
}

#[cfg(test)]
impl Sqlite {
    pub(in crate::store) async fn raw(&self, sql: &str) -> Result<u64, sqlx::Error> {
        let mut writer = self.writer.lock().await;
        Ok(sqlx::query(sql)
            .execute(&mut *writer)
            .await?
            .rows_affected())
    }

    pub(in crate::store) async fn explain(
        &self,
        sql: &str,
        binds: &[crate::store::tests::Bind],
    ) -> Result<String, sqlx::Error> {
        let sql = format!("EXPLAIN QUERY PLAN {sql}");
        let mut query = sqlx::query_as::<_, (i64, i64, i64, String)>(&sql);
        for value in binds {
            query = match value {
                crate::store::tests::Bind::Int(n) => query.bind(*n),
                crate::store::tests::Bind::Text(t) => query.bind(*t),
            };
        }
        let rows = query.fetch_all(&self.reader).await?;
        Ok(rows.into_iter().map(|r| r.3).collect::<Vec<_>>().join("\n"))
    }
}

async fn refuse_newer_schema(
    conn: &mut SqliteConnection,
    path: &Path,
) -> Result<Option<i64>, StoreError> {
    let has_table: Option<i64> = sqlx::query_scalar(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = '_sqlx_migrations'",
    )
    .fetch_optional(&mut *conn)
    .await?;
    if has_table.is_none() {
        return Ok(None);
    }
    let found: Option<i64> = sqlx::query_scalar("SELECT MAX(version) FROM _sqlx_migrations")
        .fetch_one(&mut *conn)
        .await?;
    let known = MIGRATOR.iter().map(|m| m.version).max().unwrap_or(0);
    match found {
        Some(found) if found > known => Err(StoreError::NewerSchema {
            path: path.display().to_string(),
            found,
            known,
        }),
        _ => Ok(found),
    }
}
