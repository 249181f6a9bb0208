//! The test harness: a real `lazyboyd` on a temp home, and helpers that wait on conditions
//! with deadlines.
//!
//! Tests drive the real entry points, built by cargo as this package's own bins
//! (`lazyboyd-under-test`, `lazyboy-under-test`), so `cargo test` never runs a stale daemon.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test harness: a failure is a test failure"
)]

pub mod attacks;
pub mod bench;
pub mod boxes;
pub mod browser;
pub mod clean;
pub mod devtools;
pub mod fleet;
pub mod growth;
pub mod history;
pub mod mcp_servers;
pub mod mock_model;
pub mod notify;
pub mod sse;
pub mod tasks;
pub mod upgrade;

use std::future::Future;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use lazyboy::connection::Client;
use lazyboy_protocol::{Health, paths};
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use tempfile::TempDir;

/// The commit the binaries under test report (`--version`, `/api/health`): a marker, so a
/// test can see it carried through; the shipped binaries carry the real one
/// (`tests/tests/release/`).
pub const UNDER_TEST_COMMIT: &str = "under-test";

/// The directory holding the binaries under test: `target/<profile>/`, where cargo puts
/// this package's bins (`lazyboyd-under-test`, `lazyboy-under-test`: the real entry points,
/// `lazyboyd::cli::main` and `lazyboy::app::main`) before it runs its tests and benches.
pub fn bin_dir() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        // target/<profile>/deps/<this test binary>
        let exe = std::env::current_exe().unwrap();
        exe.parent().unwrap().parent().unwrap().to_owned()
    })
}

/// Path of one of our binaries: `lazyboyd` or `lazyboy`.
pub fn bin(name: &str) -> PathBuf {
    let path = bin_dir().join(format!("{name}-under-test"));
    assert!(
        path.is_file(),
        "{} is missing: run the tests through cargo",
        path.display()
    );
    path
}

/// A fresh home directory with a short path (socket paths are limited to ~108 bytes).
pub fn temp_home() -> TempDir {
    tempfile::Builder::new()
        .prefix("lb")
        .tempdir_in("/tmp")
        .unwrap()
}

/// A real daemon on its own home, socket and TCP port. Killed (-9) on drop if still running;
/// call [`TestDaemon::stop`] to assert a clean shutdown instead.
pub struct TestDaemon {
    home: PathBuf,
    /// Keeps the temp dir alive (and deletes it) when this daemon owns its home.
    _owned_home: Option<TempDir>,
    child: Option<Child>,
    pub health: Health,
    /// An HTTP client for the TCP listener that sends the home's token, as the person's
    /// programs do (see [`TestDaemon::anonymous`] for one that sends nothing).
    pub http: reqwest::Client,
    extra_env: Vec<(String, String)>,
    /// `--listen`: `127.0.0.1:0` unless [`TestDaemon::pin_port`] kept the port.
    listen: String,
}

impl TestDaemon {
    /// Starts a daemon on a fresh home.
    pub async fn start() -> TestDaemon {
        let home = temp_home();
        let mut daemon = TestDaemon::start_in(home.path(), &[]).await;
        daemon._owned_home = Some(home);
        daemon
    }

    /// Starts a daemon on a fresh home whose `config.toml` is `config`, with extra `env`.
    pub async fn start_with(config: &str, env: &[(&str, &str)]) -> TestDaemon {
        let home = temp_home();
        std::fs::write(home.path().join("config.toml"), config).unwrap();
        let mut daemon = TestDaemon::start_in(home.path(), env).await;
        daemon._owned_home = Some(home);
        daemon
    }

    /// Starts a daemon whose default provider is `mock`, speaking `wire` ("openai" or
    /// "anthropic"), with fast retries and heartbeats.
    pub async fn start_with_model(
        mock: &mock_model::MockModel,
        wire: &str,
        env: &[(&str, &str)],
    ) -> TestDaemon {
        TestDaemon::start_with(&model_config(mock, wire), env).await
    }

    /// Starts a daemon on `home` (which may hold an earlier daemon's state).
    pub async fn start_in(home: &Path, env: &[(&str, &str)]) -> TestDaemon {
        TestDaemon::start_listening(home, "127.0.0.1:0", env).await
    }

    /// Starts a daemon on `home` whose TCP listener is `--listen <listen>`.
    pub async fn start_listening(home: &Path, listen: &str, env: &[(&str, &str)]) -> TestDaemon {
        let mut daemon = TestDaemon {
            home: home.to_owned(),
            _owned_home: None,
            child: None,
            health: empty_health(),
            http: reqwest::Client::builder().build().unwrap(),
            extra_env: env
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            listen: listen.into(),
        };
        daemon.launch().await;
        daemon
    }

    /// The command that runs `lazyboyd` on this home.
    pub fn command(home: &Path) -> Command {
        let mut command = Command::new(bin("lazyboyd"));
        command
            .env("LAZYBOY_HOME", home)
            .env_remove("LAZYBOY_TOKEN")
            .env_remove("LAZYBOY_WEB_PORT")
            // The tests decide the model: nothing leaks in from the machine.
            .env_remove("LAZYBOY_BASE_URL")
            .env_remove("LAZYBOY_MODEL")
            .env_remove("LAZYBOY_API_KEY")
            .env_remove("LAZYBOY_WIRE")
            .env_remove("LAZYBOY_MAX_ROUNDS_TOTAL")
            // SQLite in the home unless a test gives a database (and a node name).
            .env_remove("LAZYBOY_DATABASE_URL")
            .env_remove("LAZYBOY_NODE")
            .env_remove("LAZYBOY_LEASE_TTL_MS")
            .env_remove("OPENAI_API_KEY")
            .env_remove("ANTHROPIC_API_KEY")
            .env("RUST_LOG", "info")
            .stdin(Stdio::null());
        command
    }

    async fn launch(&mut self) {
        let stderr = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.home.join("daemon-stderr.log"))
            .unwrap();
        let mut command = TestDaemon::command(&self.home);
        command
            .arg("--listen")
            .arg(&self.listen)
            .stdout(stderr.try_clone().unwrap())
            .stderr(stderr);
        for (key, value) in &self.extra_env {
            command.env(key, value);
        }
        self.child = Some(command.spawn().unwrap());
        let client = self.client();
        let child = self.child.as_mut().unwrap();
        let home = self.home.clone();
        self.health = wait_for(
            Duration::from_secs(20),
            "the daemon to answer health",
            || {
                let client = client.clone();
                let exited = child.try_wait().unwrap();
                let home = home.clone();
                async move {
                    if let Some(status) = exited {
                        panic!("lazyboyd exited early with {status}:\n{}", stderr_of(&home));
                    }
                    client.get::<Health>("/api/health").await.ok()
                }
            },
        )
        .await;
        self.http = authenticated_http(&self.token());
    }

    /// The daemon's token (its `LAZYBOY_TOKEN`, else `<home>/token`): every API request
    /// must carry it.
    pub fn token(&self) -> String {
        if let Some((_, token)) = self.extra_env.iter().find(|(k, _)| k == "LAZYBOY_TOKEN") {
            return token.clone();
        }
        let text = std::fs::read_to_string(self.home.join(paths::TOKEN))
            .expect("the daemon writes <home>/token at start");
        text.trim().to_owned()
    }

    /// An HTTP client that sends no credential (what a stranger, or an agent's command that
    /// cannot read the home, has).
    pub fn anonymous(&self) -> reqwest::Client {
        reqwest::Client::builder().build().unwrap()
    }

    /// A fresh one-time login link on the dashboard (`/login?code=...`), as `lazyboy web`
    /// prints it: a browser that opens it is signed in and lands on `/`.
    pub async fn login_url(&self) -> String {
        let code: lazyboy_protocol::LoginCode = self
            .client()
            .call(
                lazyboy::connection::Method::POST,
                "/api/auth/login",
                None::<&()>,
            )
            .await
            .unwrap();
        code.link(&self.health.url)
    }

    /// Makes a later [`TestDaemon::restart`] listen on the port this daemon has, so a page
    /// open on it can reconnect.
    pub fn pin_port(&mut self) {
        let url = self.health.url.trim_end_matches('/');
        self.listen = url.trim_start_matches("http://").to_owned();
    }

    /// The home directory.
    pub fn home(&self) -> &Path {
        &self.home
    }

    /// The daemon's pid.
    pub fn pid(&self) -> u32 {
        self.health.pid
    }

    /// A CLI-side client on the local socket (with the daemon's `LAZYBOY_TOKEN` when it was
    /// given one, as the person's shell would have it).
    pub fn client(&self) -> Client {
        match self.extra_env.iter().find(|(k, _)| k == "LAZYBOY_TOKEN") {
            Some((_, token)) => Client::with_token(self.home.clone(), token),
            None => Client::new(self.home.clone()),
        }
    }

    /// `http://127.0.0.1:PORT` plus `path`.
    pub fn url(&self, path: &str) -> String {
        format!("{}{}", self.health.url.trim_end_matches('/'), path)
    }

    /// Kills the daemon with SIGKILL and reaps it.
    pub fn kill9(&mut self) {
        if let Some(mut child) = self.child.take() {
            child.kill().unwrap();
            child.wait().unwrap();
        }
    }

    /// Starts a new daemon on the same home (after [`TestDaemon::kill9`] or a stop).
    pub async fn restart(&mut self) {
        assert!(self.child.is_none(), "restart a daemon that is not running");
        self.launch().await;
    }

    /// Sends SIGTERM and waits for the exit; returns its status and how long it took.
    pub fn terminate(&mut self) -> (ExitStatus, Duration) {
        let mut child = self.child.take().expect("daemon is running");
        let started = Instant::now();
        kill(Pid::from_raw(child.id() as i32), Signal::SIGTERM).unwrap();
        let deadline = started + Duration::from_secs(10);
        loop {
            if let Some(status) = child.try_wait().unwrap() {
                return (status, started.elapsed());
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                panic!(
                    "lazyboyd ignored SIGTERM for 10 s:\n{}",
                    stderr_of(&self.home)
                );
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// Stops the daemon with SIGTERM and asserts a clean shutdown (within 30 s: a hang).
    pub fn stop(mut self) {
        let (status, took) = self.terminate();
        assert!(
            status.success(),
            "lazyboyd exited with {status}:\n{}",
            stderr_of(&self.home)
        );
        // Only a hang fails here (a loaded 2-core machine may take a few seconds); how long a
        // shutdown takes is measured by the foundation bench.
        assert!(took < Duration::from_secs(30), "shutdown took {took:?}");
        assert!(
            !self.home.join(paths::SOCKET).exists(),
            "the socket file outlived a clean shutdown"
        );
    }

    /// Runs the `lazyboy` CLI against this home.
    pub fn cli(&self) -> Command {
        cli(&self.home)
    }
}

impl Drop for TestDaemon {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// A client whose every request carries `Authorization: Bearer <token>`.
pub fn authenticated_http(token: &str) -> reqwest::Client {
    let mut headers = reqwest::header::HeaderMap::new();
    let value = reqwest::header::HeaderValue::from_str(&format!("Bearer {token}")).unwrap();
    headers.insert(reqwest::header::AUTHORIZATION, value);
    reqwest::Client::builder()
        .default_headers(headers)
        .build()
        .unwrap()
}

/// A `config.toml` pointing the default provider at `mock`.
pub fn model_config(mock: &mock_model::MockModel, wire: &str) -> String {
    let base_url = match wire {
        "anthropic" => mock.anthropic_base_url(),
        _ => mock.openai_base_url(),
    };
    format!(
        "default_provider = \"mock\"\nheartbeat_secs = 1\n\n[providers.mock]\nwire = \"{wire}\"\n\
         base_url = \"{base_url}\"\nmodel = \"mock-model\"\n\n[retry]\nmax_attempts = 3\n\
         base_ms = 5\nmax_ms = 50\n"
    )
}

/// Runs a blocking command (the CLI) without stalling the test's runtime (the mock model
/// serves on it).
pub async fn output_of(mut command: Command) -> std::process::Output {
    tokio::task::spawn_blocking(move || command.output().unwrap())
        .await
        .unwrap()
}

/// A task's events, typed, in order.
pub async fn task_events(daemon: &TestDaemon, task: &str) -> Vec<lazyboy_protocol::EventBody> {
    all_events(daemon, 0)
        .await
        .into_iter()
        .filter(|e| e.task.as_deref() == Some(task))
        .filter_map(|e| e.body())
        .collect()
}

/// Waits until `task` has finished; returns it.
pub async fn wait_task_finished(daemon: &TestDaemon, task: &str) -> lazyboy_protocol::Task {
    let client = daemon.client();
    let path = format!("/api/tasks/{task}");
    wait_for(Duration::from_secs(60), "the task to finish", || {
        let client = client.clone();
        let path = path.clone();
        async move {
            let task: lazyboy_protocol::Task = client.get(&path).await.ok()?;
            task.verdict.is_some().then_some(task)
        }
    })
    .await
}

/// A child process killed and reaped when dropped, so a failing test leaks nothing.
pub struct KillOnDrop(pub Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The `lazyboy` CLI on `home`.
pub fn cli(home: &Path) -> Command {
    let mut command = Command::new(bin("lazyboy"));
    command
        .env("LAZYBOY_HOME", home)
        .env("LAZYBOY_DAEMON_BIN", bin("lazyboyd"))
        .env("LAZYBOY_WEB_PORT", "0")
        .stdin(Stdio::null());
    command
}

/// What the daemon wrote to stderr, for failure messages.
pub fn stderr_of(home: &Path) -> String {
    std::fs::read_to_string(home.join("daemon-stderr.log")).unwrap_or_default()
}

fn empty_health() -> Health {
    Health {
        ok: false,
        version: String::new(),
        commit: String::new(),
        pid: 0,
        protocol: 0,
        home: String::new(),
        url: String::new(),
        node: String::new(),
        lan_urls: Vec::new(),
        sandbox: String::new(),
    }
}

/// Polls `probe` until it yields `Some`, backing off from 1 ms to 50 ms; panics naming `what`
/// at the deadline.
pub async fn wait_for<T, F, Fut>(deadline: Duration, what: &str, mut probe: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let give_up = Instant::now() + deadline;
    let mut pause = Duration::from_millis(1);
    loop {
        if let Some(value) = probe().await {
            return value;
        }
        assert!(
            Instant::now() < give_up,
            "timed out after {deadline:?} waiting for {what}"
        );
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(Duration::from_millis(50));
    }
}

/// Every event in the log after `after`, read through the JSON page API.
pub async fn all_events(daemon: &TestDaemon, after: i64) -> Vec<lazyboy_protocol::Event> {
    let mut events = Vec::new();
    let mut last = after;
    loop {
        let page: lazyboy_protocol::EventPage = daemon
            .client()
            .get(&format!("/api/events/page?after={last}&limit=10000"))
            .await
            .unwrap();
        match page.events.last() {
            Some(event) => last = event.seq,
            None => return events,
        }
        events.extend(page.events);
    }
}

/// Creates an agent over TCP and returns its name.
pub async fn add_agent(daemon: &TestDaemon, name: &str) -> String {
    let response = daemon
        .http
        .post(daemon.url("/api/agents"))
        .json(&serde_json::json!({ "name": name }))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 201, "{}", response.text().await.unwrap());
    name.to_owned()
}

/// Hands `agent` a task over TCP (optionally in `workspace`); returns the task id.
pub async fn create_task(
    daemon: &TestDaemon,
    agent: &str,
    objective: &str,
    workspace: Option<&Path>,
) -> String {
    let create = lazyboy_protocol::CreateTask {
        objective: objective.to_owned(),
        workspace: workspace.map(|w| w.display().to_string()),
    };
    let response = daemon
        .http
        .post(daemon.url(&format!("/api/agents/{agent}/tasks")))
        .json(&create)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 202, "{}", response.text().await.unwrap());
    let accepted: lazyboy_protocol::TaskAccepted = response.json().await.unwrap();
    accepted.task
}

/// Posts a note (a user message that starts no task) to the agent's chat thread over TCP;
/// returns its seq. The foundation's tests use it as the plain way to append an event.
pub async fn post_message(
    http: &reqwest::Client,
    base: &str,
    agent: &str,
    text: &str,
) -> reqwest::Result<i64> {
    let response = http
        .post(format!("{base}/api/agents/{agent}/messages"))
        .json(&serde_json::json!({ "text": text, "note": true }))
        .send()
        .await?
        .error_for_status()?;
    let accepted: lazyboy_protocol::MessageAccepted = response.json().await?;
    Ok(accepted.seq)
}

/// Sends the agent a message as a person does (no `note`): it steers the agent's running
/// task, or starts a new task when the agent is idle.
pub async fn tell(
    daemon: &TestDaemon,
    agent: &str,
    text: &str,
) -> lazyboy_protocol::MessageAccepted {
    let response = daemon
        .http
        .post(daemon.url(&format!("/api/agents/{agent}/messages")))
        .json(&serde_json::json!({ "text": text }))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 202, "{}", response.text().await.unwrap());
    response.json().await.unwrap()
}
