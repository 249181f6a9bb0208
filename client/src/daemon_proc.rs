//! Finding, starting, stopping and restarting the daemon of a home.
//!
//! `lazyboy` starts `lazyboyd --detach` when a command needs it and none answers; the daemon
//! leaves the terminal's session, so closing the terminal does not stop it. Whether a daemon
//! is alive is told by the home's lock: the daemon holds it exactly as long as it lives.

use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use futures_util::future::BoxFuture;
use hyper::Method;
use lazyboy_protocol::{Health, PROTOCOL_VERSION, StopRequest, Stopping, paths};

use crate::connection::{Client, ClientError};

/// The prefix of what a starting daemon says about itself (`lazyboyd::telemetry::progress`).
const PROGRESS: &str = "lazyboyd: ";

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
             {}; restart the daemon with this version (after an upgrade): `lazyboy daemon \
             restart` (it lets running tool calls finish first)",
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

/// [`start`], passing `args` on to `lazyboyd` (`--listen`, `--tls-cert`, ...). What the
/// daemon says while it starts (`lazyboyd: ...` lines: migrations to apply, a node name to
/// wait out) is shown on stderr as it comes; a daemon that says it is busy is waited for as
/// long as it runs (it bounds its own waits and says how long), a silent one for
/// [`START_DEADLINE`].
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
    let mut said = Said::from_end_of(&out_path);
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
    let mut busy = false;
    let mut pause = Duration::from_millis(2);
    loop {
        match client.get::<Health>("/api/health").await {
            Ok(_) => return health(client).await,
            Err(ClientError::NotRunning { .. }) => {}
            Err(other) => return Err(other.into()),
        }
        // A daemon that failed (rather than lost a race to another start) says why.
        let exited = child.try_wait()?;
        if let Some(status) = exited
            && !status.success()
            && !lock_is_held(home)
        {
            bail!(
                "lazyboyd exited with {status}:\n{}",
                tail(&out_path, 2000).trim_end()
            );
        }
        for line in said.new_lines() {
            eprintln!("{line}");
            busy = true;
        }
        // It lost a race to another start: that one answers soon.
        if exited.is_some() {
            busy = false;
        }
        if !busy && Instant::now() > deadline {
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

/// The `lazyboyd: ...` lines a starting daemon adds to its output file.
struct Said {
    path: PathBuf,
    offset: u64,
    partial: String,
}

impl Said {
    fn from_end_of(path: &Path) -> Said {
        Said {
            path: path.to_owned(),
            offset: std::fs::metadata(path).map(|m| m.len()).unwrap_or(0),
            partial: String::new(),
        }
    }

    /// Complete progress lines written since the last call.
    fn new_lines(&mut self) -> Vec<String> {
        use std::io::{Read, Seek, SeekFrom};
        let Ok(mut file) = File::open(&self.path) else {
            return Vec::new();
        };
        if file.seek(SeekFrom::Start(self.offset)).is_err() {
            return Vec::new();
        }
        let mut bytes = Vec::new();
        let Ok(n) = file.read_to_end(&mut bytes) else {
            return Vec::new();
        };
        self.offset += n as u64;
        self.partial.push_str(&String::from_utf8_lossy(&bytes));
        let mut lines = Vec::new();
        while let Some(end) = self.partial.find('\n') {
            let line: String = self.partial.drain(..=end).collect();
            let line = line.trim_end();
            if line.starts_with(PROGRESS) {
                lines.push(line.to_owned());
            }
        }
        lines
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
    wait_unlocked(client.home(), health.pid, STOP_DEADLINE).await?;
    Ok(Some(health))
}

/// The service manager as a restart needs it: whether it runs the daemon with `pid`, and
/// starting its daemon again (waiting until it answers).
pub trait ServiceManager {
    fn runs_daemon(&self, client: &Client, pid: u32) -> bool;
    fn start_again<'a>(&'a self, client: &'a Client) -> BoxFuture<'a, anyhow::Result<Health>>;
}

/// `lazyboy daemon restart`: asks the running daemon to stop at its tasks' checkpoints (each
/// running tool call finishes and records its result first, for at most `within`), waits for
/// it to exit, then starts the daemon again, as the service manager's when the service runs
/// it, else detached with `args` (empty: the ones the old daemon was started with). The new
/// binary on disk is the one that starts: this is how an upgrade takes effect.
///
/// The service manager comes in as `service` (`commands::service` supplies it): the verb above
/// both hands it down, so this module, below every command, names none of them.
pub async fn restart(
    client: &Client,
    args: Vec<String>,
    within: Duration,
    service: &dyn ServiceManager,
) -> anyhow::Result<Health> {
    let old = match client.get::<Health>("/api/health").await {
        Ok(health) => health,
        Err(ClientError::NotRunning { .. }) => {
            eprintln!("lazyboyd was not running: starting it");
            return start_with(client, &args).await;
        }
        Err(other) => return Err(other.into()),
    };
    let args = if args.is_empty() {
        previous_args(old.pid)
    } else {
        args
    };
    let managed = service.runs_daemon(client, old.pid);
    let request = StopRequest {
        checkpoint_ms: Some(u64::try_from(within.as_millis()).unwrap_or(u64::MAX)),
    };
    let answer: serde_json::Value = client
        .call(Method::POST, "/api/daemon/stop", Some(&request))
        .await?;
    let name = format!("lazyboyd {} (pid {})", old.version, old.pid);
    let wait = match serde_json::from_value::<Stopping>(answer) {
        Ok(Stopping {
            tasks,
            checkpoint_ms: Some(ms),
        }) => {
            if tasks > 0 {
                eprintln!(
                    "{name}: waiting up to {} s for {tasks} running task(s) to finish their \
                     tool calls",
                    ms.div_ceil(1000)
                );
            }
            Duration::from_millis(ms)
        }
        // A daemon from before checkpoints stops at once.
        _ => {
            eprintln!(
                "{name} predates checkpoints: it stops now, and calls it was running are \
                 reported `unknown` to their tasks"
            );
            Duration::ZERO
        }
    };
    wait_unlocked(client.home(), old.pid, wait + STOP_DEADLINE).await?;
    eprintln!("{name} stopped");
    if managed {
        return service.start_again(client).await;
    }
    start_with(client, &args).await
}

/// Waits until the home's lock is free (the daemon `pid` exited), at most `limit`.
async fn wait_unlocked(home: &Path, pid: u32, limit: Duration) -> anyhow::Result<()> {
    let deadline = Instant::now() + limit;
    while lock_is_held(home) {
        if Instant::now() > deadline {
            bail!(
                "lazyboyd (pid {pid}) did not stop within {}s",
                limit.as_secs()
            );
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    Ok(())
}

/// The arguments the daemon `pid` was started with, to start its successor the same way
/// (`--listen`, `--node`, TLS), without the ones `start_with` adds or the daemon gave itself
/// (`--detach`, `--secrets-fd N`). `/proc/<pid>/cmdline` stays readable for a daemon that is
/// not dumpable; elsewhere, or unreadable: none.
fn previous_args(pid: u32) -> Vec<String> {
    let Ok(bytes) = std::fs::read(format!("/proc/{pid}/cmdline")) else {
        return Vec::new();
    };
    let mut args = bytes
        .split(|b| *b == 0)
        .skip(1)
        .filter(|a| !a.is_empty())
        .map(|a| String::from_utf8_lossy(a).into_owned());
    let mut kept = Vec::new();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--detach" => {}
            "--secrets-fd" => {
                args.next();
            }
            a if a.starts_with("--secrets-fd=") => {}
            _ => kept.push(arg),
        }
    }
    kept
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
    beside_this()
        .filter(|path| path.is_file())
        .unwrap_or_else(|| PathBuf::from("lazyboyd"))
}

/// `lazyboyd` in this executable's directory (where every install path puts it).
fn beside_this() -> Option<PathBuf> {
    std::env::current_exe()
        .ok()
        .and_then(|exe| Some(exe.parent()?.join("lazyboyd")))
}

/// The daemon binary `lazyboy` would start, and how it was found, for `lazyboy doctor`.
pub fn daemon_found() -> (Option<PathBuf>, &'static str) {
    if std::env::var_os("LAZYBOY_DAEMON_BIN").is_some() {
        let path = daemon_binary();
        return (path.is_file().then_some(path), "from LAZYBOY_DAEMON_BIN");
    }
    if let Some(path) = beside_this().filter(|path| path.is_file()) {
        return (Some(path), "beside lazyboy");
    }
    match daemon_path() {
        Ok(path) => (Some(path), "on PATH"),
        Err(_) => (None, "neither beside lazyboy nor on PATH"),
    }
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
