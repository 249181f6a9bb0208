//! Agents and their chat threads. Every change here appends an event in the same transaction.

use lazyboy_protocol::{Agent, EventBody};
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
    pub created_at_ms: i64,
    pub thread: String,
}

impl From<AgentRow> for Agent {
    fn from(row: AgentRow) -> Agent {
        Agent {
            name: row.name,
            instructions: row.instructions,
            model: row.model,
            thread: row.thread,
            created_at_ms: row.created_at_ms,
        }
    }
}

const SELECT_LIVE: &str = "SELECT a.id, a.name, a.instructions, a.model, a.created_at_ms, \
                           t.id AS thread \
                           FROM agents a JOIN threads t ON t.agent_id = a.id AND t.kind = 'chat' \
                           WHERE a.deleted_at_ms IS NULL";

impl Store {
    /// Creates an agent and its chat thread, and logs `agent_created`.
    pub async fn create_agent(
        &self,
        name: &str,
        instructions: &str,
        model: Option<&str>,
    ) -> Result<AgentRow, StoreError> {
        let mut writer = self.inner.writer.lock().await;
        let mut tx = writer.begin().await?;
        let now = now_ms();
        let inserted = sqlx::query_scalar(
            "INSERT INTO agents (name, instructions, model, created_at_ms) VALUES (?, ?, ?, ?) \
             RETURNING id",
        )
        .bind(name)
        .bind(instructions)
        .bind(model)
        .bind(now)
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
            created_at_ms: now,
            thread,
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
