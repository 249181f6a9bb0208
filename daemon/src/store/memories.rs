//! Agents' private memory. Every statement names the agent: no query here can return or
//! touch another agent's memories. Searched by full text: FTS5 on SQLite, a `tsvector` with
//! a GIN index on PostgreSQL (the `simple` configuration: words lower-cased, no stemming,
//! like FTS5's default tokenizer).

use super::{Store, StoreError};

impl Store {
    /// The agent's memories matching any word of `query`, best first: (key, text). The
    /// person's words are matched as words, never parsed as search syntax.
    pub async fn memory_search(
        &self,
        agent_id: i64,
        query: &str,
        limit: u32,
    ) -> Result<Vec<(Option<String>, String)>, StoreError> {
        let words: Vec<String> = query.split_whitespace().map(str::to_owned).collect();
        if words.is_empty() {
            return Ok(Vec::new());
        }
        self.memory_matches(agent_id, &words, limit).await
    }
}
