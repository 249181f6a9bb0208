//! `GET /api/agents/{name}/conversation?before=SEQ&limit=N`: one agent's conversation, newest
//! first, a page at a time, read from the log with the `events_conversation` partial index
//! (so the deltas and heartbeats that make up most of a log are never read).
//!
//! A page is `limit` whole items: it reads backwards in chunks, counting item boundaries by
//! [`role`], until the item after the page's oldest one begins (or the log does), then folds
//! what it read, oldest first. Items never span pages, since the next page starts below the
//! oldest event read. Subagents' tasks are left out (their parent's work shows the spawn).

use lazyboy_protocol::{Conversation, ConversationItem};

use super::fold::{Fold, Role, Row, role};
use crate::store::StoreError;

/// The kinds a conversation is made of. Must match the `events_conversation` index's WHERE
/// term verbatim (see the migrations of both backends), or SQLite will not use the index;
/// a test checks that each backend's planner uses it.
pub const KINDS: &str = "kind IN ('user_message', 'agent_message', 'task_created', \
    'tool_call', 'tool_result', 'plan_updated', 'question', 'task_finished', 'runtime_note', \
    'command_started', 'command_ended', 'schedule_added', 'schedule_removed', \
    'schedule_paused', 'schedule_resumed', 'schedule_fired', 'schedule_skipped')";

/// Events read per query while paging backwards.
const CHUNK: u32 = 512;
/// The most items a page may ask for.
pub const MAX_ITEMS: u32 = 200;

/// The page query, with numbered placeholders written `{mark}1` (`?` on SQLite, `$` on
/// PostgreSQL); `data` is read as text on both.
pub(in crate::store) fn page_sql() -> String {
    format!(
        "SELECT e.seq, e.kind, e.task_id AS task, e.at_ms, CAST(e.data AS TEXT) AS data \
         FROM events e WHERE e.agent_id = $1 AND e.seq < $2 AND e.{KINDS} \
         AND (e.task_id IS NULL OR NOT EXISTS (SELECT 1 FROM tasks t WHERE t.id = e.task_id \
              AND t.parent_id IS NOT NULL)) \
         ORDER BY e.seq DESC LIMIT $3"
    )
}

/// What a backend answers for a page, every call inside one read snapshot.
pub(in crate::store) trait PageReader {
    /// The id of the live agent `name`.
    async fn agent_id(&mut self, name: &str) -> Result<Option<i64>, StoreError>;
    /// The newest seq of the log.
    async fn last_seq(&mut self) -> Result<i64, StoreError>;
    /// Up to `limit` rows of [`page_sql`] below `before`, newest first.
    async fn chunk(
        &mut self,
        agent_id: i64,
        before: i64,
        limit: u32,
    ) -> Result<Vec<Row>, StoreError>;
    /// The output of the `tool_result` of `call_id` in `task`, if there is one.
    async fn answer(&mut self, task: &str, call_id: &str) -> Result<Option<String>, StoreError>;
}

/// [`Store::conversation`] on a backend's snapshot.
pub(in crate::store) async fn page(
    reader: &mut impl PageReader,
    name: &str,
    before: Option<i64>,
    limit: u32,
) -> Result<Conversation, StoreError> {
    let limit = limit.clamp(1, MAX_ITEMS) as usize;
    let agent_id = reader
        .agent_id(name)
        .await?
        .ok_or_else(|| StoreError::NoSuchAgent(name.to_owned()))?;
    let seq = reader.last_seq().await?;
    let (rows, older) = read_page(reader, agent_id, before.unwrap_or(i64::MAX), limit).await?;
    let mut fold = Fold::default();
    for row in rows.iter().rev() {
        fold.push(row);
    }
    // A question answered after this page's newest event: its answer is in a newer
    // page; look it up (rare, and each a seek on the task's events).
    for (call_id, task) in fold.unanswered() {
        if let Some(answer) = reader.answer(&task, &call_id).await? {
            fold.answer(&call_id, answer);
        }
    }
    let mut items: Vec<ConversationItem> = fold.finish();
    items.reverse();
    Ok(Conversation {
        agent: name.to_owned(),
        seq,
        items,
        older,
    })
}

/// Reads backwards from `before` until `limit` items are whole; returns the rows (newest
/// first) and the `before` of the next page (`None` when the history starts in this one).
async fn read_page(
    reader: &mut impl PageReader,
    agent_id: i64,
    before: i64,
    limit: usize,
) -> Result<(Vec<Row>, Option<i64>), StoreError> {
    let mut rows: Vec<Row> = Vec::new();
    let mut cursor = before;
    let mut items = 0;
    // The task of the work group the previous (newer) row belongs to.
    let mut work: Option<String> = None;
    loop {
        let chunk = reader.chunk(agent_id, cursor, CHUNK).await?;
        let exhausted = chunk.len() < CHUNK as usize;
        for row in chunk {
            let data = serde_json::from_str(&row.data).unwrap_or(serde_json::Value::Null);
            let starts = match role(&row, &data) {
                Role::Quiet => false,
                Role::Work(task) => {
                    let same = work.as_deref() == Some(task);
                    work = Some(task.to_owned());
                    !same
                }
                Role::Item => {
                    work = None;
                    true
                }
            };
            if starts {
                items += 1;
                if items > limit {
                    let older = rows.last().map(|r| r.seq);
                    return Ok((rows, older));
                }
            }
            cursor = row.seq;
            rows.push(row);
        }
        if exhausted {
            return Ok((rows, None));
        }
    }
}
