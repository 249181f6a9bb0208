//! The box's lock in the log: its `box_lock` events (in the threads of the tasks concerned)
//! read back in order, so a restarted daemon rebuilds who held the box and who waited. On
//! PostgreSQL each node has its own box: only the events of tasks that last ran on this node
//! count.

use serde_json::Value;

use super::{Store, StoreError};

impl Store {
    /// Every `box_lock` event about this node's box, oldest first: `(task, data, at_ms)`.
    pub async fn box_lock_events(&self) -> Result<Vec<(String, Value, i64)>, StoreError> {
        Ok(self
            .box_lock_rows()
            .await?
            .into_iter()
            .filter_map(|(task, data, at)| Some((task, serde_json::from_str(&data).ok()?, at)))
            .collect())
    }
}
