//! The dashboard's reads (`store/projections/`), once for both engines, and the box lock's
//! events. Each projection is read on one snapshot ([`snapshot!`]), so what it shows is
//! current to the seq it says.

use lazyboy_protocol::Conversation;

use super::agents::SELECT_LIVE;
use crate::store::dialect::{Conn, on, read, snapshot};
use crate::store::projections::conversation::{self, PageReader, page_sql};
use crate::store::projections::fold::Row;
use crate::store::projections::state::{BoardRows, OPEN, RECENT_TASKS};
use crate::store::tasks::SELECT_TASK;
use crate::store::{Store, StoreError};

/// The board's statements, named so the index test explains these very strings.
pub(in crate::store) const MESSAGES: &str = "SELECT a.id, e.seq, e.at_ms, e.data ->> 'text' \
    FROM agents a JOIN events e ON e.seq = (SELECT MAX(x.seq) FROM events x \
        WHERE x.agent_id = a.id AND x.kind = 'agent_message') \
    WHERE a.deleted_at_ms IS NULL";

pub(in crate::store) fn plans_sql() -> String {
    format!(
        "SELECT t.id, CAST(e.data -> 'steps' AS TEXT) FROM tasks t \
         JOIN events e ON e.seq = (SELECT MAX(x.seq) FROM events x \
             WHERE x.task_id = t.id AND x.kind = 'plan_updated') \
         WHERE t.state IN {OPEN} AND t.parent_id IS NULL"
    )
}

pub(in crate::store) const QUESTIONS: &str = "SELECT t.id, a.name, e.seq, e.at_ms, \
    CAST(e.data AS TEXT) FROM tasks t JOIN agents a ON a.id = t.agent_id \
    JOIN events e ON e.seq = (SELECT MAX(x.seq) FROM events x \
        WHERE x.task_id = t.id AND x.kind = 'question') \
    WHERE t.state = 'waiting_for_human' AND a.deleted_at_ms IS NULL ORDER BY e.seq";

/// The box lock's events: each node has its own box, so its lock is rebuilt from the
/// `box_lock` events of the tasks that last ran on node `$1`, not from other nodes' boxes
/// (`{exclusive}`: on SQLite, one daemon per file, every one is about this daemon's box).
pub(in crate::store) fn box_locks_sql(exclusive: &str) -> String {
    format!(
        "SELECT e.task_id, CAST(e.data AS TEXT), e.at_ms FROM events e \
         JOIN tasks t ON t.id = e.task_id \
         WHERE e.kind = 'box_lock' AND (t.owner = $1 OR {exclusive}) ORDER BY e.seq"
    )
}

impl Store {
    /// The rows of the board, in one read snapshot.
    pub(in crate::store) async fn board_rows(&self) -> Result<BoardRows, StoreError> {
        let tasks_sql = format!(
            "SELECT * FROM (SELECT x.*, ROW_NUMBER() OVER (PARTITION BY x.agent_id \
                 ORDER BY x.created_at_ms DESC, x.id DESC) AS rank \
             FROM ({SELECT_TASK} WHERE t.parent_id IS NULL AND a.deleted_at_ms IS NULL) x) \
             ranked WHERE rank <= {RECENT_TASKS} OR state IN {OPEN} \
             ORDER BY created_at_ms DESC, id DESC"
        );
        Ok(snapshot!(self, |tx| BoardRows {
            seq: sqlx::query_scalar("SELECT COALESCE(MAX(seq), 0) FROM events")
                .fetch_one(&mut *tx)
                .await?,
            agents: sqlx::query_as(&format!("{SELECT_LIVE} ORDER BY a.name"))
                .fetch_all(&mut *tx)
                .await?,
            messages: sqlx::query_as(MESSAGES).fetch_all(&mut *tx).await?,
            plans: sqlx::query_as(&plans_sql()).fetch_all(&mut *tx).await?,
            questions: sqlx::query_as(QUESTIONS).fetch_all(&mut *tx).await?,
            tasks: sqlx::query_as(&tasks_sql).fetch_all(&mut *tx).await?,
        }))
    }

    /// A page of the live agent `name`'s conversation: up to `limit` items older than
    /// `before` (the newest when `None`), newest first; read in one snapshot, so the page
    /// and its `seq` agree.
    pub async fn conversation(
        &self,
        name: &str,
        before: Option<i64>,
        limit: u32,
    ) -> Result<Conversation, StoreError> {
        Ok(snapshot!(self, |tx| {
            conversation::page(&mut Reader((&mut *tx).into()), name, before, limit).await?
        }))
    }

    /// The box lock's events of this node's tasks, oldest first: (task, data, time).
    pub(in crate::store) async fn box_lock_rows(
        &self,
    ) -> Result<Vec<(String, String, i64)>, StoreError> {
        let node = &self.fleet().node;
        Ok(read!(self, |c| {
            sqlx::query_as(&box_locks_sql(d::EXCLUSIVE))
                .bind(node)
                .fetch_all(c)
                .await?
        }))
    }
}

/// A conversation page's reads on one snapshot.
struct Reader<'a>(Conn<'a>);

impl PageReader for Reader<'_> {
    async fn agent_id(&mut self, name: &str) -> Result<Option<i64>, StoreError> {
        Ok(on!(self.0.reborrow(), |c| {
            sqlx::query_scalar("SELECT id FROM agents WHERE name = $1 AND deleted_at_ms IS NULL")
                .bind(name)
                .fetch_optional(c)
                .await?
        }))
    }

    async fn last_seq(&mut self) -> Result<i64, StoreError> {
        Ok(on!(self.0.reborrow(), |c| {
            sqlx::query_scalar("SELECT COALESCE(MAX(seq), 0) FROM events")
                .fetch_one(c)
                .await?
        }))
    }

    async fn chunk(
        &mut self,
        agent_id: i64,
        before: i64,
        limit: u32,
    ) -> Result<Vec<Row>, StoreError> {
        Ok(on!(self.0.reborrow(), |c| {
            sqlx::query_as(&page_sql())
                .bind(agent_id)
                .bind(before)
                .bind(i64::from(limit))
                .fetch_all(c)
                .await?
        }))
    }

    async fn answer(&mut self, task: &str, call_id: &str) -> Result<Option<String>, StoreError> {
        let answer: Option<Option<String>> = on!(self.0.reborrow(), |c| {
            sqlx::query_scalar(
                "SELECT data ->> 'output' FROM events WHERE task_id = $1 \
                 AND kind = 'tool_result' AND data ->> 'call_id' = $2 LIMIT 1",
            )
            .bind(task)
            .bind(call_id)
            .fetch_optional(c)
            .await?
        });
        Ok(answer.flatten())
    }
}
