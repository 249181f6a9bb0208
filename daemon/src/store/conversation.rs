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
/// the full-text index name them (queries repeat the list so the planner uses the index).
pub(super) const KINDS: &str = "('user_message', 'agent_message', 'task_created', \
    'task_finished', 'summary', 'conversation_cleared')";

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

/// An event of the conversation as both backends read it.
#[derive(sqlx::FromRow)]
pub(super) struct Row {
    pub seq: i64,
    pub task_id: Option<String>,
    pub kind: String,
    pub data: String,
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
        let rows = self
            .conversation_events(agent_id, since, before, limit)
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
        let row = self.summary_event(agent_id, since).await?;
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
        let words: Vec<String> = query
            .words
            .as_deref()
            .unwrap_or_default()
            .split_whitespace()
            .map(str::to_owned)
            .collect();
        if words.is_empty() {
            return self
                .conversation_rows(agent_id, since, before, query.limit)
                .await;
        }
        let rows = self
            .search_events(agent_id, &words, since, before, query.limit)
            .await?;
        Ok(rows.into_iter().filter_map(Row::line).collect())
    }
}
