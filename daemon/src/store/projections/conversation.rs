//! `GET /api/agents/{name}/conversation?before=SEQ&limit=N`: one agent's conversation, newest
//! first, a page at a time, read from the log with the `events_conversation` partial index
//! (so the deltas and heartbeats that make up most of a log are never read).
//!
//! A page is `limit` whole items: it reads backwards in chunks, counting item boundaries by
//! [`role`], until the item after the page's oldest one begins (or the log does), then folds
//! what it read, oldest first. Items never span pages, since the next page starts below the
//! oldest event read. Subagents' tasks are left out (their parent's work shows the spawn).

use lazyboy_protocol::{Conversation, ConversationItem};
use sqlx::{Connection, SqliteConnection};

use super::fold::{Fold, Role, Row, role};
use crate::store::{Store, StoreError};

/// The kinds a conversation is made of. Must match the `events_conversation` index's WHERE
/// term verbatim (see the migration), or SQLite will not use the index; a test checks.
pub const KINDS: &str = "kind IN ('user_message', 'agent_message', 'task_created', \
    'tool_call', 'tool_result', 'plan_updated', 'question', 'task_finished', 'runtime_note', \
    'command_started', 'command_ended', 'schedule_added', 'schedule_removed', \
    'schedule_paused', 'schedule_resumed', 'schedule_fired', 'schedule_skipped')";

/// Events read per query while paging backwards.
const CHUNK: u32 = 512;
/// The most items a page may ask for.
pub const MAX_ITEMS: u32 = 200;

fn page_sql() -> String {
    format!(
        "SELECT e.seq, e.kind, e.task_id AS task, e.at_ms, e.data FROM events e \
         WHERE e.agent_id = ?1 AND e.seq < ?2 AND e.{KINDS} \
         AND (e.task_id IS NULL OR NOT EXISTS (SELECT 1 FROM tasks t WHERE t.id = e.task_id \
              AND t.parent_id IS NOT NULL)) \
         ORDER BY e.seq DESC LIMIT ?3"
    )
}

impl Store {
    /// A page of the live agent `name`'s conversation: up to `limit` items older than
    /// `before` (the newest when `None`), newest first.
    pub async fn conversation(
        &self,
        name: &str,
        before: Option<i64>,
        limit: u32,
    ) -> Result<Conversation, StoreError> {
        let limit = limit.clamp(1, MAX_ITEMS) as usize;
        let mut conn = self.inner.reader.acquire().await?;
        // One read transaction: the page and its `seq` come from the same snapshot.
        let mut tx = conn.begin().await?;
        let agent_id: i64 =
            sqlx::query_scalar("SELECT id FROM agents WHERE name = ? AND deleted_at_ms IS NULL")
                .bind(name)
                .fetch_optional(&mut *tx)
                .await?
                .ok_or_else(|| StoreError::NoSuchAgent(name.to_owned()))?;
        let seq: i64 = sqlx::query_scalar("SELECT COALESCE(MAX(seq), 0) FROM events")
            .fetch_one(&mut *tx)
            .await?;
        let (rows, older) = read_page(&mut tx, agent_id, before.unwrap_or(i64::MAX), limit).await?;
        let mut fold = Fold::default();
        for row in rows.iter().rev() {
            fold.push(row);
        }
        // A question answered after this page's newest event: its answer is in a newer
        // page; look it up (rare, and each a seek on the task's events).
        for (call_id, task) in fold.unanswered() {
            let answer: Option<String> = sqlx::query_scalar(
                "SELECT json_extract(data, '$.output') FROM events WHERE task_id = ? \
                 AND kind = 'tool_result' AND json_extract(data, '$.call_id') = ? LIMIT 1",
            )
            .bind(&task)
            .bind(&call_id)
            .fetch_optional(&mut *tx)
            .await?
            .flatten();
            if let Some(answer) = answer {
                fold.answer(&call_id, answer);
            }
        }
        tx.commit().await?;
        let mut items: Vec<ConversationItem> = fold.finish();
        items.reverse();
        Ok(Conversation {
            agent: name.to_owned(),
            seq,
            items,
            older,
        })
    }
}

/// Reads backwards from `before` until `limit` items are whole; returns the rows (newest
/// first) and the `before` of the next page (`None` when the history starts in this one).
async fn read_page(
    conn: &mut SqliteConnection,
    agent_id: i64,
    before: i64,
    limit: usize,
) -> Result<(Vec<Row>, Option<i64>), StoreError> {
    let sql = page_sql();
    let mut rows: Vec<Row> = Vec::new();
    let mut cursor = before;
    let mut items = 0;
    // The task of the work group the previous (newer) row belongs to.
    let mut work: Option<String> = None;
    loop {
        let chunk: Vec<Row> = sqlx::query_as(&sql)
            .bind(agent_id)
            .bind(cursor)
            .bind(CHUNK)
            .fetch_all(&mut *conn)
            .await?;
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

#[cfg(test)]
pub(super) fn explain_page() -> String {
    page_sql()
}
