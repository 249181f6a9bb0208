//! Agents and their chat threads, once for both engines.

use lazyboy_protocol::EventBody;

use super::events::insert;
use crate::store::agents::AgentRow;
use crate::store::boundaries::{Boundaries, BoundaryChange};
use crate::store::dialect::{Conn, on, read, write};
use crate::store::events::LiveEvent;
use crate::store::{Store, StoreError, now_ms};

/// Live agents with the task that says what each is doing: the running one first, then one
/// waiting for the person, then the oldest queued one (subagents do not count). The sums are
/// cast (PostgreSQL's `SUM` of a `BIGINT` is a `NUMERIC`) and "any estimated" is a `MAX`
/// over 0/1 compared to 1 (PostgreSQL has no `MAX` of booleans).
pub(in crate::store) const SELECT_LIVE: &str = "SELECT a.id, a.name, a.instructions, a.model, a.workspace, \
    a.created_at_ms, t.id AS thread, c.id AS current_task, c.state AS task_state, \
    c.heartbeat_at_ms, c.lease_expires_at_ms, \
    COALESCE(u.input_tokens, 0) AS input_tokens, COALESCE(u.cached_tokens, 0) AS cached_tokens, \
    COALESCE(u.output_tokens, 0) AS output_tokens, \
    COALESCE(u.usage_estimated, FALSE) AS usage_estimated, u.cost_microusd, a.node, a.mcp, \
    a.approve, a.allow, a.sandbox, a.git_write \
    FROM agents a JOIN threads t ON t.agent_id = a.id AND t.kind = 'chat' \
    LEFT JOIN (SELECT agent_id, CAST(SUM(input_tokens) AS BIGINT) AS input_tokens, \
        CAST(SUM(cached_tokens) AS BIGINT) AS cached_tokens, \
        CAST(SUM(output_tokens) AS BIGINT) AS output_tokens, \
        MAX(CASE WHEN usage_estimated THEN 1 ELSE 0 END) = 1 AS usage_estimated, \
        CAST(SUM(cost_microusd) AS BIGINT) AS cost_microusd \
        FROM tasks GROUP BY agent_id) u ON u.agent_id = a.id \
    LEFT JOIN tasks c ON c.id = (SELECT x.id FROM tasks x WHERE x.agent_id = a.id \
        AND x.parent_id IS NULL \
        AND x.state IN ('running', 'recovering', 'waiting_for_human', 'queued') \
        ORDER BY x.state IN ('running', 'recovering') DESC, \
        x.state = 'waiting_for_human' DESC, x.created_at_ms, x.id LIMIT 1) \
    WHERE a.deleted_at_ms IS NULL";

impl Store {
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
        let now = now_ms();
        Ok(write!(self, |tx| {
            let inserted = sqlx::query_scalar(
                "INSERT INTO agents (name, instructions, model, workspace, created_at_ms, \
                 approve, allow, sandbox, git_write) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) RETURNING id",
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
            sqlx::query(
                "INSERT INTO threads (id, agent_id, kind, created_at_ms) \
                 VALUES ($1, $2, 'chat', $3)",
            )
            .bind(uuid::Uuid::now_v7().to_string())
            .bind(id)
            .bind(now)
            .execute(&mut *tx)
            .await?;
            let agent = live(&mut *tx, name).await?;
            let body = EventBody::AgentCreated {
                instructions: instructions.to_owned(),
                model: model.map(str::to_owned),
            };
            let event = insert(&mut *tx, &agent.target(), &body).await?;
            (agent, [event])
        }))
    }

    /// Every live agent, by name.
    pub async fn list_agents(&self) -> Result<Vec<AgentRow>, StoreError> {
        let sql = format!("{SELECT_LIVE} ORDER BY a.name");
        Ok(read!(self, |c| sqlx::query_as(&sql).fetch_all(c).await?))
    }

    /// The live agent called `name`.
    pub async fn agent(&self, name: &str) -> Result<AgentRow, StoreError> {
        let sql = format!("{SELECT_LIVE} AND a.name = $1");
        read!(self, |c| {
            sqlx::query_as(&sql).bind(name).fetch_optional(c).await?
        })
        .ok_or_else(|| StoreError::NoSuchAgent(name.to_owned()))
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
        Ok(write!(self, |tx| {
            let mut agent = live(&mut *tx, name).await?;
            agent.change(instructions, model, workspace, mcp, boundaries);
            sqlx::query(
                "UPDATE agents SET instructions = $1, model = $2, workspace = $3, mcp = $4, \
                 approve = $5, allow = $6, sandbox = $7, git_write = $8 WHERE id = $9",
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
            let event = insert(&mut *tx, &agent.target(), &agent.updated()).await?;
            (agent, [event])
        }))
    }

    /// The boundaries of agent `agent_id` (also a deleted one: its last tasks still end).
    pub async fn agent_boundaries(&self, agent_id: i64) -> Result<Boundaries, StoreError> {
        let found: Option<Boundaries> = read!(self, |c| {
            sqlx::query_as("SELECT approve, allow, sandbox, git_write FROM agents WHERE id = $1")
                .bind(agent_id)
                .fetch_optional(c)
                .await?
        });
        Ok(found.unwrap_or_default())
    }

    /// Pins the agent's tasks to `node` (`None`: any node) and logs `agent_pinned`.
    pub async fn pin_agent(&self, name: &str, node: Option<&str>) -> Result<AgentRow, StoreError> {
        Ok(write!(self, |tx| {
            let mut agent = live(&mut *tx, name).await?;
            agent.node = node.filter(|n| !n.is_empty()).map(str::to_owned);
            sqlx::query("UPDATE agents SET node = $1 WHERE id = $2")
                .bind(&agent.node)
                .bind(agent.id)
                .execute(&mut *tx)
                .await?;
            let body = EventBody::AgentPinned {
                node: agent.node.clone(),
            };
            let event = insert(&mut *tx, &agent.target(), &body).await?;
            (agent, [event])
        }))
    }

    /// Deletes an agent (its events stay in the log) and logs `agent_deleted`.
    pub async fn delete_agent(&self, name: &str) -> Result<(), StoreError> {
        write!(self, |tx| {
            let agent = live(&mut *tx, name).await?;
            sqlx::query("UPDATE agents SET deleted_at_ms = $1 WHERE id = $2")
                .bind(now_ms())
                .bind(agent.id)
                .execute(&mut *tx)
                .await?;
            let event = insert(&mut *tx, &agent.target(), &EventBody::AgentDeleted {}).await?;
            ((), [event])
        });
        Ok(())
    }

    /// Appends `body` to the live agent's chat thread; returns the thread and the event.
    pub async fn append_to_agent(
        &self,
        name: &str,
        body: &EventBody,
    ) -> Result<(String, LiveEvent), StoreError> {
        // One statement finds the agent's thread and appends: a single round trip.
        let (event, thread) = self
            .append_to_chat(name, body)
            .await?
            .ok_or_else(|| StoreError::NoSuchAgent(name.to_owned()))?;
        Ok((thread, event))
    }
}

/// The live agent `name`, read on a write's open transaction.
async fn live<'c>(conn: impl Into<Conn<'c>>, name: &str) -> Result<AgentRow, StoreError> {
    let sql = format!("{SELECT_LIVE} AND a.name = $1");
    let found: Option<AgentRow> = on!(conn.into(), |c| {
        sqlx::query_as(&sql).bind(name).fetch_optional(c).await?
    });
    found.ok_or_else(|| StoreError::NoSuchAgent(name.to_owned()))
}
