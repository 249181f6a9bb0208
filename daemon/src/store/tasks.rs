//! Tasks: rows for their current state, events for their history.
//!
//! A task's row (state, verdict, final message, owner, lease) is a summary that every state
//! change updates in the same transaction as the event recording it, so the two never
//! disagree. Every state change carries a precondition ([`TaskGuard`]): the owner's loop
//! writes only while it still holds the claim; anyone else moves a task only from the state
//! they read (a compare-and-set), so two daemons never both win a transition.

use lazyboy_protocol::{EventBody, Task, TaskState, Usage, Verdict};

use super::claims::TaskGuard;
use super::events::{LiveEvent, Target};
use super::{Store, StoreError};

/// How long a running task's lease lasts without renewal by default
/// (`LAZYBOY_LEASE_TTL_MS` changes it); the runtime renews it every third of that. A lease
/// that ran out means the loop is gone (or its daemon is): any daemon may recover the task.
pub const DEFAULT_LEASE_TTL_MS: i64 = 30_000;

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
    #[sqlx(flatten)]
    pub sums: UsageSums,
    /// The node that claimed it (where it runs, or last ran).
    pub owner: Option<String>,
    /// The agent's MCP servers (a JSON list of names), as they are now.
    pub mcp: String,
}

/// Token and cost sums: a task's, or an agent's over all its tasks.
#[derive(Debug, Clone, Default, sqlx::FromRow)]
pub struct UsageSums {
    pub input_tokens: i64,
    pub cached_tokens: i64,
    pub output_tokens: i64,
    pub usage_estimated: bool,
    pub cost_microusd: Option<i64>,
}

impl UsageSums {
    /// The API's view (the sums are `i64`; counts are never negative).
    pub fn usage(&self) -> Usage {
        let count = |n: i64| u64::try_from(n).unwrap_or(0);
        Usage {
            input_tokens: count(self.input_tokens),
            cached_tokens: count(self.cached_tokens),
            output_tokens: count(self.output_tokens),
            estimated: self.usage_estimated,
            cost_microusd: self.cost_microusd.map(count),
        }
    }
}

impl TaskRow {
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

    pub(super) fn target(&self) -> Target<'_> {
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
        let usage = row.sums.usage();
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
            node: row.owner,
        }
    }
}

/// The task columns, the same text on both backends (no placeholders, no dialect).
pub(super) const SELECT_TASK: &str = "SELECT t.id, t.agent_id, a.name AS agent, a.instructions, \
    a.model, t.thread_id AS thread, t.objective, t.workspace, t.state, t.verdict, \
    t.final_message, t.created_at_ms, t.updated_at_ms, t.parent_id, t.tools, \
    t.heartbeat_at_ms, t.lease_expires_at_ms, t.input_tokens, t.cached_tokens, \
    t.output_tokens, t.usage_estimated, t.cost_microusd, t.owner, a.mcp \
    FROM tasks t JOIN agents a ON a.id = t.agent_id";

/// A verdict as its column holds it.
pub(super) fn verdict_str(verdict: Verdict) -> String {
    match serde_json::to_value(verdict) {
        Ok(serde_json::Value::String(s)) => s,
        _ => String::new(),
    }
}

/// A task's state change, with what it records.
pub(crate) struct Transition<'a> {
    pub state: TaskState,
    /// When it ends: its verdict and final message.
    pub verdict: Option<Verdict>,
    pub message: Option<&'a str>,
    /// Appended in order just before the state's event, in the same transaction (an answer,
    /// a message that continues the task, an approval's decision).
    pub before: &'a [EventBody],
    /// The state's event (`task_state`, `task_finished`).
    pub body: &'a EventBody,
}

impl<'a> Transition<'a> {
    fn to(state: TaskState, body: &'a EventBody) -> Transition<'a> {
        Transition {
            state,
            verdict: None,
            message: None,
            before: &[],
            body,
        }
    }

    /// Whether the task holds a lease in its new state.
    pub(super) fn holds_lease(&self) -> bool {
        matches!(self.state, TaskState::Running | TaskState::Recovering)
    }
}

/// Every kind of event a task's history is rebuilt from (deltas are display-only).
pub(super) fn history_rows(rows: Vec<(i64, String, String)>) -> Vec<(i64, EventBody)> {
    rows.into_iter()
        .filter_map(|(seq, kind, data)| {
            let data = serde_json::from_str(&data).ok()?;
            Some((seq, EventBody::from_parts(&kind, data)?))
        })
        .collect()
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

    /// Every event of a task, in order, as typed bodies (unknown kinds are skipped).
    pub async fn task_history(&self, id: &str) -> Result<Vec<(i64, EventBody)>, StoreError> {
        self.task_history_after(id, 0).await
    }

    /// The running task's loop moves it to `state`, logging `task_state`; only while this
    /// node holds its claim.
    pub async fn set_task_state(&self, task: &TaskRow, state: TaskState) -> Result<(), StoreError> {
        let body = EventBody::TaskState { state };
        self.update_task(task, TaskGuard::Owner, &Transition::to(state, &body))
            .await?;
        Ok(())
    }

    /// The running task's loop ends its turn with `verdict`, logging `task_finished`; only
    /// while this node holds its claim.
    pub async fn finish_task(
        &self,
        task: &TaskRow,
        verdict: Verdict,
        message: &str,
    ) -> Result<(), StoreError> {
        self.finish_task_guarded(task, TaskGuard::Owner, verdict, message)
            .await
    }

    /// Ends a task that is not running, from `from` (a stop of a queued or waiting task, an
    /// agent's removal); [`StoreError::Changed`] if it was no longer in `from`.
    pub async fn end_task(
        &self,
        task: &TaskRow,
        from: TaskState,
        verdict: Verdict,
        message: &str,
    ) -> Result<(), StoreError> {
        self.finish_task_guarded(task, TaskGuard::From(from), verdict, message)
            .await
    }

    /// Queues a task that is not running again, from `from` (an answer to its question, a
    /// continue, a message to an ended task), appending `before` first in the same
    /// transaction so no daemon can start it without it; returns that event.
    /// [`StoreError::Changed`] if it was no longer in `from` (nothing is written).
    pub async fn requeue(
        &self,
        task: &TaskRow,
        from: TaskState,
        before: &EventBody,
    ) -> Result<LiveEvent, StoreError> {
        self.requeue_with(task, from, std::slice::from_ref(before))
            .await
    }

    /// [`Store::requeue`] appending each of `before` (at least one), in order; returns the
    /// first one's event.
    pub async fn requeue_with(
        &self,
        task: &TaskRow,
        from: TaskState,
        before: &[EventBody],
    ) -> Result<LiveEvent, StoreError> {
        let body = EventBody::TaskState {
            state: TaskState::Queued,
        };
        let change = Transition {
            before,
            ..Transition::to(TaskState::Queued, &body)
        };
        self.update_task(task, TaskGuard::From(from), &change)
            .await?
            .ok_or_else(|| StoreError::NoSuchTask(task.id.clone()))
    }

    async fn finish_task_guarded(
        &self,
        task: &TaskRow,
        guard: TaskGuard,
        verdict: Verdict,
        message: &str,
    ) -> Result<(), StoreError> {
        // The row keeps the final message as well as the event: redacted the same.
        let message = &*crate::redact::text(message);
        let body = EventBody::TaskFinished {
            verdict,
            message: message.to_owned(),
        };
        let change = Transition {
            verdict: Some(verdict),
            message: Some(message),
            ..Transition::to(verdict.final_state(), &body)
        };
        self.update_task(task, guard, &change).await?;
        Ok(())
    }
}
