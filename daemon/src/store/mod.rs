//! The SQLite store: the one owner of the database file.
//!
//! Writes go through a single connection behind a mutex, so appends are serialized in-process
//! exactly as SQLite serializes them on disk; each write publishes its events to the [`Bus`]
//! after its commit and before it releases the mutex, so live subscribers see events in `seq`
//! order. Reads use a separate pool and never wait behind a write (WAL).

mod agents;
mod box_log;
pub mod conversation;
mod events;
mod memories;
mod projections;
mod schedules;
mod tasks;

pub use agents::{AgentRow, Boundaries, BoundaryChange};
pub use events::{EventFilter, LiveEvent};
pub use schedules::{FireOutcome, Firing, ScheduleRow};
pub use tasks::{LEASE_RENEW_MS, LEASE_TTL_MS, TaskRow};

use std::path::Path;
use std::str::FromStr;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use sqlx::ConnectOptions;
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteConnection, SqliteJournalMode, SqlitePool, SqlitePoolOptions,
    SqliteSynchronous,
};
use tokio::sync::Mutex;

use crate::bus::Bus;

/// The migrations, compiled in.
static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("../migrations");

/// What can go wrong in the store.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("database error: {0}")]
    Sqlx(#[from] sqlx::Error),
    #[error("migration failed: {0}")]
    Migrate(#[from] sqlx::migrate::MigrateError),
    #[error(
        "the database {path} was written by a newer lazyboyd (schema version {found}, this build \
         knows up to {known}); upgrade lazyboyd or point LAZYBOY_HOME elsewhere"
    )]
    NewerSchema {
        path: String,
        found: i64,
        known: i64,
    },
    #[error("an agent named {0:?} already exists")]
    AgentExists(String),
    #[error("no agent named {0:?}")]
    NoSuchAgent(String),
    #[error("no task {0:?}")]
    NoSuchTask(String),
    #[error("no schedule {0:?}")]
    NoSuchSchedule(String),
    #[error("cannot encode an event: {0}")]
    Encode(serde_json::Error),
}

/// The daemon's handle on its database. Cheap to clone.
#[derive(Clone)]
pub struct Store {
    inner: std::sync::Arc<Inner>,
}

struct Inner {
    writer: Mutex<SqliteConnection>,
    reader: SqlitePool,
    bus: Bus,
}

impl Store {
    /// Opens (creating if needed) the database at `path`, refuses a newer schema, and applies
    /// the compiled-in migrations.
    pub async fn open(path: &Path, bus: Bus) -> Result<Store, StoreError> {
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
        let mut writer = options.clone().connect().await?;
        refuse_newer_schema(&mut writer, path).await?;
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
        Ok(Store {
            inner: std::sync::Arc::new(Inner {
                writer: Mutex::new(writer),
                reader,
                bus,
            }),
        })
    }

    /// The live fan-out this store publishes to.
    pub fn bus(&self) -> &Bus {
        &self.inner.bus
    }

    /// Closes every connection; later calls fail.
    pub async fn close(&self) {
        self.inner.reader.close().await;
        let mut writer = self.inner.writer.lock().await;
        // Folds the WAL back into the main file so the next start opens quickly.
        if let Err(error) = sqlx::query("PRAGMA wal_checkpoint(TRUNCATE)")
            .execute(&mut *writer)
            .await
        {
            tracing::warn!(%error, "checkpoint at close failed");
        }
    }
}

async fn refuse_newer_schema(conn: &mut SqliteConnection, path: &Path) -> Result<(), StoreError> {
    let has_table: Option<i64> = sqlx::query_scalar(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = '_sqlx_migrations'",
    )
    .fetch_optional(&mut *conn)
    .await?;
    if has_table.is_none() {
        return Ok(());
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
        _ => Ok(()),
    }
}

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}
