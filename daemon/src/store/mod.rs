//! The store: the daemon's one handle on its database, SQLite (the default: a file in the
//! home, one daemon) or PostgreSQL (several daemons sharing one database).
//!
//! `Store` is a facade over an enum of backends (`sqlite/`, `postgres/`), one file per table
//! family in each; the files here hold what both share (row types, the wire rendering of an
//! event, pure helpers) and the facade's method list (the `facade!` blocks), which is the
//! backend interface: the compiler checks that both backends answer every method.
//!
//! Invariants both backends keep:
//! - Every state change appends its event in the same transaction; the event log is
//!   append-only (the database refuses UPDATE and DELETE on it).
//! - Events are published to the [`Bus`] after their commit, in `seq` order, and `seq` order
//!   is commit order (SQLite: one writer connection behind a mutex; PostgreSQL: every write
//!   transaction takes one transaction-scoped advisory lock before it writes), so a reader
//!   that has seen seq N has seen everything committed below N.
//! - A task starts only through a claim (a compare-and-set on its row); while it runs, only
//!   its owner node renews its lease or changes its state (see `claims.rs`).

mod agents;
mod boundaries;
mod box_log;
mod claims;
pub mod conversation;
mod events;
mod keep;
mod memories;
mod nodes;
mod notify;
mod postgres;
mod projections;
mod schedules;
mod sqlite;
mod tasks;
#[cfg(test)]
mod tests;

pub use agents::AgentRow;
pub use boundaries::{Boundaries, BoundaryChange};
pub use claims::{Renewal, TaskGuard};
pub use events::{EventFilter, LiveEvent, Topic};
pub use nodes::{NodeHolder, NodeRow};
pub use notify::{NotifyCursor, OutboxEvent, SubscriptionRow};
pub use schedules::{FireOutcome, Firing, ScheduleRow};
pub use tasks::{DEFAULT_LEASE_TTL_MS, TaskRow};

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use crate::bus::Bus;

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
    /// What this backend does not do (a SQLite snapshot of a PostgreSQL database).
    #[error("{0}")]
    Unsupported(String),
    #[error("cannot encode an event: {0}")]
    Encode(serde_json::Error),
    /// A running task's write by a node that no longer holds its claim (its lease expired
    /// and another node recovered it): the writer must stop.
    #[error("task {0} is no longer ours: its lease expired and another node took it over")]
    NotOwner(String),
    /// A compare-and-set on a task found it in another state than expected.
    #[error("task {task} changed meanwhile: it is {found}")]
    Changed { task: String, found: String },
    #[error(
        "the node name {:?} is held by a live lazyboyd on this database (pid {}, {}); give \
         this daemon another name: `lazyboy daemon start --node NAME` (lazyboyd --node, \
         LAZYBOY_NODE), or stop that one",
        .0.name, .0.pid, .0.url
    )]
    NodeInUse(nodes::NodeHolder),
}

/// Where the data lives.
#[derive(Debug, Clone)]
pub enum Database {
    /// A SQLite file (the default: `<home>/lazyboy.db`).
    Sqlite(PathBuf),
    /// A PostgreSQL URL (`postgres://…`), shared by several daemons.
    Postgres(String),
}

impl Database {
    /// `url` (from `LAZYBOY_DATABASE_URL` or `database_url`) if given, else `default_file`.
    pub fn choose(url: Option<&str>, default_file: PathBuf) -> Result<Database, String> {
        match url.map(str::trim).filter(|u| !u.is_empty()) {
            None => Ok(Database::Sqlite(default_file)),
            Some(url) if url.starts_with("postgres://") || url.starts_with("postgresql://") => {
                Ok(Database::Postgres(url.to_owned()))
            }
            Some(url) if url.starts_with("sqlite:") => Ok(Database::Sqlite(
                url.trim_start_matches("sqlite://")
                    .trim_start_matches("sqlite:")
                    .into(),
            )),
            Some(_) => Err(
                "the database URL must start with postgres:// (or sqlite: for a file)".to_owned(),
            ),
        }
    }

    /// For logs: the file, or the URL's host and database without user or password.
    pub fn describe(&self) -> String {
        match self {
            Database::Sqlite(path) => path.display().to_string(),
            Database::Postgres(url) => {
                let rest = url.split_once("://").map_or(url.as_str(), |(_, r)| r);
                let rest = rest.rsplit_once('@').map_or(rest, |(_, r)| r);
                format!("postgres://{}", rest.split('?').next().unwrap_or(rest))
            }
        }
    }
}

/// Who this daemon is in the fleet, and how long its claims last.
#[derive(Debug, Clone)]
pub struct Fleet {
    /// The node name (`--node`, default the host name).
    pub node: String,
    /// How long a lease lasts without renewal.
    pub lease_ttl_ms: i64,
}

impl Default for Fleet {
    fn default() -> Fleet {
        Fleet {
            node: "local".to_owned(),
            lease_ttl_ms: DEFAULT_LEASE_TTL_MS,
        }
    }
}

/// The daemon's handle on its database. Cheap to clone.
#[derive(Clone)]
pub struct Store {
    backend: Arc<Backend>,
}

enum Backend {
    Sqlite(sqlite::Sqlite),
    Postgres(postgres::Postgres),
}

/// Forwards each listed method to the backend in use: the list is the backend interface.
macro_rules! facade {
    ($( $(#[$meta:meta])* $vis:vis async fn $name:ident(&self $(, $arg:ident: $ty:ty)* $(,)?) -> $ret:ty; )*) => {
        impl $crate::store::Store {
            $(
                $(#[$meta])*
                $vis async fn $name(&self $(, $arg: $ty)*) -> $ret {
                    match &*self.backend {
                        $crate::store::Backend::Sqlite(db) => db.$name($($arg),*).await,
                        $crate::store::Backend::Postgres(db) => db.$name($($arg),*).await,
                    }
                }
            )*
        }
    };
}
pub(crate) use facade;

impl Store {
    /// Opens (creating if needed) the SQLite database at `path` as the default node: what
    /// one daemon on one machine uses, and what most tests use.
    pub async fn open(path: &Path, bus: Bus) -> Result<Store, StoreError> {
        Store::connect(&Database::Sqlite(path.to_owned()), bus, Fleet::default()).await
    }

    /// Opens the database, refuses a newer schema, and applies the backend's compiled-in
    /// migrations.
    pub async fn connect(database: &Database, bus: Bus, fleet: Fleet) -> Result<Store, StoreError> {
        let backend = match database {
            Database::Sqlite(path) => {
                Backend::Sqlite(sqlite::Sqlite::open(path, bus, fleet).await?)
            }
            Database::Postgres(url) => {
                Backend::Postgres(postgres::Postgres::open(url, bus, fleet).await?)
            }
        };
        Ok(Store {
            backend: Arc::new(backend),
        })
    }

    /// The live fan-out this store publishes to.
    pub fn bus(&self) -> &Bus {
        match &*self.backend {
            Backend::Sqlite(db) => &db.bus,
            Backend::Postgres(db) => db.bus(),
        }
    }

    /// This daemon's place in the fleet.
    pub fn fleet(&self) -> &Fleet {
        match &*self.backend {
            Backend::Sqlite(db) => &db.fleet,
            Backend::Postgres(db) => &db.fleet,
        }
    }

    /// Whether this daemon is the database's only writer (SQLite: the home's lock proves
    /// every other owner of a running task dead).
    pub fn exclusive(&self) -> bool {
        matches!(&*self.backend, Backend::Sqlite(_))
    }

    /// `sqlite` or `postgres`.
    pub fn backend_name(&self) -> &'static str {
        match &*self.backend {
            Backend::Sqlite(_) => "sqlite",
            Backend::Postgres(_) => "postgres",
        }
    }

    /// Closes every connection; later calls fail.
    pub async fn close(&self) {
        match &*self.backend {
            Backend::Sqlite(db) => db.close().await,
            Backend::Postgres(db) => db.close().await,
        }
    }
}

/// Says, when an existing database has migrations to apply (`applied`: the newest one it
/// has), how many: on a large database they may take a while, and `lazyboy daemon start`
/// shows it. Every migration runs in its own transaction, so a daemon killed meanwhile
/// leaves the database at the last whole one, and the next start goes on from there.
fn say_pending(migrator: &sqlx::migrate::Migrator, applied: Option<i64>) {
    let Some(applied) = applied else { return };
    let pending = migrator.iter().filter(|m| m.version > applied).count();
    if pending > 0 {
        crate::telemetry::progress(&format!(
            "applying {pending} migration(s) to the database (newest it has: {applied})"
        ));
    }
}

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

/// A task's state as its column holds it, for errors.
fn state_name(state: Option<String>) -> String {
    state.unwrap_or_else(|| "gone".to_owned())
}
