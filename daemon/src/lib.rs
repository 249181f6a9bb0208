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
pub mod context;
pub mod home;
pub mod providers;
pub mod secrets;
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

/// How long a graceful shutdown waits for open connections to finish.
const SHUTDOWN_GRACE: std::time::Duration = std::time::Duration::from_secs(3);

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
        tokens: Arc::new(api::token::Tokens::new(
            daemon.home.clone(),
            daemon.guard.token.clone(),
        )),
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
            node: daemon.store.fleet().node.clone(),
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
    match runtime.start(&format!("http://{tcp_addr}/")).await {
        Ok(0) => {}
        Ok(count) => tracing::info!(count, "resuming tasks from their checkpoints"),
        Err(error @ store::StoreError::NodeInUse(_)) => return Err(error.into()),
        Err(error) => tracing::error!(%error, "cannot resume tasks"),
    }
    let servers = async { tokio::join!(tcp_server, socket_server) };
    let mut servers = std::pin::pin!(servers);
    let (tcp_result, socket_result) = tokio::select! {
        results = &mut servers => results,
        () = async {
            shutdown.cancelled().await;
            tokio::time::sleep(SHUTDOWN_GRACE).await;
        } => {
            // A client that stopped reading keeps its connection open: do not wait for it.
            tracing::warn!("connections still open after the grace period; closing them");
            (Ok(()), Ok(()))
        }
    };
    tracing::info!("listeners closed; pausing tasks");
    runtime.shutdown().await;
    if let Err(error) = daemon.store.node_stopped(&runtime.instance).await {
        tracing::warn!(%error, "cannot mark the node stopped");
    }
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
            match store.create_agent(DEFAULT_AGENT, "", None, None).await {
                Ok(_) | Err(store::StoreError::AgentExists(_)) => Ok(()),
                Err(e) => Err(e),
            }
        }
        Err(e) => Err(e),
    }
}
