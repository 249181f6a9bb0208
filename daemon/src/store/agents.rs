//! Agents and their chat threads. Every change here appends an event in the same transaction.

use std::path::Path;

use lazyboy_protocol::{Agent, AgentState, Effect, EventBody, Sandbox, TaskState};
use sqlx::Connection;

use super::events::{LiveEvent, Target, insert, insert_into_chat};
use super::{Store, StoreError, now_ms};

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
    pub input_tokens: i64,
    pub cached_tokens: i64,
    pub output_tokens: i64,
    pub usage_estimated: bool,
    pub cost_microusd: Option<i64>,
    /// The JSON list of MCP server names its tasks get.
    pub mcp: String,
    /// What it may do without asking, and where its commands may write.
    #[sqlx(flatten)]
    pub boundaries: Boundaries,
}

/// An agent's boundaries as stored: the effects that need approval and the allow rules as
/// JSON lists, the sandbox by name (`None`: the default, see [`Boundaries::sandbox`]).
#[derive(Debug, Clone, sqlx::FromRow, PartialEq, Eq)]
pub struct Boundaries {
    pub approve: String,
    pub allow: String,
    pub sandbox: Option<String>,
}

impl Default for Boundaries {
    fn default() -> Boundaries {
        Boundaries {
            approve: "[]".to_owned(),
            allow: "[]".to_owned(),
            sandbox: None,
        }
    }
}

/// A change to an agent's boundaries: the `Some` parts replace what is stored.
#[derive(Debug, Clone, Default)]
pub struct BoundaryChange {
    pub approve: Option<Vec<Effect>>,
    pub allow: Option<Vec<String>>,
    pub sandbox: Option<Sandbox>,
}

impl Boundaries {
    /// Applies `change` (what it leaves out stays).
    pub fn with(mut self, change: &BoundaryChange) -> Boundaries {
        if let Some(approve) = &change.approve {
            self.approve =
                serde_json::Value::from(approve.iter().map(|e| e.as_str()).collect::<Vec<_>>())
                    .to_string();
        }
        if let Some(allow) = &change.allow {
            self.allow = serde_json::Value::from(allow.clone()).to_string();
        }
        if let Some(sandbox) = change.sandbox {
            self.sandbox = Some(sandbox.as_str().to_owned());
        }
        self
    }

    /// The effects whose calls wait for approval (unknown names are dropped).
    pub fn approve(&self) -> Vec<Effect> {
        serde_json::from_str::<Vec<serde_json::Value>>(&self.approve)
            .unwrap_or_default()
            .into_iter()
            .filter_map(|v| serde_json::from_value(v).ok())
            .collect()
    }

    /// The `exec_command` rules that need no approval.
    pub fn allow(&self) -> Vec<String> {
        serde_json::from_str(&self.allow).unwrap_or_default()
    }

    /// The sandbox in force for `agent`: the stored one, else `off` for the `default`
    /// agent (what `lazyboy run` uses in a project directory, as before) and
    /// `workspace-write` for named ones.
    pub fn sandbox(&self, agent: &str) -> Sandbox {
        match self.sandbox.as_deref().and_then(Sandbox::parse) {
            Some(sandbox) => sandbox,
            None if agent == crate::DEFAULT_AGENT => Sandbox::Off,
            None => Sandbox::WorkspaceWrite,
        }
    }
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
            usage: super::tasks::usage(
                self.input_tokens,
                self.cached_tokens,
                self.output_tokens,
                self.usage_estimated,
                self.cost_microusd,
            ),
            mcp: self.mcp_servers(),
            approve: self.boundaries.approve(),
            allow: self.boundaries.allow(),
            sandbox: self.boundaries.sandbox(&self.name),
        }
    }
}

/// Live agents with the task that says what each is doing: the running one first, then one
/// waiting for the person, then the oldest queued one (subagents do not count).
pub(super) const SELECT_LIVE: &str = "SELECT a.id, a.name, a.instructions, a.model, a.workspace, \
    a.created_at_ms, t.id AS thread, c.id AS current_task, c.state AS task_state, \
    c.heartbeat_at_ms, c.lease_expires_at_ms, \
    COALESCE(u.input_tokens, 0) AS input_tokens, COALESCE(u.cached_tokens, 0) AS cached_tokens, \
    COALESCE(u.output_tokens, 0) AS output_tokens, \
    COALESCE(u.usage_estimated, 0) AS usage_estimated, u.cost_microusd, a.mcp, \
    a.approve, a.allow, a.sandbox \
    FROM agents a JOIN threads t ON t.agent_id = a.id AND t.kind = 'chat' \
    LEFT JOIN (SELECT agent_id, SUM(input_tokens) AS input_tokens, \
        SUM(cached_tokens) AS cached_tokens, SUM(output_tokens) AS output_tokens, \
        MAX(usage_estimated) AS usage_estimated, SUM(cost_microusd) AS cost_microusd \
        FROM tasks GROUP BY agent_id) u ON u.agent_id = a.id \
    LEFT JOIN tasks c ON c.id = (SELECT x.id FROM tasks x WHERE x.agent_id = a.id \
        AND x.parent_id IS NULL \
        AND x.state IN ('running', 'recovering', 'waiting_for_human', 'queued') \
        ORDER BY x.state IN ('running', 'recovering') DESC, \
        x.state = 'waiting_for_human' DESC, x.created_at_ms, x.id LIMIT 1) \
    WHERE a.deleted_at_ms IS NULL";

impl Store {
    /// Creates an agent and its chat thread, and logs `agent_created`.
    pub async fn create_agent(
        &self,
        name: &str,
        instructions: &str,
        model: Option<&str>,
        workspace: Option<&str>,
    ) -> Result<AgentRow, StoreError> {
        self.create_agent_with(
            name,
            instructions,
            model,
            workspace,
            &BoundaryChange::default(),
        )
        .await
    }

    /// [`Store::create_agent`] with its boundaries set in the same transaction.
    pub async fn create_agent_with(
        &self,
        name: &str,
        instructions: &str,
        model: Option<&str>,
        workspace: Option<&str>,
        boundaries: &BoundaryChange,
    ) -> Result<AgentRow, StoreError> {
        let boundaries = Boundaries::default().with(boundaries);
        let mut writer = self.inner.writer.lock().await;
        let mut tx = writer.begin().await?;
        let now = now_ms();
        let inserted = sqlx::query_scalar(
            "INSERT INTO agents (name, instructions, model, workspace, created_at_ms, approve, \
             allow, sandbox) VALUES (?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
        )
        .bind(name)
        .bind(instructions)
        .bind(model)
        .bind(workspace)
        .bind(now)
        .bind(&boundaries.approve)
        .bind(&boundaries.allow)
        .bind(&boundaries.sandbox)
        .fetch_one(&mut *tx)
        .await;
        let id: i64 = match inserted {
            Err(sqlx::Error::Database(e)) if e.is_unique_violation() => {
                return Err(StoreError::AgentExists(name.to_owned()));
            }
            other => other?,
        };
        let thread = uuid::Uuid::now_v7().to_string();
        sqlx::query(
            "INSERT INTO threads (id, agent_id, kind, created_at_ms) VALUES (?, ?, 'chat', ?)",
        )
        .bind(&thread)
        .bind(id)
        .bind(now)
        .execute(&mut *tx)
        .await?;
        let target = Target {
            agent_id: id,
            agent: name,
            thread: &thread,
            task: None,
        };
        let body = EventBody::AgentCreated {
            instructions: instructions.to_owned(),
            model: model.map(str::to_owned),
        };
        let event = insert(&mut tx, &target, &body).await?;
        tx.commit().await?;
        self.inner.bus.publish(event);
        drop(writer);
        Ok(AgentRow {
            id,
            name: name.to_owned(),
            instructions: instructions.to_owned(),
            model: model.map(str::to_owned),
            workspace: workspace.map(str::to_owned),
            created_at_ms: now,
            thread,
            current_task: None,
            task_state: None,
            heartbeat_at_ms: None,
            lease_expires_at_ms: None,
            input_tokens: 0,
            cached_tokens: 0,
            output_tokens: 0,
            usage_estimated: false,
            cost_microusd: None,
            mcp: "[]".to_owned(),
            boundaries,
        })
    }

    /// Every live agent, by name.
    pub async fn list_agents(&self) -> Result<Vec<AgentRow>, StoreError> {
        let sql = format!("{SELECT_LIVE} ORDER BY a.name");
        Ok(sqlx::query_as(&sql).fetch_all(&self.inner.reader).await?)
    }

    /// The live agent called `name`.
    pub async fn agent(&self, name: &str) -> Result<AgentRow, StoreError> {
        let sql = format!("{SELECT_LIVE} AND a.name = ?");
        sqlx::query_as(&sql)
            .bind(name)
            .fetch_optional(&self.inner.reader)
            .await?
            .ok_or_else(|| StoreError::NoSuchAgent(name.to_owned()))
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
        self.update_agent_with(
            name,
            instructions,
            model,
            workspace,
            mcp,
            &BoundaryChange::default(),
        )
        .await
    }

    /// [`Store::update_agent`], changing its boundaries too in the same transaction.
    pub async fn update_agent_with(
        &self,
        name: &str,
        instructions: Option<&str>,
        model: Option<&str>,
        workspace: Option<&str>,
        mcp: Option<&[String]>,
        boundaries: &BoundaryChange,
    ) -> Result<AgentRow, StoreError> {
        let mut writer = self.inner.writer.lock().await;
        let mut tx = writer.begin().await?;
        let sql = format!("{SELECT_LIVE} AND a.name = ?");
        let mut agent: AgentRow = sqlx::query_as(&sql)
            .bind(name)
            .fetch_optional(&mut *tx)
            .await?
            .ok_or_else(|| StoreError::NoSuchAgent(name.to_owned()))?;
        let cleared = |value: &str| (!value.is_empty()).then(|| value.to_owned());
        if let Some(instructions) = instructions {
            agent.instructions = instructions.to_owned();
        }
        if let Some(model) = model {
            agent.model = cleared(model);
        }
        if let Some(workspace) = workspace {
            agent.workspace = cleared(workspace);
        }
        if let Some(mcp) = mcp {
            agent.mcp = serde_json::to_string(mcp).unwrap_or_else(|_| "[]".to_owned());
        }
        agent.boundaries = agent.boundaries.clone().with(boundaries);
        sqlx::query(
            "UPDATE agents SET instructions = ?, model = ?, workspace = ?, mcp = ?, approve = ?, \
             allow = ?, sandbox = ? WHERE id = ?",
        )
        .bind(&agent.instructions)
        .bind(&agent.model)
        .bind(&agent.workspace)
        .bind(&agent.mcp)
        .bind(&agent.boundaries.approve)
        .bind(&agent.boundaries.allow)
        .bind(&agent.boundaries.sandbox)
        .bind(agent.id)
        .execute(&mut *tx)
        .await?;
        let body = EventBody::AgentUpdated {
            instructions: agent.instructions.clone(),
            model: agent.model.clone(),
            workspace: agent.workspace.clone(),
            mcp: agent.mcp_servers(),
        };
        let event = insert(&mut tx, &agent.target(), &body).await?;
        tx.commit().await?;
        self.inner.bus.publish(event);
        Ok(agent)
    }

    /// The boundaries of agent `agent_id` (also a deleted one: its last tasks still end).
    pub async fn agent_boundaries(&self, agent_id: i64) -> Result<Boundaries, StoreError> {
        Ok(
            sqlx::query_as("SELECT approve, allow, sandbox FROM agents WHERE id = ?")
                .bind(agent_id)
                .fetch_optional(&self.inner.reader)
                .await?
                .unwrap_or_default(),
        )
    }

    /// Deletes an agent (its events stay in the log) and logs `agent_deleted`.
    pub async fn delete_agent(&self, name: &str) -> Result<(), StoreError> {
        let mut writer = self.inner.writer.lock().await;
        let mut tx = writer.begin().await?;
        let sql = format!("{SELECT_LIVE} AND a.name = ?");
        let agent: AgentRow = sqlx::query_as(&sql)
            .bind(name)
            .fetch_optional(&mut *tx)
            .await?
            .ok_or_else(|| StoreError::NoSuchAgent(name.to_owned()))?;
        sqlx::query("UPDATE agents SET deleted_at_ms = ? WHERE id = ?")
            .bind(now_ms())
            .bind(agent.id)
            .execute(&mut *tx)
            .await?;
        let event = insert(&mut tx, &agent.target(), &EventBody::AgentDeleted {}).await?;
        tx.commit().await?;
        self.inner.bus.publish(event);
        Ok(())
    }

    /// Appends `body` to the live agent's chat thread; returns the thread and the event.
    pub async fn append_to_agent(
        &self,
        name: &str,
        body: &EventBody,
    ) -> Result<(String, LiveEvent), StoreError> {
        let writer = &mut *self.inner.writer.lock().await;
        // One statement finds the agent's thread and appends: a single round trip to SQLite.
        let (event, thread) = insert_into_chat(writer, name, body)
            .await?
            .ok_or_else(|| StoreError::NoSuchAgent(name.to_owned()))?;
        self.inner.bus.publish(event.clone());
        Ok((thread, event))
    }
}

impl AgentRow {
    fn target(&self) -> Target<'_> {
        Target {
            agent_id: self.id,
            agent: &self.name,
            thread: &self.thread,
            task: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn boundaries_change_only_what_is_given_and_parse_leniently() {
        let stored = Boundaries::default().with(&BoundaryChange {
            approve: Some(vec![Effect::Command, Effect::WorkspaceWrite]),
            allow: Some(vec!["git status".into()]),
            sandbox: None,
        });
        assert_eq!(stored.approve, r#"["command","workspace_write"]"#);
        assert_eq!(stored.approve(), [Effect::Command, Effect::WorkspaceWrite]);
        assert_eq!(stored.allow(), ["git status"]);
        assert_eq!(stored.sandbox("default"), Sandbox::Off);
        assert_eq!(stored.sandbox("researcher"), Sandbox::WorkspaceWrite);
        let read_only = stored.clone().with(&BoundaryChange {
            sandbox: Some(Sandbox::ReadOnly),
            ..BoundaryChange::default()
        });
        assert_eq!(read_only.sandbox("default"), Sandbox::ReadOnly);
        assert_eq!(read_only.approve, stored.approve);
        let odd = Boundaries {
            approve: r#"["command","bogus"]"#.into(),
            allow: "not json".into(),
            sandbox: Some("nonsense".into()),
        };
        assert_eq!(odd.approve(), [Effect::Command]);
        assert!(odd.allow().is_empty());
        assert_eq!(odd.sandbox("x"), Sandbox::WorkspaceWrite);
    }
}
