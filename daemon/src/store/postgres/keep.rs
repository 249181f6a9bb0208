//! PostgreSQL's side of `store/keep.rs`: no snapshot (`pg_dump` is the backup), the
//! retention rewrite under the log's lock with `lazyboy.rewrite` set for its transaction
//! (the trigger's door), and `VACUUM` of the log.

use std::path::Path;

use super::Postgres;
use crate::store::StoreError;

impl Postgres {
    pub(in crate::store) async fn snapshot_into(&self, _path: &Path) -> Result<(), StoreError> {
        Err(StoreError::Unsupported(
            "a PostgreSQL database is backed up with pg_dump".to_owned(),
        ))
    }

    pub(in crate::store) async fn ended_tasks_before(
        &self,
        cutoff_ms: i64,
    ) -> Result<Vec<String>, StoreError> {
        Ok(sqlx::query_scalar(
            "SELECT id FROM tasks \
             WHERE state IN ('done', 'blocked', 'failed', 'cancelled', 'budget_exhausted') \
             AND updated_at_ms < $1 ORDER BY updated_at_ms, id",
        )
        .bind(cutoff_ms)
        .fetch_all(&self.pool)
        .await?)
    }

    pub(in crate::store) async fn retention_batch(
        &self,
        task: &str,
        after: i64,
        min_bytes: i64,
        limit: i64,
    ) -> Result<Vec<(i64, String)>, StoreError> {
        Ok(sqlx::query_as(
            "SELECT seq, data::text FROM events WHERE task_id = $1 AND seq > $2 \
             AND kind = 'tool_result' AND octet_length(data::text) > $3 ORDER BY seq LIMIT $4",
        )
        .bind(task)
        .bind(after)
        .bind(min_bytes)
        .bind(limit)
        .fetch_all(&self.pool)
        .await?)
    }

    pub(in crate::store) async fn rewrite_results(
        &self,
        rows: &[(i64, String)],
    ) -> Result<u64, StoreError> {
        let mut tx = self.begin().await?;
        sqlx::query("SET LOCAL lazyboy.rewrite = 'on'")
            .execute(&mut *tx)
            .await?;
        let mut changed = 0;
        for (seq, data) in rows {
            changed += sqlx::query("UPDATE events SET data = $1::json WHERE seq = $2")
                .bind(data)
                .bind(seq)
                .execute(&mut *tx)
                .await?
                .rows_affected();
        }
        tx.commit().await?;
        Ok(changed)
    }

    pub(in crate::store) async fn reclaim(&self) -> Result<(), StoreError> {
        // Plain VACUUM: the space becomes reusable without the exclusive lock of VACUUM
        // FULL, which would stop every daemon's appends for the whole rewrite.
        sqlx::query("VACUUM (ANALYZE) events")
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    pub(in crate::store) async fn database_bytes(&self) -> Result<u64, StoreError> {
        let bytes: i64 = sqlx::query_scalar("SELECT pg_total_relation_size('events')")
            .fetch_one(&self.pool)
            .await?;
        Ok(u64::try_from(bytes).unwrap_or(0))
    }
}
