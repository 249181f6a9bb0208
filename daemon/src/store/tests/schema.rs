//! The two engines' migrations (one folder each: their SQL differs) must make the same
//! schema where the queries of `sql/` look: the same tables, the same columns in each, the
//! same indexes. What one engine alone has is listed here, each with its reason; anything
//! else that differs fails the test, so a migration added to one folder only is caught.

use std::collections::BTreeSet;

use super::Db;
use crate::store::{Backend, Store};

/// `table.column` and `index:name` entries only SQLite has, in order.
const SQLITE_ONLY: &[&str] = &[
    // FTS5's contentless tables and their shadow tables (PostgreSQL: the tsvector columns).
    "conversation_fts",
    // The append-only trigger's door for retention (PostgreSQL: a transaction setting).
    "events_rewrite.id",
    "memories_fts",
];

/// `table.column` and `index:name` entries only PostgreSQL has, in order.
const POSTGRES_ONLY: &[&str] = &[
    // The generated tsvectors and their GIN indexes (SQLite: the FTS5 tables).
    "events.conversation_tsv",
    "index:events_conversation_fts",
    "index:memories_fts",
    // Several nodes' claims count one node's running tasks by owner; SQLite's one node
    // has `tasks_state` for that.
    "index:tasks_running",
    "memories.tsv",
];

/// Every `table.column` and `index:name` of the store's migrated schema.
async fn schema(store: &Store) -> BTreeSet<String> {
    let (columns, indexes): (Vec<(String, String)>, Vec<String>) = match store.backend() {
        Backend::Sqlite(db) => (
            sqlx::query_as(
                "SELECT m.name, c.name FROM sqlite_master m, pragma_table_info(m.name) c \
                 WHERE m.type = 'table' AND m.name NOT LIKE 'sqlite_%' \
                 AND m.name NOT LIKE '_sqlx_%'",
            )
            .fetch_all(&db.reader)
            .await
            .unwrap(),
            // Named indexes only: SQLite's automatic ones back a UNIQUE or PRIMARY KEY,
            // which PostgreSQL's constraints (`*_pkey`, `*_key`) back on its side.
            sqlx::query_scalar(
                "SELECT name FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL",
            )
            .fetch_all(&db.reader)
            .await
            .unwrap(),
        ),
        Backend::Postgres(db) => (
            sqlx::query_as(
                "SELECT c.table_name::text, c.column_name::text FROM information_schema.columns c \
                 JOIN information_schema.tables t ON t.table_schema = c.table_schema \
                 AND t.table_name = c.table_name \
                 WHERE c.table_schema = current_schema() AND t.table_type = 'BASE TABLE' \
                 AND c.table_name NOT LIKE '\\_sqlx\\_%'",
            )
            .fetch_all(&db.pool)
            .await
            .unwrap(),
            sqlx::query_scalar(
                "SELECT i.indexname::text FROM pg_indexes i \
                 WHERE i.schemaname = current_schema() AND NOT EXISTS ( \
                 SELECT 1 FROM pg_constraint k WHERE k.conname = i.indexname)",
            )
            .fetch_all(&db.pool)
            .await
            .unwrap(),
        ),
    };
    let fts = |table: &str| {
        ["conversation_fts", "memories_fts"]
            .into_iter()
            .find(|fts| table.starts_with(fts))
    };
    columns
        .into_iter()
        .map(|(table, column)| match fts(&table) {
            // An FTS5 table and its shadow tables count once, by the table's name.
            Some(fts) => fts.to_owned(),
            None => format!("{table}.{column}"),
        })
        .chain(indexes.into_iter().map(|name| format!("index:{name}")))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn both_engines_migrate_to_the_same_schema() {
    let sqlite = schema(&Db::sqlite().await.store().await).await;
    let postgres = schema(&Db::postgres().await.store().await).await;
    let only = |a: &BTreeSet<String>, b: &BTreeSet<String>| -> Vec<String> {
        a.difference(b).cloned().collect()
    };
    assert_eq!(
        only(&sqlite, &postgres),
        SQLITE_ONLY,
        "only in SQLite's schema"
    );
    assert_eq!(
        only(&postgres, &sqlite),
        POSTGRES_ONLY,
        "only in PostgreSQL's schema"
    );
    // The tables the queries of `sql/` name are there (on both, by the equalities above).
    let tables = [
        "agents",
        "threads",
        "events",
        "tasks",
        "memories",
        "schedules",
        "nodes",
        "notify_cursor",
        "notify_subscriptions",
    ];
    for table in tables {
        let prefix = format!("{table}.");
        assert!(
            sqlite.iter().any(|c| c.starts_with(&prefix)),
            "no table {table}"
        );
    }
}
