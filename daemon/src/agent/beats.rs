//! Heartbeats beside a long operation.
//!
//! A heartbeat is recorded *beside* the operation, never *instead of* it: the operation may
//! hold the store's writer in the middle of an append of its own (a tool recording events:
//! the box's lock, its own heartbeats, MCP progress). A heartbeat that waited for the writer
//! in a `select!` branch body, with the operation no longer polled, would wait forever, and
//! with it every task of the daemon.

use std::future::Future;
use std::pin::Pin;
use std::time::{Duration, Instant};

use lazyboy_protocol::EventBody;
use tokio_util::sync::CancellationToken;

use super::turn::Halt;

type Recording<'a> = Pin<Box<dyn Future<Output = Result<(), Halt>> + Send + 'a>>;

/// Runs `operation`, recording a `heartbeat` event through `record` every `period` while
/// it runs. A heartbeat being recorded when the operation ends is let land (an append cut
/// off mid-write could be lost to live subscribers).
pub(super) async fn beside<'a, T, R>(
    period: Duration,
    shutdown: &CancellationToken,
    label: &str,
    operation: impl Future<Output = T>,
    record: impl Fn(EventBody) -> R,
) -> Result<T, Halt>
where
    R: Future<Output = Result<(), Halt>> + Send + 'a,
{
    let started = Instant::now();
    let mut beat = crate::bus::idle_interval(period);
    let mut operation = std::pin::pin!(operation);
    let mut recording: Option<Recording<'a>> = None;
    loop {
        tokio::select! {
            out = &mut operation => {
                if let Some(beat) = recording.take() {
                    beat.await?;
                }
                return Ok(out);
            }
            () = shutdown.cancelled() => return Err(Halt::Shutdown),
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
            _ = beat.tick(), if recording.is_none() => {
                let elapsed_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
                recording = Some(Box::pin(record(EventBody::Heartbeat {
                    operation: label.to_owned(),
                    elapsed_ms,
                })));
            }
        }
    }
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
        let record = |_body: EventBody| {
            let writer = writer.clone();
            let beats = beats.clone();
            async move {
                let _held = writer.lock().await;
                beats.fetch_add(1, Ordering::SeqCst);
                Ok(())
            }
        };
        let shutdown = CancellationToken::new();
        let ran = tokio::time::timeout(
            Duration::from_secs(10),
            beside(Duration::from_millis(2), &shutdown, "op", operation, record),
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
    async fn a_shutdown_ends_the_wait() {
        let shutdown = CancellationToken::new();
        shutdown.cancel();
        let out = beside(
            Duration::from_secs(1),
            &shutdown,
            "op",
            std::future::pending::<()>(),
            |_| async { Ok(()) },
        )
        .await;
        assert!(matches!(out, Err(Halt::Shutdown)));
    }
}
