//! The notifier's state (`notify/`): its cursor in the log, which daemon sends, and the
//! browsers subscribed to Web Push. The outbox itself is events in the log; these rows are
//! what is state, not history (like a task's lease).
//!
//! The cursor row is also a lease: on a shared database one daemon holds it and sends, the
//! others wait for it to lapse (a daemon killed with -9 holds it until `held_until_ms`).

use lazyboy_protocol::{EventBody, PushSubscription};

use super::StoreError;

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

super::facade! {
    /// Takes or renews the notifier's lease for this node (`ttl_ms` from now); the cursor
    /// if this node holds it, `None` if another live daemon does.
    pub async fn notify_claim(&self, ttl_ms: i64) -> Result<Option<NotifyCursor>, StoreError>;

    /// Moves the cursor and renews the lease, only while this node holds it (`false`: it
    /// lost it, and must stop sending).
    pub async fn notify_save(
        &self,
        cursor: NotifyCursor,
        ttl_ms: i64,
    ) -> Result<bool, StoreError>;

    /// Up to `limit` outbox events (`notification_*`) after `after`, in seq order.
    pub async fn notify_events_after(
        &self,
        after: i64,
        limit: u32,
    ) -> Result<Vec<OutboxEvent>, StoreError>;

    /// Stores a subscription (the same endpoint again replaces its keys and name, keeping
    /// its id) and logs `notify_subscription_added`, in one transaction.
    pub async fn add_subscription(
        &self,
        id: &str,
        endpoint: &str,
        p256dh: &str,
        auth: &str,
        name: Option<&str>,
        host: &str,
    ) -> Result<SubscriptionRow, StoreError>;

    /// Every subscription, oldest first.
    pub async fn subscriptions(&self) -> Result<Vec<SubscriptionRow>, StoreError>;

    /// Removes a subscription and logs `notify_subscription_gone` with `reason`; `false` if
    /// there was none.
    pub async fn remove_subscription(&self, id: &str, reason: &str) -> Result<bool, StoreError>;
}
