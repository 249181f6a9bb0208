//! The box's lock in the log: its `box_lock` events (in the threads of the tasks concerned)
//! read back in order, so a restarted daemon rebuilds who held the box and who waited.

use serde_json::Value;

use super::{Store, StoreError};

impl Store {
    /// Every `box_lock` event, oldest first: `(task, data, at_ms)`.
    pub async fn box_lock_events(&self) -> Result<Vec<(String, Value, i64)>, StoreError> {
        let rows: Vec<(String, String, i64)> = sqlx::query_as(
            "SELECT task_id, data, at_ms FROM events \
             WHERE kind = 'box_lock' AND task_id IS NOT NULL ORDER BY seq",
        )
        .fetch_all(&self.inner.reader)
        .await?;
        Ok(rows
            .into_iter()
            .filter_map(|(task, data, at)| Some((task, serde_json::from_str(&data).ok()?, at)))
            .collect())
    }
}
