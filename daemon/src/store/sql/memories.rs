//! Agents' memories, once for both engines; the search is the dialect's (FTS5 on SQLite,
//! a `tsvector` on PostgreSQL). Every statement names the agent.

use crate::store::dialect::{read, write_one};
use crate::store::{Store, StoreError, int, now_ms};

impl Store {
    /// Remembers `text` for the agent; with a `key`, replaces what that key held.
    pub async fn memory_write(
        &self,
        agent_id: i64,
        key: Option<&str>,
        text: &str,
    ) -> Result<(), StoreError> {
        write_one!(self, |c| {
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
            .execute(c)
            .await?;
            ((), [])
        });
        Ok(())
    }

    /// Forgets the agent's memory under `key`; whether there was one.
    pub async fn memory_forget(&self, agent_id: i64, key: &str) -> Result<bool, StoreError> {
        Ok(write_one!(self, |c| {
            let done = sqlx::query("DELETE FROM memories WHERE agent_id = $1 AND key = $2")
                .bind(agent_id)
                .bind(key)
                .execute(c)
                .await?;
            (done.rows_affected() > 0, [])
        }))
    }

    /// The agent's memories matching any of `words`, best first: (key, text).
    pub(in crate::store) async fn memory_matches(
        &self,
        agent_id: i64,
        words: &[String],
        limit: u32,
    ) -> Result<Vec<(Option<String>, String)>, StoreError> {
        Ok(read!(self, |c| {
            let words = d::search_words(words);
            let sql = d::memories_matching(words.len());
            let mut query = sqlx::query_as(&sql).bind(agent_id).bind(int(limit));
            for word in words {
                query = query.bind(word);
            }
            query.fetch_all(c).await?
        }))
    }
}
