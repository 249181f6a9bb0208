//! The event log: appends (inside a writer transaction) and ordered reads.
//!
//! An event's JSON is rendered once, when it is written or read, and shared by every
//! subscriber as an `Arc<str>`; `data` is copied from the stored text without re-parsing.

use std::sync::Arc;

use lazyboy_protocol::EventBody;
use serde::Serialize;
use serde_json::value::RawValue;
use sqlx::SqliteConnection;

use super::{Store, StoreError, now_ms};

/// A committed event, ready to send: its `seq`, whom it belongs to, and its wire JSON.
#[derive(Debug, Clone)]
pub struct LiveEvent {
    pub seq: i64,
    pub agent_id: i64,
    /// The [`lazyboy_protocol::Event`] as JSON.
    pub json: Arc<str>,
}

/// Which events a reader wants.
#[derive(Debug, Clone, Copy, Default)]
pub struct EventFilter {
    /// Only this agent's events; all agents when `None`.
    pub agent_id: Option<i64>,
}

impl EventFilter {
    pub fn matches(&self, event: &LiveEvent) -> bool {
        self.agent_id.is_none_or(|id| id == event.agent_id)
    }
}

/// The wire shape of [`lazyboy_protocol::Event`], borrowing its parts (a test keeps them equal).
#[derive(Serialize)]
struct WireEvent<'a> {
    seq: i64,
    kind: &'a str,
    agent: &'a str,
    thread: &'a str,
    task: Option<&'a str>,
    at_ms: i64,
    data: &'a RawValue,
}

fn render(row: &EventRow) -> Result<LiveEvent, StoreError> {
    let corrupt = |source| StoreError::CorruptEvent {
        seq: row.seq,
        source,
    };
    let data: &RawValue = serde_json::from_str(&row.data).map_err(corrupt)?;
    let json = serde_json::to_string(&WireEvent {
        seq: row.seq,
        kind: &row.kind,
        agent: &row.agent,
        thread: &row.thread_id,
        task: row.task_id.as_deref(),
        at_ms: row.at_ms,
        data,
    })
    .map_err(corrupt)?;
    Ok(LiveEvent {
        seq: row.seq,
        agent_id: row.agent_id,
        json: json.into(),
    })
}

#[derive(sqlx::FromRow)]
struct EventRow {
    seq: i64,
    kind: String,
    agent_id: i64,
    agent: String,
    thread_id: String,
    task_id: Option<String>,
    at_ms: i64,
    data: String,
}

/// Where a new event goes.
pub(super) struct Target<'a> {
    pub agent_id: i64,
    pub agent: &'a str,
    pub thread: &'a str,
    pub task: Option<&'a str>,
}

/// Inserts one event on the writer's open transaction. The caller publishes it after commit.
pub(super) async fn insert(
    conn: &mut SqliteConnection,
    target: &Target<'_>,
    body: &EventBody,
) -> Result<LiveEvent, StoreError> {
    let kind = body.kind();
    let data = body.data().to_string();
    let at_ms = now_ms();
    let seq: i64 = sqlx::query_scalar(
        "INSERT INTO events (thread_id, agent_id, task_id, kind, data, at_ms) \
         VALUES (?, ?, ?, ?, ?, ?) RETURNING seq",
    )
    .bind(target.thread)
    .bind(target.agent_id)
    .bind(target.task)
    .bind(kind)
    .bind(&data)
    .bind(at_ms)
    .fetch_one(conn)
    .await?;
    render(&EventRow {
        seq,
        kind: kind.to_owned(),
        agent_id: target.agent_id,
        agent: target.agent.to_owned(),
        thread_id: target.thread.to_owned(),
        task_id: target.task.map(str::to_owned),
        at_ms,
        data,
    })
}

impl Store {
    /// Up to `limit` events with `seq > after` that match `filter`, in `seq` order.
    pub async fn events_after(
        &self,
        after: i64,
        filter: EventFilter,
        limit: u32,
    ) -> Result<Vec<LiveEvent>, StoreError> {
        // Two statements rather than `(? IS NULL OR ...)`, so each one gets its own index.
        let sql = match filter.agent_id {
            None => {
                "SELECT e.seq, e.kind, e.agent_id, a.name AS agent, e.thread_id, e.task_id, \
                        e.at_ms, e.data \
                 FROM events e JOIN agents a ON a.id = e.agent_id \
                 WHERE e.seq > ?1 ORDER BY e.seq LIMIT ?2"
            }
            Some(_) => {
                "SELECT e.seq, e.kind, e.agent_id, a.name AS agent, e.thread_id, e.task_id, \
                        e.at_ms, e.data \
                 FROM events e JOIN agents a ON a.id = e.agent_id \
                 WHERE e.agent_id = ?3 AND e.seq > ?1 ORDER BY e.seq LIMIT ?2"
            }
        };
        let rows: Vec<EventRow> = sqlx::query_as(sql)
            .bind(after)
            .bind(limit)
            .bind(filter.agent_id)
            .fetch_all(&self.inner.reader)
            .await?;
        rows.iter().map(render).collect()
    }

    /// The highest `seq` in the log (0 when empty).
    pub async fn last_seq(&self) -> Result<i64, StoreError> {
        let seq: Option<i64> = sqlx::query_scalar("SELECT MAX(seq) FROM events")
            .fetch_one(&self.inner.reader)
            .await?;
        Ok(seq.unwrap_or(0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rendered_json_is_the_protocol_event() {
        let row = EventRow {
            seq: 7,
            kind: "user_message".into(),
            agent_id: 1,
            agent: "ops".into(),
            thread_id: "t1".into(),
            task_id: None,
            at_ms: 42,
            data: r#"{"text":"hi \"there\""}"#.into(),
        };
        let live = render(&row).unwrap();
        let event: lazyboy_protocol::Event = serde_json::from_str(&live.json).unwrap();
        assert_eq!(event.seq, 7);
        assert_eq!(event.agent, "ops");
        assert_eq!(event.task, None);
        assert_eq!(
            event.body(),
            Some(EventBody::UserMessage {
                text: "hi \"there\"".into()
            })
        );
    }
}
