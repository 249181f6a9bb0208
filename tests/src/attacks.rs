//! Helpers for the suites that attack the sandbox from an agent's own commands: agents with
//! given boundaries, one scripted command per task, its result, and waits on processes the
//! attack left behind.

use std::path::Path;
use std::time::Duration;

use lazyboy_protocol::{EventBody, ToolStatus};
use serde_json::{Value, json};

use crate::mock_model::{MockModel, Reply};
use crate::{TestDaemon, create_task, task_events, wait_for, wait_task_finished};

/// Creates an agent from `body` (`POST /api/agents`), asserting 201.
pub async fn add(daemon: &TestDaemon, body: Value) {
    let response = daemon
        .http
        .post(daemon.url("/api/agents"))
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 201, "{}", response.text().await.unwrap());
}

/// The result of call `call` among a task's events.
pub fn result_of(events: &[EventBody], call: &str) -> (ToolStatus, String) {
    events
        .iter()
        .find_map(|e| match e {
            EventBody::ToolResult {
                call_id,
                status,
                output,
                ..
            } => (call_id == call).then(|| (*status, output.clone())),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no result for {call}: {events:#?}"))
}

/// Hands `agent` a task in `workspace` whose model runs `cmd` once and then says it is done;
/// waits for the task to finish and returns the command's output (status aside).
pub async fn run_command(
    daemon: &TestDaemon,
    mock: &MockModel,
    agent: &str,
    workspace: &Path,
    cmd: &str,
) -> String {
    mock.push(Reply::tool_call(
        "attack",
        "exec_command",
        json!({ "cmd": cmd, "block_until_ms": 20000 }),
    ));
    mock.push(Reply::text("done"));
    let id = create_task(daemon, agent, "try it", Some(workspace)).await;
    wait_task_finished(daemon, &id).await;
    result_of(&task_events(daemon, &id).await, "attack").1
}

/// Whether process `pid` is alive and its command line contains `mark` (a pid the kernel
/// reused for something else does not count).
pub fn alive_with(pid: i32, mark: &str) -> bool {
    let Ok(cmdline) = std::fs::read(format!("/proc/{pid}/cmdline")) else {
        return false;
    };
    let state = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let zombie = state
        .rsplit_once(')')
        .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z'));
    !zombie && String::from_utf8_lossy(&cmdline).contains(mark)
}

/// Waits until `pid` (running `mark`) is gone; panics naming `when` after 10 s.
pub async fn wait_dead(pid: i32, mark: &str, when: &str) {
    wait_for(
        Duration::from_secs(10),
        &format!("process {pid} ({mark}) to be dead {when}"),
        || async move { (!alive_with(pid, mark)).then_some(()) },
    )
    .await;
}

/// Waits until `file` holds a pid (written by a process the attack started).
pub async fn read_pid(file: &Path) -> i32 {
    wait_for(
        Duration::from_secs(20),
        &format!("a pid in {}", file.display()),
        || async move { std::fs::read_to_string(file).ok()?.trim().parse().ok() },
    )
    .await
}

/// Asserts that this machine gives the test what the attack needs (root, a kernel
/// feature, a running service): never a silent skip.
pub fn require(what: &str, ok: bool) {
    assert!(
        ok,
        "this test needs {what}; it fails rather than skip (run it as CI does: as root, on a \
         kernel with Landlock ABI 6, cgroup v2 and seccomp)"
    );
}

/// Whether this process runs as root.
pub fn is_root() -> bool {
    nix::unistd::getuid().is_root()
}
