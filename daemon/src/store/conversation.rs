//! An agent's conversation across its tasks: the person's words and the agent's, read back
//! for the next task's requests, searched by `read_conversation`, and cut into generations by
//! `team clear`.
//!
//! The conversation is the events of kinds `task_created` (an objective), `user_message`,
//! `agent_message` and `task_finished` (final words) of the agent's top-level tasks and its
//! chat thread. A generation starts after the agent's last `conversation_cleared`; requests and
//! summaries see only the current one, and `read_conversation` reaches older ones only when
//! asked. Every statement names the agent.

use lazyboy_protocol::EventBody;

use super::{Store, StoreError};

/// The kinds that make up the conversation, as the partial index `events_dialogue` and
/// the FTS trigger name them (queries repeat the list so SQLite uses the index).
const KINDS: &str = "('user_message', 'agent_message', 'task_created', 'task_finished', \
                     'summary', 'conversation_cleared')";

/// One line of the conversation.
#[derive(Debug, Clone, PartialEq)]
pub struct Line {
    pub seq: i64,
    pub task: Option<String>,
    /// `person` or `agent`.
    pub who: &'static str,
    pub text: String,
}

/// What `read_conversation` asks for.
#[derive(Debug, Clone, Default)]
pub struct Query {
    /// Words to search for (any of them); `None` pages the conversation newest first.
    pub words: Option<String>,
    pub before_seq: Option<i64>,
    pub limit: u32,
    /// Reach into generations before the last `team clear` too.
    pub include_cleared: bool,
}

#[derive(sqlx::FromRow)]
struct Row {
    seq: i64,
    task_id: Option<String>,
    kind: String,
    data: String,
}

impl Row {
    fn line(self) -> Option<Line> {
        let body = EventBody::from_parts(&self.kind, serde_json::from_str(&self.data).ok()?)?;
        let (who, text) = match body {
            EventBody::TaskCreated { objective, .. } => ("person", objective),
            EventBody::UserMessage { text } => ("person", text),
            EventBody::AgentMessage { text } => ("agent", text),
            EventBody::TaskFinished { message, .. } if !message.is_empty() => ("agent", message),
            _ => return None,
        };
        Some(Line {
            seq: self.seq,
            task: self.task_id,
            who,
            text,
        })
    }
}

impl Store {
    /// The seq of the agent's last `team clear` (0 if never cleared).
    pub async fn generation_start(&self, agent_id: i64) -> Result<i64, StoreError> {
        let sql = format!(
            "SELECT COALESCE(MAX(seq), 0) FROM events WHERE agent_id = ? AND kind IN {KINDS} \
             AND kind = 'conversation_cleared'"
        );
        Ok(sqlx::query_scalar(&sql)
            .bind(agent_id)
            .fetch_one(&self.inner.reader)
            .await?)
    }

    /// The agent's conversation in the current generation before `before_seq`, newest last,
    /// at most `limit` lines; subagents' tasks are not part of it.
    pub async fn conversation_lines(
        &self,
        agent_id: i64,
        before_seq: i64,
        limit: u32,
    ) -> Result<Vec<Line>, StoreError> {
        let since = self.generation_start(agent_id).await?;
        let mut lines = self
            .conversation_rows(agent_id, since, before_seq, limit)
            .await?;
        lines.reverse();
        Ok(lines)
    }

    /// Lines newest first, after `since` and before `before`.
    async fn conversation_rows(
        &self,
        agent_id: i64,
        since: i64,
        before: i64,
        limit: u32,
    ) -> Result<Vec<Line>, StoreError> {
        let sql = format!(
            "SELECT e.seq, e.task_id, e.kind, e.data FROM events e \
             WHERE e.agent_id = ?1 AND e.kind IN {KINDS} AND e.seq > ?2 AND e.seq < ?3 \
             AND e.kind NOT IN ('summary', 'conversation_cleared') \
             AND (e.task_id IS NULL OR EXISTS (SELECT 1 FROM tasks t \
                  WHERE t.id = e.task_id AND t.parent_id IS NULL)) \
             ORDER BY e.seq DESC LIMIT ?4"
        );
        let rows: Vec<Row> = sqlx::query_as(&sql)
            .bind(agent_id)
            .bind(since)
            .bind(before)
            .bind(limit)
            .fetch_all(&self.inner.reader)
            .await?;
        let mut lines: Vec<Line> = rows.into_iter().filter_map(Row::line).collect();
        // A task's final words usually repeat its last message: keep one.
        lines.dedup_by(|newer, older| newer.text == older.text && newer.task == older.task);
        Ok(lines)
    }

    /// The agent's latest summary of its conversation in the current generation (in its chat
    /// thread): the seq it covers up to, and its text.
    pub async fn agent_summary(&self, agent_id: i64) -> Result<Option<(i64, String)>, StoreError> {
        let since = self.generation_start(agent_id).await?;
        let sql = format!(
            "SELECT e.seq, e.task_id, e.kind, e.data FROM events e \
             WHERE e.agent_id = ?1 AND e.kind IN {KINDS} AND e.kind = 'summary' \
             AND e.task_id IS NULL AND e.seq > ?2 ORDER BY e.seq DESC LIMIT 1"
        );
        let row: Option<Row> = sqlx::query_as(&sql)
            .bind(agent_id)
            .bind(since)
            .fetch_optional(&self.inner.reader)
            .await?;
        let body =
            row.and_then(|r| EventBody::from_parts(&r.kind, serde_json::from_str(&r.data).ok()?));
        Ok(match body {
            Some(EventBody::Summary { upto_seq, text }) => Some((upto_seq, text)),
            _ => None,
        })
    }

    /// `read_conversation`: the agent's lines matching `query.words` (any word), or simply
    /// before `query.before_seq`, newest first.
    pub async fn search_conversation(
        &self,
        agent_id: i64,
        query: &Query,
    ) -> Result<Vec<Line>, StoreError> {
        let since = if query.include_cleared {
            0
        } else {
            self.generation_start(agent_id).await?
        };
        let before = query.before_seq.unwrap_or(i64::MAX);
        let Some(words) = query.words.as_deref().filter(|w| !w.trim().is_empty()) else {
            return self
                .conversation_rows(agent_id, since, before, query.limit)
                .await;
        };
        // Each word quoted: the model's words are matched, never parsed as FTS syntax.
        let matched: Vec<String> = words
            .split_whitespace()
            .map(|w| format!("\"{}\"", w.replace('"', "\"\"")))
            .collect();
        let rows: Vec<Row> = sqlx::query_as(
            "SELECT e.seq, e.task_id, e.kind, e.data FROM conversation_fts f \
             JOIN events e ON e.seq = f.rowid \
             WHERE conversation_fts MATCH ?1 AND e.agent_id = ?2 AND e.seq > ?3 AND e.seq < ?4 \
             ORDER BY e.seq DESC LIMIT ?5",
        )
        .bind(matched.join(" OR "))
        .bind(agent_id)
        .bind(since)
        .bind(before)
        .bind(query.limit)
        .fetch_all(&self.inner.reader)
        .await?;
        Ok(rows.into_iter().filter_map(Row::line).collect())
    }

    /// One event of the agent, whole (what a stub in a trimmed request points to).
    pub async fn agent_event(
        &self,
        agent_id: i64,
        seq: i64,
    ) -> Result<Option<(String, serde_json::Value)>, StoreError> {
        let row: Option<(String, String)> =
            sqlx::query_as("SELECT kind, data FROM events WHERE seq = ? AND agent_id = ?")
                .bind(seq)
                .bind(agent_id)
                .fetch_optional(&self.inner.reader)
                .await?;
        Ok(row.and_then(|(kind, data)| Some((kind, serde_json::from_str(&data).ok()?))))
    }
}
