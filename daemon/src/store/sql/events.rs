//! The event log, once for both engines: appends (inside a write, or as one statement) and
//! ordered reads. Reads return the columns and [`render`] builds the JSON, with `data` passed
//! through as stored, so an event reads back as the same bytes it was published as.

use lazyboy_protocol::EventBody;

use crate::store::dialect::{Conn, Pool, on, on_pool, write, write_one};
use crate::store::events::{EventFilter, LiveEvent, Target, encode, render};
use crate::store::{Store, StoreError, int, now_ms};

/// The columns of an appended event.
const INSERT: &str = "INSERT INTO events (thread_id, agent_id, task_id, kind, data, at_ms)";

/// Whether an append runs inside a write that holds the log's lock, or is a statement on
/// its own that takes it (PostgreSQL: in a materialized CTE, which runs before the row and
/// its seq are made; SQLite: the writer's mutex is the lock either way).
#[derive(Clone, Copy)]
enum Lock {
    Held,
    Take,
}

/// Inserts one event on a write's open transaction ([`write!`]); the macro publishes it
/// after the commit.
pub(in crate::store) async fn insert<'c>(
    conn: impl Into<Conn<'c>>,
    target: &Target<'_>,
    body: &EventBody,
) -> Result<LiveEvent, StoreError> {
    append(conn, Lock::Held, target, body).await
}

/// Appends one event to `target`'s thread.
async fn append<'c>(
    conn: impl Into<Conn<'c>>,
    lock: Lock,
    target: &Target<'_>,
    body: &EventBody,
) -> Result<LiveEvent, StoreError> {
    let (kind, data) = encode(body)?;
    let at_ms = now_ms();
    let seq: i64 = on!(conn.into(), |c| {
        let (with, from) = match lock {
            Lock::Held => ("", ""),
            Lock::Take => (d::LOCK, d::FROM_LOCK),
        };
        sqlx::query_scalar(&format!(
            "{with}{INSERT} SELECT $1, $2, $3, $4, $5{}, $6{from} RETURNING seq",
            d::JSON
        ))
        .bind(target.thread)
        .bind(target.agent_id)
        .bind(target.task)
        .bind(kind)
        .bind(data.get())
        .bind(at_ms)
        .fetch_one(c)
        .await?
    });
    Ok(render(seq, kind, target, at_ms, data.get()))
}

/// [`Store::append_to_chat`] on a write's open transaction (which holds the lock).
pub(in crate::store) async fn insert_into_chat<'c>(
    conn: impl Into<Conn<'c>>,
    name: &str,
    body: &EventBody,
) -> Result<Option<(LiveEvent, String)>, StoreError> {
    append_to_chat(conn, Lock::Held, name, body).await
}

/// Appends `body` to the chat thread of the live agent called `name`, in one statement;
/// `None` if there is no such agent. Gives the event and the thread id.
async fn append_to_chat<'c>(
    conn: impl Into<Conn<'c>>,
    lock: Lock,
    name: &str,
    body: &EventBody,
) -> Result<Option<(LiveEvent, String)>, StoreError> {
    let (kind, data) = encode(body)?;
    let at_ms = now_ms();
    let row: Option<(i64, i64, String)> = on!(conn.into(), |c| {
        let (with, join) = match lock {
            Lock::Held => ("", ""),
            Lock::Take => (d::LOCK, d::LOCK_JOIN),
        };
        sqlx::query_as(&format!(
            "{with}{INSERT} SELECT t.id, a.id, NULL, $1, $2{}, $3 \
             FROM {join}agents a JOIN threads t ON t.agent_id = a.id AND t.kind = 'chat' \
             WHERE a.name = $4 AND a.deleted_at_ms IS NULL \
             RETURNING seq, agent_id, thread_id",
            d::JSON
        ))
        .bind(kind)
        .bind(data.get())
        .bind(at_ms)
        .bind(name)
        .fetch_optional(c)
        .await?
    });
    let Some((seq, agent_id, thread)) = row else {
        return Ok(None);
    };
    let target = Target {
        agent_id,
        agent: name,
        thread: &thread,
        task: None,
    };
    let event = render(seq, kind, &target, at_ms, data.get());
    Ok(Some((event, thread)))
}

impl Store {
    /// Appends one event in one statement and publishes it.
    pub(in crate::store) async fn append_one(
        &self,
        target: &Target<'_>,
        body: &EventBody,
    ) -> Result<LiveEvent, StoreError> {
        Ok(write_one!(self, |c| {
            let event = append(c, Lock::Take, target, body).await?;
            (event.clone(), [event])
        }))
    }

    /// Appends one event to a running task only if `node` holds its claim. A transaction,
    /// so the ownership check reads after the log's lock is held (a PostgreSQL statement's
    /// snapshot is taken before it waits for the lock).
    pub(in crate::store) async fn append_fenced(
        &self,
        target: &Target<'_>,
        body: &EventBody,
        node: &str,
    ) -> Result<LiveEvent, StoreError> {
        let task = target.task.unwrap_or_default();
        Ok(write!(self, |tx| {
            let owned: bool = sqlx::query_scalar(
                "SELECT EXISTS (SELECT 1 FROM tasks WHERE id = $1 AND owner = $2 \
                 AND state IN ('running', 'recovering'))",
            )
            .bind(task)
            .bind(node)
            .fetch_one(&mut *tx)
            .await?;
            if !owned {
                return Err(StoreError::NotOwner(task.to_owned()));
            }
            let event = insert(&mut *tx, target, body).await?;
            (event.clone(), [event])
        }))
    }

    /// Appends `body` to the chat thread of the live agent called `name`, in one statement;
    /// `None` if there is no such agent. Gives the event and the thread id.
    pub(in crate::store) async fn append_to_chat(
        &self,
        name: &str,
        body: &EventBody,
    ) -> Result<Option<(LiveEvent, String)>, StoreError> {
        Ok(write_one!(self, |c| {
            let appended = append_to_chat(c, Lock::Take, name, body).await?;
            let event = appended.as_ref().map(|(event, _)| event.clone());
            (appended, event)
        }))
    }

    /// Up to `limit` events with `seq > after` that match `filter`, in `seq` order.
    pub async fn events_after(
        &self,
        after: i64,
        filter: &EventFilter,
        limit: u32,
    ) -> Result<Vec<LiveEvent>, StoreError> {
        read_after(self.reader(), after, filter, limit).await
    }

    /// The highest `seq` in the log (0 when empty).
    pub async fn last_seq(&self) -> Result<i64, StoreError> {
        last_seq(self.reader()).await
    }
}

/// [`Store::events_after`] on a pool (also PostgreSQL's feed, which has no store).
pub(in crate::store) async fn read_after(
    pool: Pool<'_>,
    after: i64,
    filter: &EventFilter,
    limit: u32,
) -> Result<Vec<LiveEvent>, StoreError> {
    const SELECT: &str = "SELECT e.seq, e.agent_id, e.task_id, e.kind, a.name, e.thread_id, \
        e.at_ms, CAST(e.data AS TEXT) FROM events e JOIN agents a ON a.id = e.agent_id";
    // One statement per filter shape, so each gets its own index; PostgreSQL types every
    // parameter, so only those the statement names are bound.
    let (sql, bound) = match (&filter.task, filter.agent_id) {
        (Some(_), _) => (
            format!("{SELECT} WHERE e.task_id = $3 AND e.seq > $1 ORDER BY e.seq LIMIT $2"),
            true,
        ),
        (None, Some(_)) => (
            format!("{SELECT} WHERE e.agent_id = $3 AND e.seq > $1 ORDER BY e.seq LIMIT $2"),
            true,
        ),
        (None, None) => (
            format!("{SELECT} WHERE e.seq > $1 ORDER BY e.seq LIMIT $2"),
            false,
        ),
    };
    let rows: Vec<EventColumns> = on_pool!(pool, |c| {
        let mut query = sqlx::query_as(&sql).bind(after).bind(int(limit));
        if bound {
            query = match &filter.task {
                Some(task) => query.bind(task.as_ref()),
                None => query.bind(filter.agent_id),
            };
        }
        query.fetch_all(c).await?
    });
    let mut events = Vec::with_capacity(rows.len());
    for (seq, agent_id, task, kind, agent, thread, at_ms, data) in rows {
        let target = Target {
            agent_id,
            agent: &agent,
            thread: &thread,
            task: task.as_deref(),
        };
        let event = render(seq, &kind, &target, at_ms, &data);
        if filter.matches(&event) {
            events.push(event);
        }
    }
    Ok(events)
}

/// The highest `seq` in the log (0 when empty).
pub(in crate::store) async fn last_seq(pool: Pool<'_>) -> Result<i64, StoreError> {
    let seq: Option<i64> = on_pool!(pool, |c| {
        sqlx::query_scalar("SELECT MAX(seq) FROM events")
            .fetch_one(c)
            .await?
    });
    Ok(seq.unwrap_or(0))
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
