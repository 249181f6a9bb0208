//! One reader's position in the log: replays from the store, then follows the bus
//! (`crate::bus`, below the store). Subscribing to the bus before reading the store means an
//! event is either in the store when read or arrives on the channel afterwards; the cursor
//! drops the overlap, and a subscriber that lags re-reads the gap from the store.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;

use super::{EventFilter, LiveEvent, Store, StoreError};
use crate::bus::idle_interval;

/// Events read from the store per query while catching up.
const REPLAY_BATCH: u32 = 1000;
/// A safety re-read of the store when nothing has arrived for this long.
const RECHECK: Duration = Duration::from_secs(5);

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
        let rx = store.bus().subscribe();
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
