//! The store's tests, each run on both backends (`…::sqlite::NAME` and `…::postgres::NAME`).
//!
//! PostgreSQL comes from `LAZYBOY_TEST_DATABASE_URL` (`scripts/postgres-cluster` starts a
//! throwaway cluster and sets it; `scripts/test` runs the suite under it). Without it the
//! PostgreSQL half fails, saying how to get one: it never skips. Each test gets its own
//! schema, so tests share the cluster without seeing each other's rows.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

mod agents;
mod claims;
mod conversation;
mod events;
mod fleet;
mod memories;
mod projections;
mod schedules;
mod schema;
mod subscription;
mod tasks;

use sqlx::Connection;

use super::{Database, Fleet, Store};
use crate::bus::Bus;

/// A fresh database of one backend, from which stores (nodes) are opened.
pub(super) struct Db {
    database: Database,
    _dir: Option<tempfile::TempDir>,
}

impl Db {
    pub(super) async fn sqlite() -> Db {
        let dir = tempfile::tempdir().unwrap();
        Db {
            database: Database::Sqlite(dir.path().join("t.db")),
            _dir: Some(dir),
        }
    }

    pub(super) async fn postgres() -> Db {
        let admin = std::env::var("LAZYBOY_TEST_DATABASE_URL").unwrap_or_else(|_| {
            panic!(
                "LAZYBOY_TEST_DATABASE_URL is not set: the store's PostgreSQL tests need a \
                 server. Run them under scripts/postgres-cluster (scripts/test does), e.g. \
                 `scripts/postgres-cluster cargo test -p lazyboyd --lib store::`"
            )
        });
        let schema = format!("t_{}", uuid::Uuid::now_v7().simple());
        let mut conn = sqlx::PgConnection::connect(&admin)
            .await
            .unwrap_or_else(|e| panic!("cannot reach PostgreSQL at {admin}: {e}"));
        sqlx::query(&format!("CREATE SCHEMA {schema}"))
            .execute(&mut conn)
            .await
            .unwrap();
        let joiner = if admin.contains('?') { '&' } else { '?' };
        Db {
            database: Database::Postgres(format!(
                "{admin}{joiner}options=-c%20search_path%3D{schema}"
            )),
            _dir: None,
        }
    }

    /// A store on this database as node `node`, with leases of `lease_ttl_ms`.
    pub(super) async fn node(&self, node: &str, lease_ttl_ms: i64) -> Store {
        let fleet = Fleet {
            node: node.to_owned(),
            lease_ttl_ms,
        };
        Store::connect(&self.database, Bus::default(), fleet)
            .await
            .unwrap()
    }

    /// The store of node `a` with the default lease.
    pub(super) async fn store(&self) -> Store {
        self.node("a", super::DEFAULT_LEASE_TTL_MS).await
    }

    pub(super) fn is_postgres(&self) -> bool {
        matches!(self.database, Database::Postgres(_))
    }
}

/// Defines each `async fn NAME(db: Db) { … }` twice, as `sqlite::NAME` and `postgres::NAME`.
macro_rules! on_both {
    ($( $(#[$meta:meta])* async fn $name:ident($db:ident: Db) $body:block )*) => {
        $( $(#[$meta])* async fn $name($db: $crate::store::tests::Db) $body )*
        mod sqlite {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    super::$name($crate::store::tests::Db::sqlite().await).await;
                }
            )*
        }
        mod postgres {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    super::$name($crate::store::tests::Db::postgres().await).await;
                }
            )*
        }
    };
}
pub(super) use on_both;

/// Defines each `async fn NAME(db: Db) { … }` for PostgreSQL only (several nodes on one
/// database: SQLite has one daemon per file).
macro_rules! on_postgres {
    ($( $(#[$meta:meta])* async fn $name:ident($db:ident: Db) $body:block )*) => {
        $(
            $(#[$meta])*
            #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
            async fn $name() {
                let $db = $crate::store::tests::Db::postgres().await;
                $body
            }
        )*
    };
}
pub(super) use on_postgres;

impl Store {
    /// Runs `sql` as it is on the engine's writer (for tests of what the database refuses).
    pub(super) async fn raw(&self, sql: &str) -> Result<u64, sqlx::Error> {
        Ok(crate::store::dialect::write_one!(self, |c| {
            (sqlx::query(sql).execute(c).await?.rows_affected(), [])
        }))
    }

    /// The plan of `sql` as the engine's planner prints it, its placeholders bound to
    /// `binds`; on PostgreSQL with sequential scans off, so an index the query can use shows
    /// up even on a near-empty table.
    pub(super) async fn explain(&self, sql: &str, binds: &[Bind]) -> String {
        macro_rules! bound {
            ($query:expr) => {{
                let mut query = $query;
                for value in binds {
                    query = match value {
                        Bind::Int(n) => query.bind(*n),
                        Bind::Text(t) => query.bind(*t),
                    };
                }
                query
            }};
        }
        match self.backend() {
            super::Backend::Sqlite(db) => {
                let sql = format!("EXPLAIN QUERY PLAN {sql}");
                let query = bound!(sqlx::query_as::<_, (i64, i64, i64, String)>(&sql));
                let rows = query.fetch_all(&db.reader).await.unwrap();
                rows.into_iter().map(|r| r.3).collect::<Vec<_>>().join("\n")
            }
            super::Backend::Postgres(db) => {
                let mut tx = db.pool.begin().await.unwrap();
                sqlx::query("SET LOCAL enable_seqscan = off")
                    .execute(&mut *tx)
                    .await
                    .unwrap();
                let sql = format!("EXPLAIN {sql}");
                let query = bound!(sqlx::query_scalar::<_, String>(&sql));
                let lines = query.fetch_all(&mut *tx).await.unwrap();
                tx.rollback().await.unwrap();
                lines.join("\n")
            }
        }
    }
}

/// A value bound to a placeholder of an explained statement.
#[derive(Debug, Clone, Copy)]
pub(in crate::store) enum Bind {
    Int(i64),
    Text(&'static str),
}
