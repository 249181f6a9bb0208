//! The claim protocol on PostgreSQL (see `store::claims`). Every claim, renewal and stop
//! request runs in a transaction that first takes the log's advisory lock, so its conditions
//! are read after every earlier claim by any daemon committed, and no other claim can
//! interleave; times are the database server's ([`DB_NOW_MS`]).

use lazyboy_protocol::{EventBody, TaskState};
use sqlx::PgConnection;

use super::{DB_NOW_MS, Postgres, Tx, int};
use crate::store::StoreError;
use crate::store::claims::Renewal;
use crate::store::events::LiveEvent;
use crate::store::sql::events::insert;
use crate::store::tasks::{SELECT_TASK, TaskRow};

/// Whether a running task's claim may be taken over by `$1` (this node): nobody owns it,
/// this node owned it, or its lease ran out. Checked on the updated row itself.
fn takeable() -> String {
    format!(
        "(owner IS NULL OR owner = $1 OR lease_expires_at_ms IS NULL \
         OR lease_expires_at_ms < {DB_NOW_MS})"
    )
}

/// The columns a claim sets: owner `$1`, a lease of `$2` ms from now. A claim from the
/// queue starts afresh; a recovery keeps a stop asked for while the task had no live owner
/// (the new owner sees it at its first renewal).
fn claimed(state: &str) -> String {
    let stop = if state == "running" {
        ", stop_requested_at_ms = NULL"
    } else {
        ""
    };
    format!(
        "state = '{state}', owner = $1, heartbeat_at_ms = {DB_NOW_MS}, \
         lease_expires_at_ms = {DB_NOW_MS} + $2, updated_at_ms = {DB_NOW_MS}{stop}"
    )
}

impl Postgres {
    pub(in crate::store) async fn claim_next(
        &self,
        capacity: usize,
    ) -> Result<Option<TaskRow>, StoreError> {
        let mut tx = self.begin().await?;
        let sql = format!(
            "UPDATE tasks SET {} \
             WHERE (SELECT COUNT(*) FROM tasks m WHERE m.owner = $1 AND m.parent_id IS NULL \
                    AND m.state IN ('running', 'recovering')) < $3 \
             AND state = 'queued' \
             AND id = (SELECT t.id FROM tasks t JOIN agents a ON a.id = t.agent_id \
                WHERE t.state = 'queued' AND t.parent_id IS NULL AND a.deleted_at_ms IS NULL \
                AND (a.node IS NULL OR a.node = $1) \
                AND NOT EXISTS (SELECT 1 FROM tasks r WHERE r.agent_id = t.agent_id \
                    AND r.parent_id IS NULL AND r.state IN ('running', 'recovering')) \
                ORDER BY t.created_at_ms, t.id LIMIT 1) \
             RETURNING id",
            claimed("running")
        );
        let id: Option<String> = sqlx::query_scalar(&sql)
            .bind(&self.fleet.node)
            .bind(self.fleet.lease_ttl_ms)
            .bind(int(capacity))
            .fetch_optional(&mut *tx)
            .await?;
        let Some(id) = id else {
            return Ok(None);
        };
        let (row, event) = logged(&mut tx, &id, TaskState::Running).await?;
        tx.commit().await?;
        self.feed.committed([event]);
        Ok(Some(row))
    }

    pub(in crate::store) async fn claim_subagents(&self) -> Result<Vec<TaskRow>, StoreError> {
        // Most wake-ups have none: a read, not the log's lock, says so.
        let any: bool = sqlx::query_scalar(
            "SELECT EXISTS (SELECT 1 FROM tasks c JOIN tasks p ON p.id = c.parent_id \
             WHERE c.state = 'queued' AND p.owner = $1)",
        )
        .bind(&self.fleet.node)
        .fetch_one(&self.pool)
        .await?;
        if !any {
            return Ok(Vec::new());
        }
        let mut tx = self.begin().await?;
        let sql = format!(
            "UPDATE tasks SET {} WHERE state = 'queued' \
             AND parent_id IN (SELECT id FROM tasks WHERE owner = $1) RETURNING id",
            claimed("running")
        );
        let ids: Vec<String> = sqlx::query_scalar(&sql)
            .bind(&self.fleet.node)
            .bind(self.fleet.lease_ttl_ms)
            .fetch_all(&mut *tx)
            .await?;
        self.log_claims(tx, ids, TaskState::Running).await
    }

    pub(in crate::store) async fn claim_expired(
        &self,
        capacity: usize,
        running_here: &[String],
    ) -> Result<Vec<TaskRow>, StoreError> {
        let mut tx = self.begin().await?;
        let sql = format!(
            "UPDATE tasks SET {claimed} \
             WHERE state IN ('running', 'recovering') AND {takeable} AND id IN ( \
                SELECT t.id FROM tasks t JOIN agents a ON a.id = t.agent_id \
                WHERE t.state IN ('running', 'recovering') AND t.parent_id IS NULL \
                AND (a.node IS NULL OR a.node = $1) AND t.id <> ALL($3) \
                ORDER BY t.created_at_ms, t.id \
                LIMIT GREATEST(0, $4 - (SELECT COUNT(*) FROM tasks m \
                    WHERE m.parent_id IS NULL AND m.id = ANY($3)))) \
             RETURNING id",
            claimed = claimed("recovering"),
            takeable = takeable(),
        );
        let mut ids: Vec<String> = sqlx::query_scalar(&sql)
            .bind(&self.fleet.node)
            .bind(self.fleet.lease_ttl_ms)
            .bind(running_here)
            .bind(int(capacity))
            .fetch_all(&mut *tx)
            .await?;
        // The subagents of every task this node now holds follow their parent.
        let sql = format!(
            "UPDATE tasks SET {claimed} \
             WHERE state IN ('running', 'recovering') AND {takeable} \
             AND parent_id IN (SELECT id FROM tasks WHERE owner = $1) AND id <> ALL($3) \
             RETURNING id",
            claimed = claimed("recovering"),
            takeable = takeable(),
        );
        ids.extend(
            sqlx::query_scalar::<_, String>(&sql)
                .bind(&self.fleet.node)
                .bind(self.fleet.lease_ttl_ms)
                .bind(running_here)
                .fetch_all(&mut *tx)
                .await?,
        );
        self.log_claims(tx, ids, TaskState::Recovering).await
    }

    pub(in crate::store) async fn renew(&self, ids: &[String]) -> Result<Renewal, StoreError> {
        if ids.is_empty() {
            return Ok(Renewal::default());
        }
        let mut tx = self.begin().await?;
        let sql = format!(
            "UPDATE tasks SET heartbeat_at_ms = {DB_NOW_MS}, \
             lease_expires_at_ms = {DB_NOW_MS} + $2 \
             WHERE owner = $1 AND state IN ('running', 'recovering') AND id = ANY($3) \
             RETURNING id, stop_requested_at_ms IS NOT NULL"
        );
        let rows: Vec<(String, bool)> = sqlx::query_as(&sql)
            .bind(&self.fleet.node)
            .bind(self.fleet.lease_ttl_ms)
            .bind(ids)
            .fetch_all(&mut *tx)
            .await?;
        tx.commit().await?;
        let stop = rows
            .iter()
            .filter(|(_, stop)| *stop)
            .map(|(id, _)| id.clone())
            .collect();
        Ok(Renewal {
            renewed: rows.into_iter().map(|(id, _)| id).collect(),
            stop,
        })
    }

    pub(in crate::store) async fn request_stop(&self, id: &str) -> Result<bool, StoreError> {
        let mut tx = self.begin().await?;
        let sql = format!(
            "UPDATE tasks SET stop_requested_at_ms = {DB_NOW_MS} \
             WHERE id = $1 AND state IN ('running', 'recovering')"
        );
        let done = sqlx::query(&sql).bind(id).execute(&mut *tx).await?;
        tx.commit().await?;
        Ok(done.rows_affected() > 0)
    }

    /// Logs `state` for each claimed task, commits, hands the events to the feed; the rows,
    /// oldest first.
    async fn log_claims(
        &self,
        mut tx: Tx<'static>,
        ids: Vec<String>,
        state: TaskState,
    ) -> Result<Vec<TaskRow>, StoreError> {
        let mut claimed = Vec::with_capacity(ids.len());
        for id in &ids {
            claimed.push(logged(&mut tx, id, state).await?);
        }
        tx.commit().await?;
        let mut events: Vec<LiveEvent> = claimed.iter().map(|(_, e)| e.clone()).collect();
        events.sort_by_key(|e| e.seq);
        self.feed.committed(events);
        let mut rows: Vec<TaskRow> = claimed.into_iter().map(|(row, _)| row).collect();
        rows.sort_by(|a, b| (a.created_at_ms, &a.id).cmp(&(b.created_at_ms, &b.id)));
        Ok(rows)
    }
}

/// The claimed task's row, and its `task_state` event appended on the open transaction.
async fn logged(
    tx: &mut PgConnection,
    id: &str,
    state: TaskState,
) -> Result<(TaskRow, LiveEvent), StoreError> {
    let sql = format!("{SELECT_TASK} WHERE t.id = $1");
    let row: TaskRow = sqlx::query_as(&sql).bind(id).fetch_one(&mut *tx).await?;
    let event = insert(tx, &row.target(), &EventBody::TaskState { state }).await?;
    Ok((row, event))
}
