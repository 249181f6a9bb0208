//! The dashboard's reads on PostgreSQL (`store/projections/`), and the box lock's events.
//! Each projection is read in one `REPEATABLE READ` transaction: one snapshot for all its
//! statements, so what it shows is current to the seq it says (seq order is commit order).

use lazyboy_protocol::Conversation;
use sqlx::PgConnection;

use super::Postgres;
use crate::store::StoreError;
use crate::store::projections::conversation::{self, PageReader, page_sql};
use crate::store::projections::fold::Row;
use crate::store::projections::state::{BoardRows, OPEN, RECENT_TASKS};
use crate::store::sql::agents::SELECT_LIVE;
use crate::store::tasks::SELECT_TASK;

/// The board's statements, named so the index test explains these very strings.
pub(in crate::store) const MESSAGES: &str = "SELECT a.id, e.seq, e.at_ms, e.data ->> 'text' FROM agents a \
             JOIN events e ON e.seq = (SELECT MAX(x.seq) FROM events x \
                 WHERE x.agent_id = a.id AND x.kind = 'agent_message') \
             WHERE a.deleted_at_ms IS NULL";

pub(in crate::store) fn plans_sql() -> String {
    format!(
        "SELECT t.id, (e.data -> 'steps')::text FROM tasks t \
             JOIN events e ON e.seq = (SELECT MAX(x.seq) FROM events x \
                 WHERE x.task_id = t.id AND x.kind = 'plan_updated') \
             WHERE t.state IN {OPEN} AND t.parent_id IS NULL"
    )
}

pub(in crate::store) const QUESTIONS: &str = "SELECT t.id, a.name, e.seq, e.at_ms, e.data::text FROM tasks t \
             JOIN agents a ON a.id = t.agent_id \
             JOIN events e ON e.seq = (SELECT MAX(x.seq) FROM events x \
                 WHERE x.task_id = t.id AND x.kind = 'question') \
             WHERE t.state = 'waiting_for_human' AND a.deleted_at_ms IS NULL ORDER BY e.seq";

pub(in crate::store) const BOX_LOCKS: &str = "SELECT e.task_id, e.data::text, e.at_ms FROM events e \
             JOIN tasks t ON t.id = e.task_id \
             WHERE e.kind = 'box_lock' AND t.owner = $1 ORDER BY e.seq";

impl Postgres {
    /// A read-only transaction on one snapshot.
    async fn snapshot(&self) -> Result<super::Tx<'static>, StoreError> {
        let mut tx = self.pool.begin().await?;
        sqlx::query("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            .execute(&mut *tx)
            .await?;
        Ok(tx)
    }

    pub(in crate::store) async fn board_rows(&self) -> Result<BoardRows, StoreError> {
        let mut tx = self.snapshot().await?;
        let seq: i64 = sqlx::query_scalar("SELECT COALESCE(MAX(seq), 0) FROM events")
            .fetch_one(&mut *tx)
            .await?;
        let agents = sqlx::query_as(&format!("{SELECT_LIVE} ORDER BY a.name"))
            .fetch_all(&mut *tx)
            .await?;
        let messages = sqlx::query_as(MESSAGES).fetch_all(&mut *tx).await?;
        let plans = sqlx::query_as(&plans_sql()).fetch_all(&mut *tx).await?;
        let questions = sqlx::query_as(QUESTIONS).fetch_all(&mut *tx).await?;
        let tasks = sqlx::query_as(&format!(
            "SELECT * FROM (SELECT x.*, ROW_NUMBER() OVER (PARTITION BY x.agent_id \
                 ORDER BY x.created_at_ms DESC, x.id DESC) AS rank \
             FROM ({SELECT_TASK} WHERE t.parent_id IS NULL AND a.deleted_at_ms IS NULL) x) \
             ranked WHERE rank <= {RECENT_TASKS} OR state IN {OPEN} \
             ORDER BY created_at_ms DESC, id DESC"
        ))
        .fetch_all(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(BoardRows {
            seq,
            agents,
            messages,
            plans,
            questions,
            tasks,
        })
    }

    pub(in crate::store) async fn conversation(
        &self,
        name: &str,
        before: Option<i64>,
        limit: u32,
    ) -> Result<Conversation, StoreError> {
        let mut tx = self.snapshot().await?;
        let page = conversation::page(&mut Reader(&mut tx), name, before, limit).await?;
        tx.commit().await?;
        Ok(page)
    }

    pub(in crate::store) async fn box_lock_rows(
        &self,
    ) -> Result<Vec<(String, String, i64)>, StoreError> {
        // Each node has its own box: its lock is rebuilt from the box_lock events of the
        // tasks that last ran on this node, not from other nodes' boxes.
        Ok(sqlx::query_as(BOX_LOCKS)
            .bind(&self.fleet.node)
            .fetch_all(&self.pool)
            .await?)
    }
}

/// A conversation page's reads on one snapshot.
struct Reader<'a>(&'a mut PgConnection);

impl PageReader for Reader<'_> {
    async fn agent_id(&mut self, name: &str) -> Result<Option<i64>, StoreError> {
        Ok(
            sqlx::query_scalar("SELECT id FROM agents WHERE name = $1 AND deleted_at_ms IS NULL")
                .bind(name)
                .fetch_optional(&mut *self.0)
                .await?,
        )
    }

    async fn last_seq(&mut self) -> Result<i64, StoreError> {
        Ok(
            sqlx::query_scalar("SELECT COALESCE(MAX(seq), 0) FROM events")
                .fetch_one(&mut *self.0)
                .await?,
        )
    }

    async fn chunk(
        &mut self,
        agent_id: i64,
        before: i64,
        limit: u32,
    ) -> Result<Vec<Row>, StoreError> {
        Ok(sqlx::query_as(&page_sql('$'))
            .bind(agent_id)
            .bind(before)
            .bind(i64::from(limit))
            .fetch_all(&mut *self.0)
            .await?)
    }

    async fn answer(&mut self, task: &str, call_id: &str) -> Result<Option<String>, StoreError> {
        let answer: Option<Option<String>> = sqlx::query_scalar(
            "SELECT data ->> 'output' FROM events WHERE task_id = $1 \
             AND kind = 'tool_result' AND data ->> 'call_id' = $2 LIMIT 1",
        )
        .bind(task)
        .bind(call_id)
        .fetch_optional(&mut *self.0)
        .await?;
        Ok(answer.flatten())
    }
}
