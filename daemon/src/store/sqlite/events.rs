//! The event log on SQLite: appends (on the writer, inside its transaction) and ordered
//! reads. Reads let SQLite build the JSON (`json_object`), so `data` is never parsed on the
//! way out.

use lazyboy_protocol::EventBody;
use sqlx::SqliteConnection;

use super::Sqlite;
use crate::store::events::{EventFilter, LiveEvent, Target, encode, render};
use crate::store::{StoreError, now_ms};

/// Inserts one event on the writer's open transaction. The caller publishes it after commit.
pub(super) async fn insert(
    conn: &mut SqliteConnection,
    target: &Target<'_>,
    body: &EventBody,
) -> Result<LiveEvent, StoreError> {
    let (kind, data) = encode(body)?;
    let at_ms = now_ms();
    let seq: i64 = sqlx::query_scalar(
        "INSERT INTO events (thread_id, agent_id, task_id, kind, data, at_ms) \
         VALUES (?, ?, ?, ?, ?, ?) RETURNING seq",
    )
    .bind(target.thread)
    .bind(target.agent_id)
    .bind(target.task)
    .bind(kind)
    .bind(data.get())
    .bind(at_ms)
    .fetch_one(conn)
    .await?;
    render(seq, kind, target, at_ms, &data)
}

/// Inserts one event into a task's thread only if `node` holds the task's claim; `None`
/// if it does not.
pub(super) async fn insert_fenced(
    conn: &mut SqliteConnection,
    target: &Target<'_>,
    body: &EventBody,
    node: &str,
) -> Result<Option<LiveEvent>, StoreError> {
    let (kind, data) = encode(body)?;
    let at_ms = now_ms();
    let seq: Option<i64> = sqlx::query_scalar(
        "INSERT INTO events (thread_id, agent_id, task_id, kind, data, at_ms) \
         SELECT ?1, ?2, ?3, ?4, ?5, ?6 WHERE EXISTS (SELECT 1 FROM tasks WHERE id = ?3 \
         AND owner = ?7 AND state IN ('running', 'recovering')) RETURNING seq",
    )
    .bind(target.thread)
    .bind(target.agent_id)
    .bind(target.task)
    .bind(kind)
    .bind(data.get())
    .bind(at_ms)
    .bind(node)
    .fetch_optional(conn)
    .await?;
    seq.map(|seq| render(seq, kind, target, at_ms, &data))
        .transpose()
}

/// Appends `body` to the chat thread of the live agent called `name`, in one statement;
/// `None` if there is no such agent. Returns the event and the thread id.
pub(super) async fn insert_into_chat(
    conn: &mut SqliteConnection,
    name: &str,
    body: &EventBody,
) -> Result<Option<(LiveEvent, String)>, StoreError> {
    let (kind, data) = encode(body)?;
    let at_ms = now_ms();
    let row: Option<(i64, i64, String)> = sqlx::query_as(
        "INSERT INTO events (thread_id, agent_id, task_id, kind, data, at_ms) \
         SELECT t.id, a.id, NULL, ?1, ?2, ?3 \
         FROM agents a JOIN threads t ON t.agent_id = a.id AND t.kind = 'chat' \
         WHERE a.name = ?4 AND a.deleted_at_ms IS NULL \
         RETURNING seq, agent_id, thread_id",
    )
    .bind(kind)
    .bind(data.get())
    .bind(at_ms)
    .bind(name)
    .fetch_optional(conn)
    .await?;
    let Some((seq, agent_id, thread)) = row else {
        return Ok(None);
    };
    let target = Target {
        agent_id,
        agent: name,
        thread: &thread,
        task: None,
    };
    let event = render(seq, kind, &target, at_ms, &data)?;
    Ok(Some((event, thread)))
}

/// Builds the event JSON inside SQLite, in `WireEvent`'s key order.
const SELECT_JSON: &str = "SELECT e.seq, e.agent_id, e.task_id, e.kind, \
    json_object('seq', e.seq, 'kind', e.kind, 'agent', a.name, 'thread', e.thread_id, \
    'task', e.task_id, 'at_ms', e.at_ms, 'data', json(e.data)) AS json \
    FROM events e JOIN agents a ON a.id = e.agent_id";

impl Sqlite {
    pub(in crate::store) async fn events_after(
        &self,
        after: i64,
        filter: &EventFilter,
        limit: u32,
    ) -> Result<Vec<LiveEvent>, StoreError> {
        // One statement per filter shape, so each gets its own index.
        let sql = match (&filter.task, filter.agent_id) {
            (Some(_), _) => {
                format!("{SELECT_JSON} WHERE e.task_id = ?4 AND e.seq > ?1 ORDER BY e.seq LIMIT ?2")
            }
            (None, Some(_)) => format!(
                "{SELECT_JSON} WHERE e.agent_id = ?3 AND e.seq > ?1 ORDER BY e.seq LIMIT ?2"
            ),
            (None, None) => format!("{SELECT_JSON} WHERE e.seq > ?1 ORDER BY e.seq LIMIT ?2"),
        };
        let rows: Vec<(i64, i64, Option<String>, String, String)> = sqlx::query_as(&sql)
            .bind(after)
            .bind(limit)
            .bind(filter.agent_id)
            .bind(filter.task.as_deref())
            .fetch_all(&self.reader)
            .await?;
        Ok(rows
            .iter()
            .map(|(seq, agent_id, task, kind, json)| {
                LiveEvent::new(*seq, *agent_id, task.as_deref(), kind, json)
            })
            .filter(|event| filter.matches(event))
            .collect())
    }

    pub(in crate::store) async fn last_seq(&self) -> Result<i64, StoreError> {
        let seq: Option<i64> = sqlx::query_scalar("SELECT MAX(seq) FROM events")
            .fetch_one(&self.reader)
            .await?;
        Ok(seq.unwrap_or(0))
    }
}
