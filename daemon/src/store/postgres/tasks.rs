//! Tasks on PostgreSQL: creation, reads, usage, appends and guarded state changes.

use lazyboy_protocol::{EventBody, TaskState};
use sqlx::PgConnection;

use super::DB_NOW_MS;
use super::events::{append, insert};
use super::{Postgres, int};
use crate::store::claims::TaskGuard;
use crate::store::events::LiveEvent;
use crate::store::tasks::{SELECT_TASK, TaskRow, Transition, history_rows, verdict_str};
use crate::store::{StoreError, now_ms, state_name};

impl Postgres {
    pub(in crate::store) async fn create_task_logged(
        &self,
        agent: &str,
        objective: &str,
        workspace: &str,
    ) -> Result<(TaskRow, LiveEvent), StoreError> {
        let mut tx = self.begin().await?;
        let (row, event) = insert_task(&mut tx, agent, objective, workspace).await?;
        tx.commit().await?;
        self.feed.committed([event.clone()]);
        Ok((row, event))
    }

    pub(in crate::store) async fn create_subagent(
        &self,
        parent: &TaskRow,
        objective: &str,
        tools: Option<&[String]>,
    ) -> Result<TaskRow, StoreError> {
        let mut tx = self.begin().await?;
        let (row, created) = insert_task_row(&mut tx, parent.child(objective, tools)).await?;
        let spawned = EventBody::SubagentSpawned {
            task: row.id.clone(),
            objective: objective.to_owned(),
        };
        let noted = insert(&mut tx, &parent.target(), &spawned).await?;
        tx.commit().await?;
        self.feed.committed([created, noted]);
        Ok(row)
    }

    pub(in crate::store) async fn record_usage(
        &self,
        task: &TaskRow,
        usage: &EventBody,
        cost_microusd: Option<u64>,
    ) -> Result<(), StoreError> {
        let EventBody::ModelUsage {
            input_tokens,
            cached_tokens,
            output_tokens,
            estimated,
            ..
        } = usage
        else {
            return Ok(());
        };
        let as_i64 = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
        let mut tx = self.begin().await?;
        sqlx::query(
            "UPDATE tasks SET input_tokens = input_tokens + $1, cached_tokens = cached_tokens + $2, \
             output_tokens = output_tokens + $3, usage_estimated = usage_estimated OR $4, \
             cost_microusd = CASE WHEN $5::BIGINT IS NULL THEN cost_microusd \
             ELSE COALESCE(cost_microusd, 0) + $5 END \
             WHERE id = $6",
        )
        .bind(as_i64(*input_tokens))
        .bind(as_i64(*cached_tokens))
        .bind(as_i64(*output_tokens))
        .bind(*estimated)
        .bind(cost_microusd.map(as_i64))
        .bind(&task.id)
        .execute(&mut *tx)
        .await?;
        let event = insert(&mut tx, &task.target(), usage).await?;
        tx.commit().await?;
        self.feed.committed([event]);
        Ok(())
    }

    pub(in crate::store) async fn subagents(
        &self,
        parent: &str,
    ) -> Result<Vec<TaskRow>, StoreError> {
        let sql = format!("{SELECT_TASK} WHERE t.parent_id = $1 ORDER BY t.created_at_ms, t.id");
        Ok(sqlx::query_as(&sql)
            .bind(parent)
            .fetch_all(&self.pool)
            .await?)
    }

    pub(in crate::store) async fn task(&self, id: &str) -> Result<TaskRow, StoreError> {
        let sql = format!("{SELECT_TASK} WHERE t.id = $1");
        sqlx::query_as(&sql)
            .bind(id)
            .fetch_optional(&self.pool)
            .await?
            .ok_or_else(|| StoreError::NoSuchTask(id.to_owned()))
    }

    pub(in crate::store) async fn tasks_in(
        &self,
        states: &[TaskState],
    ) -> Result<Vec<TaskRow>, StoreError> {
        let names: Vec<String> = states.iter().map(|s| format!("'{}'", s.as_str())).collect();
        let sql = format!(
            "{SELECT_TASK} WHERE t.state IN ({}) ORDER BY t.created_at_ms, t.id",
            names.join(",")
        );
        Ok(sqlx::query_as(&sql).fetch_all(&self.pool).await?)
    }

    pub(in crate::store) async fn list_tasks(
        &self,
        agent: Option<&str>,
        state: Option<TaskState>,
        limit: u32,
    ) -> Result<Vec<TaskRow>, StoreError> {
        let sql = format!(
            "{SELECT_TASK} WHERE ($1::TEXT IS NULL OR a.name = $1) \
             AND ($2::TEXT IS NULL OR t.state = $2) \
             ORDER BY t.created_at_ms DESC, t.id DESC LIMIT $3"
        );
        Ok(sqlx::query_as(&sql)
            .bind(agent)
            .bind(state.map(TaskState::as_str))
            .bind(int(limit))
            .fetch_all(&self.pool)
            .await?)
    }

    pub(in crate::store) async fn task_history_after(
        &self,
        id: &str,
        after: i64,
    ) -> Result<Vec<(i64, EventBody)>, StoreError> {
        let rows: Vec<(i64, String, String)> = sqlx::query_as(
            "SELECT seq, kind, data::text FROM events WHERE task_id = $1 AND seq > $2 \
             AND kind <> 'assistant_delta' ORDER BY seq",
        )
        .bind(id)
        .bind(after)
        .fetch_all(&self.pool)
        .await?;
        Ok(history_rows(rows))
    }

    pub(in crate::store) async fn append_to_task(
        &self,
        task: &TaskRow,
        body: &EventBody,
    ) -> Result<LiveEvent, StoreError> {
        let event = append(&self.pool, &task.target(), body).await?;
        self.feed.committed([event.clone()]);
        Ok(event)
    }

    pub(in crate::store) async fn append_as_owner(
        &self,
        task: &TaskRow,
        body: &EventBody,
    ) -> Result<LiveEvent, StoreError> {
        // A transaction, so the ownership check reads after the lock is held (a statement's
        // snapshot is taken before it waits for the lock).
        let mut tx = self.begin().await?;
        let owned: bool = sqlx::query_scalar(
            "SELECT EXISTS (SELECT 1 FROM tasks WHERE id = $1 AND owner = $2 \
             AND state IN ('running', 'recovering'))",
        )
        .bind(&task.id)
        .bind(&self.fleet.node)
        .fetch_one(&mut *tx)
        .await?;
        if !owned {
            return Err(StoreError::NotOwner(task.id.clone()));
        }
        let event = insert(&mut tx, &task.target(), body).await?;
        tx.commit().await?;
        self.feed.committed([event.clone()]);
        Ok(event)
    }

    pub(in crate::store) async fn update_task(
        &self,
        task: &TaskRow,
        guard: TaskGuard,
        change: &Transition<'_>,
    ) -> Result<Option<LiveEvent>, StoreError> {
        let mut tx = self.begin().await?;
        // A task that runs holds a lease from now on; one that does not, holds none.
        let holds_lease = change.holds_lease();
        let (owner, from) = match guard {
            TaskGuard::Owner => (Some(self.fleet.node.as_str()), None),
            TaskGuard::From(from) => (None, Some(from.as_str())),
        };
        let sql = format!(
            "UPDATE tasks SET state = $1, verdict = $2, final_message = COALESCE($3, final_message), \
             updated_at_ms = {DB_NOW_MS}, \
             stop_requested_at_ms = CASE WHEN $4 THEN stop_requested_at_ms ELSE NULL END, \
             heartbeat_at_ms = CASE WHEN $4 THEN {DB_NOW_MS} ELSE heartbeat_at_ms END, \
             lease_expires_at_ms = CASE WHEN $4 THEN {DB_NOW_MS} + $5 ELSE NULL END WHERE id = $6 \
             AND ($7::TEXT IS NULL OR (owner = $7 AND state IN ('running', 'recovering'))) \
             AND ($8::TEXT IS NULL OR state = $8)"
        );
        let done = sqlx::query(&sql)
            .bind(change.state.as_str())
            .bind(change.verdict.map(verdict_str))
            .bind(change.message)
            .bind(holds_lease)
            .bind(self.fleet.lease_ttl_ms)
            .bind(&task.id)
            .bind(owner)
            .bind(from)
            .execute(&mut *tx)
            .await?;
        if done.rows_affected() == 0 {
            let found: Option<String> = sqlx::query_scalar("SELECT state FROM tasks WHERE id = $1")
                .bind(&task.id)
                .fetch_optional(&mut *tx)
                .await?;
            return Err(match guard {
                TaskGuard::Owner => StoreError::NotOwner(task.id.clone()),
                TaskGuard::From(_) => StoreError::Changed {
                    task: task.id.clone(),
                    found: state_name(found),
                },
            });
        }
        let mut before = Vec::with_capacity(change.before.len());
        for body in change.before {
            before.push(insert(&mut tx, &task.target(), body).await?);
        }
        let event = insert(&mut tx, &task.target(), change.body).await?;
        tx.commit().await?;
        let first = before.first().cloned();
        self.feed.committed(before.into_iter().chain([event]));
        Ok(first)
    }
}

/// Inserts a queued task for the live agent `agent` in its own thread, with its
/// `task_created` event, on the writer's open transaction (so the caller can record more in
/// the same one). The caller commits, then publishes the event.
pub(super) async fn insert_task(
    tx: &mut PgConnection,
    agent: &str,
    objective: &str,
    workspace: &str,
) -> Result<(TaskRow, LiveEvent), StoreError> {
    let found: Option<(i64, String, Option<String>, String)> = sqlx::query_as(
        "SELECT id, instructions, model, mcp FROM agents \
         WHERE name = $1 AND deleted_at_ms IS NULL",
    )
    .bind(agent)
    .fetch_optional(&mut *tx)
    .await?;
    let (agent_id, instructions, model, mcp) =
        found.ok_or_else(|| StoreError::NoSuchAgent(agent.to_owned()))?;
    let row = TaskRow {
        mcp,
        ..TaskRow::queued(agent_id, agent, instructions, model, objective, workspace)
    };
    insert_task_row(tx, row).await
}

/// Inserts `row` (its id, thread and times are made here) with its thread and `task_created`.
async fn insert_task_row(
    tx: &mut PgConnection,
    mut row: TaskRow,
) -> Result<(TaskRow, LiveEvent), StoreError> {
    let now = now_ms();
    row.stamp(now);
    sqlx::query(
        "INSERT INTO threads (id, agent_id, kind, created_at_ms) VALUES ($1, $2, 'task', $3)",
    )
    .bind(&row.thread)
    .bind(row.agent_id)
    .bind(now)
    .execute(&mut *tx)
    .await?;
    sqlx::query(
        "INSERT INTO tasks (id, agent_id, thread_id, objective, workspace, state, parent_id, \
         tools, created_at_ms, updated_at_ms) VALUES ($1, $2, $3, $4, $5, 'queued', $6, $7, $8, $9)",
    )
    .bind(&row.id)
    .bind(row.agent_id)
    .bind(&row.thread)
    .bind(&row.objective)
    .bind(&row.workspace)
    .bind(&row.parent_id)
    .bind(&row.tools)
    .bind(now)
    .bind(now)
    .execute(&mut *tx)
    .await?;
    let body = EventBody::TaskCreated {
        objective: row.objective.clone(),
        workspace: row.workspace.clone(),
    };
    let event = insert(tx, &row.target(), &body).await?;
    Ok((row, event))
}
