//! The box in tests: a container and volume of its own per test (`LAZYBOY_BOX_NAME`),
//! removed on drop, against the real engine and the real image (`lazyboy/box:latest`, or
//! `LAZYBOY_BOX_IMAGE`, which the daemons under test read too); the box tests never skip.
//! A missing engine or image fails loudly with what to run (`scripts/test` does both).

use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

/// The test site (`box_site.py`), served inside the box at `http://127.0.0.1:8000`.
pub const SITE: &str = "http://127.0.0.1:8000";

/// A box of this test's own. Box tests run one at a time (each holds [`ONE_AT_A_TIME`]): two
/// Chromiums starting at once on a loaded two-core machine time each other out.
pub struct TestBox {
    pub name: String,
    _turn: std::sync::MutexGuard<'static, ()>,
}

static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// The image the daemons under test run: `LAZYBOY_BOX_IMAGE` (which the daemon reads too),
/// else `lazyboy/box:latest`.
pub fn image() -> String {
    std::env::var("LAZYBOY_BOX_IMAGE")
        .ok()
        .filter(|v| !v.trim().is_empty())
        .unwrap_or_else(|| "lazyboy/box:latest".to_owned())
}

/// Fails the test unless an engine answers and the image is built.
pub fn require_docker() {
    let info = Command::new("docker")
        .arg("info")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
    assert!(
        info.is_ok_and(|s| s.success()),
        "no Docker engine answers: run scripts/ensure-docker (as root) or start Docker; the \
         box tests need a real engine and never skip"
    );
    let image = image();
    let found = Command::new("docker")
        .args(["image", "inspect", &image])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
    assert!(
        found.is_ok_and(|s| s.success()),
        "the image {image} is missing: run box/build.sh (scripts/test does)"
    );
}

impl Default for TestBox {
    fn default() -> TestBox {
        TestBox::new()
    }
}

impl TestBox {
    pub fn new() -> TestBox {
        static N: AtomicU32 = AtomicU32::new(0);
        require_docker();
        let turn = ONE_AT_A_TIME
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let name = format!(
            "lbt-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::SeqCst)
        );
        TestBox { name, _turn: turn }
    }

    /// The daemon's environment for this box.
    pub fn env(&self) -> Vec<(&'static str, String)> {
        vec![("LAZYBOY_BOX_NAME", self.name.clone())]
    }

    /// `bash -lc script` in the box as `user`; its stdout (panics on failure).
    pub fn exec(&self, user: &str, script: &str) -> String {
        let out = Command::new("docker")
            .args(["exec", "-u", user, &self.name, "bash", "-lc", script])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "`{script}` in the box failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// `docker inspect -f FORMAT` of the container, trimmed (panics on failure).
    pub fn inspect(&self, format: &str) -> String {
        let out = Command::new("docker")
            .args(["inspect", "-f", format, &self.name])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "docker inspect {}: {}",
            self.name,
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    }

    /// What `docker port` says the container publishes on the host (empty: nothing).
    pub fn published(&self) -> String {
        let out = Command::new("docker")
            .args(["port", &self.name])
            .output()
            .unwrap();
        assert!(out.status.success(), "docker port {}", self.name);
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    }

    /// Whether the container runs.
    pub fn running(&self) -> bool {
        let out = Command::new("docker")
            .args(["inspect", "-f", "{{.State.Running}}", &self.name])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).trim() == "true"
    }

    /// Starts the test site in the (running) box and waits until it answers.
    pub async fn serve(&self) {
        let site = include_str!("box_site.py");
        let mut put = Command::new("docker")
            .args([
                "exec",
                "-i",
                "-u",
                "box",
                &self.name,
                "sh",
                "-c",
                "cat > /tmp/site.py",
            ])
            .stdin(Stdio::piped())
            .spawn()
            .unwrap();
        use std::io::Write;
        put.stdin
            .take()
            .unwrap()
            .write_all(site.as_bytes())
            .unwrap();
        assert!(put.wait().unwrap().success());
        let started = Command::new("docker")
            .args([
                "exec",
                "-d",
                "-u",
                "box",
                &self.name,
                "python3",
                "/tmp/site.py",
            ])
            .status()
            .unwrap();
        assert!(started.success());
        let name = self.name.clone();
        crate::wait_for(Duration::from_secs(20), "the test site in the box", || {
            let name = name.clone();
            async move {
                let ok = tokio::task::spawn_blocking(move || {
                    Command::new("docker")
                        .args(["exec", &name, "curl", "-fsS", "-o", "/dev/null", SITE])
                        .status()
                        .is_ok_and(|s| s.success())
                })
                .await
                .unwrap();
                ok.then_some(())
            }
        })
        .await;
    }
}

impl Drop for TestBox {
    fn drop(&mut self) {
        let quiet = |args: &[&str]| {
            let _ = Command::new("docker")
                .args(args)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status();
        };
        quiet(&["rm", "-f", &self.name]);
        quiet(&["volume", "rm", "-f", &format!("{}-home", self.name)]);
    }
}

/// The objective a request works on (its first user message).
pub fn objective(request: &crate::mock_model::CapturedRequest) -> String {
    request
        .messages
        .iter()
        .find_map(|m| match m {
            crate::mock_model::SeenMessage::User { text } => Some(text.clone()),
            _ => None,
        })
        .unwrap_or_default()
}

/// How many replies the model already gave in this conversation.
pub fn rounds(request: &crate::mock_model::CapturedRequest) -> usize {
    request
        .messages
        .iter()
        .filter(|m| matches!(m, crate::mock_model::SeenMessage::Assistant { .. }))
        .count()
}

/// Queues `times` replies, each chosen by `f` from the request it answers (for tasks that
/// talk to the same model at once).
pub fn route(
    mock: &crate::mock_model::MockModel,
    times: usize,
    f: impl Fn(&crate::mock_model::CapturedRequest) -> crate::mock_model::Reply
    + Send
    + Sync
    + Clone
    + 'static,
) {
    for _ in 0..times {
        mock.push_fn(f.clone());
    }
}

/// A daemon on `mock` (speaking `wire`) that runs `test_box`.
pub async fn daemon(
    mock: &crate::mock_model::MockModel,
    wire: &str,
    test_box: &TestBox,
) -> crate::TestDaemon {
    let env = test_box.env();
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    crate::TestDaemon::start_with_model(mock, wire, &env).await
}

/// The result of call `call` in a task's events: its status and output.
pub fn result_of(
    events: &[lazyboy_protocol::EventBody],
    call: &str,
) -> (lazyboy_protocol::ToolStatus, String) {
    events
        .iter()
        .find_map(|e| match e {
            lazyboy_protocol::EventBody::ToolResult {
                call_id,
                status,
                output,
                ..
            } if call_id == call => Some((*status, output.clone())),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no result for {call} in {events:#?}"))
}

/// `POST /api/box/start` on `daemon`, then the test site.
pub async fn start_with_site(daemon: &crate::TestDaemon, test_box: &TestBox) {
    let response = daemon
        .http
        .post(daemon.url("/api/box/start"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200, "{}", response.text().await.unwrap());
    test_box.serve().await;
}

/// Waits (up to 3 minutes: a loaded two-core machine restarts Chromium slowly) until `task`
/// has finished; returns it.
pub async fn wait_finished(daemon: &crate::TestDaemon, task: &str) -> lazyboy_protocol::Task {
    let client = daemon.client();
    let path = format!("/api/tasks/{task}");
    let wait = crate::wait_for(Duration::from_secs(3600), "the box task to finish", || {
        let client = client.clone();
        let path = path.clone();
        async move {
            let task: lazyboy_protocol::Task = client.get(&path).await.ok()?;
            task.verdict.is_some().then_some(task)
        }
    });
    match tokio::time::timeout(Duration::from_secs(180), wait).await {
        Ok(task) => task,
        Err(_) => {
            // What the tasks did, for the failure message.
            for event in crate::all_events(daemon, 0).await {
                if !matches!(event.kind.as_str(), "assistant_delta" | "heartbeat") {
                    eprintln!(
                        "{} {:?} {} {}",
                        event.seq, event.task, event.kind, event.data
                    );
                }
            }
            let log = crate::stderr_of(daemon.home());
            let tail: Vec<&str> = log.lines().rev().take(60).collect();
            for line in tail.into_iter().rev() {
                eprintln!("{line}");
            }
            panic!("timed out after 180 s waiting for {task} to finish");
        }
    }
}
