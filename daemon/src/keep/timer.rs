//! The daemon's own backups and retention passes, on the config's periods: one tokio task,
//! ended by the shutdown token.
//!
//! A backup is due when the newest of the daemon's backups in `<home>/backups/` is older than
//! `[backup] every` (so a restart does not reset the clock); each is recorded as a
//! `backup_made` event in the default agent's chat thread and followed by pruning to
//! `keep`. A retention pass runs five minutes after start, then every `[retention] every`. One
//! sleep never exceeds a minute (tokio's clock stops while the machine sleeps).

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use lazyboy_protocol::{BackupRequest, EventBody, RetentionRequest, paths};
use tokio_util::sync::CancellationToken;

use super::{Keep, parse_every};

/// The default number of the daemon's own backups kept.
pub const DEFAULT_KEEP: usize = 7;
/// The first retention pass waits this long after the start.
const FIRST_PASS: Duration = Duration::from_secs(300);
const MAX_SLEEP: Duration = Duration::from_secs(60);

/// When the newest of the daemon's own backups was written.
fn newest_backup(keep: &Keep) -> Option<SystemTime> {
    std::fs::read_dir(keep.home.join(paths::BACKUPS))
        .ok()?
        .flatten()
        .filter(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            name.starts_with("lazyboy-") && name.ends_with(".tar.gz")
        })
        .filter_map(|e| e.metadata().ok()?.modified().ok())
        .max()
}

async fn scheduled_backup(keep: &Keep) {
    match keep.backup(&BackupRequest::default()).await {
        Ok(made) => {
            let pruned = keep.prune(keep.backup.keep.unwrap_or(DEFAULT_KEEP).max(1));
            let body = EventBody::BackupMade {
                path: made.path,
                bytes: made.bytes,
                events: made.manifest.counts.events,
                pruned,
            };
            if let Err(error) = keep
                .store
                .append_to_agent(crate::DEFAULT_AGENT, &body)
                .await
            {
                tracing::warn!(%error, "cannot record the backup");
            }
        }
        Err(error) => tracing::error!(%error, "the scheduled backup failed"),
    }
}

/// Runs until `shutdown`.
pub async fn run(keep: Arc<Keep>, shutdown: CancellationToken) {
    let backup_every = keep
        .backup
        .every
        .as_deref()
        .and_then(|e| parse_every(e).ok());
    let retention_every = keep.retention.tool_output_days.map(|_| {
        keep.retention
            .every
            .as_deref()
            .and_then(|e| parse_every(e).ok())
            .unwrap_or(Duration::from_secs(86_400))
    });
    if backup_every.is_none() && retention_every.is_none() {
        return;
    }
    let mut next_pass = tokio::time::Instant::now() + FIRST_PASS;
    loop {
        let mut sleep = MAX_SLEEP;
        if let Some(every) = backup_every {
            let age = newest_backup(&keep)
                .and_then(|t| t.elapsed().ok())
                .unwrap_or(Duration::MAX);
            if age >= every {
                scheduled_backup(&keep).await;
                sleep = sleep.min(every);
            } else {
                sleep = sleep.min(every - age);
            }
        }
        if let Some(every) = retention_every {
            let now = tokio::time::Instant::now();
            if now >= next_pass {
                if let Err(error) = keep.retention(&RetentionRequest::default()).await {
                    tracing::error!(%error, "the retention pass failed");
                }
                next_pass = tokio::time::Instant::now() + every;
            }
            sleep = sleep.min(next_pass.saturating_duration_since(tokio::time::Instant::now()));
        }
        tokio::select! {
            () = shutdown.cancelled() => return,
            () = tokio::time::sleep(sleep.max(Duration::from_millis(100))) => {}
        }
    }
}
