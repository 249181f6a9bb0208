//! Live fan-out: wakes subscribers in-process right after a commit. The bottom of the live
//! path: it knows events ([`LiveEvent`], rendered once) and nothing of the store, which
//! publishes to it; the store's `Subscription` (replay, then follow) reads from it.
//!
//! The store publishes each committed event in `seq` order with no gap: SQLite while it
//! still holds the writer lock; PostgreSQL through its feed (this daemon's commits directly,
//! other daemons' through the feed's tailer, which LISTENs and re-reads the log in seq
//! order). The channel is bounded: a subscriber that falls behind gets `Lagged` and re-reads
//! what it missed from the store, so no event is ever dropped or sent twice.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use tokio::sync::broadcast;

/// How many events the channel buffers per subscriber before it lags.
pub const CAPACITY: usize = 4096;

/// The in-process event channel.
#[derive(Clone)]
pub struct Bus {
    tx: broadcast::Sender<Arc<LiveEvent>>,
}

impl Default for Bus {
    fn default() -> Self {
        Bus {
            tx: broadcast::Sender::new(CAPACITY),
        }
    }
}

impl Bus {
    /// Sends a committed event to every live subscriber.
    pub fn publish(&self, event: LiveEvent) {
        // No receivers is fine: nobody is watching.
        let _ = self.tx.send(Arc::new(event));
    }

    /// The raw channel, for a follower that only needs to be woken (it may lag).
    pub fn subscribe(&self) -> broadcast::Receiver<Arc<LiveEvent>> {
        self.tx.subscribe()
    }
}

/// A timer that first fires one `period` from now, and skips ticks it missed.
pub fn idle_interval(period: Duration) -> tokio::time::Interval {
    let mut interval = tokio::time::interval_at(tokio::time::Instant::now() + period, period);
    interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    interval
}

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
    /// An event whose JSON `write_json` puts into the frame it is sent in, so a read or an
    /// append renders each event once, into the one buffer every subscriber shares;
    /// `json_len` is about how long the JSON is, so the buffer is made once.
    pub(crate) fn new(
        seq: i64,
        agent_id: i64,
        task: Option<&str>,
        kind: &str,
        json_len: usize,
        write_json: impl FnOnce(&mut Vec<u8>),
    ) -> LiveEvent {
        let mut frame = Vec::with_capacity(json_len + 32);
        frame.extend_from_slice(format!("id: {seq}\ndata: ").as_bytes());
        let json_start = frame.len();
        write_json(&mut frame);
        frame.extend_from_slice(b"\n\n");
        LiveEvent {
            seq,
            agent_id,
            task: task.map(Arc::from),
            topic: Topic::of(kind),
            notable: lazyboy_protocol::SOURCE_KINDS.contains(&kind),
            frame: Bytes::from(frame),
            json_start,
        }
    }

    /// The SSE message: `id: <seq>`, `data: <json>`, blank line.
    pub fn frame(&self) -> &Bytes {
        &self.frame
    }

    /// The [`lazyboy_protocol::Event`] as JSON.
    pub fn json(&self) -> &str {
        let json = &self.frame[self.json_start..self.frame.len() - 2];
        // The store writes it from `&str` pieces (`store::events::render`), so it is UTF-8.
        std::str::from_utf8(json).unwrap_or_default()
    }
}
