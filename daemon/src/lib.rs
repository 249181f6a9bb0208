//! `lazyboyd`: the long-lived LazyBoy daemon.
//!
//! `main.rs` parses arguments, sets up logging, takes the home's lock, binds the listeners and
//! turns signals into a cancelled [`CancellationToken`]; [`run`] serves until that token is
//! cancelled and then shuts down in order: stop accepting, end open streams, let in-flight
//! requests finish, close the database.

pub mod agent;
pub mod api;
pub mod bus;
pub mod cli;
pub mod config;
pub mod home;
pub mod providers;
pub mod store;
pub mod telemetry;
pub mod tools;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use axum::serve::ListenerExt;
use lazyboy_protocol::{Health, PROTOCOL_VERSION};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use api::guard::Guard;
use api::listeners::LocalSocket;
use store::Store;

/// The daemon's version.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// Everything `run` serves with.
pub struct Daemon {
    pub home: PathBuf,
    pub store: Store,
    pub config: config::Config,
    pub socket: LocalSocket,
    pub tcp: TcpListener,
    pub guard: Guard,
}

/// Serves both listeners until `shutdown` is cancelled, then shuts down gracefully.
pub async fn run(daemon: Daemon, shutdown: CancellationToken) -> anyhow::Result<()> {
    let tcp_addr: SocketAddr = daemon.tcp.local_addr()?;
    ensure_default_agent(&daemon.store).await?;
    let runtime = agent::Runtime::new(
        daemon.store.clone(),
        daemon.config,
        daemon.home.join("workspaces"),
        shutdown.clone(),
    );
    let state = api::AppState {
        runtime: runtime.clone(),
        store: daemon.store.clone(),
        shutdown: shutdown.clone(),
        health: Arc::new(Health {
            ok: true,
            version: VERSION.to_owned(),
            pid: std::process::id(),
            protocol: PROTOCOL_VERSION,
            home: daemon.home.display().to_string(),
            url: format!("http://{tcp_addr}/"),
        }),
    };
    tracing::info!(%tcp_addr, home = %daemon.home.display(), pid = std::process::id(), "lazyboyd ready");

    let tcp = daemon.tcp.tap_io(|stream| {
        // Events are small writes that must leave at once.
        if let Err(error) = stream.set_nodelay(true) {
            tracing::debug!(%error, "set_nodelay failed");
        }
    });
    let tcp_server = axum::serve(tcp, api::tcp_router(state.clone(), daemon.guard))
        .with_graceful_shutdown(shutdown.clone().cancelled_owned());
    let socket_server = axum::serve(daemon.socket, api::socket_router(state))
        .with_graceful_shutdown(shutdown.clone().cancelled_owned());
    match runtime.start().await {
        Ok(0) => {}
        Ok(count) => tracing::info!(count, "resuming tasks from their checkpoints"),
        Err(error) => tracing::error!(%error, "cannot resume tasks"),
    }
    let (tcp_result, socket_result) = tokio::join!(tcp_server, socket_server);
    tracing::info!("listeners closed; pausing tasks");
    runtime.shutdown().await;
    tracing::info!("closing the database");
    daemon.store.close().await;
    tcp_result?;
    socket_result?;
    tracing::info!("lazyboyd stopped");
    Ok(())
}

/// The agent `lazyboy run` uses when none is named.
pub const DEFAULT_AGENT: &str = "default";

async fn ensure_default_agent(store: &Store) -> Result<(), store::StoreError> {
    match store.agent(DEFAULT_AGENT).await {
        Ok(_) => Ok(()),
        Err(store::StoreError::NoSuchAgent(_)) => {
            match store.create_agent(DEFAULT_AGENT, "", None).await {
                Ok(_) | Err(store::StoreError::AgentExists(_)) => Ok(()),
                Err(e) => Err(e),
            }
        }
        Err(e) => Err(e),
    }
}
