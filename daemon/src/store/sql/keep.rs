//! Retention's reads and its one rewrite of the log, once for both engines (see
//! `store/keep.rs`). The rewrite opens the trigger's door the dialect's way (SQLite: the
//! `events_rewrite` row; PostgreSQL: `lazyboy.rewrite` set for the transaction, under the
//! log's lock) and closes it before the commit.

use crate::store::dialect::{read, write};
use crate::store::{Store, StoreError};

/// The task states after which a task's results are history.
const ENDED: &str = "('done', 'blocked', 'failed', 'cancelled', 'budget_exhausted')";

impl Store {
    /// The tasks in an ended state whose row last changed before `cutoff_ms`, oldest first.
    pub async fn ended_tasks_before(&self, cutoff_ms: i64) -> Result<Vec<String>, StoreError> {
        let sql = format!(
            "SELECT id FROM tasks WHERE state IN {ENDED} AND updated_at_ms < $1 \
             ORDER BY updated_at_ms, id"
        );
        Ok(read!(self, |c| {
            sqlx::query_scalar(&sql)
                .bind(cutoff_ms)
                .fetch_all(c)
                .await?
        }))
    }

    /// Up to `limit` of the task's `tool_result` events after seq `after` whose stored data
    /// is over `min_bytes` (a stub is smaller): `(seq, data)`, oldest first.
    pub async fn retention_batch(
        &self,
        task: &str,
        after: i64,
        min_bytes: i64,
        limit: i64,
    ) -> Result<Vec<(i64, String)>, StoreError> {
        // `events_task_seq` walks the task's events only; `kind` and the size are checked
        // on those rows, never by parsing JSON in SQL.
        Ok(read!(self, |c| {
            let sql = format!(
                "SELECT seq, CAST(data AS TEXT) FROM events WHERE task_id = $1 AND seq > $2 \
                 AND kind = 'tool_result' AND {} > $3 ORDER BY seq LIMIT $4",
                d::DATA_LENGTH
            );
            sqlx::query_as(&sql)
                .bind(task)
                .bind(after)
                .bind(min_bytes)
                .bind(limit)
                .fetch_all(c)
                .await?
        }))
    }

    /// Replaces the data of each `(seq, data)` `tool_result` event, in one transaction.
    pub async fn rewrite_results(&self, rows: &[(i64, String)]) -> Result<u64, StoreError> {
        Ok(write!(self, |tx| {
            for sql in d::REWRITE_OPEN {
                sqlx::query(sql).execute(&mut *tx).await?;
            }
            let update = format!("UPDATE events SET data = $1{} WHERE seq = $2", d::JSON);
            let mut changed = 0;
            for (seq, data) in rows {
                changed += sqlx::query(&update)
                    .bind(data)
                    .bind(seq)
                    .execute(&mut *tx)
                    .await?
                    .rows_affected();
            }
            for sql in d::REWRITE_CLOSE {
                sqlx::query(sql).execute(&mut *tx).await?;
            }
            (changed, [])
        }))
    }
}
