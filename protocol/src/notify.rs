//! Notifications: what reaches the person when no page is open (Web Push, ntfy, a webhook,
//! email), the outbox's events and the `/api/notify/*` wire types.
//!
//! A notification is owed for an event that deserves a person (a question, an approval, a
//! takeover, a task's end, a schedule that could not start). The daemon records it as
//! `notification_due` for each channel (a Web Push subscription counts as a channel of its
//! own, `web_push:<id>`), then `notification_sent`, `notification_failed` (each failed
//! attempt; `last` on the one that gives up) or `notification_skipped` (the question was
//! answered before it went out, or its notification expired). These events never hold the
//! payload, only what identifies it.

use serde::{Deserialize, Serialize};

/// Event kinds a notification can be owed for: the notifier reads these and nothing else.
pub const SOURCE_KINDS: [&str; 3] = ["question", "task_finished", "schedule_skipped"];

/// What a notification is about.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[serde(rename_all = "snake_case")]
pub enum NotifyKind {
    /// `request_user_input`: the agent asks and waits.
    Question,
    /// A call waits for the person's approve or deny.
    Approval,
    /// `request_takeover` / `request_box_help`: the person must act (a login, a captcha).
    Takeover,
    /// A top-level task ended (done, answer, blocked, failed, budget_exhausted).
    Ended,
    /// A schedule's slot came and its task could not be started.
    Schedule,
    /// `lazyboy notify test`.
    Test,
}

impl NotifyKind {
    pub fn as_str(self) -> &'static str {
        match self {
            NotifyKind::Question => "question",
            NotifyKind::Approval => "approval",
            NotifyKind::Takeover => "takeover",
            NotifyKind::Ended => "ended",
            NotifyKind::Schedule => "schedule",
            NotifyKind::Test => "test",
        }
    }

    /// Whether an agent is blocked until the person acts (high urgency, 1 day to live).
    pub fn blocks(self) -> bool {
        matches!(
            self,
            NotifyKind::Question | NotifyKind::Approval | NotifyKind::Takeover
        )
    }

    /// What a channel sends when its config names no kinds.
    pub const DEFAULT: [NotifyKind; 4] = [
        NotifyKind::Question,
        NotifyKind::Approval,
        NotifyKind::Takeover,
        NotifyKind::Ended,
    ];
}

/// One action a notification offers (a button on the device).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct NotifyAction {
    /// `approve`, `deny` or `option:N` (N from 1).
    pub action: String,
    pub title: String,
}

/// What every channel sends (Web Push's encrypted body, the webhook's JSON; ntfy and email
/// render it as text).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct NotifyPayload {
    /// The notification's id, stable across retries and restarts (the webhook's
    /// `X-LazyBoy-Delivery`).
    pub id: String,
    pub kind: NotifyKind,
    pub title: String,
    pub body: String,
    pub agent: String,
    pub task: Option<String>,
    /// The dashboard, opened at the task.
    pub url: String,
    #[serde(default)]
    pub actions: Vec<NotifyAction>,
    /// When the event it is about happened (Unix ms).
    pub ts: i64,
}

/// `GET /api/notify/vapid`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct VapidKey {
    /// The uncompressed P-256 point, base64url without padding: `applicationServerKey`.
    pub public_key: String,
}

/// A browser's `PushSubscription.toJSON()`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct PushKeys {
    pub p256dh: String,
    pub auth: String,
}

/// `POST /api/notify/subscriptions`: a browser's `PushSubscription` JSON plus a name.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct SubscribeRequest {
    pub endpoint: String,
    pub keys: PushKeys,
    #[serde(default, rename = "expirationTime")]
    pub expiration_time: Option<i64>,
    /// What the person calls the device ("Pixel").
    #[serde(default)]
    pub name: Option<String>,
}

/// A device subscribed to Web Push (its keys stay in the daemon).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct PushSubscription {
    pub id: String,
    pub name: Option<String>,
    /// The push service's endpoint.
    pub endpoint: String,
    pub created_at_ms: i64,
}

/// `GET /api/notify/subscriptions`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct PushSubscriptionList {
    pub subscriptions: Vec<PushSubscription>,
}

/// `POST /api/notify/test`: send a test notification to every channel, or to one.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct NotifyTestRequest {
    /// `ntfy`, `webhook`, `email`, `web_push` (every subscription) or `web_push:<id>`.
    #[serde(default)]
    pub channel: Option<String>,
}

/// One channel's outcome of a test.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct ChannelResult {
    pub channel: String,
    pub ok: bool,
    /// What went wrong, or what the receiver answered.
    pub detail: String,
}

/// `POST /api/notify/test`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct NotifyTestResult {
    pub results: Vec<ChannelResult>,
}

/// One configured channel, as `GET /api/notify` shows it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct ChannelStatus {
    pub channel: String,
    /// Where it sends (the URL without credentials, the SMTP server, the endpoint's host).
    pub target: String,
    pub kinds: Vec<NotifyKind>,
    /// The last delivery: when (Unix ms) and whether it went out.
    pub last_at_ms: Option<i64>,
    pub last_ok: Option<bool>,
    pub last_error: Option<String>,
    /// Deliveries given up since the daemon started.
    pub failures: u64,
    /// Deliveries waiting for their next attempt.
    pub pending: u64,
}

/// `GET /api/notify`: channels, devices, where links point.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct NotifyStatus {
    pub channels: Vec<ChannelStatus>,
    pub subscriptions: Vec<PushSubscription>,
    /// The dashboard URL notifications link to.
    pub public_url: String,
    /// The notifier's saved place in the log: every event up to here has its notifications
    /// recorded (0 while another daemon on the database sends).
    #[serde(default)]
    pub scanned_seq: i64,
}
