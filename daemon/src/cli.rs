//! The `lazyboyd` command line: the secrets taken out of the environment (a re-exec, see
//! [`crate::secrets`]), arguments, logging, the home's lock, listeners and signals; the serving
//! itself is [`crate::run`]. `main.rs` only calls [`main`].

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::process::ExitCode;

use crate::api::guard::Guard;
use crate::store::{Database, Fleet, Store};
use crate::{Daemon, bus::Bus, home};
use anyhow::Context;
use clap::{CommandFactory, FromArgMatches, Parser};
use lazyboy_protocol::{DEFAULT_WEB_PORT, paths};
use tokio_util::sync::CancellationToken;

/// The LazyBoy daemon. Usually started by `lazyboy daemon start`.
#[derive(Debug, Parser)]
#[command(version)]
struct Args {
    /// The home directory (database, socket, logs). Default: $LAZYBOY_HOME, else the
    /// platform data dir.
    #[arg(long)]
    home: Option<PathBuf>,
    /// Where the dashboard and browser API listen. Default: 127.0.0.1:$LAZYBOY_WEB_PORT
    /// (8787). Every request needs the token (LAZYBOY_TOKEN or <home>/token) on any address.
    #[arg(long)]
    listen: Option<SocketAddr>,
    /// Leave the terminal's session (used by `lazyboy daemon start`).
    #[arg(long)]
    detach: bool,
    /// This daemon's name among the daemons sharing a database (default: the host name).
    /// Agents pinned to it run only here.
    #[arg(long, env = "LAZYBOY_NODE")]
    node: Option<String>,
    /// Internal: the descriptor the image before the re-exec handed the secrets over on.
    #[arg(long, hide = true)]
    secrets_fd: Option<i32>,
    /// Serve the dashboard over HTTPS with this PEM certificate chain (and --tls-key): a
    /// phone's browser allows the service worker and notifications only over HTTPS.
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    tls_cert: Option<PathBuf>,
    /// The PEM private key of --tls-cert.
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    tls_key: Option<PathBuf>,
    /// Restore this backup into the home and exit, instead of serving (`lazyboy restore`).
    /// Refused while a daemon runs on the home.
    #[arg(long, value_name = "FILE")]
    restore: Option<PathBuf>,
}

/// Runs the daemon with the process's arguments; `commit` is the git commit it was built from
/// (the binary's, see `dist/build.rs`), reported by `--version` and `/api/health`.
pub fn main(commit: &'static str) -> ExitCode {
    // The sandbox helper (an agent's command, see `confine`): first of all, while this
    // process has one thread, as Landlock restricts the calling thread.
    if std::env::args_os().nth(1).as_deref()
        == Some(std::ffi::OsStr::new(crate::confine::HELPER_FLAG))
    {
        return crate::confine::helper::helper_main();
    }
    crate::set_commit(commit);
    let version = lazyboy_protocol::build_name(crate::VERSION, commit);
    // clap wants a 'static str; this runs once per process.
    let version: &'static str = Box::leak(version.into_boxed_str());
    let command = Args::command().version(version);
    let args = match Args::from_arg_matches(&command.get_matches()) {
        Ok(args) => args,
        Err(error) => error.exit(),
    };
    if let Some(archive) = &args.restore {
        let Some(home) = paths::home(args.home.clone()) else {
            eprintln!("lazyboyd: no home directory: set LAZYBOY_HOME");
            return ExitCode::FAILURE;
        };
        nix::sys::stat::umask(nix::sys::stat::Mode::from_bits_truncate(0o077));
        return crate::keep::restore::main(&home, archive);
    }
    match start(args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("lazyboyd: {error:#}");
            tracing::error!("{error:#}");
            ExitCode::FAILURE
        }
    }
}

fn start(args: Args) -> anyhow::Result<()> {
    let home = paths::home(args.home).context("no home directory: set LAZYBOY_HOME")?;
    let node = node_name(args.node)?;
    let config = crate::config::Config::load(&home)?;
    let provider_key_names: Vec<String> = config
        .file
        .providers
        .values()
        .filter_map(|p| p.api_key_env.clone())
        // The notification channels' tokens, secrets and passwords leave the environment too.
        .chain(config.file.notify.secret_env())
        .collect();
    // First of all, before a thread, a lock or a session of our own: the secrets leave the
    // environment (this re-executes the program unless there are none).
    match args.secrets_fd {
        Some(fd) => crate::secrets::receive(fd)?,
        None => {
            crate::secrets::hand_over(&crate::secrets::names(provider_key_names.iter().cloned()))?
        }
    }
    crate::secrets::deny_inspection()?;
    // Processes an agent's command double-forks stay the daemon's descendants, so they are
    // reaped here and stay within reach of a kill (preserved across the exec above).
    crate::confine::reaper::become_subreaper().context("prctl(PR_SET_CHILD_SUBREAPER)")?;
    if args.detach {
        // A new session: closing the terminal that started us sends no SIGHUP here.
        nix::unistd::setsid().context("setsid")?;
    }
    seal_inherited_fds();
    // Everything the daemon creates (database, socket, logs) is private to the user.
    let user_umask = nix::sys::stat::umask(nix::sys::stat::Mode::from_bits_truncate(0o077));
    crate::confine::machine::set_user_umask(user_umask.bits());
    home::prepare(&home).with_context(|| format!("cannot create {}", home.display()))?;
    crate::confine::set_home(&home);
    crate::tools::workspace::set_home(&home);
    let lock = home::lock(&home)?;
    let _log_guard = crate::telemetry::init(&home, !args.detach);

    let listen = match args.listen {
        Some(addr) => addr,
        None => SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), web_port()?),
    };
    let guard = Guard {
        beyond_loopback: !listen.ip().is_loopback(),
    };
    // Before the socket exists: a client that reaches it finds the credential to send.
    let token = home::ensure_token(&home)
        .with_context(|| format!("cannot write {}", home.join(paths::TOKEN).display()))?;
    let token = crate::api::token::Token::new(&token);

    let tls = match (&args.tls_cert, &args.tls_key) {
        (Some(cert), Some(key)) => Some(crate::api::tls::load(cert, key)?),
        _ => None,
    };
    crate::secret_env::set_configured(provider_key_names);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let result = runtime.block_on(async move {
        let database =
            Database::choose(config.database_url().as_deref(), home.join(paths::DATABASE))
                .map_err(anyhow::Error::msg)?;
        let fleet = Fleet {
            node,
            lease_ttl_ms: config.lease_ttl_ms,
        };
        tracing::info!(database = %database.describe(), node = %fleet.node, "opening the store");
        let store = Store::connect(&database, Bus::default(), fleet)
            .await
            .with_context(|| format!("cannot open the database {}", database.describe()))?;
        let tcp = tokio::net::TcpListener::bind(listen)
            .await
            .with_context(|| format!("cannot listen on {listen}"))?;
        let shutdown = CancellationToken::new();
        tokio::spawn(signals(shutdown.clone()));
        let daemon = Daemon {
            home: home.clone(),
            store,
            config,
            socket: home.join(paths::SOCKET),
            tcp,
            guard,
            token,
            tls,
        };
        let result = crate::run(daemon, shutdown).await;
        // The socket file goes with us; the lock is released last.
        let _ = std::fs::remove_file(home.join(paths::SOCKET));
        result
    });
    // Blocking work that never ends (a read from a FIFO, say) must not hold up the exit.
    runtime.shutdown_timeout(std::time::Duration::from_secs(2));
    drop(lock);
    result
}

/// Marks every descriptor this process inherited (beyond stdio) close-on-exec, so that the
/// commands agents run do not inherit them. (Seen: a build tool's lock file, inherited
/// through the process that started us, stayed locked for as long as an agent's command
/// ran.) Runs before any thread or descriptor of our own exists.
fn seal_inherited_fds() {
    let dir = if cfg!(target_os = "linux") {
        "/proc/self/fd"
    } else {
        "/dev/fd"
    };
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let fds: Vec<i32> = entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .filter(|fd| *fd > 2)
        .collect();
    for fd in fds {
        // The listing's own descriptor is closed by now: only touch ones still open.
        if std::fs::symlink_metadata(format!("{dir}/{fd}")).is_err() {
            continue;
        }
        #[allow(
            unsafe_code,
            reason = "borrowing an inherited raw descriptor to set FD_CLOEXEC"
        )]
        // SAFETY: `fd` was just seen open, and nothing else runs yet (no threads), so it
        // stays open for the duration of this borrow.
        let borrowed = unsafe { std::os::fd::BorrowedFd::borrow_raw(fd) };
        let _ = nix::fcntl::fcntl(
            borrowed,
            nix::fcntl::FcntlArg::F_SETFD(nix::fcntl::FdFlag::FD_CLOEXEC),
        );
    }
}

/// `--node`, else the host name; letters, digits, `.`, `_` and `-`, at most 64.
fn node_name(given: Option<String>) -> anyhow::Result<String> {
    let name = match given {
        Some(name) => name,
        None => nix::unistd::gethostname()
            .ok()
            .and_then(|h| h.into_string().ok())
            .filter(|h| !h.is_empty())
            .unwrap_or_else(|| "local".to_owned()),
    };
    let valid = !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
    anyhow::ensure!(
        valid,
        "invalid node name {name:?}: use 1 to 64 letters, digits, '.', '_' or '-'"
    );
    Ok(name)
}

fn web_port() -> anyhow::Result<u16> {
    match std::env::var("LAZYBOY_WEB_PORT") {
        Ok(port) => port
            .parse()
            .with_context(|| format!("LAZYBOY_WEB_PORT={port:?} is not a port number")),
        Err(_) => Ok(DEFAULT_WEB_PORT),
    }
}

/// SIGTERM or SIGINT cancels `shutdown`.
async fn signals(shutdown: CancellationToken) {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut term), Ok(mut int)) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) else {
        tracing::error!("cannot install signal handlers");
        return;
    };
    tokio::select! {
        _ = term.recv() => tracing::info!("SIGTERM: shutting down"),
        _ = int.recv() => tracing::info!("SIGINT: shutting down"),
    }
    shutdown.cancel();
}
