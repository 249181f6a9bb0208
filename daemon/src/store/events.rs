//! The event log's shared parts: filters, and the wire rendering every append and read uses
//! (the statements are in `sql/events.rs`; the rendered [`LiveEvent`] is the bus's).
//!
//! An event is rendered once into its SSE frame (`id: <seq>\ndata: <json>\n\n`) when it is
//! written or read; every subscriber sends that same buffer (a refcounted `Bytes`), so the
//! cost of fanning out does not grow with formatting work per subscriber. Reads return the
//! columns and [`render`] builds the JSON here, with `data` passed through untouched (SQLite
//! keeps the text; a PostgreSQL `json` column keeps its text as written), so the same event
//! reads back as the same bytes it was published as, on both engines.

use std::sync::Arc;

use lazyboy_protocol::EventBody;
use serde::Serialize;
use serde_json::value::RawValue;

use super::StoreError;
pub use crate::bus::{LiveEvent, Topic};

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

/// The wire shape of [`lazyboy_protocol::Event`], borrowing its parts.
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
