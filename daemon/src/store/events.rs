//! The event log's shared parts: the rendered event, filters, and the wire rendering both
//! backends use.
//!
//! An event is rendered once into its SSE frame (`id: <seq>\ndata: <json>\n\n`) when it is
//! written or read; every subscriber sends that same buffer (a refcounted `Bytes`), so the
//! cost of fanning out does not grow with formatting work per subscriber. SQLite builds the
//! JSON in SQL (`json_object`); PostgreSQL returns the columns and [`render`] builds it here,
//! with `data` passed through untouched (a `json` column keeps its text as written), so the
//! same event reads back as the same bytes on both.

use std::sync::Arc;

use bytes::{BufMut, Bytes, BytesMut};
use lazyboy_protocol::EventBody;
use serde::Serialize;
use serde_json::value::RawValue;

use super::StoreError;

/// A committed event, ready to send.
#[derive(Debug, Clone)]
pub struct LiveEvent {
    pub seq: i64,
    pub agent_id: i64,
    pub task: Option<Arc<str>>,
    /// What the event is about, for whoever reacts to other daemons' changes.
    pub topic: Topic,
    /// Whether a notification may be owed for it (its kind is one of
    /// [`lazyboy_protocol::SOURCE_KINDS`]): the notifier parses only these.
    pub notable: bool,
    /// The whole SSE message; the event's JSON is `frame[json_start..frame.len() - 2]`.
    frame: Bytes,
    json_start: usize,
}

/// Whether an event changes what a scheduler (a task's life: created, state, finished) or a
/// schedule timer should do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Topic {
    Task,
    Schedule,
    Other,
}

impl Topic {
    fn of(kind: &str) -> Topic {
        if kind.starts_with("task_") {
            Topic::Task
        } else if kind.starts_with("schedule_") {
            Topic::Schedule
        } else {
            Topic::Other
        }
    }
}

impl LiveEvent {
    pub(super) fn new(
        seq: i64,
        agent_id: i64,
        task: Option<&str>,
        kind: &str,
        json: &str,
    ) -> LiveEvent {
        let id = format!("id: {seq}\ndata: ");
        let mut frame = BytesMut::with_capacity(id.len() + json.len() + 2);
        frame.put_slice(id.as_bytes());
        frame.put_slice(json.as_bytes());
        frame.put_slice(b"\n\n");
        LiveEvent {
            seq,
            agent_id,
            task: task.map(Arc::from),
            topic: Topic::of(kind),
            notable: lazyboy_protocol::SOURCE_KINDS.contains(&kind),
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

/// The wire shape of [`lazyboy_protocol::Event`], borrowing its parts. SQLite's
/// `json_object` in `sqlite::events` must produce the same keys in the same order (a test
/// checks).
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

/// An event body as its columns: kind and JSON data.
pub(super) fn encode(body: &EventBody) -> Result<(&'static str, Box<RawValue>), StoreError> {
    let mut data = body.data();
    // The one place every event passes before it is stored and broadcast: no known secret
    // is written to the log, sent on a stream or put in a request built from the log.
    crate::redact::json(&mut data);
    let data = serde_json::value::to_raw_value(&data).map_err(StoreError::Encode)?;
    Ok((body.kind(), data))
}

/// Renders an event from its parts.
pub(super) fn render(
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
    Ok(LiveEvent::new(
        seq,
        target.agent_id,
        target.task,
        kind,
        &json,
    ))
}

super::facade! {
    /// Up to `limit` events with `seq > after` that match `filter`, in `seq` order.
    pub async fn events_after(
        &self,
        after: i64,
        filter: &EventFilter,
        limit: u32,
    ) -> Result<Vec<LiveEvent>, StoreError>;

    /// The highest `seq` in the log (0 when empty).
    pub async fn last_seq(&self) -> Result<i64, StoreError>;
}
