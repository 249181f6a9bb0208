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
pub mod confine;
pub mod context;
pub mod heartbeat;
pub mod home;
pub mod keep;
pub mod mcp;
pub mod mcp_server;
pub mod notify;
pub mod providers;
pub mod redact;
pub mod sandbox;
pub mod secret_env;
pub mod secrets;
pub mod store;
pub mod telemetry;
pub mod tools;
pub mod web;

use std::future::{Future, IntoFuture};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

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

static COMMIT: std::sync::OnceLock<&'static str> = std::sync::OnceLock::new();

/// Records the git commit this binary was built from (once, first thing in `cli::main`).
pub fn set_commit(commit: &'static str) {
    let _ = COMMIT.set(commit);
}

/// The git commit this binary was built from, `unknown` if nobody said.
pub fn commit() -> &'static str {
    COMMIT.get().copied().unwrap_or("unknown")
}

/// Everything `run` serves with.
pub struct Daemon {
    pub home: PathBuf,
    pub store: Store,
    pub config: config::Config,
    /// Where the local socket goes: bound by [`run`] once the node's name is ours, so that a
    /// CLI waiting for this daemon sees "not running yet" rather than a socket that never
    /// answers.
    pub socket: PathBuf,
    pub tcp: TcpListener,
    pub guard: Guard,
    /// The credential every request must carry (`home::ensure_token`).
    pub token: api::token::Token,
    /// Serve HTTPS on `tcp` with this configuration (`--tls-cert`, `--tls-key`).
    pub tls: Option<Arc<rustls::ServerConfig>>,
}

/// Serves both listeners until `shutdown` is cancelled, then shuts down gracefully.
pub async fn run(daemon: Daemon, shutdown: CancellationToken) -> anyhow::Result<()> {
    let tcp_addr: SocketAddr = daemon.tcp.local_addr()?;
    web::policy::set_own_listener(tcp_addr);
    ensure_default_agent(&daemon.store).await?;
    let keep = Arc::new(keep::Keep {
        home: daemon.home.clone(),
        store: daemon.store.clone(),
        backup: daemon.config.file.backup.clone(),
        retention: daemon.config.file.retention.clone(),
        database_url: daemon.config.database_url(),
        passes: tokio::sync::Mutex::new(()),
    });
    // A backup cut short by a crash left only temporary names: gone before the next one.
    keep::backup::clean_leftovers(&daemon.home);
    let runtime = agent::Runtime::new(
        daemon.store.clone(),
        daemon.config,
        daemon.home.join("workspaces"),
        shutdown.clone(),
    );
    runtime.sandbox.set_url(&format!("http://{tcp_addr}/"));
    let tls = daemon.tls.is_some();
    // Links in notifications: the LAN address when the dashboard is served there (a phone
    // opens them), else this machine's; `[notify] public_url` wins over both.
    let lan_urls = api::lan::urls(tcp_addr, tls);
    let link_base = match lan_urls.first() {
        Some(lan) if daemon.guard.beyond_loopback => lan.clone(),
        _ => dashboard_url(tcp_addr, tls),
    };
    let notify = notify::Notifier::start(
        daemon.store.clone(),
        &runtime.config.file.notify,
        &daemon.home,
        &link_base,
        runtime.web.resolver.clone(),
        shutdown.clone(),
    )?;
    let state = api::AppState {
        tokens: Arc::new(api::token::Tokens::new(
            daemon.home.clone(),
            daemon.token.clone(),
        )),
        auth: Arc::new(api::auth::Auth::new(daemon.token.clone(), tls)),
        runtime: runtime.clone(),
        notify: notify.clone(),
        keep: keep.clone(),
        store: daemon.store.clone(),
        shutdown: shutdown.clone(),
        health: Arc::new(Health {
            ok: true,
            version: VERSION.to_owned(),
            commit: commit().to_owned(),
            pid: std::process::id(),
            protocol: PROTOCOL_VERSION,
            home: daemon.home.display().to_string(),
            url: dashboard_url(tcp_addr, tls),
            node: daemon.store.fleet().node.clone(),
            lan_urls,
            sandbox: match confine::status() {
                Ok(what) => what.clone(),
                Err(why) => format!("unavailable: {why}"),
            },
        }),
    };
    tracing::info!(%tcp_addr, home = %daemon.home.display(), pid = std::process::id(), version = VERSION, commit = commit(), "lazyboyd ready");
    // The sandbox's layers, and the tasks' cgroups (what a dead daemon left is killed now).
    confine::start(&daemon.home);
    tokio::spawn(confine::reaper::run(shutdown.clone()));
    let keep_timer = tokio::spawn(keep::timer::run(keep, shutdown.clone()));

    let router = api::tcp_router(state.clone(), daemon.guard).into_make_service();
    let stop = shutdown.clone().cancelled_owned();
    let tcp_server: std::pin::Pin<Box<dyn Future<Output = std::io::Result<()>> + Send>> =
        match daemon.tls {
            Some(config) => {
                let tls = api::tls::TlsListener::new(daemon.tcp, config)?;
                Box::pin(
                    axum::serve(tls, router)
                        .with_graceful_shutdown(stop)
                        .into_future(),
                )
            }
            None => Box::pin(
                axum::serve(api::listeners::Tcp(daemon.tcp), router)
                    .with_graceful_shutdown(stop)
                    .into_future(),
            ),
        };
    // The node's name first (it may wait out a daemon killed with -9, or refuse), then the
    // socket the CLI talks to.
    runtime.register(&dashboard_url(tcp_addr, tls)).await?;
    let socket = LocalSocket::bind(&daemon.socket)
        .map_err(|e| anyhow::anyhow!("cannot bind {}: {e}", daemon.socket.display()))?;
    let socket_server = axum::serve(
        socket,
        api::socket_router(state).into_make_service_with_connect_info::<api::peers::Peer>(),
    )
    .with_graceful_shutdown(shutdown.clone().cancelled_owned());
    match runtime.start().await {
        Ok(0) => {}
        Ok(count) => tracing::info!(count, "resuming tasks from their checkpoints"),
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
    // A backup or retention pass in progress finishes its statement; the timer then ends.
    let _ = keep_timer.await;
    runtime.shutdown().await;
    notify.stopped().await;
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

/// The dashboard's URL on this machine: an all-interfaces listener (`0.0.0.0`, `::`) is
/// named by its loopback address, which works here; `0.0.0.0` is no address to visit.
/// `lazyboy daemon start --lan` prints the LAN addresses beside it.
pub fn dashboard_url(addr: SocketAddr, tls: bool) -> String {
    let scheme = if tls { "https" } else { "http" };
    let ip = match addr.ip() {
        std::net::IpAddr::V4(ip) if ip.is_unspecified() => std::net::Ipv4Addr::LOCALHOST.into(),
        std::net::IpAddr::V6(ip) if ip.is_unspecified() => std::net::Ipv6Addr::LOCALHOST.into(),
        ip => ip,
    };
    format!("{scheme}://{}/", SocketAddr::new(ip, addr.port()))
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
