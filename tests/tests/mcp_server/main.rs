//! The team as MCP tools (issue 19), driven by a client nobody here wrote: the official
//! Python SDK (`mcp` on PyPI, in `tests/.mcp/venv`, which `scripts/mcp-servers` installs),
//! over stdio (`lazyboy mcp serve`, a relay to `/mcp` over the socket) and over streamable
//! HTTP (`/mcp` on TCP with the bearer token), at protocol versions 2025-06-18, 2025-11-25
//! and 2026-07-28 (the SDK's default probes `server/discover` and falls back).
//! - this file: the whole delegation (ask with a wait, a question reported by `wait_task`
//!   and answered, files read as resources byte for byte, a stop), and a `kill -9` of the
//!   daemon while the stdio client waits;
//! - `bad_input.rs`: user mistakes and garbage on both transports;
//! - `boundaries.rs`: `--agents` and `[mcp_server] agents`, an agent's command calling
//!   `/mcp`, a cancelled wait;
//! - `config.rs`: `--help` and `--print-config`, used as pasted.

mod bad_input;
mod boundaries;
mod config;

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use base64::Engine;
use lazyboy_protocol::TaskState;
use lazyboy_tests::mcp_servers::{fixture, python};
use lazyboy_tests::mock_model::{MockCall, MockModel, Reply};
use lazyboy_tests::{TestDaemon, add_agent, bin, create_task, wait_task_finished};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};

/// The Python client's command: `transport` "stdio" or "http", `mode` as the SDK takes it.
fn sdk(
    daemon: &TestDaemon,
    transport: &str,
    mode: &str,
    scenario: &str,
    rest: &[&str],
) -> tokio::process::Command {
    let mut command = tokio::process::Command::new(python());
    command.arg(fixture("mcp_team_client.py")).arg(transport);
    if transport == "stdio" {
        command.arg(bin("lazyboy")).arg(daemon.home());
    } else {
        command.arg(daemon.url("/mcp")).arg(daemon.token());
    }
    command
        .arg(mode)
        .arg(scenario)
        .args(rest)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    command
}

/// Runs the client to its end; its steps, by name (a name used twice keeps every line).
async fn run_sdk(command: tokio::process::Command) -> Vec<Value> {
    let mut command = command;
    let out = tokio::time::timeout(Duration::from_secs(240), command.output())
        .await
        .expect("the Python client finished within 240 s")
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "the Python client failed: {}\nstdout:\n{stdout}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let steps: Vec<Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    assert_eq!(steps.last().unwrap()["step"], "end", "{stdout}");
    steps
}

/// The steps named `name`, in order.
fn steps<'a>(all: &'a [Value], name: &str) -> Vec<&'a Value> {
    all.iter().filter(|s| s["step"] == name).collect()
}

/// The mock model's part of the main scenario, in the order its requests come.
fn script_main(mock: &MockModel) {
    mock.push(Reply::text("the report is ready"));
    // Delayed, so the client is already in wait_task: heartbeats become progress.
    mock.push(
        Reply::tool_call(
            "q1",
            "request_user_input",
            json!({"question": "Which format?", "options": ["pdf", "md"]}),
        )
        .delay(Duration::from_millis(2500)),
    );
    mock.push(Reply::tool_calls([
        MockCall::new(
            "w1",
            "write_file",
            json!({"path": "report.md", "content": "# Report\nin md, ü\n"}),
        ),
        MockCall::new(
            "w2",
            "exec_command",
            json!({"cmd": "head -c 5000 /dev/urandom > blob.bin"}),
        ),
    ]));
    mock.push(Reply::tool_call(
        "d1",
        "report_done",
        json!({"summary": "wrote them", "evidence": "ls", "files": ["report.md", "blob.bin"]}),
    ));
}

fn check_main(steps_: &[Value], version: &str, workspace: &Path) {
    assert_eq!(steps(steps_, "connected")[0]["version"], version);
    let names = steps(steps_, "tools")[0]["names"]
        .as_array()
        .unwrap()
        .clone();
    for tool in [
        "list_agents",
        "ask_agent",
        "task_status",
        "wait_task",
        "answer_task",
        "approve_call",
        "deny_call",
        "tell_agent",
        "stop_task",
        "task_files",
    ] {
        assert!(names.contains(&json!(tool)), "{tool} missing: {names:?}");
    }
    let agents = &steps(steps_, "list_agents")[0]["data"]["agents"];
    assert!(
        agents
            .as_array()
            .unwrap()
            .iter()
            .any(|a| a["name"] == "researcher"),
        "{agents}"
    );
    let asks = steps(steps_, "ask_agent");
    assert_eq!(asks[0]["error"], false, "{}", asks[0]);
    assert_eq!(asks[0]["data"]["state"], "done", "{}", asks[0]);
    assert_eq!(asks[0]["data"]["final_message"], "the report is ready");
    assert!(
        asks[0]["text"]
            .as_str()
            .unwrap()
            .contains("the report is ready")
    );
    let waits = steps(steps_, "wait_task");
    let question = &waits[0]["data"];
    assert_eq!(question["state"], "waiting_for_human", "{}", waits[0]);
    assert_eq!(question["question"]["text"], "Which format?");
    assert_eq!(question["question"]["options"], json!(["pdf", "md"]));
    let progress = steps(steps_, "progress")[0]["messages"]
        .as_array()
        .unwrap()
        .clone();
    assert!(
        progress
            .iter()
            .any(|m| m.as_str().unwrap_or("").contains("waiting for the model")),
        "no progress named the model's wait: {progress:?}"
    );
    assert_eq!(steps(steps_, "answer_task")[0]["error"], false);
    assert_eq!(waits[1]["data"]["state"], "done", "{}", waits[1]);
    let last = waits[1]["data"]["final_message"].as_str().unwrap();
    assert!(last.starts_with("wrote them"), "{last}");
    let files = steps(steps_, "task_files")[0]["data"]["files"]
        .as_array()
        .unwrap()
        .clone();
    assert_eq!(files.len(), 2, "{files:?}");
    let reads = steps(steps_, "read");
    let report = reads.iter().find(|r| r["path"] == "report.md").unwrap();
    assert_eq!(
        report["text"].as_str().unwrap().as_bytes(),
        std::fs::read(workspace.join("report.md")).unwrap()
    );
    let blob = reads.iter().find(|r| r["path"] == "blob.bin").unwrap();
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(blob["blob"].as_str().unwrap())
        .unwrap();
    assert_eq!(bytes, std::fs::read(workspace.join("blob.bin")).unwrap());
    assert_eq!(bytes.len(), 5000);
    assert_eq!(steps(steps_, "stop_task")[0]["data"]["state"], "cancelled");
    assert_eq!(
        steps(steps_, "task_status")[0]["data"]["state"],
        "cancelled"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_python_sdk_delegates_asks_answers_fetches_and_stops_over_stdio_and_http() {
    let mock = MockModel::start().await;
    let daemon = TestDaemon::start_with_model(&mock, "openai", &[]).await;
    add_agent(&daemon, "researcher").await;
    let workspace = daemon.home().join("workspaces/researcher");
    // The job that gets stopped: a model that takes its time, whether or not the task got to
    // ask it before the stop.
    mock.set_fallback(Reply::text("never said").delay(Duration::from_secs(60)));
    for (transport, mode, version) in [
        ("stdio", "legacy", "2025-11-25"),
        ("http", "2025-06-18", "2025-06-18"),
        ("http", "auto", "2026-07-28"),
        ("stdio", "auto", "2026-07-28"),
    ] {
        script_main(&mock);
        let all = run_sdk(sdk(&daemon, transport, mode, "main", &[])).await;
        check_main(&all, version, &workspace);
        // Every scripted reply was used, in order, by this run.
        assert_eq!(mock.pending(), 0, "{transport} {mode}");
    }
    mock.assert_clean();
    daemon.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stdio_client_waiting_through_a_kill_9_gets_the_tasks_real_outcome() {
    let mock = MockModel::start().await;
    let mut daemon = TestDaemon::start_with_model(&mock, "openai", &[]).await;
    add_agent(&daemon, "researcher").await;
    // The first answer never arrives (the daemon dies waiting); the resumed task gets the second.
    mock.push(Reply::text("lost with the daemon").delay(Duration::from_secs(30)));
    mock.push(Reply::text("finished after the restart"));
    let task = create_task(&daemon, "researcher", "a long job", None).await;
    mock.wait_for_requests(1).await;
    let mut client = sdk(&daemon, "stdio", "legacy", "wait", &[&task])
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(client.stdout.take().unwrap()).lines();
    let connected = lines.next_line().await.unwrap().unwrap();
    assert!(connected.contains("connected"), "{connected}");
    // A progress notification (the task's heartbeats) means the wait is open on the daemon.
    let first = tokio::time::timeout(Duration::from_secs(30), lines.next_line())
        .await
        .expect("a progress notification within 30 s")
        .unwrap()
        .unwrap();
    assert!(first.contains("\"progress\""), "{first}");
    daemon.kill9();
    daemon.restart().await;
    let mut rest = Vec::new();
    while let Some(line) = tokio::time::timeout(Duration::from_secs(120), lines.next_line())
        .await
        .expect("the client's wait ended within 120 s")
        .unwrap()
    {
        rest.push(serde_json::from_str::<Value>(&line).unwrap());
    }
    let status = client.wait().await.unwrap();
    let stderr = {
        let mut text = String::new();
        if let Some(mut err) = client.stderr.take() {
            use tokio::io::AsyncReadExt;
            err.read_to_string(&mut text).await.unwrap();
        }
        text
    };
    assert!(status.success(), "{status}: {rest:?}\n{stderr}");
    let wait = steps(&rest, "wait_task")[0];
    assert_eq!(wait["error"], false, "{wait}");
    assert_eq!(wait["data"]["state"], "done", "{wait}");
    assert_eq!(wait["data"]["final_message"], "finished after the restart");
    assert_eq!(steps(&rest, "list_agents")[0]["error"], false);
    // One task, done once: nothing lost, nothing queued again.
    let tasks: lazyboy_protocol::TaskList = daemon.client().get("/api/tasks").await.unwrap();
    assert_eq!(tasks.tasks.len(), 1, "{:?}", tasks.tasks);
    assert_eq!(
        wait_task_finished(&daemon, &task).await.state,
        TaskState::Done
    );
    daemon.stop();
}
