//! The notifier: reaches the person when no page is open, through Web Push to the installed
//! dashboard, ntfy, a webhook and email.
//!
//! It is fed from the event log, never called by a tool or the turn loop: one follower of the
//! log (`runner.rs`, a [`crate::bus::Subscription`] from its saved cursor) reads the events
//! that may deserve a person (`lazyboy_protocol::SOURCE_KINDS`), decides what each owes
//! (`outbox.rs`), records a `notification_due` per channel in the event's thread, and a
//! dispatcher makes the attempts, each in a task of its own with a deadline, recording
//! `notification_sent`, `notification_failed` or `notification_skipped`. A channel that hangs
//! or keeps failing only delays its own deliveries: no task, request or other channel waits
//! for it. Crash semantics come from the log (see `outbox.rs`): at least once, one id per
//! notification that receivers can dedupe on.
//!
//! Invariants: the VAPID private key lives only in `<home>/vapid_key` and this process's
//! memory (`vapid.rs`); outbox events carry ids, channels and errors, never a payload or a
//! secret; every push endpoint passes `endpoint.rs` before it is stored and before each push.

mod channels;
pub mod config;
pub mod ece;
mod email;
pub mod endpoint;
pub mod outbox;
pub mod payload;
mod report;
mod resolved;
mod runner;
pub mod vapid;
mod web_push;

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use lazyboy_protocol::{PushSubscription, SubscribeRequest};
use tokio::sync::{Notify, Semaphore};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

pub use channels::WEB_PUSH;
pub use config::NotifySection;

/// What serde cannot check in `[notify]`: URLs parse, hosts are `host[:port]`, addresses are
/// addresses, a plain-text relay is on loopback.
pub fn check(section: &NotifySection) -> Result<(), String> {
    section.check_urls()?;
    if let Some(email) = &section.email {
        email::Mailer::from_section(email).map(|_| ())?;
    }
    Ok(())
}

use crate::store::{Store, StoreError};
use crate::web::Resolve;

/// Sent as `User-Agent` by every channel.
const USER_AGENT: &str = concat!("LazyBoy-notify/", env!("CARGO_PKG_VERSION"));
/// Attempts in flight at once, over all channels.
const MAX_IN_FLIGHT: usize = 16;
/// A terminal that stopped following a task this recently still counts as following it.
const FOLLOW_GRACE: Duration = Duration::from_secs(10);

/// Why the notifier cannot start, or a request to it is refused.
#[derive(Debug, thiserror::Error)]
pub enum NotifyError {
    #[error("{0}")]
    Config(String),
    #[error(transparent)]
    Vapid(#[from] vapid::VapidError),
    #[error(transparent)]
    Endpoint(#[from] endpoint::EndpointError),
    #[error("the subscription's {0} key is not base64url of the right length")]
    BadKey(&'static str),
    #[error("no channel {0:?}: the configured ones are ntfy, webhook, email and web_push")]
    NoChannel(String),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// One channel's figures since the daemon started.
#[derive(Debug, Clone, Default)]
struct Stats {
    last_at_ms: Option<i64>,
    last_ok: Option<bool>,
    last_error: Option<String>,
    failures: u64,
}

/// Tasks a terminal follows (`GET /api/tasks/{id}/events`): their end is shown there.
#[derive(Debug, Default)]
struct Follow {
    count: usize,
    left: Option<Instant>,
}

/// The daemon's notifier (one per daemon; on a shared database one daemon sends).
pub struct Notifier {
    store: Store,
    channels: channels::Channels,
    vapid: Arc<vapid::Vapid>,
    /// The dashboard's URL as links in notifications name it.
    base_url: String,
    retry_base: Duration,
    state: Mutex<runner::State>,
    stats: Mutex<BTreeMap<String, Stats>>,
    follows: Mutex<HashMap<String, Follow>>,
    wake: Notify,
    in_flight: Arc<Semaphore>,
    /// `scanned_seq` as last saved (what `GET /api/notify` shows).
    saved_scan: std::sync::atomic::AtomicI64,
    shutdown: CancellationToken,
    tracker: TaskTracker,
}

impl Notifier {
    /// Loads (or makes) the VAPID key, checks `[notify]`, and starts following the log.
    pub fn start(
        store: Store,
        section: &NotifySection,
        home: &Path,
        dashboard_url: &str,
        resolver: Arc<dyn Resolve>,
        shutdown: CancellationToken,
    ) -> Result<Arc<Notifier>, NotifyError> {
        let vapid = Arc::new(vapid::Vapid::load_or_create(home)?);
        let channels = channels::Channels::new(section, vapid.clone(), resolver)
            .map_err(NotifyError::Config)?;
        let base_url = section
            .public_url
            .clone()
            .unwrap_or_else(|| dashboard_url.to_owned());
        let notifier = Arc::new(Notifier {
            store,
            channels,
            vapid,
            base_url,
            retry_base: section.retry_base(),
            state: Mutex::new(runner::State::default()),
            stats: Mutex::new(BTreeMap::new()),
            follows: Mutex::new(HashMap::new()),
            wake: Notify::new(),
            in_flight: Arc::new(Semaphore::new(MAX_IN_FLIGHT)),
            saved_scan: std::sync::atomic::AtomicI64::new(0),
            shutdown,
            tracker: TaskTracker::new(),
        });
        notifier.tracker.spawn(runner::run(notifier.clone()));
        Ok(notifier)
    }

    /// Waits (briefly) for the notifier's tasks after the shutdown token was cancelled; an
    /// attempt cut off here is made again after the next start.
    pub async fn stopped(&self) {
        self.tracker.close();
        let _ = tokio::time::timeout(Duration::from_secs(2), self.tracker.wait()).await;
    }

    /// `GET /api/notify/vapid`.
    pub fn public_key(&self) -> &str {
        self.vapid.public_key()
    }

    /// A terminal follows `task` while the guard lives.
    pub fn follow(self: &Arc<Self>, task: &str) -> Following {
        let mut follows = self.follows.lock().unwrap_or_else(PoisonError::into_inner);
        follows.entry(task.to_owned()).or_default().count += 1;
        Following {
            notifier: self.clone(),
            task: task.to_owned(),
        }
    }

    /// Whether a terminal follows `task` now or did a moment ago.
    fn followed(&self, task: &str) -> bool {
        let follows = self.follows.lock().unwrap_or_else(PoisonError::into_inner);
        follows
            .get(task)
            .is_some_and(|f| f.count > 0 || f.left.is_some_and(|t| t.elapsed() < FOLLOW_GRACE))
    }

    /// `POST /api/notify/subscriptions`: checks the endpoint (form, then its addresses) and
    /// the keys, then stores it. Nothing is sent to the endpoint here.
    pub async fn subscribe(
        &self,
        request: &SubscribeRequest,
    ) -> Result<PushSubscription, NotifyError> {
        let url = endpoint::parse(&request.endpoint, &self.channels.allow)?;
        endpoint::addresses(&url, &self.channels.allow, &*self.channels.resolver).await?;
        let decoded = |text: &str, len: usize, what: &'static str| {
            use base64::Engine as _;
            base64::engine::general_purpose::URL_SAFE_NO_PAD
                .decode(text.trim().trim_end_matches('='))
                .ok()
                .filter(|bytes| bytes.len() == len)
                .ok_or(NotifyError::BadKey(what))
        };
        decoded(&request.keys.p256dh, 65, "p256dh")?;
        decoded(&request.keys.auth, 16, "auth")?;
        let name = request
            .name
            .as_deref()
            .map(|n| n.trim().chars().take(80).collect::<String>())
            .filter(|n| !n.is_empty());
        let id = format!("s{}", uuid::Uuid::now_v7().simple());
        let host = url.host_str().unwrap_or_default().to_owned();
        let row = self
            .store
            .add_subscription(
                &id,
                url.as_str(),
                request.keys.p256dh.trim(),
                request.keys.auth.trim(),
                name.as_deref(),
                &host,
            )
            .await?;
        Ok(row.to_api())
    }

    /// `GET /api/notify/subscriptions`.
    pub async fn subscriptions(&self) -> Result<Vec<PushSubscription>, NotifyError> {
        Ok(self
            .store
            .subscriptions()
            .await?
            .iter()
            .map(|s| s.to_api())
            .collect())
    }

    /// `DELETE /api/notify/subscriptions/{id}`: `false` if there was none.
    pub async fn unsubscribe(&self, id: &str) -> Result<bool, NotifyError> {
        Ok(self
            .store
            .remove_subscription(id, "removed by the person")
            .await?)
    }

    /// Counts an attempt's outcome for `GET /api/notify`.
    fn count(&self, channel: &str, attempt: &outbox::Attempt) {
        let mut stats = self.stats.lock().unwrap_or_else(PoisonError::into_inner);
        let s = stats.entry(channel.to_owned()).or_default();
        s.last_at_ms = Some(crate::store::now_ms());
        match attempt {
            outbox::Attempt::Sent => {
                s.last_ok = Some(true);
                s.last_error = None;
            }
            outbox::Attempt::Retry { error, .. }
            | outbox::Attempt::Fatal(error)
            | outbox::Attempt::Gone(error) => {
                s.last_ok = Some(false);
                s.last_error = Some(error.clone());
            }
        }
    }

    fn gave_up(&self, channel: &str) {
        let mut stats = self.stats.lock().unwrap_or_else(PoisonError::into_inner);
        stats.entry(channel.to_owned()).or_default().failures += 1;
    }
}

/// A receiver's answer (or the failure to get one) as an attempt's outcome.
async fn answer(response: Result<reqwest::Response, reqwest::Error>) -> outbox::Attempt {
    match response {
        Ok(response) => {
            let status = response.status().as_u16();
            let retry_after = response
                .headers()
                .get("retry-after")
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned);
            let body = if (200..300).contains(&status) {
                String::new()
            } else {
                response.text().await.unwrap_or_default()
            };
            outbox::classify(status, retry_after.as_deref(), &body)
        }
        // Without the URL: a push endpoint is a capability, a webhook's may hold a token.
        Err(error) => outbox::Attempt::Retry {
            error: describe(&error.without_url()),
            retry_after: None,
        },
    }
}

fn describe(error: &reqwest::Error) -> String {
    let mut text = error.to_string();
    let mut source = std::error::Error::source(error);
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// While alive, the task counts as followed by a terminal.
pub struct Following {
    notifier: Arc<Notifier>,
    task: String,
}

impl Drop for Following {
    fn drop(&mut self) {
        let mut follows = self
            .notifier
            .follows
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(f) = follows.get_mut(&self.task) {
            f.count = f.count.saturating_sub(1);
            f.left = Some(Instant::now());
        }
        // Old entries go: the map holds only tasks followed in the last moments.
        follows.retain(|_, f| f.count > 0 || f.left.is_some_and(|t| t.elapsed() < FOLLOW_GRACE));
    }
}
