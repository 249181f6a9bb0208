//! Authentication, attacked (issue 21: findings 1 to 4, 15 and the lower ones). Every caller
//! of every listener must hold the home's credential; nothing is decided by where a
//! connection seems to come from. Each test is the attack itself:
//! - callers (this file): a confined agent's command, connecting every way that once got
//!   around the `/proc` walk (a thread with its own fd table, a non-dumpable process, a
//!   socket connection borrowed from an exiting child behind a queue); the same attacks from
//!   a process of the person's user outside any sandbox that simply lacks the token; a
//!   `setsid` survivor after the daemon restarted; another local user.
//! - `browser.rs`: login links, a page on another loopback port, framing, the LAN cookie.
//! - `reach.rs`: `web_fetch` never reaches the daemon; pages are bounded.
//! - `servers.rs`: the page server and the TLS daemon both use.
//!
//! Needs python3 and curl (scripts/test installs curl), and root for the other-user test.

mod browser;
mod reach;
mod servers;

use std::path::{Path, PathBuf};
use std::time::Duration;

use lazyboy_protocol::{Task, TaskState, ToolStatus};
use lazyboy_tests::mock_model::{MockModel, Reply};
use lazyboy_tests::{TestDaemon, add_agent, create_task, output_of, task_events, wait_for};
use serde_json::{Value, json};

fn attacker_script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/api_attacker.py")
}

fn port(daemon: &TestDaemon) -> u16 {
    daemon
        .health
        .url
        .trim_end_matches('/')
        .rsplit(':')
        .next()
        .unwrap()
        .parse()
        .unwrap()
}

async fn wait_state(daemon: &TestDaemon, id: &str, state: TaskState) -> Task {
    wait_for(Duration::from_secs(30), &format!("{id} {state:?}"), || {
        let client = daemon.client();
        let path = format!("/api/tasks/{id}");
        async move {
            let task: Task = client.get(&path).await.ok()?;
            (task.state == state).then_some(task)
        }
    })
    .await
}

/// The output of call `call` in `task`.
async fn output(daemon: &TestDaemon, task: &str, call: &str) -> String {
    task_events(daemon, task)
        .await
        .into_iter()
        .find_map(|e| match e {
            lazyboy_protocol::EventBody::ToolResult {
                call_id,
                status,
                output,
                ..
            } if call_id == call => {
                assert_ne!(status, ToolStatus::Unknown, "{output}");
                Some(output)
            }
            _ => None,
        })
        .unwrap_or_else(|| panic!("no result for {call}"))
}

/// Whether an agent named `name` exists.
async fn agent_exists(daemon: &TestDaemon, name: &str) -> bool {
    let response = daemon
        .http
        .get(daemon.url(&format!("/api/agents/{name}")))
        .send()
        .await
        .unwrap();
    match response.status().as_u16() {
        200 => true,
        404 => false,
        other => panic!("GET /api/agents/{name}: {other}"),
    }
}

/// The attacker's JSON report: every attempt was answered 401 or could not be made at all.
fn assert_all_refused(report: &str, token: &str) -> Value {
    assert!(!report.contains(token), "the token leaked: {report}");
    let line = report
        .lines()
        .rev()
        .find(|l| l.starts_with("{\"unshared\""))
        .unwrap_or_else(|| panic!("no report in {report}"));
    let report: Value = serde_json::from_str(line).unwrap();
    for attack in ["unshared", "nondumpable", "borrowed"] {
        let answer = report[attack].as_str().unwrap_or_default();
        assert!(
            answer.starts_with("HTTP/1.1 401") || answer.starts_with("could not connect"),
            "{attack} got through: {answer}"
        );
    }
    report
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_confined_agents_commands_cannot_use_the_api_however_they_connect() {
    let mock = MockModel::start().await;
    let daemon = TestDaemon::start_with_model(&mock, "openai", &[]).await;
    let socket = daemon.home().join("lazyboyd.sock");
    let ws = tempfile::tempdir().unwrap();
    let script = format!(
        "python3 {} {} {}",
        attacker_script().display(),
        port(&daemon),
        socket.display()
    );
    // Also plain curl on both listeners, as a command or something it left behind would.
    let curls = format!(
        "curl -s -w ' HTTP%{{http_code}}' -X POST -H 'content-type: application/json' \
         -d '{{\"name\":\"escaped2\",\"sandbox\":\"off\"}}' {url}api/agents; echo; \
         curl -s -w ' HTTP%{{http_code}}' --unix-socket {sock} -X POST http://x/api/daemon/token; \
         echo",
        url = daemon.health.url,
        sock = socket.display()
    );
    mock.push(Reply::tool_call(
        "c1",
        "exec_command",
        json!({"cmd": format!("{script}; {curls}")}),
    ));
    mock.push(Reply::text("tried"));
    // A named agent: `workspace-write`, the sandbox every named agent has by default.
    add_agent(&daemon, "worker").await;
    let task = create_task(&daemon, "worker", "get out", Some(ws.path())).await;
    wait_state(&daemon, &task, TaskState::Done).await;
    let report = output(&daemon, &task, "c1").await;
    assert_all_refused(&report, &daemon.token());
    assert!(!report.contains("HTTP20"), "{report}");
    assert!(!agent_exists(&daemon, "escaped").await);
    assert!(!agent_exists(&daemon, "escaped2").await);
    daemon.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_process_of_the_persons_user_without_the_token_is_refused_everywhere() {
    // No sandbox at all: the same attacks from a process that runs as the daemon's user but
    // never read the token. Only the credential decides, not the process.
    let daemon = TestDaemon::start().await;
    let socket = daemon.home().join("lazyboyd.sock");
    let mut attack = std::process::Command::new("python3");
    attack
        .arg(attacker_script())
        .arg(port(&daemon).to_string())
        .arg(&socket);
    let out = output_of(attack).await;
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "{out:?}");
    let report = assert_all_refused(&text, &daemon.token());
    for attack in ["unshared", "nondumpable", "borrowed"] {
        let answer = report[attack].as_str().unwrap();
        assert!(answer.starts_with("HTTP/1.1 401"), "{attack}: {answer}");
    }
    // Every route of the socket wants it, the socket-only ones included.
    for (method, path) in [
        ("GET", "/api/health"),
        ("GET", "/api/agents"),
        ("POST", "/api/daemon/token"),
        ("POST", "/api/daemon/stop"),
        ("POST", "/api/auth/login"),
    ] {
        let out = std::process::Command::new("curl")
            .args(["-s", "-o", "/dev/null", "-w", "%{http_code}", "-X", method])
            .arg("--unix-socket")
            .arg(&socket)
            .arg(format!("http://localhost{path}"))
            .output()
            .expect("curl is needed (scripts/test installs it)");
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            "401",
            "{method} {path}"
        );
    }
    assert!(!agent_exists(&daemon, "escaped").await);
    // The person's own CLI, which reads the token, is served.
    let out = output_of({
        let mut c = daemon.cli();
        c.args(["team", "ls"]);
        c
    })
    .await;
    assert!(out.status.success(), "{out:?}");
    daemon.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_survivor_of_its_task_gets_nothing_after_the_daemon_restarted() {
    let mock = MockModel::start().await;
    let mut daemon = TestDaemon::start_with_model(&mock, "openai", &[]).await;
    daemon.pin_port();
    let ws = tempfile::tempdir().unwrap();
    let tries = ws.path().join("tries.txt");
    // Leaves its session and the command's marker behind, then keeps asking for an
    // unconfined agent while the daemon restarts.
    std::fs::write(
        ws.path().join("survivor.sh"),
        format!(
            "for i in $(seq 100); do\n  curl -s -o /dev/null -w '%{{http_code}}\\n' -X POST \
             -H 'content-type: application/json' -d '{{\"name\":\"survived\",\"sandbox\":\"off\"}}' \
             {url}api/agents >> {tries}\n  sleep 0.1\ndone\n",
            url = daemon.health.url,
            tries = tries.display()
        ),
    )
    .unwrap();
    mock.push(Reply::tool_call(
        "c1",
        "exec_command",
        json!({"cmd": "setsid -f env -u LAZYBOYD_COMMAND_ID bash survivor.sh; echo started"}),
    ));
    mock.push(Reply::text("left something behind"));
    add_agent(&daemon, "worker").await;
    let task = create_task(&daemon, "worker", "linger", Some(ws.path())).await;
    wait_state(&daemon, &task, TaskState::Done).await;
    let (status, _) = daemon.terminate();
    assert!(status.success());
    daemon.restart().await;
    // Whatever survived (the sandbox's containment should leave nothing) has a few seconds
    // to try the new daemon; there is no event to wait for when nothing is left.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let seen = std::fs::read_to_string(&tries).unwrap_or_default();
    assert!(
        seen.lines().all(|code| code == "401" || code == "000"),
        "a survivor got in: {seen}"
    );
    assert!(!agent_exists(&daemon, "survived").await);
    daemon.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_local_user_gets_401_on_tcp_and_cannot_open_the_socket() {
    assert!(
        nix::unistd::geteuid().is_root(),
        "this test runs a process as another user (nobody) and needs root; CI runs as root"
    );
    let daemon = TestDaemon::start().await;
    let as_nobody = |args: &[&str]| {
        let mut command = std::process::Command::new("setpriv");
        command
            .args([
                "--reuid=65534",
                "--regid=65534",
                "--clear-groups",
                "curl",
                "-s",
            ])
            .args(args);
        command
    };
    let body = r#"{"name":"foreign","sandbox":"off"}"#;
    let tcp = output_of({
        let mut c = as_nobody(&["-o", "/dev/null", "-w", "%{http_code}", "-X", "POST"]);
        c.args(["-H", "content-type: application/json", "-d", body])
            .arg(daemon.url("/api/agents"));
        c
    })
    .await;
    assert_eq!(String::from_utf8_lossy(&tcp.stdout), "401", "{tcp:?}");
    let socket = daemon.home().join("lazyboyd.sock");
    let unix = output_of({
        let mut c = as_nobody(&["-w", "%{http_code}", "--unix-socket"]);
        c.arg(&socket).arg("http://localhost/api/agents");
        c
    })
    .await;
    // curl exits 7 (could not connect): the home is 0700.
    assert_eq!(unix.status.code(), Some(7), "{unix:?}");
    assert!(!agent_exists(&daemon, "foreign").await);
    daemon.stop();
}
