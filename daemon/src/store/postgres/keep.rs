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
