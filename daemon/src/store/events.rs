//! The event log: appends (inside a writer transaction) and ordered reads.
//!
//! An event is rendered once into its SSE frame (`id: <seq>\ndata: <json>\n\n`) when it is
//! written or read; every subscriber sends that same buffer (a refcounted `Bytes`), so the
//! cost of fanning out does not grow with formatting work per subscriber. Reads let SQLite
//! build the JSON (`json_object`), so `data` is never parsed on the way out.

use std::sync::Arc;

use bytes::{BufMut, Bytes, BytesMut};
use lazyboy_protocol::EventBody;
use serde::Serialize;
use serde_json::value::RawValue;
use sqlx::SqliteConnection;

use super::{Store, StoreError, now_ms};

/// A committed event, ready to send.
#[derive(Debug, Clone)]
pub struct LiveEvent {
    pub seq: i64,
    pub agent_id: i64,
    pub task: Option<Arc<str>>,
    /// The whole SSE message; the event's JSON is `frame[json_start..frame.len() - 2]`.
    frame: Bytes,
    json_start: usize,
}

impl LiveEvent {
    fn new(seq: i64, agent_id: i64, task: Option<&str>, json: &str) -> LiveEvent {
        let id = format!("id: {seq}\ndata: ");
        let mut frame = BytesMut::with_capacity(id.len() + json.len() + 2);
        frame.put_slice(id.as_bytes());
        frame.put_slice(json.as_bytes());
        frame.put_slice(b"\n\n");
        LiveEvent {
            seq,
            agent_id,
            task: task.map(Arc::from),
            frame: frame.freeze(),
            json_start: id.len(),
        }
    }

    /// The SSE message: `id: <seq>`, `data: <json>`, blank line.
    pub fn frame(&self) -> &Bytes {
        &self.frame
    }

    /// The [`lazyboy_protocol::Event`] as JSON.
    pub fn json(&self) -> &str {
        let json = &self.frame[self.json_start..self.frame.len() - 2];
        // Built from `&str` pieces in `new`, so always UTF-8.
        std::str::from_utf8(json).unwrap_or_default()
    }
}

/// Which events a reader wants.
#[derive(Debug, Clone, Default)]
pub struct EventFilter {
    /// Only this agent's events; all agents when `None`.
    pub agent_id: Option<i64>,
    /// Only this task's events.
    pub task: Option<Arc<str>>,
}

impl EventFilter {
    pub fn matches(&self, event: &LiveEvent) -> bool {
        self.agent_id.is_none_or(|id| id == event.agent_id)
            && self
                .task
                .as_deref()
                .is_none_or(|task| event.task.as_deref() == Some(task))
    }
}

/// The wire shape of [`lazyboy_protocol::Event`], borrowing its parts. The `json_object`
/// in [`Store::events_after`] must produce the same keys in the same order (a test checks).
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
    let data = serde_json::value::to_raw_value(&body.data()).map_err(StoreError::Encode)?;
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
    render_new(seq, kind, target, at_ms, &data)
}

/// Appends `body` to the chat thread of the live agent called `name`, in one statement;
/// `None` if there is no such agent. Returns the event and the thread id.
pub(super) async fn insert_into_chat(
    conn: &mut SqliteConnection,
    name: &str,
    body: &EventBody,
) -> Result<Option<(LiveEvent, String)>, StoreError> {
    let kind = body.kind();
    let data = serde_json::value::to_raw_value(&body.data()).map_err(StoreError::Encode)?;
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
    let event = render_new(
        seq,
        kind,
        &Target {
            agent_id,
            agent: name,
            thread: &thread,
            task: None,
        },
        at_ms,
        &data,
    )?;
    Ok(Some((event, thread)))
}

fn render_new(
    seq: i64,
    kind: &str,
    target: &Target<'_>,
    at_ms: i64,
    data: &RawValue,
) -> Result<LiveEvent, StoreError> {
    let json = serde_json::to_string(&WireEvent {
        seq,
        kind,
        agent: target.agent,
        thread: target.thread,
        task: target.task,
        at_ms,
        data,
    })
    .map_err(StoreError::Encode)?;
    Ok(LiveEvent::new(seq, target.agent_id, target.task, &json))
}

/// Builds the event JSON inside SQLite, in [`WireEvent`]'s key order.
const SELECT_JSON: &str = "SELECT e.seq, e.agent_id, e.task_id, json_object('seq', e.seq, 'kind', e.kind, \
                           'agent', a.name, 'thread', e.thread_id, 'task', e.task_id, \
                           'at_ms', e.at_ms, 'data', json(e.data)) AS json \
                           FROM events e JOIN agents a ON a.id = e.agent_id";

impl Store {
    /// Up to `limit` events with `seq > after` that match `filter`, in `seq` order.
    pub async fn events_after(
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
        let rows: Vec<(i64, i64, Option<String>, String)> = sqlx::query_as(&sql)
            .bind(after)
            .bind(limit)
            .bind(filter.agent_id)
            .bind(filter.task.as_deref())
            .fetch_all(&self.inner.reader)
            .await?;
        Ok(rows
            .iter()
            .map(|(seq, agent_id, task, json)| {
                LiveEvent::new(*seq, *agent_id, task.as_deref(), json)
            })
            .filter(|event| filter.matches(event))
            .collect())
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
    use lazyboy_protocol::Event;

    use super::*;
    use crate::bus::Bus;

    /// What an append publishes and what a later read returns are the same bytes, and they
    /// decode as the protocol's `Event`.
    #[tokio::test]
    async fn written_and_read_events_are_identical() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("t.db"), Bus::default())
            .await
            .unwrap();
        store
            .create_agent("ops", "", Some("m"), None)
            .await
            .unwrap();
        let text = "quotes \" and \\ and\nnewlines, unicode é ✓, and </script>";
        let body = EventBody::UserMessage { text: text.into() };
        let (_, written) = store.append_to_agent("ops", &body).await.unwrap();
        let read = store
            .events_after(1, &EventFilter::default(), 10)
            .await
            .unwrap();
        assert_eq!(read.len(), 1);
        assert_eq!(read[0].frame(), written.frame());
        let event: Event = serde_json::from_str(written.json()).unwrap();
        assert_eq!(
            (event.seq, event.agent.as_str(), event.task.as_deref()),
            (2, "ops", None)
        );
        assert_eq!(event.body(), Some(body));
        let frame = std::str::from_utf8(written.frame()).unwrap();
        assert!(frame.starts_with("id: 2\ndata: {") && frame.ends_with("}\n\n"));
        assert_eq!(frame.matches('\n').count(), 3, "one data line");
    }
}
