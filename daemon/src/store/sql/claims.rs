//! The claim protocol, once for both engines (see `store::claims`). Every claim, renewal
//! and stop request is a write (SQLite: on the one writer; PostgreSQL: after the log's
//! advisory lock), so its conditions are read after every earlier claim by any daemon
//! committed, and no other claim can interleave; times are the database's (`d::NOW_MS`).

use lazyboy_protocol::{EventBody, TaskState};

use super::events::insert;
use crate::store::claims::Renewal;
use crate::store::dialect::{Conn, on, read, write};
use crate::store::events::LiveEvent;
use crate::store::tasks::{SELECT_TASK, TaskRow};
use crate::store::{Store, StoreError, int};

/// Whether a running task's claim may be taken over by `$1` (this node): nobody owns it,
/// this node owned it, its lease ran out, or the store is its database's only writer (then
/// no other live daemon can hold it). Checked on the updated row itself.
fn takeable(now: &str, exclusive: &str) -> String {
    format!(
        "(owner IS NULL OR owner = $1 OR lease_expires_at_ms IS NULL \
         OR lease_expires_at_ms < {now} OR {exclusive})"
    )
}

/// The columns a claim sets: owner `$1`, a lease of `$2` ms from now. A claim from the
/// queue starts afresh; a recovery keeps a stop asked for while the task had no live owner
/// (the new owner sees it at its first renewal).
fn claimed(state: &str, now: &str) -> String {
    let stop = if state == "running" {
        ", stop_requested_at_ms = NULL"
    } else {
        ""
    };
    format!(
        "state = '{state}', owner = $1, heartbeat_at_ms = {now}, \
         lease_expires_at_ms = {now} + $2, updated_at_ms = {now}{stop}"
    )
}

impl Store {
    /// Claims the oldest queued top-level task this node may run: its agent unpinned or
    /// pinned here, no other top-level task of the agent running anywhere, and this node
    /// running fewer than `capacity` top-level tasks. `None` when there is none.
    pub async fn claim_next(&self, capacity: usize) -> Result<Option<TaskRow>, StoreError> {
        let fleet = self.fleet();
        Ok(write!(self, |tx| {
            let sql = format!(
                "UPDATE tasks SET {} \
                 WHERE (SELECT COUNT(*) FROM tasks m WHERE m.owner = $1 AND m.parent_id IS NULL \
                        AND m.state IN ('running', 'recovering')) < $3 \
                 AND state = 'queued' \
                 AND id = (SELECT t.id FROM tasks t JOIN agents a ON a.id = t.agent_id \
                    WHERE t.state = 'queued' AND t.parent_id IS NULL \
                    AND a.deleted_at_ms IS NULL AND (a.node IS NULL OR a.node = $1) \
                    AND NOT EXISTS (SELECT 1 FROM tasks r WHERE r.agent_id = t.agent_id \
                        AND r.parent_id IS NULL AND r.state IN ('running', 'recovering')) \
                    ORDER BY t.created_at_ms, t.id LIMIT 1) \
                 RETURNING id",
                claimed("running", d::NOW_MS)
            );
            let id: Option<String> = sqlx::query_scalar(&sql)
                .bind(&fleet.node)
                .bind(fleet.lease_ttl_ms)
                .bind(int(capacity))
                .fetch_optional(&mut *tx)
                .await?;
            let Some(id) = id else {
                return Ok(None);
            };
            let (row, event) = logged(&mut *tx, &id, TaskState::Running).await?;
            (Some(row), [event])
        }))
    }

    /// Claims every queued subagent whose parent last ran on this node.
    pub async fn claim_subagents(&self) -> Result<Vec<TaskRow>, StoreError> {
        let fleet = self.fleet();
        // Most wake-ups have none: a read, not a write, says so.
        let any: bool = read!(self, |c| {
            sqlx::query_scalar(
                "SELECT EXISTS (SELECT 1 FROM tasks c JOIN tasks p ON p.id = c.parent_id \
                 WHERE c.state = 'queued' AND p.owner = $1)",
            )
            .bind(&fleet.node)
            .fetch_one(c)
            .await?
        });
        if !any {
            return Ok(Vec::new());
        }
        Ok(write!(self, |tx| {
            let sql = format!(
                "UPDATE tasks SET {} WHERE state = 'queued' \
                 AND parent_id IN (SELECT id FROM tasks WHERE owner = $1) RETURNING id",
                claimed("running", d::NOW_MS)
            );
            let ids: Vec<String> = sqlx::query_scalar(&sql)
                .bind(&fleet.node)
                .bind(fleet.lease_ttl_ms)
                .fetch_all(&mut *tx)
                .await?;
            log_claims(&mut *tx, ids, TaskState::Running).await?
        }))
    }

    /// Claims, as `recovering`, running tasks no live loop holds: expired leases, tasks this
    /// node owned before a restart (and, when the store is exclusive, every one), except
    /// `running_here`; top-level ones up to `capacity` less what this node runs, then the
    /// subagents of every task it now holds.
    pub async fn claim_expired(
        &self,
        capacity: usize,
        running_here: &[String],
    ) -> Result<Vec<TaskRow>, StoreError> {
        let fleet = self.fleet();
        Ok(write!(self, |tx| {
            let sql = format!(
                "UPDATE tasks SET {claimed} \
                 WHERE state IN ('running', 'recovering') AND {takeable} AND id IN ( \
                    SELECT t.id FROM tasks t JOIN agents a ON a.id = t.agent_id \
                    WHERE t.state IN ('running', 'recovering') AND t.parent_id IS NULL \
                    AND (a.node IS NULL OR a.node = $1) AND {not_here} \
                    ORDER BY t.created_at_ms, t.id \
                    LIMIT {greatest}(0, $4 - (SELECT COUNT(*) FROM tasks m \
                        WHERE m.parent_id IS NULL AND {here}))) \
                 RETURNING id",
                claimed = claimed("recovering", d::NOW_MS),
                takeable = takeable(d::NOW_MS, d::EXCLUSIVE),
                not_here = d::not_in_list("t.id", "$3"),
                here = d::in_list("m.id", "$3"),
                greatest = d::GREATEST,
            );
            let mut ids: Vec<String> = sqlx::query_scalar(&sql)
                .bind(&fleet.node)
                .bind(fleet.lease_ttl_ms)
                .bind(d::list(running_here))
                .bind(int(capacity))
                .fetch_all(&mut *tx)
                .await?;
            // The subagents of every task this node now holds follow their parent.
            let sql = format!(
                "UPDATE tasks SET {claimed} \
                 WHERE state IN ('running', 'recovering') AND {takeable} \
                 AND parent_id IN (SELECT id FROM tasks WHERE owner = $1) AND {not_here} \
                 RETURNING id",
                claimed = claimed("recovering", d::NOW_MS),
                takeable = takeable(d::NOW_MS, d::EXCLUSIVE),
                not_here = d::not_in_list("id", "$3"),
            );
            ids.extend(
                sqlx::query_scalar::<_, String>(&sql)
                    .bind(&fleet.node)
                    .bind(fleet.lease_ttl_ms)
                    .bind(d::list(running_here))
                    .fetch_all(&mut *tx)
                    .await?,
            );
            log_claims(&mut *tx, ids, TaskState::Recovering).await?
        }))
    }

    /// Renews the leases of these tasks of this node: one statement, no event (a lease is
    /// state, not history).
    pub async fn renew(&self, ids: &[String]) -> Result<Renewal, StoreError> {
        if ids.is_empty() {
            return Ok(Renewal::default());
        }
        let fleet = self.fleet();
        let rows: Vec<(String, bool)> = write!(self, |tx| {
            let sql = format!(
                "UPDATE tasks SET heartbeat_at_ms = {now}, lease_expires_at_ms = {now} + $2 \
                 WHERE owner = $1 AND state IN ('running', 'recovering') AND {ids} \
                 RETURNING id, stop_requested_at_ms IS NOT NULL",
                now = d::NOW_MS,
                ids = d::in_list("id", "$3"),
            );
            let rows = sqlx::query_as(&sql)
                .bind(&fleet.node)
                .bind(fleet.lease_ttl_ms)
                .bind(d::list(ids))
                .fetch_all(&mut *tx)
                .await?;
            (rows, [])
        });
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

    /// Asks the node running the task to stop it (it sees the request when it renews its
    /// leases). `false` if the task is not running.
    pub async fn request_stop(&self, id: &str) -> Result<bool, StoreError> {
        Ok(write!(self, |tx| {
            let sql = format!(
                "UPDATE tasks SET stop_requested_at_ms = {} \
                 WHERE id = $1 AND state IN ('running', 'recovering')",
                d::NOW_MS
            );
            let done = sqlx::query(&sql).bind(id).execute(&mut *tx).await?;
            (done.rows_affected() > 0, [])
        }))
    }
}

/// Logs `state` for each claimed task on the open write; the rows, oldest first, and the
/// events in seq order (to publish after the commit).
async fn log_claims<'c>(
    conn: impl Into<Conn<'c>>,
    ids: Vec<String>,
    state: TaskState,
) -> Result<(Vec<TaskRow>, Vec<LiveEvent>), StoreError> {
    let mut conn = conn.into();
    let mut claimed = Vec::with_capacity(ids.len());
    for id in &ids {
        claimed.push(logged(conn.reborrow(), id, state).await?);
    }
    let mut events: Vec<LiveEvent> = claimed.iter().map(|(_, e)| e.clone()).collect();
    events.sort_by_key(|e| e.seq);
    let mut rows: Vec<TaskRow> = claimed.into_iter().map(|(row, _)| row).collect();
    rows.sort_by(|a, b| (a.created_at_ms, &a.id).cmp(&(b.created_at_ms, &b.id)));
    Ok((rows, events))
}

/// The claimed task's row, and its `task_state` event appended on the open write.
async fn logged<'c>(
    conn: impl Into<Conn<'c>>,
    id: &str,
    state: TaskState,
) -> Result<(TaskRow, LiveEvent), StoreError> {
    let mut conn = conn.into();
    let sql = format!("{SELECT_TASK} WHERE t.id = $1");
    let row: TaskRow = on!(conn.reborrow(), |c| {
        sqlx::query_as(&sql).bind(id).fetch_one(c).await?
    });
    let event = insert(conn, &row.target(), &EventBody::TaskState { state }).await?;
    Ok((row, event))
}
