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

    pub(in crate::store) async fn retention_batch(
        &self,
        cutoff_ms: i64,
        after: i64,
        min_bytes: i64,
        limit: i64,
    ) -> Result<Vec<(i64, String, String)>, StoreError> {
        Ok(sqlx::query_as(
            "SELECT e.seq, e.task_id, e.data::text FROM events e JOIN tasks t ON t.id = e.task_id \
             WHERE e.seq > $1 AND e.kind = 'tool_result' \
             AND t.state IN ('done', 'blocked', 'failed', 'cancelled', 'budget_exhausted') \
             AND t.updated_at_ms < $2 AND octet_length(e.data::text) > $3 \
             AND (e.data::jsonb -> 'removed') IS NULL ORDER BY e.seq LIMIT $4",
        )
        .bind(after)
        .bind(cutoff_ms)
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
