//! Agents' memories on PostgreSQL, searched through the `tsv` column (a generated
//! `tsvector`, GIN-indexed).

use super::{Postgres, int};
use crate::store::{StoreError, now_ms};

/// The most words a search ORs together.
const MAX_WORDS: usize = 64;

/// A `tsquery` matching any of the words bound from `$first` on: each word goes through
/// `plainto_tsquery`, so it is matched as words, never parsed as query syntax.
pub(super) fn any_word(count: usize, first: usize) -> String {
    (first..first + count.clamp(1, MAX_WORDS))
        .map(|n| format!("plainto_tsquery('simple', ${n})"))
        .collect::<Vec<_>>()
        .join(" || ")
}

/// The words to bind, as many as [`any_word`] names.
pub(super) fn words_to_bind(words: &[String]) -> &[String] {
    &words[..words.len().min(MAX_WORDS)]
}

impl Postgres {
    pub(in crate::store) async fn memory_write(
        &self,
        agent_id: i64,
        key: Option<&str>,
        text: &str,
    ) -> Result<(), StoreError> {
        sqlx::query(
            "INSERT INTO memories (agent_id, key, text, created_at_ms, updated_at_ms) \
             VALUES ($1, $2, $3, $4, $4) \
             ON CONFLICT (agent_id, key) WHERE key IS NOT NULL \
             DO UPDATE SET text = excluded.text, updated_at_ms = excluded.updated_at_ms",
        )
        .bind(agent_id)
        .bind(key)
        .bind(text)
        .bind(now_ms())
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    pub(in crate::store) async fn memory_forget(
        &self,
        agent_id: i64,
        key: &str,
    ) -> Result<bool, StoreError> {
        let done = sqlx::query("DELETE FROM memories WHERE agent_id = $1 AND key = $2")
            .bind(agent_id)
            .bind(key)
            .execute(&self.pool)
            .await?;
        Ok(done.rows_affected() > 0)
    }

    pub(in crate::store) async fn memory_matches(
        &self,
        agent_id: i64,
        words: &[String],
        limit: u32,
    ) -> Result<Vec<(Option<String>, String)>, StoreError> {
        let words = words_to_bind(words);
        let sql = format!(
            "SELECT m.key, m.text FROM memories m, (SELECT {} AS q) w \
             WHERE m.agent_id = $1 AND m.tsv @@ w.q \
             ORDER BY ts_rank(m.tsv, w.q) DESC, m.id LIMIT $2",
            any_word(words.len(), 3)
        );
        let mut query = sqlx::query_as(&sql).bind(agent_id).bind(int(limit));
        for word in words {
            query = query.bind(word);
        }
        Ok(query.fetch_all(&self.pool).await?)
    }
}
