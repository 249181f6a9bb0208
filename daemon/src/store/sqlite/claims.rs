//! The claim protocol on SQLite (see `store::claims`): every claim runs on the writer, so
//! its conditions and its update see one state of the file.

use lazyboy_protocol::{EventBody, TaskState};
use sqlx::{Connection, SqliteConnection};

use super::Sqlite;
use crate::store::claims::Renewal;
use crate::store::events::LiveEvent;
use crate::store::sql::events::insert;
use crate::store::tasks::{SELECT_TASK, TaskRow};
use crate::store::{StoreError, now_ms};

/// A recovery keeps a stop asked for while the task had no live owner: the new owner sees
/// it at its first renewal.
///
/// Whether a running task's claim may be taken over by `?2` (this node) at `?1` (now):
/// nobody owns it, this node owned it, its lease ran out, or the store is exclusive (`?3`).
const TAKEABLE: &str = "(t.owner IS NULL OR t.owner = ?2 OR t.lease_expires_at_ms IS NULL \
    OR t.lease_expires_at_ms < ?1 OR ?3)";

/// Whether a queued subagent of a task of node `?` waits.
const SUBAGENTS_WAITING: &str = "SELECT EXISTS (SELECT 1 FROM tasks c JOIN tasks p \
    ON p.id = c.parent_id WHERE c.state = 'queued' AND p.owner = ?)";

impl Sqlite {
    pub(in crate::store) async fn claim_next(
        &self,
        capacity: usize,
    ) -> Result<Option<TaskRow>, StoreError> {
        let me = &self.fleet.node;
        let mut writer = self.writer.lock().await;
        let mut tx = writer.begin().await?;
        let now = now_ms();
        let id: Option<String> = sqlx::query_scalar(
            "UPDATE tasks SET state = 'running', owner = ?2, heartbeat_at_ms = ?1, \
             lease_expires_at_ms = ?3, updated_at_ms = ?1, stop_requested_at_ms = NULL \
             WHERE (SELECT COUNT(*) FROM tasks m WHERE m.owner = ?2 AND m.parent_id IS NULL \
                    AND m.state IN ('running', 'recovering')) < ?4 \
             AND id = (SELECT t.id FROM tasks t JOIN agents a ON a.id = t.agent_id \
                WHERE t.state = 'queued' AND t.parent_id IS NULL AND a.deleted_at_ms IS NULL \
                AND (a.node IS NULL OR a.node = ?2) \
                AND NOT EXISTS (SELECT 1 FROM tasks r WHERE r.agent_id = t.agent_id \
                    AND r.parent_id IS NULL AND r.state IN ('running', 'recovering')) \
                ORDER BY t.created_at_ms, t.id LIMIT 1) \
             RETURNING id",
        )
        .bind(now)
        .bind(me)
        .bind(now + self.fleet.lease_ttl_ms)
        .bind(i64::try_from(capacity).unwrap_or(i64::MAX))
        .fetch_optional(&mut *tx)
        .await?;
        let Some(id) = id else {
            return Ok(None);
        };
        let (row, event) = logged(&mut tx, &id, TaskState::Running).await?;
        tx.commit().await?;
        self.bus.publish(event);
        Ok(Some(row))
    }

    pub(in crate::store) async fn claim_subagents(&self) -> Result<Vec<TaskRow>, StoreError> {
        // Most wake-ups have none: a read, not a write transaction, says so.
        let any: bool = sqlx::query_scalar(SUBAGENTS_WAITING)
            .bind(&self.fleet.node)
            .fetch_one(&self.reader)
            .await?;
        if !any {
            return Ok(Vec::new());
        }
        let mut writer = self.writer.lock().await;
        let mut tx = writer.begin().await?;
        let now = now_ms();
        let ids: Vec<String> = sqlx::query_scalar(
            "UPDATE tasks SET state = 'running', owner = ?2, heartbeat_at_ms = ?1, \
             lease_expires_at_ms = ?3, updated_at_ms = ?1, stop_requested_at_ms = NULL \
             WHERE state = 'queued' AND parent_id IN (SELECT id FROM tasks WHERE owner = ?2) \
             RETURNING id",
        )
        .bind(now)
        .bind(&self.fleet.node)
        .bind(now + self.fleet.lease_ttl_ms)
        .fetch_all(&mut *tx)
        .await?;
        self.log_claims(tx, ids, TaskState::Running).await
    }

    pub(in crate::store) async fn claim_expired(
        &self,
        capacity: usize,
        running_here: &[String],
    ) -> Result<Vec<TaskRow>, StoreError> {
        let here = serde_json::Value::from(running_here.to_vec()).to_string();
        let mut writer = self.writer.lock().await;
        let mut tx = writer.begin().await?;
        let now = now_ms();
        let lease = now + self.fleet.lease_ttl_ms;
        let sql = format!(
            "UPDATE tasks SET state = 'recovering', owner = ?2, heartbeat_at_ms = ?1, \
             lease_expires_at_ms = ?4, updated_at_ms = ?1 \
             WHERE id IN (SELECT t.id FROM tasks t JOIN agents a ON a.id = t.agent_id \
                WHERE t.state IN ('running', 'recovering') AND t.parent_id IS NULL \
                AND (a.node IS NULL OR a.node = ?2) AND {TAKEABLE} \
                AND t.id NOT IN (SELECT value FROM json_each(?5)) \
                ORDER BY t.created_at_ms, t.id \
                LIMIT MAX(0, ?6 - (SELECT COUNT(*) FROM tasks m WHERE m.parent_id IS NULL \
                    AND m.id IN (SELECT value FROM json_each(?5))))) \
             RETURNING id"
        );
        let mut ids: Vec<String> = sqlx::query_scalar(&sql)
            .bind(now)
            .bind(&self.fleet.node)
            .bind(true)
            .bind(lease)
            .bind(&here)
            .bind(i64::try_from(capacity).unwrap_or(i64::MAX))
            .fetch_all(&mut *tx)
            .await?;
        // The subagents of every task this node now holds follow their parent.
        let sql = format!(
            "UPDATE tasks AS t SET state = 'recovering', owner = ?2, heartbeat_at_ms = ?1, \
             lease_expires_at_ms = ?4, updated_at_ms = ?1 \
             WHERE t.state IN ('running', 'recovering') AND {TAKEABLE} \
             AND t.parent_id IN (SELECT id FROM tasks WHERE owner = ?2) \
             AND t.id NOT IN (SELECT value FROM json_each(?5)) RETURNING id"
        );
        ids.extend(
            sqlx::query_scalar::<_, String>(&sql)
                .bind(now)
                .bind(&self.fleet.node)
                .bind(true)
                .bind(lease)
                .bind(&here)
                .fetch_all(&mut *tx)
                .await?,
        );
        self.log_claims(tx, ids, TaskState::Recovering).await
    }

    pub(in crate::store) async fn renew(&self, ids: &[String]) -> Result<Renewal, StoreError> {
        if ids.is_empty() {
            return Ok(Renewal::default());
        }
        let now = now_ms();
        let mut writer = self.writer.lock().await;
        let rows: Vec<(String, bool)> = sqlx::query_as(
            "UPDATE tasks SET heartbeat_at_ms = ?1, lease_expires_at_ms = ?2 \
             WHERE owner = ?3 AND state IN ('running', 'recovering') \
             AND id IN (SELECT value FROM json_each(?4)) \
             RETURNING id, stop_requested_at_ms IS NOT NULL",
        )
        .bind(now)
        .bind(now + self.fleet.lease_ttl_ms)
        .bind(&self.fleet.node)
        .bind(serde_json::Value::from(ids.to_vec()).to_string())
        .fetch_all(&mut *writer)
        .await?;
        Ok(renewal(rows))
    }

    pub(in crate::store) async fn request_stop(&self, id: &str) -> Result<bool, StoreError> {
        let mut writer = self.writer.lock().await;
        let done = sqlx::query(
            "UPDATE tasks SET stop_requested_at_ms = ? \
             WHERE id = ? AND state IN ('running', 'recovering')",
        )
        .bind(now_ms())
        .bind(id)
        .execute(&mut *writer)
        .await?;
        Ok(done.rows_affected() > 0)
    }

    /// Logs `state` for each claimed task, commits, publishes; the rows, oldest first.
    async fn log_claims(
        &self,
        mut tx: sqlx::Transaction<'_, sqlx::Sqlite>,
        ids: Vec<String>,
        state: TaskState,
    ) -> Result<Vec<TaskRow>, StoreError> {
        let mut claimed = Vec::with_capacity(ids.len());
        for id in &ids {
            claimed.push(logged(&mut tx, id, state).await?);
        }
        tx.commit().await?;
        claimed.sort_by(|(a, _), (b, _)| (a.created_at_ms, &a.id).cmp(&(b.created_at_ms, &b.id)));
        let mut events: Vec<LiveEvent> = claimed.iter().map(|(_, e)| e.clone()).collect();
        events.sort_by_key(|e| e.seq);
        for event in events {
            self.bus.publish(event);
        }
        Ok(claimed.into_iter().map(|(row, _)| row).collect())
    }
}

/// The claimed task's row, and its `task_state` event appended on the open transaction.
async fn logged(
    tx: &mut SqliteConnection,
    id: &str,
    state: TaskState,
) -> Result<(TaskRow, LiveEvent), StoreError> {
    let sql = format!("{SELECT_TASK} WHERE t.id = ?");
    let row: TaskRow = sqlx::query_as(&sql).bind(id).fetch_one(&mut *tx).await?;
    let event = insert(tx, &row.target(), &EventBody::TaskState { state }).await?;
    Ok((row, event))
}

/// The renewal's answer from (id, stop requested) rows.
pub(super) fn renewal(rows: Vec<(String, bool)>) -> Renewal {
    let stop = rows
        .iter()
        .filter(|(_, stop)| *stop)
        .map(|(id, _)| id.clone())
        .collect();
    Renewal {
        renewed: rows.into_iter().map(|(id, _)| id).collect(),
        stop,
    }
}
