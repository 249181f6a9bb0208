//! Agents' private memory. Every statement names the agent: no query here can return or
//! touch another agent's memories.

use super::{Store, StoreError, now_ms};

impl Store {
    /// Remembers `text` for the agent; with a `key`, replaces what that key held.
    pub async fn memory_write(
        &self,
        agent_id: i64,
        key: Option<&str>,
        text: &str,
    ) -> Result<(), StoreError> {
        let writer = &mut *self.inner.writer.lock().await;
        let now = now_ms();
        sqlx::query(
            "INSERT INTO memories (agent_id, key, text, created_at_ms, updated_at_ms) \
             VALUES (?1, ?2, ?3, ?4, ?4) \
             ON CONFLICT (agent_id, key) WHERE key IS NOT NULL \
             DO UPDATE SET text = excluded.text, updated_at_ms = excluded.updated_at_ms",
        )
        .bind(agent_id)
        .bind(key)
        .bind(text)
        .bind(now)
        .execute(writer)
        .await?;
        Ok(())
    }

    /// Forgets the agent's memory under `key`; whether there was one.
    pub async fn memory_forget(&self, agent_id: i64, key: &str) -> Result<bool, StoreError> {
        let writer = &mut *self.inner.writer.lock().await;
        let done = sqlx::query("DELETE FROM memories WHERE agent_id = ? AND key = ?")
            .bind(agent_id)
            .bind(key)
            .execute(writer)
            .await?;
        Ok(done.rows_affected() > 0)
    }

    /// The agent's memories matching any word of `query`, best first: (key, text).
    pub async fn memory_search(
        &self,
        agent_id: i64,
        query: &str,
        limit: u32,
    ) -> Result<Vec<(Option<String>, String)>, StoreError> {
        // Each word quoted: the person's words are matched, never parsed as FTS syntax.
        let words: Vec<String> = query
            .split_whitespace()
            .map(|w| format!("\"{}\"", w.replace('"', "\"\"")))
            .collect();
        if words.is_empty() {
            return Ok(Vec::new());
        }
        Ok(sqlx::query_as(
            "SELECT m.key, m.text FROM memories_fts f JOIN memories m ON m.id = f.rowid \
             WHERE memories_fts MATCH ?1 AND m.agent_id = ?2 ORDER BY f.rank LIMIT ?3",
        )
        .bind(words.join(" OR "))
        .bind(agent_id)
        .bind(limit)
        .fetch_all(&self.inner.reader)
        .await?)
    }
}
