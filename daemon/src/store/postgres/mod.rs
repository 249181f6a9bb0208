//! The PostgreSQL backend: several daemons (nodes) sharing one database.
//!
//! One pool per daemon. The order of the event log is the order of commits: every
//! transaction that appends takes one transaction-scoped advisory lock ([`LOG_LOCK`]) before
//! its first write and holds it to its commit, and draws its seqs from the identity sequence
//! only while it holds it; a one-statement append takes the lock in the same statement (a
//! materialized CTE runs before the row is built). So when seq N is visible, every seq below N
//! is committed or was rolled back for good, and a reader following `seq > cursor` never
//! skips an event written by any daemon. The same lock makes the claim protocol's conditions
//! and updates one atomic step across daemons (two claims for one agent cannot both pass).
//! Writes that append nothing (lease renewals, memories, node heartbeats) do not take it.
//!
//! After its commit a write hands its events to the [`feed::Feed`], which publishes them on
//! this daemon's bus when they continue the published prefix; every other event (written by
//! another daemon, or after a gap) reaches the bus through the feed's tailer, which LISTENs
//! for the log's notifications (sent by a statement trigger at commit) and re-reads the log
//! in seq order, with a periodic re-read as the safety net.

mod agents;
mod claims;
mod conversation;
mod events;
mod feed;
pub(in crate::store) mod keep;
mod memories;
mod nodes;
mod notify;
pub(in crate::store) mod projections;
mod schedules;
mod tasks;

use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions};
use sqlx::{ConnectOptions, Transaction};
use tokio_util::sync::CancellationToken;

use super::{Fleet, StoreError};
use crate::bus::Bus;

static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("../migrations/postgres");

/// The advisory lock that orders the event log (and every claim): "LazyBoy" in ASCII.
const LOG_LOCK: i64 = 0x004c_617a_7942_6f79;

/// The database server's clock in Unix milliseconds: leases are computed and compared on it,
/// so daemons on machines with skewed clocks agree on when one expires.
const DB_NOW_MS: &str = "(EXTRACT(EPOCH FROM clock_timestamp()) * 1000)::BIGINT";

type Tx<'a> = Transaction<'a, sqlx::Postgres>;

pub(in crate::store) struct Postgres {
    pool: PgPool,
    feed: Arc<feed::Feed>,
    pub(in crate::store) fleet: Fleet,
    /// Ends the feed's tailer.
    stop: CancellationToken,
}

impl Postgres {
    /// Connects, refuses a newer schema, applies the migrations and starts the feed.
    pub(in crate::store) async fn open(
        url: &str,
        bus: Bus,
        fleet: Fleet,
    ) -> Result<Postgres, StoreError> {
        let options = PgConnectOptions::from_str(url)?
            .application_name(&format!("lazyboyd {}", fleet.node))
            .log_statements(tracing::log::LevelFilter::Trace);
        let pool = PgPoolOptions::new()
            .max_connections(16)
            .min_connections(1)
            .acquire_timeout(Duration::from_secs(10))
            .idle_timeout(Duration::from_secs(60))
            .connect_with(options)
            .await?;
        let applied = refuse_newer_schema(&pool).await?;
        crate::store::say_pending(&MIGRATOR, applied);
        MIGRATOR.run(&pool).await?;
        let schema: String = sqlx::query_scalar("SELECT current_schema()")
            .fetch_one(&pool)
            .await?;
        let last = events::last_seq(&pool).await?;
        let feed = Arc::new(feed::Feed::new(bus, last));
        let stop = CancellationToken::new();
        let channel = format!("lazyboy_events.{schema}");
        feed::start(feed.clone(), pool.clone(), channel, stop.clone()).await?;
        Ok(Postgres {
            pool,
            feed,
            fleet,
            stop,
        })
    }

    pub(in crate::store) fn bus(&self) -> &Bus {
        self.feed.bus()
    }

    /// Closes every connection; later calls fail.
    pub(in crate::store) async fn close(&self) {
        self.stop.cancel();
        self.pool.close().await;
    }

    /// A write transaction that appends events: it holds the log's lock from here to its
    /// commit.
    async fn begin(&self) -> Result<Tx<'static>, StoreError> {
        let mut tx = self.pool.begin().await?;
        sqlx::query("SELECT pg_advisory_xact_lock($1)")
            .bind(LOG_LOCK)
            .execute(&mut *tx)
            .await?;
        Ok(tx)
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

#[cfg(test)]
impl Postgres {
    pub(in crate::store) async fn raw(&self, sql: &str) -> Result<u64, sqlx::Error> {
        Ok(sqlx::query(sql).execute(&self.pool).await?.rows_affected())
    }

    pub(in crate::store) async fn explain(
        &self,
        sql: &str,
        binds: &[crate::store::tests::Bind],
    ) -> Result<String, sqlx::Error> {
        let mut tx = self.pool.begin().await?;
        sqlx::query("SET LOCAL enable_seqscan = off")
            .execute(&mut *tx)
            .await?;
        let sql = format!("EXPLAIN {sql}");
        let mut query = sqlx::query_scalar::<_, String>(&sql);
        for value in binds {
            query = match value {
                crate::store::tests::Bind::Int(n) => query.bind(*n),
                crate::store::tests::Bind::Text(t) => query.bind(*t),
            };
        }
        let lines = query.fetch_all(&mut *tx).await?;
        tx.rollback().await?;
        Ok(lines.join("\n"))
    }
}

async fn refuse_newer_schema(pool: &PgPool) -> Result<Option<i64>, StoreError> {
    let has_table: bool = sqlx::query_scalar("SELECT to_regclass('_sqlx_migrations') IS NOT NULL")
        .fetch_one(pool)
        .await?;
    if !has_table {
        return Ok(None);
    }
    let found: Option<i64> = sqlx::query_scalar("SELECT MAX(version) FROM _sqlx_migrations")
        .fetch_one(pool)
        .await?;
    let known = MIGRATOR.iter().map(|m| m.version).max().unwrap_or(0);
    match found {
        Some(found) if found > known => Err(StoreError::NewerSchema {
            path: "the PostgreSQL database".to_owned(),
            found,
            known,
        }),
        _ => Ok(found),
    }
}

/// A count or limit as PostgreSQL takes it (no unsigned types).
fn int(n: impl TryInto<i64>) -> i64 {
    n.try_into().unwrap_or(i64::MAX)
}
