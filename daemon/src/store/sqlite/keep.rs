//! SQLite's side of `store/keep.rs`: `VACUUM INTO` for snapshots, the retention rewrite
//! behind the `events_rewrite` row the trigger looks for, incremental vacuum.

use std::path::Path;
use std::str::FromStr;

use lazyboy_protocol::BackupCounts;
use sqlx::sqlite::SqliteConnectOptions;
use sqlx::{ConnectOptions, Connection};

use super::{MIGRATOR, Sqlite};
use crate::store::StoreError;

/// The task states after which a task's results are history.
const ENDED: &str = "('done', 'blocked', 'failed', 'cancelled', 'budget_exhausted')";

pub(in crate::store) fn known_version() -> i64 {
    MIGRATOR.iter().map(|m| m.version).max().unwrap_or(0)
}

/// Opens `path` read-only and counts what it holds.
pub(in crate::store) async fn counts(path: &Path) -> Result<(BackupCounts, i64), StoreError> {
    let mut conn = SqliteConnectOptions::from_str("sqlite:")?
        .filename(path)
        .read_only(true)
        .connect()
        .await?;
    let count = |table: &str| format!("SELECT COUNT(*) FROM {table}");
    let mut figures = [0_i64; 5];
    for (slot, sql) in figures.iter_mut().zip([
        count("events"),
        count("agents WHERE deleted_at_ms IS NULL"),
        count("tasks"),
        count("memories"),
        count("schedules"),
    ]) {
        *slot = sqlx::query_scalar(&sql).fetch_one(&mut conn).await?;
    }
    let last_seq: Option<i64> = sqlx::query_scalar("SELECT MAX(seq) FROM events")
        .fetch_one(&mut conn)
        .await?;
    let schema: Option<i64> = sqlx::query_scalar("SELECT MAX(version) FROM _sqlx_migrations")
        .fetch_one(&mut conn)
        .await?;
    conn.close().await?;
    let [events, agents, tasks, memories, schedules] = figures;
    Ok((
        BackupCounts {
            events,
            last_seq: last_seq.unwrap_or(0),
            agents,
            tasks,
            memories,
            schedules,
        },
        schema.unwrap_or(0),
    ))
}

impl Sqlite {
    pub(in crate::store) async fn snapshot_into(&self, path: &Path) -> Result<(), StoreError> {
        // A reader: one read transaction sees one commit's prefix of the log, and the writer
        // (WAL) goes on appending meanwhile.
        sqlx::query("VACUUM INTO ?1")
            .bind(path.display().to_string())
            .execute(&self.reader)
            .await?;
        Ok(())
    }

    pub(in crate::store) async fn ended_tasks_before(
        &self,
        cutoff_ms: i64,
    ) -> Result<Vec<String>, StoreError> {
        let sql = format!(
            "SELECT id FROM tasks WHERE state IN {ENDED} AND updated_at_ms < ?1 \
             ORDER BY updated_at_ms, id"
        );
        Ok(sqlx::query_scalar(&sql)
            .bind(cutoff_ms)
            .fetch_all(&self.reader)
            .await?)
    }

    pub(in crate::store) async fn retention_batch(
        &self,
        task: &str,
        after: i64,
        min_bytes: i64,
        limit: i64,
    ) -> Result<Vec<(i64, String)>, StoreError> {
        // `events_task_seq` walks the task's events only; `kind` and the size are checked
        // on those rows, never by parsing JSON in SQL.
        Ok(sqlx::query_as(
            "SELECT seq, data FROM events WHERE task_id = ?1 AND seq > ?2 \
             AND kind = 'tool_result' AND length(data) > ?3 ORDER BY seq LIMIT ?4",
        )
        .bind(task)
        .bind(after)
        .bind(min_bytes)
        .bind(limit)
        .fetch_all(&self.reader)
        .await?)
    }

    pub(in crate::store) async fn rewrite_results(
        &self,
        rows: &[(i64, String)],
    ) -> Result<u64, StoreError> {
        let mut writer = self.writer.lock().await;
        let mut tx = writer.begin().await?;
        sqlx::query("INSERT INTO events_rewrite (id) VALUES (1)")
            .execute(&mut *tx)
            .await?;
        let mut changed = 0;
        for (seq, data) in rows {
            changed += sqlx::query("UPDATE events SET data = ?1 WHERE seq = ?2")
                .bind(data)
                .bind(seq)
                .execute(&mut *tx)
                .await?
                .rows_affected();
        }
        sqlx::query("DELETE FROM events_rewrite")
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(changed)
    }

    pub(in crate::store) async fn reclaim(&self) -> Result<(), StoreError> {
        let mut writer = self.writer.lock().await;
        let mode: i64 = sqlx::query_scalar("PRAGMA auto_vacuum")
            .fetch_one(&mut *writer)
            .await?;
        // 2: INCREMENTAL.
        if mode == 2 {
            sqlx::query("PRAGMA incremental_vacuum")
                .execute(&mut *writer)
                .await?;
        } else {
            // A file made before retention existed: one full VACUUM switches it to
            // incremental mode (appends wait on the writer meanwhile); later passes are cheap.
            sqlx::query("PRAGMA auto_vacuum = INCREMENTAL")
                .execute(&mut *writer)
                .await?;
            sqlx::query("VACUUM").execute(&mut *writer).await?;
        }
        // The freed pages went through the WAL; fold it back so the disk sees the gain.
        sqlx::query("PRAGMA wal_checkpoint(TRUNCATE)")
            .execute(&mut *writer)
            .await?;
        Ok(())
    }

    pub(in crate::store) async fn database_bytes(&self) -> Result<u64, StoreError> {
        let (count, size): (i64, i64) = sqlx::query_as(
            "SELECT page_count, page_size FROM pragma_page_count(), pragma_page_size()",
        )
        .fetch_one(&self.reader)
        .await?;
        Ok(u64::try_from(count.saturating_mul(size)).unwrap_or(0))
    }
}
