//! The notifier's driver: the follower of the log that records what is owed, and the
//! dispatcher that makes the attempts. Decisions are `outbox.rs`'s; this file is the IO.
//!
//! Order of effects for one delivery: `notification_due` is appended before any attempt
//! (intent before effect); an attempt's outcome is appended after it. A restart reads the
//! outbox events from the cursor's `pending_from` (the [`Ledger`]) and owes what has no
//! outcome, then follows the log from `scanned_seq`, skipping sources that already have a
//! due. The cursor is saved after the dues of what it covers are in the log.

use std::collections::HashMap;
use std::sync::{Arc, PoisonError};
use std::time::{Duration, Instant};

use lazyboy_protocol::{Event, EventBody, NotifyKind};
use tokio::time::sleep_until;

use super::outbox::{self, Attempt, Ledger, Owed};
use super::{Notifier, payload};
use crate::bus::Subscription;
use crate::store::{EventFilter, NotifyCursor, StoreError};

/// How long this daemon's hold on the notifier lasts without renewal.
const LEASE_MS: i64 = 30_000;
/// How often the cursor is saved (and the lease renewed).
const SAVE_EVERY: Duration = Duration::from_secs(2);

/// What is owed, in memory.
#[derive(Debug, Default)]
pub(super) struct State {
    pending: HashMap<(String, String), Pending>,
}

#[derive(Debug, Clone)]
struct Pending {
    owed: Owed,
    next_at: Instant,
    in_flight: bool,
    /// The event it is about, once read.
    source: Option<Arc<Event>>,
}

impl Notifier {
    pub(super) fn pending_by_channel(&self) -> HashMap<String, u64> {
        let state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let mut counts = HashMap::new();
        for p in state.pending.values() {
            *counts.entry(p.owed.channel.clone()).or_insert(0) += 1;
        }
        counts
    }

    /// Adds a delivery; one already known (an attempt still in flight when the follower
    /// restarted) is left as it is, so it is not attempted twice at once.
    fn owe(&self, owed: Owed, wait: Duration, source: Option<Arc<Event>>) {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        state
            .pending
            .entry((owed.id.clone(), owed.channel.clone()))
            .or_insert(Pending {
                owed,
                next_at: Instant::now() + wait,
                in_flight: false,
                source,
            });
    }

    /// `pending_from` for the cursor: nothing owed was recorded before it.
    fn pending_from(&self, scanned: i64) -> i64 {
        let state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        state
            .pending
            .values()
            .map(|p| p.owed.due_seq - 1)
            .min()
            .unwrap_or(scanned)
            .min(scanned)
    }
}

/// Holds the notifier's lease, then follows the log until the shutdown.
pub(super) async fn run(notifier: Arc<Notifier>) {
    loop {
        let cursor = match notifier.store.notify_claim(LEASE_MS).await {
            Ok(Some(cursor)) => cursor,
            Ok(None) => {
                // Another daemon on this database sends; take over if its lease lapses.
                tokio::select! {
                    () = notifier.shutdown.cancelled() => return,
                    () = tokio::time::sleep(Duration::from_millis(LEASE_MS as u64 / 3)) => continue,
                }
            }
            Err(error) => {
                tracing::warn!(%error, "notifier: cannot read its cursor; trying again");
                tokio::select! {
                    () = notifier.shutdown.cancelled() => return,
                    () = tokio::time::sleep(Duration::from_secs(2)) => continue,
                }
            }
        };
        match follow(&notifier, cursor).await {
            Ok(()) => return,
            Err(error) => {
                tracing::warn!(%error, "notifier stopped; resuming from its cursor");
                // The log is read again from the cursor; an attempt still in flight keeps
                // its entry, and its outcome settles it.
                notifier
                    .state
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .pending
                    .retain(|_, p| p.in_flight);
            }
        }
    }
}

/// Loads what is owed, starts the dispatcher, and follows the log.
async fn follow(notifier: &Arc<Notifier>, cursor: NotifyCursor) -> Result<(), StoreError> {
    let ledger = load(notifier, cursor.pending_from).await?;
    let owed = ledger.owed.len();
    for (_, owed) in ledger.owed.iter() {
        // The failure's wait counts from now: its event's time is not kept here, and being
        // late by one wait is better than early.
        let wait = Duration::from_millis(owed.retry_in_ms.unwrap_or(0));
        notifier.owe(owed.clone(), wait, None);
    }
    if owed > 0 {
        tracing::info!(owed, "notifier: deliveries owed from before the restart");
    }
    let stop = notifier.shutdown.child_token();
    let dispatcher = tokio::spawn(dispatch(notifier.clone(), stop.clone()));
    let result = scan(notifier, cursor, &ledger).await;
    stop.cancel();
    let _ = dispatcher.await;
    result
}

/// The outbox events from `from` on, folded.
async fn load(notifier: &Notifier, from: i64) -> Result<Ledger, StoreError> {
    let mut ledger = Ledger::default();
    let mut after = from;
    loop {
        let batch = notifier.store.notify_events_after(after, 1000).await?;
        let Some((last, _, _)) = batch.last() else {
            return Ok(ledger);
        };
        after = *last;
        for (seq, task, body) in &batch {
            ledger.apply(*seq, task.clone(), body);
        }
    }
}

/// Follows the log from the cursor: each source event's dues, then the cursor.
async fn scan(
    notifier: &Arc<Notifier>,
    cursor: NotifyCursor,
    ledger: &Ledger,
) -> Result<(), StoreError> {
    let shutdown = notifier.shutdown.clone();
    let mut sub = Subscription::new(
        notifier.store.clone(),
        EventFilter::default(),
        Some(cursor.scanned_seq),
        shutdown.clone(),
    )
    .await?;
    let mut scanned = cursor.scanned_seq;
    let mut save = crate::bus::idle_interval(SAVE_EVERY);
    loop {
        let batch = tokio::select! {
            () = shutdown.cancelled() => None,
            batch = sub.next_batch() => batch?,
            _ = save.tick() => {
                // Saved even when unchanged: the save renews the lease.
                let now = NotifyCursor { scanned_seq: scanned, pending_from: notifier.pending_from(scanned) };
                if !notifier.store.notify_save(now, LEASE_MS).await? {
                    tracing::warn!("notifier: another daemon took over sending");
                    return Err(StoreError::NotOwner("notifications".into()));
                }
                notifier.saved_scan.store(now.scanned_seq, std::sync::atomic::Ordering::Relaxed);
                continue;
            }
        };
        let Some(batch) = batch else {
            let now = NotifyCursor {
                scanned_seq: scanned,
                pending_from: notifier.pending_from(scanned),
            };
            notifier.store.notify_save(now, LEASE_MS).await?;
            return Ok(());
        };
        for live in &batch {
            scanned = scanned.max(live.seq);
            if !live.notable {
                continue;
            }
            let Ok(event) = serde_json::from_str::<Event>(live.json()) else {
                continue;
            };
            owe_for(notifier, Arc::new(event), ledger).await?;
        }
    }
}

/// Records the dues `event` owes, if any.
async fn owe_for(
    notifier: &Arc<Notifier>,
    event: Arc<Event>,
    ledger: &Ledger,
) -> Result<(), StoreError> {
    let Some(kind) = outbox::owed(&event) else {
        return Ok(());
    };
    if kind == NotifyKind::Ended
        && let Some(task) = &event.task
    {
        // Subagents report to their parent; a followed task's end is on the terminal.
        let row = notifier.store.task(task).await?;
        if row.parent_id.is_some() || notifier.followed(task) {
            return Ok(());
        }
    }
    let subs = notifier.store.subscriptions().await?;
    let id = payload::id_for(event.seq);
    for channel in notifier.channels.for_kind(kind, &subs) {
        if ledger.seen.contains(&(event.seq, channel.clone())) {
            continue;
        }
        let body = EventBody::NotificationDue {
            id: id.clone(),
            kind,
            channel: channel.clone(),
            source: event.seq,
        };
        let due = record(notifier, &event, &body).await?;
        let owed = Owed {
            id: id.clone(),
            kind,
            channel,
            source: event.seq,
            task: event.task.clone(),
            due_seq: due,
            failed: 0,
            retry_in_ms: None,
        };
        notifier.owe(owed, Duration::ZERO, Some(event.clone()));
    }
    notifier.wake.notify_one();
    Ok(())
}

/// Appends an outbox event where its source is: the task's thread, else the agent's chat.
async fn record(notifier: &Notifier, source: &Event, body: &EventBody) -> Result<i64, StoreError> {
    match &source.task {
        Some(task) => {
            let row = notifier.store.task(task).await?;
            Ok(notifier.store.append_to_task(&row, body).await?.seq)
        }
        None => Ok(notifier
            .store
            .append_to_agent(&source.agent, body)
            .await?
            .1
            .seq),
    }
}

/// Starts every attempt that is due, each in its own task; sleeps until the next.
async fn dispatch(notifier: Arc<Notifier>, stop: tokio_util::sync::CancellationToken) {
    loop {
        let now = Instant::now();
        let (ready, next) = {
            let mut state = notifier
                .state
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            let mut ready = Vec::new();
            let mut next: Option<Instant> = None;
            for (key, p) in state.pending.iter_mut() {
                if p.in_flight {
                    continue;
                }
                if p.next_at <= now {
                    p.in_flight = true;
                    ready.push((key.clone(), p.clone()));
                } else {
                    next = Some(next.map_or(p.next_at, |n| n.min(p.next_at)));
                }
            }
            (ready, next)
        };
        for (key, pending) in ready {
            let permit = tokio::select! {
                () = stop.cancelled() => return,
                permit = notifier.in_flight.clone().acquire_owned() => permit,
            };
            let Ok(permit) = permit else { return };
            let n = notifier.clone();
            notifier.tracker.spawn(async move {
                let _permit = permit;
                attempt(&n, key, pending).await;
                n.wake.notify_one();
            });
        }
        let until = next.unwrap_or_else(|| Instant::now() + Duration::from_secs(3600));
        tokio::select! {
            () = stop.cancelled() => return,
            () = notifier.wake.notified() => {}
            () = sleep_until(until.into()) => {}
        }
    }
}

/// One attempt of one delivery, and its outcome in the log.
async fn attempt(notifier: &Notifier, key: (String, String), mut p: Pending) {
    match try_attempt(notifier, &mut p).await {
        Ok(Some(wait)) => {
            let mut state = notifier
                .state
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            if let Some(entry) = state.pending.get_mut(&key) {
                entry.owed.failed = p.owed.failed;
                entry.source = p.source;
                entry.next_at = Instant::now() + wait;
                entry.in_flight = false;
            }
        }
        Ok(None) => {
            let mut state = notifier
                .state
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            state.pending.remove(&key);
        }
        Err(error) => {
            // The store failed: the outcome is not recorded, so the attempt counts as not
            // made and comes again (at least once).
            tracing::warn!(%error, channel = %key.1, "notifier: cannot record an attempt");
            let mut state = notifier
                .state
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            if let Some(entry) = state.pending.get_mut(&key) {
                entry.next_at = Instant::now() + notifier.retry_base;
                entry.in_flight = false;
            }
        }
    }
}

/// Makes the attempt; `Some(wait)` when another comes after `wait`, `None` when done.
async fn try_attempt(notifier: &Notifier, p: &mut Pending) -> Result<Option<Duration>, StoreError> {
    let source = match &p.source {
        Some(source) => source.clone(),
        None => {
            let filter = EventFilter {
                task: p.owed.task.as_deref().map(Into::into),
                ..EventFilter::default()
            };
            let found = notifier
                .store
                .events_after(p.owed.source - 1, &filter, 1)
                .await?
                .into_iter()
                .next()
                .filter(|e| e.seq == p.owed.source)
                .and_then(|e| serde_json::from_str::<Event>(e.json()).ok());
            match found {
                Some(event) => {
                    let event = Arc::new(event);
                    p.source = Some(event.clone());
                    event
                }
                None => {
                    tracing::warn!(source = p.owed.source, "notifier: the event is gone");
                    return Ok(None);
                }
            }
        }
    };
    let owed = p.owed.clone();
    let skip = |reason: &str| EventBody::NotificationSkipped {
        id: owed.id.clone(),
        kind: owed.kind,
        channel: owed.channel.clone(),
        reason: reason.to_owned(),
    };
    if owed.kind.blocks() && super::resolved::resolved(&notifier.store, &source).await? {
        record(notifier, &source, &skip("answered before it was sent")).await?;
        return Ok(None);
    }
    let age = crate::store::now_ms().saturating_sub(source.at_ms);
    if u128::try_from(age).unwrap_or(0) > outbox::ttl(owed.kind).as_millis() {
        record(
            notifier,
            &source,
            &skip("expired: too old to be worth sending"),
        )
        .await?;
        return Ok(None);
    }
    let sub = match owed.channel.strip_prefix("web_push:") {
        Some(id) => match notifier
            .store
            .subscriptions()
            .await?
            .into_iter()
            .find(|s| s.id == id)
        {
            Some(sub) => Some(sub),
            None => {
                record(notifier, &source, &skip("the subscription was removed")).await?;
                return Ok(None);
            }
        },
        None => None,
    };
    let payload = payload::build(owed.kind, &source, &notifier.base_url);
    let outcome = notifier
        .channels
        .send(&owed.channel, sub.as_ref(), &payload)
        .await;
    notifier.count(&owed.channel, &outcome);
    let attempt = owed.failed + 1;
    let failed = |error: String, retry_in_ms: Option<u64>| EventBody::NotificationFailed {
        id: owed.id.clone(),
        kind: owed.kind,
        channel: owed.channel.clone(),
        attempt,
        error: crate::redact::text(&error).into_owned(),
        retry_in_ms,
    };
    match outcome {
        Attempt::Sent => {
            let body = EventBody::NotificationSent {
                id: owed.id.clone(),
                kind: owed.kind,
                channel: owed.channel.clone(),
                attempt,
            };
            record(notifier, &source, &body).await?;
            Ok(None)
        }
        Attempt::Retry { error, retry_after } => {
            match outbox::backoff(notifier.retry_base, attempt, retry_after) {
                Some(wait) => {
                    let ms = u64::try_from(wait.as_millis()).unwrap_or(u64::MAX);
                    record(notifier, &source, &failed(error, Some(ms))).await?;
                    p.owed.failed = attempt;
                    Ok(Some(wait))
                }
                None => {
                    record(notifier, &source, &failed(error, None)).await?;
                    notifier.gave_up(&owed.channel);
                    Ok(None)
                }
            }
        }
        Attempt::Fatal(error) => {
            record(notifier, &source, &failed(error, None)).await?;
            notifier.gave_up(&owed.channel);
            Ok(None)
        }
        Attempt::Gone(error) => {
            record(notifier, &source, &failed(error.clone(), None)).await?;
            if let Some(sub) = &sub {
                let reason = format!("its push service answered {error}");
                notifier.store.remove_subscription(&sub.id, &reason).await?;
            }
            Ok(None)
        }
    }
}
