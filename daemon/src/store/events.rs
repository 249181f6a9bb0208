//! The event log's shared parts: filters, and the wire rendering every append and read uses
//! (the statements are in `sql/events.rs`; the rendered [`LiveEvent`] is the bus's).
//!
//! An event is rendered once into its SSE frame (`id: <seq>\ndata: <json>\n\n`) when it is
//! written or read; every subscriber sends that same buffer (a refcounted `Bytes`), so the
//! cost of fanning out does not grow with formatting work per subscriber. Reads return the
//! columns and [`render`] builds the JSON here, with `data` passed through untouched (SQLite
//! keeps the text; a PostgreSQL `json` column keeps its text as written), so the same event
//! reads back as the same bytes it was published as, on both engines.

use std::io::Write;
use std::sync::Arc;

use lazyboy_protocol::EventBody;
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

/// Renders an event from its parts, in the wire shape of [`lazyboy_protocol::Event`], straight
/// into its frame. `data` is JSON text and goes in as it is: [`encode`] made it, and both
/// engines check it on the way in (SQLite's `CHECK (json_valid(data))`, PostgreSQL's `json`
/// type), so a read does not parse it again.
pub(super) fn render(
    seq: i64,
    kind: &str,
    target: &Target<'_>,
    at_ms: i64,
    data: &str,
) -> LiveEvent {
    // The names and figures, their quotes and the data; escapes may add a little.
    let len = 96
        + kind.len()
        + target.agent.len()
        + target.thread.len()
        + target.task.map_or(0, str::len)
        + data.len();
    LiveEvent::new(seq, target.agent_id, target.task, kind, len, |out| {
        let _ = write!(out, "{{\"seq\":{seq},\"kind\":");
        string(out, kind);
        out.extend_from_slice(b",\"agent\":");
        string(out, target.agent);
        out.extend_from_slice(b",\"thread\":");
        string(out, target.thread);
        out.extend_from_slice(b",\"task\":");
        match target.task {
            Some(task) => string(out, task),
            None => out.extend_from_slice(b"null"),
        }
        let _ = write!(out, ",\"at_ms\":{at_ms},\"data\":");
        out.extend_from_slice(data.as_bytes());
        out.push(b'}');
    })
}

/// `s` as a JSON string. Writing a `&str` to a `Vec` cannot fail.
fn string(out: &mut Vec<u8>, s: &str) {
    let _ = serde_json::to_writer(&mut *out, s);
}

#[cfg(test)]
mod tests {
    use lazyboy_protocol::Event;
    use serde_json::json;

    use super::{Target, render};

    /// The hand-written rendering is the protocol's `Event` as serde writes it, escapes and
    /// a missing task included, with `data` passed through as given.
    #[test]
    fn render_writes_the_protocol_event() {
        let data = r#"{"text":"a \"quote\", a \\ and </script> é"}"#;
        for task in [Some("t-\"1\"\n"), None] {
            let target = Target {
                agent_id: 7,
                agent: "o\"ps\\",
                thread: "th\u{1}read é",
                task,
            };
            let event = render(42, "user_message", &target, -3, data);
            let expected = Event {
                seq: 42,
                kind: "user_message".into(),
                agent: target.agent.into(),
                thread: target.thread.into(),
                task: task.map(Into::into),
                at_ms: -3,
                data: serde_json::from_str(data).unwrap(),
            };
            let written: Event = serde_json::from_str(event.json()).unwrap();
            assert_eq!(written, expected);
            assert_eq!(
                serde_json::from_str::<serde_json::Value>(event.json()).unwrap(),
                json!(expected)
            );
            assert!(event.json().ends_with(&format!(r#","data":{data}}}"#)));
            assert_eq!(
                event.frame().as_ref(),
                format!("id: 42\ndata: {}\n\n", event.json()).as_bytes()
            );
            assert_eq!(
                (event.seq, event.agent_id, event.task.as_deref()),
                (42, 7, task)
            );
        }
    }
}
