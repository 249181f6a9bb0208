//! Agents and their chat threads. Every change here appends an event in the same transaction.

use std::path::Path;

use lazyboy_protocol::{Agent, AgentState, EventBody, TaskState};

use super::StoreError;
use super::boundaries::{Boundaries, BoundaryChange};
use super::events::Target;
use super::tasks::UsageSums;

/// A live (not deleted) agent with its chat thread.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct AgentRow {
    pub id: i64,
    pub name: String,
    pub instructions: String,
    pub model: Option<String>,
    /// `None`: the default workspace.
    pub workspace: Option<String>,
    pub created_at_ms: i64,
    pub thread: String,
    /// The top-level task the agent's state is about, with its state and lease.
    pub current_task: Option<String>,
    pub task_state: Option<String>,
    pub heartbeat_at_ms: Option<i64>,
    pub lease_expires_at_ms: Option<i64>,
    /// Sums over all its tasks.
    #[sqlx(flatten)]
    pub sums: UsageSums,
    /// The node its tasks are pinned to (`None`: any node).
    pub node: Option<String>,
    /// The JSON list of MCP server names its tasks get.
    pub mcp: String,
    /// What it may do without asking, and where its commands may write.
    #[sqlx(flatten)]
    pub boundaries: Boundaries,
}

impl AgentRow {
    /// The MCP servers its tasks get.
    pub fn mcp_servers(&self) -> Vec<String> {
        serde_json::from_str(&self.mcp).unwrap_or_default()
    }

    /// The directory the agent's tasks work in: its own, else `<workspaces>/<name>`.
    pub fn workspace_in(&self, workspaces: &Path) -> std::path::PathBuf {
        match &self.workspace {
            Some(dir) => dir.into(),
            None => workspaces.join(&self.name),
        }
    }

    /// The API's view, with the default workspace under `workspaces`.
    pub fn to_api(&self, workspaces: &Path) -> Agent {
        let state = match self.task_state.as_deref().and_then(TaskState::parse) {
            Some(TaskState::Running) => AgentState::Running,
            Some(TaskState::Recovering) => AgentState::Recovering,
            Some(TaskState::WaitingForHuman) => AgentState::WaitingForHuman,
            Some(TaskState::Queued) => AgentState::Queued,
            _ => AgentState::Idle,
        };
        Agent {
            name: self.name.clone(),
            instructions: self.instructions.clone(),
            model: self.model.clone(),
            workspace: self.workspace_in(workspaces).display().to_string(),
            thread: self.thread.clone(),
            created_at_ms: self.created_at_ms,
            state,
            current_task: self.current_task.clone(),
            heartbeat_at_ms: self.heartbeat_at_ms,
            lease_expires_at_ms: self.lease_expires_at_ms,
            usage: self.sums.usage(),
            node: self.node.clone(),
            mcp: self.mcp_servers(),
            approve: self.boundaries.approve(),
            allow: self.boundaries.allow(),
            sandbox: self.boundaries.sandbox(&self.name),
            git_write: self.boundaries.git_write,
        }
    }

    /// Applies an update's `Some` values (an empty model or workspace goes back to the
    /// default), as both backends' `update_agent_with` do before writing the row.
    pub(super) fn change(
        &mut self,
        instructions: Option<&str>,
        model: Option<&str>,
        workspace: Option<&str>,
        mcp: Option<&[String]>,
        boundaries: &BoundaryChange,
    ) {
        let cleared = |value: &str| (!value.is_empty()).then(|| value.to_owned());
        if let Some(instructions) = instructions {
            self.instructions = instructions.to_owned();
        }
        if let Some(model) = model {
            self.model = cleared(model);
        }
        if let Some(workspace) = workspace {
            self.workspace = cleared(workspace);
        }
        if let Some(mcp) = mcp {
            self.mcp = serde_json::to_string(mcp).unwrap_or_else(|_| "[]".to_owned());
        }
        self.boundaries = self.boundaries.clone().with(boundaries);
    }

    /// The `agent_updated` event of the row as it is now.
    pub(super) fn updated(&self) -> EventBody {
        EventBody::AgentUpdated {
            instructions: self.instructions.clone(),
            model: self.model.clone(),
            workspace: self.workspace.clone(),
            mcp: self.mcp_servers(),
        }
    }

    pub(super) fn target(&self) -> Target<'_> {
        Target {
            agent_id: self.id,
            agent: &self.name,
            thread: &self.thread,
            task: None,
        }
    }
}

impl super::Store {
    /// Creates an agent and its chat thread, and logs `agent_created`.
    pub async fn create_agent(
        &self,
        name: &str,
        instructions: &str,
        model: Option<&str>,
        workspace: Option<&str>,
    ) -> Result<AgentRow, StoreError> {
        let boundaries = BoundaryChange::default();
        self.create_agent_with(name, instructions, model, workspace, &boundaries)
            .await
    }

    /// Changes an agent's instructions, model, workspace or MCP servers (the `Some` ones; an
    /// empty model or workspace goes back to the default) and logs `agent_updated`.
    pub async fn update_agent(
        &self,
        name: &str,
        instructions: Option<&str>,
        model: Option<&str>,
        workspace: Option<&str>,
        mcp: Option<&[String]>,
    ) -> Result<AgentRow, StoreError> {
        let boundaries = BoundaryChange::default();
        self.update_agent_with(name, instructions, model, workspace, mcp, &boundaries)
            .await
    }
}
