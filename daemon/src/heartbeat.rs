//! Heartbeats beside a long operation: the one way the daemon records them.
//!
//! A heartbeat is recorded *beside* the operation, never *instead of* it: the operation may
//! hold the store's writer in the middle of an append of its own (a tool recording events:
//! the box's lock, its own heartbeats, MCP progress). A heartbeat that waited for the writer
//! in a `select!` branch body, with the operation no longer polled, would wait forever, and
//! with it every task of the daemon. A heartbeat being written when the operation ends is
//! let land: an append cut off mid-write could be lost to live subscribers.

use std::future::Future;
use std::time::{Duration, Instant};

/// Runs `operation`; every `period` while it runs, `beat(elapsed)` records a heartbeat
/// (at most one in flight). A failed heartbeat (the store is gone) ends the wait with its
/// error.
pub async fn beside<T, E, R>(
    period: Duration,
    operation: impl Future<Output = T>,
    beat: impl Fn(Duration) -> R,
) -> Result<T, E>
where
    R: Future<Output = Result<(), E>>,
{
    let started = Instant::now();
    let mut tick = crate::bus::idle_interval(period);
    let mut operation = std::pin::pin!(operation);
    let mut recording: Option<std::pin::Pin<Box<R>>> = None;
    loop {
        tokio::select! {
            out = &mut operation => {
                if let Some(beat) = recording.take() {
                    beat.await?;
                }
                return Ok(out);
            }
            recorded = async {
                match recording.as_mut() {
                    Some(beat) => beat.await,
                    None => std::future::pending().await,
                }
            }, if recording.is_some() =>
            {
                recording = None;
                recorded?;
            }
            _ = tick.tick(), if recording.is_none() => {
                recording = Some(Box::pin(beat(started.elapsed())));
            }
        }
    }
}

/// Milliseconds for a heartbeat's `elapsed_ms`.
pub fn millis(elapsed: Duration) -> u64 {
    u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use tokio::sync::Mutex;

    use super::*;

    /// The operation holds a shared lock most of the time (as a tool mid-append holds the
    /// store's writer) and the heartbeat needs the same lock: both must make progress.
    /// Recording the heartbeat in place of polling the operation deadlocks here.
    #[tokio::test]
    async fn a_heartbeat_never_waits_on_an_operation_it_stopped_polling() {
        let writer = Arc::new(Mutex::new(()));
        let beats = Arc::new(AtomicUsize::new(0));
        let operation = {
            let writer = writer.clone();
            async move {
                for _ in 0..40 {
                    let held = writer.lock().await;
                    tokio::time::sleep(Duration::from_millis(3)).await;
                    drop(held);
                    tokio::task::yield_now().await;
                }
                "done"
            }
        };
        let record = |_elapsed: Duration| {
            let writer = writer.clone();
            let beats = beats.clone();
            async move {
                let _held = writer.lock().await;
                beats.fetch_add(1, Ordering::SeqCst);
                Ok(())
            }
        };
        let ran: Result<&str, ()> = tokio::time::timeout(
            Duration::from_secs(10),
            beside(Duration::from_millis(2), operation, record),
        )
        .await
        .expect("deadlocked: the heartbeat waited on the operation's lock");
        assert_eq!(ran.ok(), Some("done"));
        assert!(
            beats.load(Ordering::SeqCst) > 5,
            "heartbeats were recorded meanwhile"
        );
    }

    #[tokio::test]
    async fn a_failed_heartbeat_ends_the_wait_with_its_error() {
        let out: Result<(), &str> = beside(
            Duration::from_millis(1),
            std::future::pending::<()>(),
            |_| async { Err("the store is gone") },
        )
        .await;
        assert_eq!(out, Err("the store is gone"));
    }
}
