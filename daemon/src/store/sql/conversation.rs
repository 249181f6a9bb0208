//! An agent's conversation, once for both engines: the partial index `events_dialogue`,
//! and the dialect's full-text search (SQLite: the contentless FTS5 table
//! `conversation_fts`, fed by a trigger on `events`; PostgreSQL: the generated
//! `conversation_tsv` column with its GIN index).

use crate::store::conversation::{KINDS, Row};
use crate::store::dialect::read;
use crate::store::{Store, StoreError, int};

impl Store {
    /// The seq of the agent's last `team clear` (0 if never cleared).
    pub async fn generation_start(&self, agent_id: i64) -> Result<i64, StoreError> {
        let sql = format!(
            "SELECT COALESCE(MAX(seq), 0) FROM events WHERE agent_id = $1 AND kind IN {KINDS} \
             AND kind = 'conversation_cleared'"
        );
        Ok(read!(self, |c| {
            sqlx::query_scalar(&sql).bind(agent_id).fetch_one(c).await?
        }))
    }

    /// The conversation's events newest first, after `since` and before `before`, of the
    /// agent's chat thread and top-level tasks.
    pub(in crate::store) async fn conversation_events(
        &self,
        agent_id: i64,
        since: i64,
        before: i64,
        limit: u32,
    ) -> Result<Vec<Row>, StoreError> {
        let sql = format!(
            "SELECT e.seq, e.task_id, e.kind, CAST(e.data AS TEXT) AS data FROM events e \
             WHERE e.agent_id = $1 AND e.kind IN {KINDS} AND e.seq > $2 AND e.seq < $3 \
             AND e.kind NOT IN ('summary', 'conversation_cleared') \
             AND (e.task_id IS NULL OR EXISTS (SELECT 1 FROM tasks t \
                  WHERE t.id = e.task_id AND t.parent_id IS NULL)) \
             ORDER BY e.seq DESC LIMIT $4"
        );
        Ok(read!(self, |c| {
            sqlx::query_as(&sql)
                .bind(agent_id)
                .bind(since)
                .bind(before)
                .bind(int(limit))
                .fetch_all(c)
                .await?
        }))
    }

    /// The agent's latest `summary` in its chat thread after `since`.
    pub(in crate::store) async fn summary_event(
        &self,
        agent_id: i64,
        since: i64,
    ) -> Result<Option<Row>, StoreError> {
        let sql = format!(
            "SELECT e.seq, e.task_id, e.kind, CAST(e.data AS TEXT) AS data FROM events e \
             WHERE e.agent_id = $1 AND e.kind IN {KINDS} AND e.kind = 'summary' \
             AND e.task_id IS NULL AND e.seq > $2 ORDER BY e.seq DESC LIMIT 1"
        );
        Ok(read!(self, |c| {
            sqlx::query_as(&sql)
                .bind(agent_id)
                .bind(since)
                .fetch_optional(c)
                .await?
        }))
    }

    /// The conversation's events matching any of `words` (each matched as words, never
    /// parsed as search syntax), newest first.
    pub(in crate::store) async fn search_events(
        &self,
        agent_id: i64,
        words: &[String],
        since: i64,
        before: i64,
        limit: u32,
    ) -> Result<Vec<Row>, StoreError> {
        Ok(read!(self, |c| {
            let words = d::search_words(words);
            let sql = format!(
                "SELECT e.seq, e.task_id, e.kind, CAST(e.data AS TEXT) AS data {} \
                 AND e.agent_id = $1 AND e.seq > $2 AND e.seq < $3 \
                 ORDER BY e.seq DESC LIMIT $4",
                d::conversation_matching(5, words.len())
            );
            let mut query = sqlx::query_as(&sql)
                .bind(agent_id)
                .bind(since)
                .bind(before)
                .bind(int(limit));
            for word in words {
                query = query.bind(word);
            }
            query.fetch_all(c).await?
        }))
    }

    /// One event of the agent, whole (what a stub in a trimmed request points to).
    pub async fn agent_event(
        &self,
        agent_id: i64,
        seq: i64,
    ) -> Result<Option<(String, serde_json::Value)>, StoreError> {
        let row: Option<(String, String)> = read!(self, |c| {
            sqlx::query_as(
                "SELECT kind, CAST(data AS TEXT) FROM events WHERE seq = $1 AND agent_id = $2",
            )
            .bind(seq)
            .bind(agent_id)
            .fetch_optional(c)
            .await?
        });
        Ok(row.and_then(|(kind, data)| Some((kind, serde_json::from_str(&data).ok()?))))
    }
}
