//! Agents and their chat threads on SQLite.

use lazyboy_protocol::EventBody;
use sqlx::Connection;

use super::Sqlite;
use super::events::{insert, insert_into_chat};
use crate::store::agents::AgentRow;
use crate::store::boundaries::{Boundaries, BoundaryChange};
use crate::store::events::{LiveEvent, Target};
use crate::store::{StoreError, now_ms};

/// Live agents with the task that says what each is doing: the running one first, then one
/// waiting for the person, then the oldest queued one (subagents do not count).
pub(in crate::store) const SELECT_LIVE: &str = "SELECT a.id, a.name, a.instructions, a.model, a.workspace, \
    a.created_at_ms, t.id AS thread, c.id AS current_task, c.state AS task_state, \
    c.heartbeat_at_ms, c.lease_expires_at_ms, \
    COALESCE(u.input_tokens, 0) AS input_tokens, COALESCE(u.cached_tokens, 0) AS cached_tokens, \
    COALESCE(u.output_tokens, 0) AS output_tokens, \
    COALESCE(u.usage_estimated, 0) AS usage_estimated, u.cost_microusd, a.node, a.mcp, \
    a.approve, a.allow, a.sandbox, a.git_write \
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

impl Sqlite {
    pub(in crate::store) async fn create_agent_with(
        &self,
        name: &str,
        instructions: &str,
        model: Option<&str>,
        workspace: Option<&str>,
        boundaries: &BoundaryChange,
    ) -> Result<AgentRow, StoreError> {
        let boundaries = Boundaries::default().with(boundaries);
        let mut writer = self.writer.lock().await;
        let mut tx = writer.begin().await?;
        let now = now_ms();
        let inserted = sqlx::query_scalar(
            "INSERT INTO agents (name, instructions, model, workspace, created_at_ms, approve, \
             allow, sandbox, git_write) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
        )
        .bind(name)
        .bind(instructions)
        .bind(model)
        .bind(workspace)
        .bind(now)
        .bind(&boundaries.approve)
        .bind(&boundaries.allow)
        .bind(&boundaries.sandbox)
        .bind(boundaries.git_write)
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
        self.bus.publish(event);
        Ok(AgentRow {
            boundaries,
            ..AgentRow::new(id, name, instructions, model, workspace, now, thread)
        })
    }

    pub(in crate::store) async fn list_agents(&self) -> Result<Vec<AgentRow>, StoreError> {
        let sql = format!("{SELECT_LIVE} ORDER BY a.name");
        Ok(sqlx::query_as(&sql).fetch_all(&self.reader).await?)
    }

    pub(in crate::store) async fn agent(&self, name: &str) -> Result<AgentRow, StoreError> {
        let sql = format!("{SELECT_LIVE} AND a.name = ?");
        sqlx::query_as(&sql)
            .bind(name)
            .fetch_optional(&self.reader)
            .await?
            .ok_or_else(|| StoreError::NoSuchAgent(name.to_owned()))
    }

    pub(in crate::store) async fn update_agent_with(
        &self,
        name: &str,
        instructions: Option<&str>,
        model: Option<&str>,
        workspace: Option<&str>,
        mcp: Option<&[String]>,
        boundaries: &BoundaryChange,
    ) -> Result<AgentRow, StoreError> {
        let mut writer = self.writer.lock().await;
        let mut tx = writer.begin().await?;
        let mut agent = live(&mut tx, name).await?;
        agent.change(instructions, model, workspace, mcp, boundaries);
        sqlx::query(
            "UPDATE agents SET instructions = ?, model = ?, workspace = ?, mcp = ?, \
             approve = ?, allow = ?, sandbox = ?, git_write = ? WHERE id = ?",
        )
        .bind(&agent.instructions)
        .bind(&agent.model)
        .bind(&agent.workspace)
        .bind(&agent.mcp)
        .bind(&agent.boundaries.approve)
        .bind(&agent.boundaries.allow)
        .bind(&agent.boundaries.sandbox)
        .bind(agent.boundaries.git_write)
        .bind(agent.id)
        .execute(&mut *tx)
        .await?;
        let event = insert(&mut tx, &agent.target(), &agent.updated()).await?;
        tx.commit().await?;
        self.bus.publish(event);
        Ok(agent)
    }

    pub(in crate::store) async fn agent_boundaries(
        &self,
        agent_id: i64,
    ) -> Result<Boundaries, StoreError> {
        Ok(
            sqlx::query_as("SELECT approve, allow, sandbox, git_write FROM agents WHERE id = ?")
                .bind(agent_id)
                .fetch_optional(&self.reader)
                .await?
                .unwrap_or_default(),
        )
    }

    pub(in crate::store) async fn pin_agent(
        &self,
        name: &str,
        node: Option<&str>,
    ) -> Result<AgentRow, StoreError> {
        let mut writer = self.writer.lock().await;
        let mut tx = writer.begin().await?;
        let mut agent = live(&mut tx, name).await?;
        agent.node = node.filter(|n| !n.is_empty()).map(str::to_owned);
        sqlx::query("UPDATE agents SET node = ? WHERE id = ?")
            .bind(&agent.node)
            .bind(agent.id)
            .execute(&mut *tx)
            .await?;
        let body = EventBody::AgentPinned {
            node: agent.node.clone(),
        };
        let event = insert(&mut tx, &agent.target(), &body).await?;
        tx.commit().await?;
        self.bus.publish(event);
        Ok(agent)
    }

    pub(in crate::store) async fn delete_agent(&self, name: &str) -> Result<(), StoreError> {
        let mut writer = self.writer.lock().await;
        let mut tx = writer.begin().await?;
        let agent = live(&mut tx, name).await?;
        sqlx::query("UPDATE agents SET deleted_at_ms = ? WHERE id = ?")
            .bind(now_ms())
            .bind(agent.id)
            .execute(&mut *tx)
            .await?;
        let event = insert(&mut tx, &agent.target(), &EventBody::AgentDeleted {}).await?;
        tx.commit().await?;
        self.bus.publish(event);
        Ok(())
    }

    pub(in crate::store) async fn append_to_agent(
        &self,
        name: &str,
        body: &EventBody,
    ) -> Result<(String, LiveEvent), StoreError> {
        let writer = &mut *self.writer.lock().await;
        // One statement finds the agent's thread and appends: a single round trip to SQLite.
        let (event, thread) = insert_into_chat(writer, name, body)
            .await?
            .ok_or_else(|| StoreError::NoSuchAgent(name.to_owned()))?;
        self.bus.publish(event.clone());
        Ok((thread, event))
    }
}

/// The live agent `name`, read on the writer's open transaction.
async fn live(conn: &mut sqlx::SqliteConnection, name: &str) -> Result<AgentRow, StoreError> {
    let sql = format!("{SELECT_LIVE} AND a.name = ?");
    sqlx::query_as(&sql)
        .bind(name)
        .fetch_optional(conn)
        .await?
        .ok_or_else(|| StoreError::NoSuchAgent(name.to_owned()))
}
