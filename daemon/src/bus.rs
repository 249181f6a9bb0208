//! Live fan-out: wakes subscribers in-process right after a commit.
//!
//! The store publishes each committed event in `seq` order with no gap: SQLite while it still
//! holds the writer lock; PostgreSQL through its feed (this daemon's commits directly, other
//! daemons' through the feed's tailer, which LISTENs and re-reads the log in seq order). The channel is bounded: a subscriber that falls
//! behind gets `Lagged` and re-reads what it missed from the store ([`Subscription`]), so no
//! event is ever dropped or sent twice.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;

use crate::store::{EventFilter, LiveEvent, Store, StoreError};

/// How many events the channel buffers per subscriber before it lags.
const CAPACITY: usize = 4096;
/// Events read from the store per query while catching up.
const REPLAY_BATCH: u32 = 1000;
/// A safety re-read of the store when nothing has arrived for this long.
const RECHECK: Duration = Duration::from_secs(5);

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

/// One reader's position in the log: replays from the store, then follows the bus.
pub struct Subscription {
    store: Store,
    rx: broadcast::Receiver<Arc<LiveEvent>>,
    filter: EventFilter,
    /// The last `seq` handed out.
    cursor: i64,
    /// Whether the store may hold events past `cursor` that the channel will not deliver.
    behind: bool,
    /// Registered once; a per-wait timeout would touch the timer wheel on every event.
    recheck: tokio::time::Interval,
    shutdown: CancellationToken,
}

impl Subscription {
    /// Starts after `after`; `None` means "from now on".
    pub async fn new(
        store: Store,
        filter: EventFilter,
        after: Option<i64>,
        shutdown: CancellationToken,
    ) -> Result<Subscription, StoreError> {
        // Subscribe before reading the store: anything committed later reaches the channel,
        // anything committed earlier is in the store.
        let rx = store.bus().tx.subscribe();
        let cursor = match after {
            Some(after) => after,
            None => store.last_seq().await?,
        };
        Ok(Subscription {
            store,
            rx,
            filter,
            cursor,
            behind: true,
            recheck: idle_interval(RECHECK),
            shutdown,
        })
    }

    /// The next events in `seq` order; `None` once the daemon shuts down.
    pub async fn next_batch(&mut self) -> Result<Option<Vec<Arc<LiveEvent>>>, StoreError> {
        loop {
            if self.shutdown.is_cancelled() {
                return Ok(None);
            }
            if self.behind {
                let batch = self
                    .store
                    .events_after(self.cursor, &self.filter, REPLAY_BATCH)
                    .await?;
                if let Some(last) = batch.last() {
                    self.cursor = last.seq;
                    return Ok(Some(batch.into_iter().map(Arc::new).collect()));
                }
                self.behind = false;
            }
            let received = tokio::select! {
                () = self.shutdown.cancelled() => return Ok(None),
                _ = self.recheck.tick() => {
                    self.behind = true;
                    continue;
                }
                received = self.rx.recv() => received,
            };
            match received {
                Ok(first) => {
                    let mut batch = Vec::new();
                    self.take(first, &mut batch);
                    // Drain what is already queued so a burst goes out in one write.
                    loop {
                        match self.rx.try_recv() {
                            Ok(event) => self.take(event, &mut batch),
                            Err(broadcast::error::TryRecvError::Lagged(_)) => {
                                self.behind = true;
                                break;
                            }
                            Err(_) => break,
                        }
                    }
                    if !batch.is_empty() {
                        return Ok(Some(batch));
                    }
                }
                Err(broadcast::error::RecvError::Lagged(_)) => self.behind = true,
                Err(broadcast::error::RecvError::Closed) => return Ok(None),
            }
        }
    }

    fn take(&mut self, event: Arc<LiveEvent>, batch: &mut Vec<Arc<LiveEvent>>) {
        if event.seq <= self.cursor {
            return;
        }
        if self.filter.matches(&event) {
            batch.push(event.clone());
            self.cursor = event.seq;
        }
    }
}

#[cfg(test)]
mod tests {
    use lazyboy_protocol::EventBody;

    use super::*;

    async fn store() -> (tempfile::TempDir, Store) {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("t.db"), Bus::default())
            .await
            .unwrap();
        (dir, store)
    }

    /// A subscriber that falls more than the channel's capacity behind re-reads the gap from
    /// the store: nothing dropped, nothing twice.
    #[tokio::test]
    async fn a_lagging_subscriber_recovers_from_the_store() {
        let (_dir, store) = store().await;
        store.create_agent("a", "", None, None).await.unwrap();
        let shutdown = CancellationToken::new();
        let mut sub = Subscription::new(
            store.clone(),
            EventFilter::default(),
            Some(0),
            shutdown.clone(),
        )
        .await
        .unwrap();
        // Catch up first, so the rest must come through the (overflowing) channel.
        assert_eq!(sub.next_batch().await.unwrap().unwrap().len(), 1);
        assert!(sub.next_batch_now().await.is_none());
        let total = CAPACITY as i64 * 2 + 17;
        for i in 0..total {
            let body = EventBody::UserMessage {
                text: i.to_string(),
            };
            store.append_to_agent("a", &body).await.unwrap();
        }
        // Read until as many as were appended came (a deadline, not a quiet spell: a page of
        // the replay may take longer than `next_batch_now`'s pause on a loaded machine), then
        // compare: a gap or a repeat shows as a difference.
        let expected: Vec<i64> = (2..=total + 1).collect();
        let mut seqs = Vec::new();
        while seqs.len() < expected.len() {
            let batch = tokio::time::timeout(Duration::from_secs(60), sub.next_batch())
                .await
                .expect("the subscriber stalled")
                .unwrap()
                .unwrap();
            seqs.extend(batch.iter().map(|e| e.seq));
        }
        assert_eq!(seqs, expected);
        assert!(
            sub.next_batch_now().await.is_none(),
            "nothing after the last"
        );
        shutdown.cancel();
        assert!(
            sub.next_batch().await.unwrap().is_none(),
            "shutdown ends the subscription"
        );
    }

    /// Filtered subscriptions skip other agents' events in both replay and live paths.
    #[tokio::test]
    async fn filters_hold_in_replay_and_live() {
        let (_dir, store) = store().await;
        let a = store.create_agent("a", "", None, None).await.unwrap();
        store.create_agent("b", "", None, None).await.unwrap();
        let filter = EventFilter {
            agent_id: Some(a.id),
            ..EventFilter::default()
        };
        let mut sub = Subscription::new(store.clone(), filter, Some(0), CancellationToken::new())
            .await
            .unwrap();
        let replayed = sub.next_batch().await.unwrap().unwrap();
        assert_eq!(replayed.iter().map(|e| e.seq).collect::<Vec<_>>(), [1]);
        let body = EventBody::UserMessage { text: "x".into() };
        store.append_to_agent("b", &body).await.unwrap();
        let (_, mine) = store.append_to_agent("a", &body).await.unwrap();
        let live = sub.next_batch().await.unwrap().unwrap();
        assert_eq!(live.iter().map(|e| e.seq).collect::<Vec<_>>(), [mine.seq]);
    }

    impl Subscription {
        /// The next batch if one is ready without waiting for new appends.
        async fn next_batch_now(&mut self) -> Option<Vec<Arc<LiveEvent>>> {
            tokio::time::timeout(Duration::from_millis(200), self.next_batch())
                .await
                .ok()
                .map(|r| r.unwrap().unwrap())
        }
    }
}
