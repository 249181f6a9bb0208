//! The event log on PostgreSQL: appends under the log's lock, ordered reads. Reads return
//! the columns and the JSON is rendered here (`data` passes through as stored).

use lazyboy_protocol::EventBody;
use serde_json::value::RawValue;
use sqlx::PgConnection;
use sqlx::postgres::PgPool;

use super::{LOG_LOCK, Postgres, int};
use crate::store::events::{EventFilter, LiveEvent, Target, encode, render};
use crate::store::{StoreError, now_ms};

/// Inserts one event on a transaction that holds the log's lock ([`Postgres::begin`]). The
/// caller hands it to the feed after commit.
pub(super) async fn insert(
    conn: &mut PgConnection,
    target: &Target<'_>,
    body: &EventBody,
) -> Result<LiveEvent, StoreError> {
    let (kind, data) = encode(body)?;
    let at_ms = now_ms();
    let seq: i64 = sqlx::query_scalar(
        "INSERT INTO events (thread_id, agent_id, task_id, kind, data, at_ms) \
         VALUES ($1, $2, $3, $4, $5::json, $6) RETURNING seq",
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

/// Appends one event in one statement, which takes the log's lock itself: the
/// materialized CTE runs before the row (and its seq) is made.
pub(super) async fn append(
    pool: &PgPool,
    target: &Target<'_>,
    body: &EventBody,
) -> Result<LiveEvent, StoreError> {
    let (kind, data) = encode(body)?;
    let at_ms = now_ms();
    let seq: i64 = sqlx::query_scalar(
        "WITH lock AS MATERIALIZED (SELECT pg_advisory_xact_lock($7)) \
         INSERT INTO events (thread_id, agent_id, task_id, kind, data, at_ms) \
         SELECT $1, $2, $3, $4, $5::json, $6 FROM lock RETURNING seq",
    )
    .bind(target.thread)
    .bind(target.agent_id)
    .bind(target.task)
    .bind(kind)
    .bind(data.get())
    .bind(at_ms)
    .bind(LOG_LOCK)
    .fetch_one(pool)
    .await?;
    render(seq, kind, target, at_ms, &data)
}

/// Appends `body` to the chat thread of the live agent called `name`, in one statement;
/// `None` if there is no such agent. Returns the event and the thread id.
pub(super) async fn append_to_chat(
    pool: &PgPool,
    name: &str,
    body: &EventBody,
) -> Result<Option<(LiveEvent, String)>, StoreError> {
    let (kind, data) = encode(body)?;
    let at_ms = now_ms();
    let row: Option<(i64, i64, String)> = sqlx::query_as(
        "WITH lock AS MATERIALIZED (SELECT pg_advisory_xact_lock($5)) \
         INSERT INTO events (thread_id, agent_id, task_id, kind, data, at_ms) \
         SELECT t.id, a.id, NULL, $1, $2::json, $3 \
         FROM lock, agents a JOIN threads t ON t.agent_id = a.id AND t.kind = 'chat' \
         WHERE a.name = $4 AND a.deleted_at_ms IS NULL \
         RETURNING seq, agent_id, thread_id",
    )
    .bind(kind)
    .bind(data.get())
    .bind(at_ms)
    .bind(name)
    .bind(LOG_LOCK)
    .fetch_optional(pool)
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

type EventColumns = (
    i64,
    i64,
    Option<String>,
    String,
    String,
    String,
    i64,
    String,
);

/// Up to `limit` events after `after` matching `filter`, rendered, in seq order.
pub(super) async fn read_after(
    pool: &PgPool,
    after: i64,
    filter: &EventFilter,
    limit: u32,
) -> Result<Vec<LiveEvent>, StoreError> {
    const SELECT: &str = "SELECT e.seq, e.agent_id, e.task_id, e.kind, a.name, e.thread_id, \
        e.at_ms, e.data::text FROM events e JOIN agents a ON a.id = e.agent_id";
    // One statement per filter shape, so each gets its own index.
    let sql = match (&filter.task, filter.agent_id) {
        (Some(_), _) => {
            format!("{SELECT} WHERE e.task_id = $3 AND e.seq > $1 ORDER BY e.seq LIMIT $2")
        }
        (None, Some(_)) => {
            format!("{SELECT} WHERE e.agent_id = $3 AND e.seq > $1 ORDER BY e.seq LIMIT $2")
        }
        (None, None) => format!("{SELECT} WHERE e.seq > $1 ORDER BY e.seq LIMIT $2"),
    };
    let mut query = sqlx::query_as::<_, EventColumns>(&sql)
        .bind(after)
        .bind(int(limit));
    // PostgreSQL types every parameter: bind only those the statement names.
    match (&filter.task, filter.agent_id) {
        (Some(task), _) => query = query.bind(task.as_ref()),
        (None, Some(agent)) => query = query.bind(agent),
        (None, None) => {}
    }
    let rows = query.fetch_all(pool).await?;
    let mut events = Vec::with_capacity(rows.len());
    for (seq, agent_id, task, kind, agent, thread, at_ms, data) in rows {
        let data = RawValue::from_string(data).map_err(StoreError::Encode)?;
        let target = Target {
            agent_id,
            agent: &agent,
            thread: &thread,
            task: task.as_deref(),
        };
        let event = render(seq, &kind, &target, at_ms, &data)?;
        if filter.matches(&event) {
            events.push(event);
        }
    }
    Ok(events)
}

/// The highest seq in the log (0 when empty).
pub(super) async fn last_seq(pool: &PgPool) -> Result<i64, StoreError> {
    let seq: Option<i64> = sqlx::query_scalar("SELECT MAX(seq) FROM events")
        .fetch_one(pool)
        .await?;
    Ok(seq.unwrap_or(0))
}

impl Postgres {
    pub(in crate::store) async fn events_after(
        &self,
        after: i64,
        filter: &EventFilter,
        limit: u32,
    ) -> Result<Vec<LiveEvent>, StoreError> {
        read_after(&self.pool, after, filter, limit).await
    }

    pub(in crate::store) async fn last_seq(&self) -> Result<i64, StoreError> {
        last_seq(&self.pool).await
    }
}
