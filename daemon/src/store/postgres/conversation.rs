//! An agent's conversation on PostgreSQL: the partial index `events_dialogue` and the
//! generated `conversation_tsv` column with its GIN index.

use super::memories::{any_word, words_to_bind};
use super::{Postgres, int};
use crate::store::StoreError;
use crate::store::conversation::{KINDS, Row};

impl Postgres {
    pub(in crate::store) async fn generation_start(
        &self,
        agent_id: i64,
    ) -> Result<i64, StoreError> {
        let sql = format!(
            "SELECT COALESCE(MAX(seq), 0) FROM events WHERE agent_id = $1 AND kind IN {KINDS} \
             AND kind = 'conversation_cleared'"
        );
        Ok(sqlx::query_scalar(&sql)
            .bind(agent_id)
            .fetch_one(&self.pool)
            .await?)
    }

    pub(in crate::store) async fn conversation_events(
        &self,
        agent_id: i64,
        since: i64,
        before: i64,
        limit: u32,
    ) -> Result<Vec<Row>, StoreError> {
        let sql = format!(
            "SELECT e.seq, e.task_id, e.kind, e.data::text AS data FROM events e \
             WHERE e.agent_id = $1 AND e.kind IN {KINDS} AND e.seq > $2 AND e.seq < $3 \
             AND e.kind NOT IN ('summary', 'conversation_cleared') \
             AND (e.task_id IS NULL OR EXISTS (SELECT 1 FROM tasks t \
                  WHERE t.id = e.task_id AND t.parent_id IS NULL)) \
             ORDER BY e.seq DESC LIMIT $4"
        );
        Ok(sqlx::query_as(&sql)
            .bind(agent_id)
            .bind(since)
            .bind(before)
            .bind(int(limit))
            .fetch_all(&self.pool)
            .await?)
    }

    pub(in crate::store) async fn summary_event(
        &self,
        agent_id: i64,
        since: i64,
    ) -> Result<Option<Row>, StoreError> {
        let sql = format!(
            "SELECT e.seq, e.task_id, e.kind, e.data::text AS data FROM events e \
             WHERE e.agent_id = $1 AND e.kind IN {KINDS} AND e.kind = 'summary' \
             AND e.task_id IS NULL AND e.seq > $2 ORDER BY e.seq DESC LIMIT 1"
        );
        Ok(sqlx::query_as(&sql)
            .bind(agent_id)
            .bind(since)
            .fetch_optional(&self.pool)
            .await?)
    }

    pub(in crate::store) async fn search_events(
        &self,
        agent_id: i64,
        words: &[String],
        since: i64,
        before: i64,
        limit: u32,
    ) -> Result<Vec<Row>, StoreError> {
        let words = words_to_bind(words);
        let sql = format!(
            "SELECT e.seq, e.task_id, e.kind, e.data::text AS data \
             FROM events e, (SELECT {} AS q) w \
             WHERE e.conversation_tsv IS NOT NULL AND e.conversation_tsv @@ w.q \
             AND e.agent_id = $1 AND e.seq > $2 AND e.seq < $3 \
             ORDER BY e.seq DESC LIMIT $4",
            any_word(words.len(), 5)
        );
        let mut query = sqlx::query_as(&sql)
            .bind(agent_id)
            .bind(since)
            .bind(before)
            .bind(int(limit));
        for word in words {
            query = query.bind(word);
        }
        Ok(query.fetch_all(&self.pool).await?)
    }

    pub(in crate::store) async fn agent_event(
        &self,
        agent_id: i64,
        seq: i64,
    ) -> Result<Option<(String, serde_json::Value)>, StoreError> {
        let row: Option<(String, String)> =
            sqlx::query_as("SELECT kind, data::text FROM events WHERE seq = $1 AND agent_id = $2")
                .bind(seq)
                .bind(agent_id)
                .fetch_optional(&self.pool)
                .await?;
        Ok(row.and_then(|(kind, data)| Some((kind, serde_json::from_str(&data).ok()?))))
    }
}
