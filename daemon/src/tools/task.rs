//! The narrow interface a tool sees of its task and agent, implemented by the agent runtime
//! (`agent::scope`), so that `tools/` never imports `agent/`.
//!
//! Everything a handler may do to its own task goes through here: record an event in it,
//! read its plan, see its live commands and subagents, reach its agent's memory, and start,
//! follow or stop its subagents. Store failures come back as [`StoreError`] (a handler's `?`
//! turns them into [`ToolError::Fatal`](super::ToolError::Fatal)); refusals the model can act
//! on come back as [`Refused`].

use futures_util::future::BoxFuture;
use lazyboy_protocol::{EventBody, PlanStep};

use crate::store::conversation::{Line, Query};
use crate::store::{Store, StoreError};

/// A refusal or failure the model is told about (the turn goes on).
#[derive(Debug, thiserror::Error)]
pub enum ScopeError {
    #[error("{0}")]
    Refused(String),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// A subagent as its parent sees it.
#[derive(Debug, Clone)]
pub struct SubagentView {
    pub id: String,
    pub state: String,
    pub verdict: Option<String>,
    pub final_message: Option<String>,
    /// Whether it has ended (its state is final).
    pub ended: bool,
}

/// What a tool may do to its task and agent.
pub trait TaskScope: Send + Sync {
    /// The task's id.
    fn task_id(&self) -> &str;
    /// Whether this task is a subagent (it has a parent).
    fn is_subagent(&self) -> bool;
    /// Appends an event to the task's thread (persisted, then broadcast).
    fn record(&self, body: EventBody) -> BoxFuture<'_, Result<(), StoreError>>;
    /// The plan as it now stands (from the task's log).
    fn plan(&self) -> BoxFuture<'_, Result<Vec<PlanStep>, StoreError>>;
    /// Ids of the task's commands still running.
    fn running_commands(&self) -> Vec<String>;
    /// Ids of the task's subagents that have not ended.
    fn live_subagents(&self) -> BoxFuture<'_, Result<Vec<String>, StoreError>>;
    /// The agent's private memory.
    fn memory(&self) -> Memory;
    /// The agent's conversation across its tasks.
    fn conversation(&self) -> Conversation;
    /// Whether this task could hand the tool `name` to a subagent.
    fn grantable(&self, name: &str) -> bool;
    /// Starts a subagent on `objective` (limited to `tools` when given); its id.
    fn spawn_subagent<'a>(
        &'a self,
        objective: &'a str,
        tools: Option<Vec<String>>,
    ) -> BoxFuture<'a, Result<String, ScopeError>>;
    /// One of this task's subagents.
    fn subagent<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<SubagentView, ScopeError>>;
    /// Sends one of this task's subagents a new instruction.
    fn message_subagent<'a>(
        &'a self,
        id: &'a str,
        text: &'a str,
    ) -> BoxFuture<'a, Result<(), ScopeError>>;
    /// Stops one of this task's subagents; `false` if it had already ended.
    fn stop_subagent<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<bool, ScopeError>>;
}

/// One agent's memory: every statement names the agent, so no call through this handle can
/// read or change another agent's memories.
#[derive(Clone)]
pub struct Memory {
    store: Store,
    agent_id: i64,
}

impl Memory {
    pub fn new(store: Store, agent_id: i64) -> Memory {
        Memory { store, agent_id }
    }

    pub async fn write(&self, key: Option<&str>, text: &str) -> Result<(), StoreError> {
        self.store.memory_write(self.agent_id, key, text).await
    }

    pub async fn search(
        &self,
        query: &str,
        limit: u32,
    ) -> Result<Vec<(Option<String>, String)>, StoreError> {
        self.store.memory_search(self.agent_id, query, limit).await
    }

    pub async fn forget(&self, key: &str) -> Result<bool, StoreError> {
        self.store.memory_forget(self.agent_id, key).await
    }
}

/// One agent's conversation across its tasks (and any event of its by seq): every statement
/// names the agent.
#[derive(Clone)]
pub struct Conversation {
    store: Store,
    agent_id: i64,
}

impl Conversation {
    pub fn new(store: Store, agent_id: i64) -> Conversation {
        Conversation { store, agent_id }
    }

    pub async fn search(&self, query: &Query) -> Result<Vec<Line>, StoreError> {
        self.store.search_conversation(self.agent_id, query).await
    }

    /// One of the agent's events, whole: its kind and data.
    pub async fn event(&self, seq: i64) -> Result<Option<(String, serde_json::Value)>, StoreError> {
        self.store.agent_event(self.agent_id, seq).await
    }
}
