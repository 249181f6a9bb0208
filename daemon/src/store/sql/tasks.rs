//! Tasks, once for both engines: creation, reads, usage, appends and guarded state changes.
//! Times a lease is computed from are the database's clock (`d::NOW_MS`).

use lazyboy_protocol::{EventBody, TaskState};

use super::events::insert;
use crate::store::claims::TaskGuard;
use crate::store::dialect::{Conn, on, read, write};
use crate::store::events::LiveEvent;
use crate::store::tasks::{SELECT_TASK, TaskRow, Transition, history_rows, verdict_str};
use crate::store::{Store, StoreError, int, now_ms, state_name};

impl Store {
    /// [`Store::create_task`], also returning the `task_created` event.
    pub async fn create_task_logged(
        &self,
        agent: &str,
        objective: &str,
        workspace: &str,
    ) -> Result<(TaskRow, LiveEvent), StoreError> {
        Ok(write!(self, |tx| {
            let (row, event) = insert_task(&mut *tx, agent, objective, workspace).await?;
            ((row, event.clone()), [event])
        }))
    }

    /// Creates a subagent of `parent` (same agent and workspace, limited to `tools` when
    /// given), queued; logs `subagent_spawned` in the parent and `task_created` in the child.
    pub async fn create_subagent(
        &self,
        parent: &TaskRow,
        objective: &str,
        tools: Option<&[String]>,
    ) -> Result<TaskRow, StoreError> {
        Ok(write!(self, |tx| {
            let tools = tools.map(|t| serde_json::Value::from(t.to_vec()).to_string());
            let (row, created) = insert_task_row(
                &mut *tx,
                parent.agent_id,
                objective,
                &parent.workspace,
                Some(&parent.id),
                tools,
            )
            .await?;
            let spawned = EventBody::SubagentSpawned {
                task: row.id.clone(),
                objective: objective.to_owned(),
            };
            let noted = insert(&mut *tx, &parent.target(), &spawned).await?;
            (row, [created, noted])
        }))
    }

    /// Records one model request's usage: the `model_usage` event and the task's sums, in one
    /// transaction. `cost_microusd` where the model is priced.
    pub async fn record_usage(
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
        write!(self, |tx| {
            sqlx::query(
                "UPDATE tasks SET input_tokens = input_tokens + $1, \
                 cached_tokens = cached_tokens + $2, output_tokens = output_tokens + $3, \
                 usage_estimated = usage_estimated OR $4, \
                 cost_microusd = CASE WHEN CAST($5 AS BIGINT) IS NULL THEN cost_microusd \
                 ELSE COALESCE(cost_microusd, 0) + $5 END \
                 WHERE id = $6",
            )
            .bind(int(*input_tokens))
            .bind(int(*cached_tokens))
            .bind(int(*output_tokens))
            .bind(*estimated)
            .bind(cost_microusd.map(int))
            .bind(&task.id)
            .execute(&mut *tx)
            .await?;
            ((), [insert(&mut *tx, &task.target(), usage).await?])
        });
        Ok(())
    }

    /// The subagents of `parent`, oldest first.
    pub async fn subagents(&self, parent: &str) -> Result<Vec<TaskRow>, StoreError> {
        let sql = format!("{SELECT_TASK} WHERE t.parent_id = $1 ORDER BY t.created_at_ms, t.id");
        Ok(read!(self, |c| {
            sqlx::query_as(&sql).bind(parent).fetch_all(c).await?
        }))
    }

    /// The task with this id.
    pub async fn task(&self, id: &str) -> Result<TaskRow, StoreError> {
        let sql = format!("{SELECT_TASK} WHERE t.id = $1");
        read!(self, |c| sqlx::query_as(&sql)
            .bind(id)
            .fetch_optional(c)
            .await?)
        .ok_or_else(|| StoreError::NoSuchTask(id.to_owned()))
    }

    /// Tasks in any of `states`, oldest first.
    pub async fn tasks_in(&self, states: &[TaskState]) -> Result<Vec<TaskRow>, StoreError> {
        let names: Vec<String> = states.iter().map(|s| format!("'{}'", s.as_str())).collect();
        let sql = format!(
            "{SELECT_TASK} WHERE t.state IN ({}) ORDER BY t.created_at_ms, t.id",
            names.join(",")
        );
        Ok(read!(self, |c| sqlx::query_as(&sql).fetch_all(c).await?))
    }

    /// Tasks, newest first, optionally of one agent (by name) and in one state.
    pub async fn list_tasks(
        &self,
        agent: Option<&str>,
        state: Option<TaskState>,
        limit: u32,
    ) -> Result<Vec<TaskRow>, StoreError> {
        let sql = format!(
            "{SELECT_TASK} WHERE (CAST($1 AS TEXT) IS NULL OR a.name = $1) \
             AND (CAST($2 AS TEXT) IS NULL OR t.state = $2) \
             ORDER BY t.created_at_ms DESC, t.id DESC LIMIT $3"
        );
        Ok(read!(self, |c| {
            sqlx::query_as(&sql)
                .bind(agent)
                .bind(state.map(TaskState::as_str))
                .bind(int(limit))
                .fetch_all(c)
                .await?
        }))
    }

    /// The task's events after `after`, in order, as typed bodies (unknown kinds and
    /// deltas are skipped).
    pub async fn task_history_after(
        &self,
        id: &str,
        after: i64,
    ) -> Result<Vec<(i64, EventBody)>, StoreError> {
        let rows: Vec<(i64, String, String)> = read!(self, |c| {
            sqlx::query_as(
                "SELECT seq, kind, CAST(data AS TEXT) FROM events WHERE task_id = $1 \
                 AND seq > $2 AND kind <> 'assistant_delta' ORDER BY seq",
            )
            .bind(id)
            .bind(after)
            .fetch_all(c)
            .await?
        });
        Ok(history_rows(rows))
    }

    /// Appends an event to the task's thread (anyone may: a person's message, an answer, a
    /// command's end).
    pub async fn append_to_task(
        &self,
        task: &TaskRow,
        body: &EventBody,
    ) -> Result<LiveEvent, StoreError> {
        self.append_one(&task.target(), body).await
    }

    /// Appends an event to the task's thread as the loop that runs it: only while this node
    /// holds the task's claim ([`StoreError::NotOwner`] otherwise), so a loop that lost its
    /// claim can record nothing, in particular no new call's intent.
    pub async fn append_as_owner(
        &self,
        task: &TaskRow,
        body: &EventBody,
    ) -> Result<LiveEvent, StoreError> {
        self.append_fenced(&task.target(), body, &self.fleet().node)
            .await
    }

    /// Applies `change` to the task if `guard` holds ([`StoreError::NotOwner`] or
    /// [`StoreError::Changed`] if not), in one transaction; returns the event of
    /// `change.before` if there was one.
    pub(crate) async fn update_task(
        &self,
        task: &TaskRow,
        guard: TaskGuard,
        change: &Transition<'_>,
    ) -> Result<Option<LiveEvent>, StoreError> {
        // A task that runs holds a lease from now on; one that does not, holds none.
        let holds_lease = change.holds_lease();
        let fleet = self.fleet();
        let (owner, from) = match guard {
            TaskGuard::Owner => (Some(fleet.node.as_str()), None),
            TaskGuard::From(from) => (None, Some(from.as_str())),
        };
        Ok(write!(self, |tx| {
            let sql = format!(
                "UPDATE tasks SET state = $1, verdict = $2, \
                 final_message = COALESCE($3, final_message), updated_at_ms = {now}, \
                 stop_requested_at_ms = CASE WHEN $4 THEN stop_requested_at_ms ELSE NULL END, \
                 heartbeat_at_ms = CASE WHEN $4 THEN {now} ELSE heartbeat_at_ms END, \
                 lease_expires_at_ms = CASE WHEN $4 THEN {now} + $5 ELSE NULL END \
                 WHERE id = $6 \
                 AND (CAST($7 AS TEXT) IS NULL \
                      OR (owner = $7 AND state IN ('running', 'recovering'))) \
                 AND (CAST($8 AS TEXT) IS NULL OR state = $8)",
                now = d::NOW_MS
            );
            let done = sqlx::query(&sql)
                .bind(change.state.as_str())
                .bind(change.verdict.map(verdict_str))
                .bind(change.message)
                .bind(holds_lease)
                .bind(fleet.lease_ttl_ms)
                .bind(&task.id)
                .bind(owner)
                .bind(from)
                .execute(&mut *tx)
                .await?;
            if done.rows_affected() == 0 {
                let found: Option<String> =
                    sqlx::query_scalar("SELECT state FROM tasks WHERE id = $1")
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
            let mut events = Vec::with_capacity(change.before.len() + 1);
            for body in change.before.iter().chain([change.body]) {
                events.push(insert(&mut *tx, &task.target(), body).await?);
            }
            let first = (!change.before.is_empty()).then(|| events[0].clone());
            (first, events)
        }))
    }
}

/// Inserts a queued task for the live agent `agent` in its own thread, with its
/// `task_created` event, on a write's open transaction (so the caller can record more in
/// the same one). The caller commits, then publishes the event.
pub(in crate::store) async fn insert_task<'c>(
    conn: impl Into<Conn<'c>>,
    agent: &str,
    objective: &str,
    workspace: &str,
) -> Result<(TaskRow, LiveEvent), StoreError> {
    let mut conn = conn.into();
    let found: Option<i64> = on!(conn.reborrow(), |c| {
        sqlx::query_scalar("SELECT id FROM agents WHERE name = $1 AND deleted_at_ms IS NULL")
            .bind(agent)
            .fetch_optional(&mut *c)
            .await?
    });
    let agent_id = found.ok_or_else(|| StoreError::NoSuchAgent(agent.to_owned()))?;
    insert_task_row(conn, agent_id, objective, workspace, None, None).await
}

/// Inserts a queued task of agent `agent_id` (for a subagent: its parent and the JSON list
/// of its tools) with its thread and `task_created`, and reads its row back.
async fn insert_task_row(
    conn: impl Into<Conn<'_>>,
    agent_id: i64,
    objective: &str,
    workspace: &str,
    parent: Option<&str>,
    tools: Option<String>,
) -> Result<(TaskRow, LiveEvent), StoreError> {
    let mut conn = conn.into();
    let (id, thread, now) = (
        format!("t-{}", uuid::Uuid::now_v7().simple()),
        uuid::Uuid::now_v7().to_string(),
        now_ms(),
    );
    let sql = format!("{SELECT_TASK} WHERE t.id = $1");
    let row: TaskRow = on!(conn.reborrow(), |c| {
        sqlx::query(
            "INSERT INTO threads (id, agent_id, kind, created_at_ms) VALUES ($1, $2, 'task', $3)",
        )
        .bind(&thread)
        .bind(agent_id)
        .bind(now)
        .execute(&mut *c)
        .await?;
        sqlx::query(
            "INSERT INTO tasks (id, agent_id, thread_id, objective, workspace, state, \
             parent_id, tools, created_at_ms, updated_at_ms) \
             VALUES ($1, $2, $3, $4, $5, 'queued', $6, $7, $8, $8)",
        )
        .bind(&id)
        .bind(agent_id)
        .bind(&thread)
        .bind(objective)
        .bind(workspace)
        .bind(parent)
        .bind(tools)
        .bind(now)
        .execute(&mut *c)
        .await?;
        sqlx::query_as(&sql).bind(&id).fetch_one(&mut *c).await?
    });
    let body = EventBody::TaskCreated {
        objective: row.objective.clone(),
        workspace: row.workspace.clone(),
    };
    let event = insert(conn, &row.target(), &body).await?;
    Ok((row, event))
}
