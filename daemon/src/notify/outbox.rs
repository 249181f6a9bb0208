//! The outbox's rules, as plain functions: what an event owes, when the next attempt comes,
//! what a receiver's answer means, and which deliveries a log still owes (the fold a
//! restarted daemon does).
//!
//! Crash semantics, from the log: a delivery is owed from its `notification_due` until its
//! `notification_sent`, `notification_skipped` or the `notification_failed` that gave up.
//! An attempt is not recorded before it is made, so a daemon killed during one makes it
//! again after its restart: delivery is at least once, and every copy carries the same id
//! (the webhook's `X-LazyBoy-Delivery`, Web Push's `Topic`, the mail's `Message-ID`) so a
//! receiver can drop the second. Killed after the `notification_sent`, nothing is sent again.

use std::collections::HashMap;
use std::time::Duration;

use lazyboy_protocol::{Event, EventBody, NotifyKind, Verdict};

/// Attempts per delivery before it is given up.
pub const MAX_ATTEMPTS: u32 = 5;
/// The longest wait a `Retry-After` may ask for.
const MAX_RETRY_AFTER: Duration = Duration::from_secs(600);

/// What the notification for `event` is about, if the event deserves a person at all.
/// (Whether the task is top-level and unfollowed is the driver's to check.)
pub fn owed(event: &Event) -> Option<NotifyKind> {
    match event.body()? {
        EventBody::Question {
            approval, takeover, ..
        } => Some(if approval.is_some() {
            NotifyKind::Approval
        } else if takeover.is_some() {
            NotifyKind::Takeover
        } else {
            NotifyKind::Question
        }),
        EventBody::TaskFinished { verdict, .. } => match verdict {
            Verdict::Cancelled | Verdict::Waiting => None,
            _ => Some(NotifyKind::Ended),
        },
        // A slot skipped because it was missed is the schedule's own rule, not a failure.
        EventBody::ScheduleSkipped { reason, .. } if !reason.starts_with("missed") => {
            Some(NotifyKind::Schedule)
        }
        _ => None,
    }
}

/// How long a notification is worth sending (and the push service's `TTL`).
pub fn ttl(kind: NotifyKind) -> Duration {
    if kind.blocks() {
        Duration::from_secs(24 * 3600)
    } else {
        Duration::from_secs(3600)
    }
}

/// The wait before attempt `failed + 1`, after `failed` failed ones: `base`, then three
/// times longer each time (15 s, 45 s, 2¼ min, 6¾ min: five attempts over ten minutes);
/// `None` once [`MAX_ATTEMPTS`] failed.
pub fn backoff(base: Duration, failed: u32, retry_after: Option<Duration>) -> Option<Duration> {
    if failed >= MAX_ATTEMPTS {
        return None;
    }
    let wait = base.saturating_mul(3u32.saturating_pow(failed.saturating_sub(1)));
    Some(match retry_after {
        // The receiver knows best when it will take it again, within reason.
        Some(asked) => asked.min(MAX_RETRY_AFTER),
        None => wait,
    })
}

/// What one attempt came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Attempt {
    /// Accepted.
    Sent,
    /// Worth trying again (connection error, timeout, 429, 5xx).
    Retry {
        error: String,
        retry_after: Option<Duration>,
    },
    /// Will never work as it is (4xx other than 404, 408, 410 and 429; a bad key).
    Fatal(String),
    /// The subscription no longer exists (404, 410): remove it.
    Gone(String),
}

/// A receiver's HTTP answer as an [`Attempt`].
pub fn classify(status: u16, retry_after: Option<&str>, body: &str) -> Attempt {
    let detail = || {
        let body = body.trim();
        let body: String = body.chars().take(200).collect();
        if body.is_empty() {
            format!("HTTP {status}")
        } else {
            format!("HTTP {status}: {body}")
        }
    };
    match status {
        200..=299 => Attempt::Sent,
        404 | 410 => Attempt::Gone(detail()),
        408 | 429 | 500..=599 => Attempt::Retry {
            error: detail(),
            retry_after: retry_after
                .and_then(|v| v.trim().parse::<u64>().ok())
                .map(Duration::from_secs),
        },
        _ => Attempt::Fatal(detail()),
    }
}

/// One delivery as the log left it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Owed {
    pub id: String,
    pub kind: NotifyKind,
    pub channel: String,
    /// The event it is about.
    pub source: i64,
    pub task: Option<String>,
    /// The seq of its `notification_due`.
    pub due_seq: i64,
    /// Attempts that failed so far.
    pub failed: u32,
    /// The wait the last failure asked for (from its event's time).
    pub retry_in_ms: Option<u64>,
}

/// Folds outbox events (in seq order) into the deliveries still owed, and the sources that
/// already have theirs (so a rescan does not owe them twice).
#[derive(Debug, Default)]
pub struct Ledger {
    pub owed: HashMap<(String, String), Owed>,
    /// `(source, channel)` for every due seen, finished or not.
    pub seen: std::collections::HashSet<(i64, String)>,
}

impl Ledger {
    pub fn apply(&mut self, seq: i64, task: Option<String>, body: &EventBody) {
        match body {
            EventBody::NotificationDue {
                id,
                kind,
                channel,
                source,
            } => {
                self.seen.insert((*source, channel.clone()));
                self.owed.insert(
                    (id.clone(), channel.clone()),
                    Owed {
                        id: id.clone(),
                        kind: *kind,
                        channel: channel.clone(),
                        source: *source,
                        task,
                        due_seq: seq,
                        failed: 0,
                        retry_in_ms: None,
                    },
                );
            }
            EventBody::NotificationSent { id, channel, .. }
            | EventBody::NotificationSkipped { id, channel, .. } => {
                self.owed.remove(&(id.clone(), channel.clone()));
            }
            EventBody::NotificationFailed {
                id,
                channel,
                attempt,
                retry_in_ms,
                ..
            } => {
                let key = (id.clone(), channel.clone());
                match retry_in_ms {
                    None => {
                        self.owed.remove(&key);
                    }
                    Some(wait) => {
                        if let Some(owed) = self.owed.get_mut(&key) {
                            owed.failed = *attempt;
                            owed.retry_in_ms = Some(*wait);
                        }
                    }
                }
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn five_attempts_over_about_ten_minutes_and_retry_after_is_heard() {
        let base = Duration::from_secs(15);
        let waits: Vec<u64> = (1..MAX_ATTEMPTS)
            .map(|failed| backoff(base, failed, None).unwrap().as_secs())
            .collect();
        assert_eq!(waits, [15, 45, 135, 405]);
        assert_eq!(waits.iter().sum::<u64>(), 600);
        assert_eq!(backoff(base, MAX_ATTEMPTS, None), None);
        let asked = Some(Duration::from_secs(120));
        assert_eq!(backoff(base, 1, asked), Some(Duration::from_secs(120)));
        let huge = Some(Duration::from_secs(86_400));
        assert_eq!(backoff(base, 1, huge), Some(MAX_RETRY_AFTER));
    }

    #[test]
    fn answers_are_sent_retried_fatal_or_gone() {
        assert_eq!(classify(201, None, ""), Attempt::Sent);
        assert!(matches!(classify(410, None, ""), Attempt::Gone(_)));
        assert!(matches!(classify(404, None, "no"), Attempt::Gone(e) if e == "HTTP 404: no"));
        assert_eq!(
            classify(429, Some("7"), ""),
            Attempt::Retry {
                error: "HTTP 429".into(),
                retry_after: Some(Duration::from_secs(7))
            }
        );
        assert!(matches!(classify(503, None, ""), Attempt::Retry { .. }));
        assert!(matches!(classify(400, None, ""), Attempt::Fatal(_)));
        assert!(matches!(classify(403, None, ""), Attempt::Fatal(_)));
    }

    fn due(id: &str, channel: &str, source: i64) -> EventBody {
        EventBody::NotificationDue {
            id: id.into(),
            kind: NotifyKind::Question,
            channel: channel.into(),
            source,
        }
    }

    #[test]
    fn the_ledger_owes_what_has_no_outcome_yet() {
        let mut ledger = Ledger::default();
        ledger.apply(10, Some("t".into()), &due("n5", "webhook", 5));
        ledger.apply(11, Some("t".into()), &due("n5", "ntfy", 5));
        ledger.apply(12, Some("t".into()), &due("n6", "webhook", 6));
        ledger.apply(
            13,
            Some("t".into()),
            &EventBody::NotificationSent {
                id: "n5".into(),
                kind: NotifyKind::Question,
                channel: "webhook".into(),
                attempt: 1,
            },
        );
        ledger.apply(
            14,
            Some("t".into()),
            &EventBody::NotificationFailed {
                id: "n5".into(),
                kind: NotifyKind::Question,
                channel: "ntfy".into(),
                attempt: 2,
                error: "HTTP 500".into(),
                retry_in_ms: Some(45_000),
            },
        );
        ledger.apply(
            15,
            Some("t".into()),
            &EventBody::NotificationFailed {
                id: "n6".into(),
                kind: NotifyKind::Question,
                channel: "webhook".into(),
                attempt: 5,
                error: "HTTP 500".into(),
                retry_in_ms: None,
            },
        );
        assert_eq!(ledger.owed.len(), 1);
        let ntfy = &ledger.owed[&("n5".to_owned(), "ntfy".to_owned())];
        assert_eq!(
            (ntfy.failed, ntfy.retry_in_ms, ntfy.due_seq),
            (2, Some(45_000), 11)
        );
        assert!(ledger.seen.contains(&(6, "webhook".to_owned())));
        assert!(!ledger.seen.contains(&(7, "webhook".to_owned())));
    }

    #[test]
    fn cancelled_tasks_and_missed_slots_owe_nothing() {
        let event = |kind: &str, data: serde_json::Value| Event {
            seq: 1,
            kind: kind.into(),
            agent: "a".into(),
            thread: "t".into(),
            task: Some("t".into()),
            at_ms: 0,
            data,
        };
        let question =
            serde_json::json!({"call_id": "c", "question": "q", "options": [], "takeover": null});
        assert_eq!(
            owed(&event("question", question)),
            Some(NotifyKind::Question)
        );
        let takeover = serde_json::json!({"call_id": "c", "question": "q", "options": [], "takeover": "login"});
        assert_eq!(
            owed(&event("question", takeover)),
            Some(NotifyKind::Takeover)
        );
        let done = serde_json::json!({"verdict": "done", "message": "m"});
        assert_eq!(owed(&event("task_finished", done)), Some(NotifyKind::Ended));
        let cancelled = serde_json::json!({"verdict": "cancelled", "message": "m"});
        assert_eq!(owed(&event("task_finished", cancelled)), None);
        let missed = serde_json::json!({"schedule": "s", "due_at_ms": 1, "reason": "missed: the daemon was down"});
        assert_eq!(owed(&event("schedule_skipped", missed)), None);
        let failed =
            serde_json::json!({"schedule": "s", "due_at_ms": 1, "reason": "no agent named \"x\""});
        assert_eq!(
            owed(&event("schedule_skipped", failed)),
            Some(NotifyKind::Schedule)
        );
    }
}
