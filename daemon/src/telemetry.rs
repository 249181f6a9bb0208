//! Logging: tracing to stderr (unless detached) and to `<home>/logs/lazyboyd.log`.
//! `RUST_LOG` sets the filter (default `info`). Secrets are never logged.
//!
//! [`progress`] is what the daemon says while it starts and something takes a while
//! (migrations, waiting out a node name): logged, and written to stderr even when detached,
//! where `lazyboy daemon start` reads it (`<home>/logs/lazyboyd.out`) and shows it.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

use lazyboy_protocol::paths;
use tracing_appender::non_blocking::WorkerGuard;
use tracing_subscriber::EnvFilter;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

/// Whether the log goes to stderr already (not detached).
static LOGS_TO_STDERR: AtomicBool = AtomicBool::new(false);

/// The prefix of a [`progress`] line on stderr.
pub const PROGRESS: &str = "lazyboyd: ";

/// Says what the starting daemon is doing or waiting for (one line, for the person).
pub fn progress(message: &str) {
    tracing::info!("{message}");
    if !LOGS_TO_STDERR.load(Ordering::Relaxed) {
        eprintln!("{PROGRESS}{message}");
    }
}

/// Installs the global subscriber; keep the guard alive until exit so the file gets flushed.
pub fn init(home: &Path, to_stderr: bool) -> WorkerGuard {
    LOGS_TO_STDERR.store(to_stderr, Ordering::Relaxed);
    let appender = tracing_appender::rolling::never(home.join(paths::LOGS), "lazyboyd.log");
    let (file, guard) = tracing_appender::non_blocking(appender);
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    let file_layer = tracing_subscriber::fmt::layer()
        .with_ansi(false)
        .with_writer(file);
    let stderr_layer =
        to_stderr.then(|| tracing_subscriber::fmt::layer().with_writer(std::io::stderr));
    tracing_subscriber::registry()
        .with(filter)
        .with(file_layer)
        .with(stderr_layer)
        .init();
    guard
}
