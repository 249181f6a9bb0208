//! Finding, starting and stopping the daemon of a home.
//!
//! `lazyboy` starts `lazyboyd --detach` when a command needs it and none answers; the daemon
//! leaves the terminal's session, so closing the terminal does not stop it. Whether a daemon
//! is alive is told by the home's lock: the daemon holds it exactly as long as it lives.

use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use hyper::Method;
use lazyboy_protocol::{Health, PROTOCOL_VERSION, paths};

use crate::connection::{Client, ClientError};

/// How long `start` waits for a new daemon to answer.
const START_DEADLINE: Duration = Duration::from_secs(20);
/// How long `stop` waits for the daemon to exit.
const STOP_DEADLINE: Duration = Duration::from_secs(15);

/// The daemon's health, checked for a matching protocol.
pub async fn health(client: &Client) -> anyhow::Result<Health> {
    let health: Health = client.get("/api/health").await?;
    if health.protocol != PROTOCOL_VERSION {
        bail!(
            "lazyboyd {} (pid {}) at {} speaks protocol {}, but this lazyboy {} speaks protocol \
             {}; restart the daemon with this version: `lazyboy daemon stop && lazyboy daemon \
             start`",
            health.version,
            health.pid,
            client.home().display(),
            health.protocol,
            env!("CARGO_PKG_VERSION"),
            PROTOCOL_VERSION
        );
    }
    Ok(health)
}

/// The health of the running daemon, starting one first if none answers.
pub async fn ensure_running(client: &Client) -> anyhow::Result<Health> {
    match client.get::<Health>("/api/health").await {
        Ok(_) => health(client).await,
        Err(ClientError::NotRunning { .. }) => start(client).await,
        Err(other) => Err(other.into()),
    }
}

/// Starts a detached daemon and waits until it answers.
pub async fn start(client: &Client) -> anyhow::Result<Health> {
    start_with(client, &[]).await
}

/// [`start`], passing `args` on to `lazyboyd` (`--listen`, `--tls-cert`, ...).
pub async fn start_with(client: &Client, args: &[String]) -> anyhow::Result<Health> {
    let home = client.home();
    let logs = home.join(paths::LOGS);
    std::fs::create_dir_all(&logs).with_context(|| format!("cannot create {}", logs.display()))?;
    let out_path = logs.join("lazyboyd.out");
    let out = OpenOptions::new()
        .create(true)
        .append(true)
        .open(&out_path)
        .with_context(|| format!("cannot open {}", out_path.display()))?;
    let binary = daemon_binary();
    let mut child = Command::new(&binary)
        .arg("--detach")
        .args(args)
        .env("LAZYBOY_HOME", home)
        .stdin(Stdio::null())
        .stdout(out.try_clone()?)
        .stderr(out)
        .spawn()
        .with_context(|| format!("cannot start {}", binary.display()))?;
    let deadline = Instant::now() + START_DEADLINE;
    let mut pause = Duration::from_millis(2);
    loop {
        match client.get::<Health>("/api/health").await {
            Ok(_) => return health(client).await,
            Err(ClientError::NotRunning { .. }) => {}
            Err(other) => return Err(other.into()),
        }
        // A daemon that failed (rather than lost a race to another start) says why.
        if let Some(status) = child.try_wait()?
            && !status.success()
            && !lock_is_held(home)
        {
            bail!(
                "lazyboyd exited with {status}:\n{}",
                tail(&out_path, 2000).trim_end()
            );
        }
        if Instant::now() > deadline {
            bail!(
                "lazyboyd did not answer within {}s; see {}",
                START_DEADLINE.as_secs(),
                out_path.display()
            );
        }
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(Duration::from_millis(100));
    }
}

/// Asks the daemon to stop and waits until it has exited. `Ok(None)` if none was running.
pub async fn stop(client: &Client) -> anyhow::Result<Option<Health>> {
    let health = match client.get::<Health>("/api/health").await {
        Ok(health) => health,
        Err(ClientError::NotRunning { .. }) => return Ok(None),
        Err(other) => return Err(other.into()),
    };
    client
        .call::<serde_json::Value>(Method::POST, "/api/daemon/stop", None::<&()>)
        .await?;
    let deadline = Instant::now() + STOP_DEADLINE;
    while lock_is_held(client.home()) {
        if Instant::now() > deadline {
            bail!(
                "lazyboyd (pid {}) did not stop within {}s",
                health.pid,
                STOP_DEADLINE.as_secs()
            );
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    Ok(Some(health))
}

/// Whether a daemon holds the home's lock right now.
pub fn lock_is_held(home: &Path) -> bool {
    let Ok(file) = File::open(home.join(paths::LOCK)) else {
        return false;
    };
    match file.try_lock_shared() {
        Ok(()) => {
            let _ = file.unlock();
            false
        }
        Err(_) => true,
    }
}

/// `LAZYBOY_DAEMON_BIN`, else `lazyboyd` beside this executable, else `lazyboyd` on PATH.
fn daemon_binary() -> PathBuf {
    if let Some(path) = std::env::var_os("LAZYBOY_DAEMON_BIN") {
        return PathBuf::from(path);
    }
    std::env::current_exe()
        .ok()
        .and_then(|exe| Some(exe.parent()?.join("lazyboyd")))
        .filter(|path| path.is_file())
        .unwrap_or_else(|| PathBuf::from("lazyboyd"))
}

/// The absolute path of [`daemon_binary`] (searched on `PATH` if bare), for a service
/// manager, which starts it without our `PATH`.
pub fn daemon_path() -> anyhow::Result<PathBuf> {
    let binary = daemon_binary();
    let found = if binary.components().count() > 1 {
        Some(binary.clone())
    } else {
        std::env::var_os("PATH").and_then(|path| {
            std::env::split_paths(&path)
                .map(|dir| dir.join(&binary))
                .find(|candidate| candidate.is_file())
        })
    };
    match found.filter(|path| path.is_file()) {
        Some(path) => {
            std::path::absolute(&path).with_context(|| format!("cannot resolve {}", path.display()))
        }
        None => bail!(
            "cannot find {}: put lazyboyd beside lazyboy or on PATH, or set LAZYBOY_DAEMON_BIN",
            binary.display()
        ),
    }
}

/// The last `max` bytes of a file, for error messages.
fn tail(path: &Path, max: u64) -> String {
    use std::io::{Read, Seek, SeekFrom};
    let Ok(mut file) = File::open(path) else {
        return String::new();
    };
    let len = file.metadata().map(|m| m.len()).unwrap_or(0);
    let _ = file.seek(SeekFrom::Start(len.saturating_sub(max)));
    let mut text = String::new();
    let _ = file.read_to_string(&mut text);
    text
}
