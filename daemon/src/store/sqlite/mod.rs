//! The SQLite backend: the file in the home, one daemon.
//!
//! Writes go through a single connection behind a mutex, so appends are serialized in-process
//! exactly as SQLite serializes them on disk; each write publishes its events to the [`Bus`]
//! after its commit and before it releases the mutex, so live subscribers see events in `seq`
//! order. Reads use a separate pool and never wait behind a write (WAL). The home's lock
//! makes this daemon the file's only writer, so claims need no more than the mutex.

pub(in crate::store) mod keep;

use std::path::Path;
use std::str::FromStr;
use std::time::Duration;

use sqlx::ConnectOptions;
use sqlx::sqlite::{
    SqliteAutoVacuum, SqliteConnectOptions, SqliteConnection, SqliteJournalMode, SqlitePool,
    SqlitePoolOptions, SqliteSynchronous,
};
use tokio::sync::Mutex;

use super::events::LiveEvent;
use super::{Fleet, StoreError};
use crate::bus::Bus;

/// The migrations, compiled in. Their names and contents predate the PostgreSQL backend
/// (they lived in `migrations/`): kept byte for byte so existing databases match the
/// versions and checksums they recorded.
static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("../migrations/sqlite");

pub(in crate::store) struct Sqlite {
    pub(in crate::store) writer: Mutex<SqliteConnection>,
    pub(in crate::store) reader: SqlitePool,
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

    /// Publishes a write's committed events: called while the writer's mutex is still
    /// held, so the bus carries them in seq order.
    pub(in crate::store) fn publish(&self, events: impl IntoIterator<Item = LiveEvent>) {
        for event in events {
            self.bus.publish(event);
        }
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
    let found = sqlx::query_scalar("SELECT MAX(version) FROM _sqlx_migrations")
        .fetch_one(&mut *conn)
        .await?;
    crate::store::refuse_newer(&MIGRATOR, found, || path.display().to_string())
}
