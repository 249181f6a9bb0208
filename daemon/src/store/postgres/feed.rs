//! The feed: what puts PostgreSQL's events on this daemon's bus, in seq order, with no gap.
//!
//! `last` is the highest seq published; everything at or below it was published (or never
//! committed). A write of this daemon, after its commit, publishes its events itself when
//! they continue `last` (the common case: one daemon writing) and pokes the tailer
//! otherwise. The tailer wakes on a poke, on the log's notification (a statement trigger
//! sends the new highest seq to every listening daemon at commit), after its listening
//! connection was lost (notifications may be missed then), and every [`SAFETY`] anyway, and
//! re-reads the log after `last`. Because seq order is commit order (see `mod.rs`), a read
//! after `last` sees a prefix of what will ever be committed, so publishing it keeps the
//! bus gap-free; the bus's subscribers keep their own cursor and 5 s re-read on top.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use sqlx::postgres::{PgListener, PgPool};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use crate::bus::Bus;
use crate::store::StoreError;
use crate::store::events::{EventFilter, LiveEvent};

/// The tailer re-reads the log at least this often, notification or not.
const SAFETY: Duration = Duration::from_secs(2);
/// Events read per query.
const BATCH: u32 = 1000;

pub(in crate::store) struct Feed {
    bus: Bus,
    last: Mutex<i64>,
    poke: Notify,
}

impl Feed {
    pub(super) fn new(bus: Bus, last: i64) -> Feed {
        Feed {
            bus,
            last: Mutex::new(last),
            poke: Notify::new(),
        }
    }

    pub(super) fn bus(&self) -> &Bus {
        &self.bus
    }

    fn last(&self) -> MutexGuard<'_, i64> {
        // A panic while publishing leaves `last` as it was: still a published prefix.
        self.last.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// This daemon's committed events, in seq order.
    pub(in crate::store) fn committed(&self, events: impl IntoIterator<Item = LiveEvent>) {
        let mut last = self.last();
        for event in events {
            if event.seq <= *last {
                continue;
            }
            if event.seq != *last + 1 {
                // Something committed before it is not on the bus yet (another daemon's, or
                // a seq lost to a rollback): the tailer reads it all in order.
                drop(last);
                self.poke.notify_one();
                return;
            }
            *last = event.seq;
            self.bus.publish(event);
        }
    }

    /// Publishes a read of the log after `from` (a prefix of the committed log).
    fn read(&self, batch: Vec<LiveEvent>) {
        let mut last = self.last();
        for event in batch {
            if event.seq > *last {
                *last = event.seq;
                self.bus.publish(event);
            }
        }
    }
}

/// Starts listening, then the tailer on its own tokio task, until `stop`.
pub(super) async fn start(
    feed: Arc<Feed>,
    pool: PgPool,
    channel: String,
    stop: CancellationToken,
) -> Result<(), StoreError> {
    let mut listener = PgListener::connect_with(&pool).await?;
    listener.listen(&channel).await?;
    tokio::spawn(async move {
        let mut safety = crate::bus::idle_interval(SAFETY);
        loop {
            tokio::select! {
                () = stop.cancelled() => return,
                () = feed.poke.notified() => {}
                _ = safety.tick() => {}
                received = listener.try_recv() => match received {
                    Ok(Some(note)) => {
                        let seq: i64 = note.payload().parse().unwrap_or(i64::MAX);
                        if seq <= *feed.last() {
                            continue;
                        }
                    }
                    // The connection was lost and is being made again: read what we missed.
                    Ok(None) => {}
                    Err(error) => {
                        tracing::warn!(%error, "the event feed lost its database connection");
                        tokio::select! {
                            () = stop.cancelled() => return,
                            () = tokio::time::sleep(Duration::from_secs(1)) => {}
                        }
                    }
                },
            }
            if let Err(error) = tail(&feed, &pool).await {
                tracing::warn!(%error, "the event feed cannot read the log");
            }
        }
    });
    Ok(())
}

/// Reads and publishes everything after `last`.
async fn tail(feed: &Feed, pool: &PgPool) -> Result<(), StoreError> {
    loop {
        let from = *feed.last();
        let batch = crate::store::sql::events::read_after(
            pool.into(),
            from,
            &EventFilter::default(),
            BATCH,
        )
        .await?;
        let full = batch.len() == BATCH as usize;
        feed.read(batch);
        if !full {
            return Ok(());
        }
    }
}
