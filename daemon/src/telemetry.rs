//! Logging: tracing to stderr (unless detached) and to `<home>/logs/lazyboyd.log`.
//! `RUST_LOG` sets the filter (default `info`). Secrets are never logged.

use std::path::Path;

use lazyboy_protocol::paths;
use tracing_appender::non_blocking::WorkerGuard;
use tracing_subscriber::EnvFilter;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

/// Installs the global subscriber; keep the guard alive until exit so the file gets flushed.
pub fn init(home: &Path, to_stderr: bool) -> WorkerGuard {
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
