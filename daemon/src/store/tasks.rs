//! Tasks: rows for their current state, events for their history.
//!
//! A task's row (state, verdict, final message) is a summary that every state change updates
//! in the same transaction as the event recording it, so the two never disagree.

use lazyboy_protocol::{EventBody, Task, TaskState, Usage, Verdict};
use sqlx::{Connection, SqliteConnection};

use super::events::{LiveEvent, Target, insert};
use super::{Store, StoreError, now_ms};

/// How long a running task's lease lasts without renewal. The loop renews it every
/// [`LEASE_RENEW_MS`]; a lease that ran out means the loop is gone (or the daemon is).
pub const LEASE_TTL_MS: i64 = 30_000;
/// How often the runtime renews the leases of running tasks.
pub const LEASE_RENEW_MS: u64 = 10_000;

/// A task, with what the runtime needs to append to it.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct TaskRow {
    pub id: String,
    pub agent_id: i64,
    pub agent: String,
    pub instructions: String,
    pub model: Option<String>,
    pub thread: String,
    pub objective: String,
    pub workspace: String,
    pub state: String,
    pub verdict: Option<String>,
    pub final_message: Option<String>,
    pub created_at_ms: i64,
    pub updated_at_ms: i64,
    pub parent_id: Option<String>,
    /// For a subagent: the JSON list of tools it may use (`None`: all a subagent may have).
    pub tools: Option<String>,
    pub heartbeat_at_ms: Option<i64>,
    pub lease_expires_at_ms: Option<i64>,
    pub input_tokens: i64,
    pub cached_tokens: i64,
    pub output_tokens: i64,
    pub usage_estimated: bool,
    pub cost_microusd: Option<i64>,
    /// The agent's MCP servers (a JSON list of names), as they are now.
    pub mcp: String,
}

impl TaskRow {
    /// Its tokens and cost so far.
    pub fn usage(&self) -> Usage {
        usage(
            self.input_tokens,
            self.cached_tokens,
            self.output_tokens,
            self.usage_estimated,
            self.cost_microusd,
        )
    }

    /// The MCP servers whose tools the task gets (its agent's).
    pub fn mcp_servers(&self) -> Vec<String> {
        serde_json::from_str(&self.mcp).unwrap_or_default()
    }

    /// The tools a subagent was limited to, if any.
    pub fn allowed_tools(&self) -> Option<Vec<String>> {
        self.tools
            .as_deref()
            .and_then(|json| serde_json::from_str(json).ok())
    }

    pub fn state(&self) -> TaskState {
        TaskState::parse(&self.state).unwrap_or(TaskState::Failed)
    }

    fn target(&self) -> Target<'_> {
        Target {
            agent_id: self.agent_id,
            agent: &self.agent,
            thread: &self.thread,
            task: Some(&self.id),
        }
    }
}

impl From<TaskRow> for Task {
    fn from(row: TaskRow) -> Task {
        let usage = row.usage();
        Task {
            state: row.state(),
            verdict: row
                .verdict
                .as_deref()
                .and_then(|v| serde_json::from_value(serde_json::Value::String(v.into())).ok()),
            id: row.id,
            agent: row.agent,
            thread: row.thread,
            objective: row.objective,
            workspace: row.workspace,
            final_message: row.final_message,
            created_at_ms: row.created_at_ms,
            updated_at_ms: row.updated_at_ms,
            parent: row.parent_id,
            heartbeat_at_ms: row.heartbeat_at_ms,
            lease_expires_at_ms: row.lease_expires_at_ms,
            usage,
        }
    }
}

/// Usage from summed columns (SQLite sums are `i64`; counts are never negative).
pub fn usage(input: i64, cached: i64, output: i64, estimated: bool, cost: Option<i64>) -> Usage {
    let count = |n: i64| u64::try_from(n).unwrap_or(0);
    Usage {
        input_tokens: count(input),
        cached_tokens: count(cached),
        output_tokens: count(output),
        estimated,
        cost_microusd: cost.map(count),
    }
}

pub(super) const SELECT_TASK: &str = "SELECT t.id, t.agent_id, a.name AS agent, a.instructions, a.model, \
                           t.thread_id AS thread, t.objective, t.workspace, t.state, t.verdict, \
                           t.final_message, t.created_at_ms, t.updated_at_ms, t.parent_id, \
                           t.tools, t.heartbeat_at_ms, t.lease_expires_at_ms, \
                           t.input_tokens, t.cached_tokens, t.output_tokens, \
                           t.usage_estimated, t.cost_microusd, a.mcp \
                           FROM tasks t JOIN agents a ON a.id = t.agent_id";

fn verdict_str(verdict: Verdict) -> String {
    match serde_json::to_value(verdict) {
        Ok(serde_json::Value::String(s)) => s,
        _ => String::new(),
    }
}

impl Store {
    /// Creates a task for the live agent `agent` in its own thread, and logs `task_created`.
    pub async fn create_task(
        &self,
        agent: &str,
        objective: &str,
        workspace: &str,
    ) -> Result<TaskRow, StoreError> {
        Ok(self
            .create_task_logged(agent, objective, workspace)
            .await?
            .0)
    }

    /// [`Store::create_task`], also returning the `task_created` event.
    pub async fn create_task_logged(
        &self,
        agent: &str,
        objective: &str,
        workspace: &str,
    ) -> Result<(TaskRow, LiveEvent), StoreError> {
        let mut writer = self.inner.writer.lock().await;
        let mut tx = writer.begin().await?;
        let (row, event) = Store::insert_task(&mut tx, agent, objective, workspace).await?;
        tx.commit().await?;
        self.inner.bus.publish(event.clone());
        Ok((row, event))
    }

    /// Inserts a queued task for the live agent `agent` in its own thread, with its
    /// `task_created` event, on the writer's open transaction (so the caller can record more
    /// in the same one). The caller commits, then publishes the event.
    pub(super) async fn insert_task(
        tx: &mut SqliteConnection,
        agent: &str,
        objective: &str,
        workspace: &str,
    ) -> Result<(TaskRow, LiveEvent), StoreError> {
        let found: Option<(i64, String, Option<String>, String)> = sqlx::query_as(
            "SELECT id, instructions, model, mcp FROM agents \
             WHERE name = ? AND deleted_at_ms IS NULL",
        )
        .bind(agent)
        .fetch_optional(&mut *tx)
        .await?;
        let (agent_id, instructions, model, mcp) =
            found.ok_or_else(|| StoreError::NoSuchAgent(agent.to_owned()))?;
        let row = TaskRow {
            id: String::new(),
            agent_id,
            agent: agent.to_owned(),
            instructions,
            model,
            thread: String::new(),
            objective: objective.to_owned(),
            workspace: workspace.to_owned(),
            state: TaskState::Queued.as_str().to_owned(),
            verdict: None,
            final_message: None,
            created_at_ms: 0,
            updated_at_ms: 0,
            parent_id: None,
            tools: None,
            heartbeat_at_ms: None,
            lease_expires_at_ms: None,
            input_tokens: 0,
            cached_tokens: 0,
            output_tokens: 0,
            usage_estimated: false,
            cost_microusd: None,
            mcp,
        };
        insert_task_row(tx, row).await
    }

    /// Creates a subagent of `parent` (same agent and workspace, limited to `tools` when
    /// given), queued; logs `subagent_spawned` in the parent and `task_created` in the child.
    pub async fn create_subagent(
        &self,
        parent: &TaskRow,
        objective: &str,
        tools: Option<&[String]>,
    ) -> Result<TaskRow, StoreError> {
        let mut writer = self.inner.writer.lock().await;
        let mut tx = writer.begin().await?;
        let row = TaskRow {
            id: String::new(),
            thread: String::new(),
            objective: objective.to_owned(),
            state: TaskState::Queued.as_str().to_owned(),
            verdict: None,
            final_message: None,
            parent_id: Some(parent.id.clone()),
            tools: tools.map(|t| serde_json::Value::from(t.to_vec()).to_string()),
            heartbeat_at_ms: None,
            lease_expires_at_ms: None,
            input_tokens: 0,
            cached_tokens: 0,
            output_tokens: 0,
            usage_estimated: false,
            cost_microusd: None,
            ..parent.clone()
        };
        let (row, created) = insert_task_row(&mut tx, row).await?;
        let spawned = EventBody::SubagentSpawned {
            task: row.id.clone(),
            objective: objective.to_owned(),
        };
        let noted = insert(&mut tx, &parent.target(), &spawned).await?;
        tx.commit().await?;
        self.inner.bus.publish(created);
        self.inner.bus.publish(noted);
        Ok(row)
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
        let as_i64 = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
        let mut writer = self.inner.writer.lock().await;
        let mut tx = writer.begin().await?;
        sqlx::query(
            "UPDATE tasks SET input_tokens = input_tokens + ?1, cached_tokens = cached_tokens + ?2, \
             output_tokens = output_tokens + ?3, usage_estimated = usage_estimated OR ?4, \
             cost_microusd = CASE WHEN ?5 IS NULL THEN cost_microusd \
             ELSE COALESCE(cost_microusd, 0) + ?5 END \
             WHERE id = ?6",
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
        self.inner.bus.publish(event);
        Ok(())
    }

    /// The subagents of `parent`, oldest first.
    pub async fn subagents(&self, parent: &str) -> Result<Vec<TaskRow>, StoreError> {
        let sql = format!("{SELECT_TASK} WHERE t.parent_id = ? ORDER BY t.created_at_ms, t.id");
        Ok(sqlx::query_as(&sql)
            .bind(parent)
            .fetch_all(&self.inner.reader)
            .await?)
    }

    /// Renews the leases of these running tasks: one statement, no event (a lease is state,
    /// not history).
    pub async fn renew_leases(&self, ids: &[String]) -> Result<(), StoreError> {
        if ids.is_empty() {
            return Ok(());
        }
        let now = now_ms();
        let placeholders = vec!["?"; ids.len()].join(",");
        let sql = format!(
            "UPDATE tasks SET heartbeat_at_ms = ?, lease_expires_at_ms = ? \
             WHERE state IN ('running', 'recovering') AND id IN ({placeholders})"
        );
        let mut query = sqlx::query(&sql).bind(now).bind(now + LEASE_TTL_MS);
        for id in ids {
            query = query.bind(id);
        }
        let mut writer = self.inner.writer.lock().await;
        query.execute(&mut *writer).await?;
        Ok(())
    }

    /// The task with this id.
    pub async fn task(&self, id: &str) -> Result<TaskRow, StoreError> {
        let sql = format!("{SELECT_TASK} WHERE t.id = ?");
        sqlx::query_as(&sql)
            .bind(id)
            .fetch_optional(&self.inner.reader)
            .await?
            .ok_or_else(|| StoreError::NoSuchTask(id.to_owned()))
    }

    /// Tasks in any of `states`, oldest first.
    pub async fn tasks_in(&self, states: &[TaskState]) -> Result<Vec<TaskRow>, StoreError> {
        let names: Vec<String> = states.iter().map(|s| format!("'{}'", s.as_str())).collect();
        let sql = format!(
            "{SELECT_TASK} WHERE t.state IN ({}) ORDER BY t.created_at_ms, t.id",
            names.join(",")
        );
        Ok(sqlx::query_as(&sql).fetch_all(&self.inner.reader).await?)
    }

    /// Tasks, newest first, optionally of one agent (by name) and in one state.
    pub async fn list_tasks(
        &self,
        agent: Option<&str>,
        state: Option<TaskState>,
        limit: u32,
    ) -> Result<Vec<TaskRow>, StoreError> {
        let sql = format!(
            "{SELECT_TASK} WHERE (?1 IS NULL OR a.name = ?1) AND (?2 IS NULL OR t.state = ?2) \
             ORDER BY t.created_at_ms DESC, t.id DESC LIMIT ?3"
        );
        Ok(sqlx::query_as(&sql)
            .bind(agent)
            .bind(state.map(TaskState::as_str))
            .bind(limit)
            .fetch_all(&self.inner.reader)
            .await?)
    }

    /// Every event of a task, in order, as typed bodies (unknown kinds are skipped).
    pub async fn task_history(&self, id: &str) -> Result<Vec<(i64, EventBody)>, StoreError> {
        self.task_history_after(id, 0).await
    }

    /// The task's events after `after`, in order, as typed bodies.
    pub async fn task_history_after(
        &self,
        id: &str,
        after: i64,
    ) -> Result<Vec<(i64, EventBody)>, StoreError> {
        // Deltas are display-only; the conversation is rebuilt from the whole replies.
        let rows: Vec<(i64, String, String)> = sqlx::query_as(
            "SELECT seq, kind, data FROM events WHERE task_id = ? AND seq > ? \
             AND kind <> 'assistant_delta' ORDER BY seq",
        )
        .bind(id)
        .bind(after)
        .fetch_all(&self.inner.reader)
        .await?;
        Ok(rows
            .into_iter()
            .filter_map(|(seq, kind, data)| {
                let data = serde_json::from_str(&data).ok()?;
                Some((seq, EventBody::from_parts(&kind, data)?))
            })
            .collect())
    }

    /// Appends an event to the task's thread.
    pub async fn append_to_task(
        &self,
        task: &TaskRow,
        body: &EventBody,
    ) -> Result<LiveEvent, StoreError> {
        let mut writer = self.inner.writer.lock().await;
        let event = insert(&mut writer, &task.target(), body).await?;
        self.inner.bus.publish(event.clone());
        Ok(event)
    }

    /// Moves the task to `state`, logging `task_state`.
    pub async fn set_task_state(&self, task: &TaskRow, state: TaskState) -> Result<(), StoreError> {
        self.update_task(task, state, None, None, &EventBody::TaskState { state })
            .await
    }

    /// Ends the task's turn with `verdict`, logging `task_finished`.
    pub async fn finish_task(
        &self,
        task: &TaskRow,
        verdict: Verdict,
        message: &str,
    ) -> Result<(), StoreError> {
        let body = EventBody::TaskFinished {
            verdict,
            message: message.to_owned(),
        };
        self.update_task(
            task,
            verdict.final_state(),
            Some(verdict),
            Some(message),
            &body,
        )
        .await
    }

    async fn update_task(
        &self,
        task: &TaskRow,
        state: TaskState,
        verdict: Option<Verdict>,
        message: Option<&str>,
        body: &EventBody,
    ) -> Result<(), StoreError> {
        let mut writer = self.inner.writer.lock().await;
        let mut tx = writer.begin().await?;
        let now = now_ms();
        // A task that runs holds a lease from now on; one that does not, holds none.
        let holds_lease = matches!(state, TaskState::Running | TaskState::Recovering);
        sqlx::query(
            "UPDATE tasks SET state = ?, verdict = ?, final_message = COALESCE(?, final_message), \
             updated_at_ms = ?, \
             heartbeat_at_ms = CASE WHEN ? THEN ? ELSE heartbeat_at_ms END, \
             lease_expires_at_ms = CASE WHEN ? THEN ? ELSE NULL END WHERE id = ?",
        )
        .bind(state.as_str())
        .bind(verdict.map(verdict_str))
        .bind(message)
        .bind(now)
        .bind(holds_lease)
        .bind(now)
        .bind(holds_lease)
        .bind(now + LEASE_TTL_MS)
        .bind(&task.id)
        .execute(&mut *tx)
        .await?;
        let event = insert(&mut tx, &task.target(), body).await?;
        tx.commit().await?;
        self.inner.bus.publish(event);
        Ok(())
    }
}

/// Inserts `row` (its id, thread and times are made here) with its thread and `task_created`.
async fn insert_task_row(
    tx: &mut SqliteConnection,
    mut row: TaskRow,
) -> Result<(TaskRow, LiveEvent), StoreError> {
    let now = now_ms();
    row.id = format!("t-{}", uuid::Uuid::now_v7().simple());
    row.thread = uuid::Uuid::now_v7().to_string();
    row.created_at_ms = now;
    row.updated_at_ms = now;
    sqlx::query("INSERT INTO threads (id, agent_id, kind, created_at_ms) VALUES (?, ?, 'task', ?)")
        .bind(&row.thread)
        .bind(row.agent_id)
        .bind(now)
        .execute(&mut *tx)
        .await?;
    sqlx::query(
        "INSERT INTO tasks (id, agent_id, thread_id, objective, workspace, state, parent_id, \
         tools, created_at_ms, updated_at_ms) VALUES (?, ?, ?, ?, ?, 'queued', ?, ?, ?, ?)",
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
