//! Agents' memories on SQLite, searched through FTS5 (`memories_fts`, kept by triggers).

use super::Sqlite;
use crate::store::{StoreError, now_ms};

/// FTS5 phrases for `words`, each quoted so it is matched, never parsed as FTS syntax.
pub(super) fn fts_any(words: &[String]) -> String {
    words
        .iter()
        .map(|w| format!("\"{}\"", w.replace('"', "\"\"")))
        .collect::<Vec<_>>()
        .join(" OR ")
}

impl Sqlite {
    pub(in crate::store) async fn memory_write(
        &self,
        agent_id: i64,
        key: Option<&str>,
        text: &str,
    ) -> Result<(), StoreError> {
        let writer = &mut *self.writer.lock().await;
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

    pub(in crate::store) async fn memory_forget(
        &self,
        agent_id: i64,
        key: &str,
    ) -> Result<bool, StoreError> {
        let writer = &mut *self.writer.lock().await;
        let done = sqlx::query("DELETE FROM memories WHERE agent_id = ? AND key = ?")
            .bind(agent_id)
            .bind(key)
            .execute(writer)
            .await?;
        Ok(done.rows_affected() > 0)
    }

    pub(in crate::store) async fn memory_matches(
        &self,
        agent_id: i64,
        words: &[String],
        limit: u32,
    ) -> Result<Vec<(Option<String>, String)>, StoreError> {
        Ok(sqlx::query_as(
            "SELECT m.key, m.text FROM memories_fts f JOIN memories m ON m.id = f.rowid \
             WHERE memories_fts MATCH ?1 AND m.agent_id = ?2 ORDER BY f.rank LIMIT ?3",
        )
        .bind(fts_any(words))
        .bind(agent_id)
        .bind(limit)
        .fetch_all(&self.reader)
        .await?)
    }
}
