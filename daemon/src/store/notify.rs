//! The notifier's state (`notify/`): its cursor in the log, which daemon sends, and the
//! browsers subscribed to Web Push. The outbox itself is events in the log; these rows are
//! what is state, not history (like a task's lease).
//!
//! The cursor row is also a lease: on a shared database one daemon holds it and sends, the
//! others wait for it to lapse (a daemon killed with -9 holds it until `held_until_ms`).

use lazyboy_protocol::{EventBody, PushSubscription};

/// Where the notifier resumes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NotifyCursor {
    /// Every source event up to here has its `notification_due` events.
    pub scanned_seq: i64,
    /// No delivery recorded before this seq can still be owed.
    pub pending_from: i64,
}

/// A browser's Web Push subscription, keys included (they never leave the daemon).
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct SubscriptionRow {
    pub id: String,
    pub endpoint: String,
    pub p256dh: String,
    pub auth: String,
    pub name: Option<String>,
    pub created_at_ms: i64,
}

impl SubscriptionRow {
    pub fn to_api(&self) -> PushSubscription {
        PushSubscription {
            id: self.id.clone(),
            name: self.name.clone(),
            endpoint: self.endpoint.clone(),
            created_at_ms: self.created_at_ms,
        }
    }
}

/// The agent whose chat thread holds the subscription events (the home's own).
pub(super) const HOME_AGENT: &str = crate::DEFAULT_AGENT;

/// One outbox event as read back: its seq, task and body.
pub type OutboxEvent = (i64, Option<String>, EventBody);
