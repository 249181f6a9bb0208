//! The agent loop end to end: the real daemon, the real CLI, the production provider code,
//! against the mock model over real HTTP.

use std::path::Path;
use std::time::Duration;

use lazyboy_protocol::{EventBody, Task, ToolStatus, Verdict};
use lazyboy_tests::mock_model::{MockCall, MockModel, Reply};
use lazyboy_tests::{TestDaemon, output_of, task_events, wait_for, wait_task_finished};
use serde_json::json;

mod cli;
mod environment;
mod fuses;
mod recovery;
mod refusals;

/// `lazyboy run --json OBJECTIVE --workspace DIR`; returns the exit code and stdout.
async fn run(daemon: &TestDaemon, workspace: &Path, objective: &str) -> (i32, String) {
    let mut command = daemon.cli();
    command
        .args(["--json", "run", objective, "--workspace"])
        .arg(workspace);
    let output = output_of(command).await;
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.code().is_some(),
        "killed by a signal: {:?}",
        output.status
    );
    (output.status.code().unwrap(), stdout)
}

/// The task id from `run --json` output.
fn task_of(stdout: &str) -> String {
    stdout
        .lines()
        .find_map(|line| {
            serde_json::from_str::<lazyboy_protocol::Event>(line)
                .ok()?
                .task
        })
        .expect("run printed the task's events")
}

async fn task(daemon: &TestDaemon, id: &str) -> Task {
    daemon
        .client()
        .get(&format!("/api/tasks/{id}"))
        .await
        .unwrap()
}

fn call(id: &str, name: &str, args: serde_json::Value) -> MockCall {
    MockCall::new(id, name, args)
}

fn results(events: &[EventBody]) -> Vec<(String, ToolStatus, String)> {
    events
        .iter()
        .filter_map(|e| match e {
            EventBody::ToolResult {
                call_id,
                status,
                output,
                ..
            } => Some((call_id.clone(), *status, output.clone())),
            _ => None,
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scripted_twenty_step_task_ends_done() {
    let mock = MockModel::start().await;
    let daemon = TestDaemon::start_with_model(&mock, "openai", &[]).await;
    let ws = tempfile::tempdir().unwrap();
    let steps = [
        call(
            "s1",
            "update_plan",
            json!({"plan": [
            {"step": "write the files", "status": "in_progress"},
            {"step": "check them", "status": "pending"}]}),
        ),
        call(
            "s2",
            "write_file",
            json!({"path": "notes/a.txt", "content": "alpha\nbeta\n"}),
        ),
        call("s3", "read_file", json!({"path": "notes/a.txt"})),
        call(
            "s4",
            "edit_file",
            json!({"path": "notes/a.txt", "old": "beta", "new": "gamma"}),
        ),
        call(
            "s5",
            "exec_command",
            json!({"cmd": "cat notes/a.txt > copy.txt"}),
        ),
        call("s6", "list_dir", json!({"path": "."})),
        call("s7", "search", json!({"pattern": "gamma"})),
        call(
            "s8",
            "write_file",
            json!({"path": "b.txt", "content": "one\n"}),
        ),
        call("s9", "exec_command", json!({"cmd": "echo two >> b.txt"})),
        call("s10", "exec_command", json!({"cmd": "echo three >> b.txt"})),
        call("s11", "read_file", json!({"path": "b.txt"})),
        call(
            "s12",
            "edit_file",
            json!({"path": "b.txt", "old": "two", "new": "TWO"}),
        ),
        call(
            "s13",
            "exec_command",
            json!({"cmd": "wc -l < b.txt > count.txt"}),
        ),
        call(
            "s14",
            "update_plan",
            json!({"plan": [
            {"step": "write the files", "status": "completed"},
            {"step": "check them", "status": "in_progress"}]}),
        ),
        call(
            "s15",
            "exec_command",
            json!({"cmd": "test \"$(cat count.txt)\" = 3 && echo verified"}),
        ),
        call("s16", "read_file", json!({"path": "copy.txt"})),
        call("s17", "search", json!({"pattern": "TWO", "path": "."})),
        call(
            "s18",
            "update_plan",
            json!({"plan": [
            {"step": "write the files", "status": "completed"},
            {"step": "check them", "status": "completed"}]}),
        ),
        call(
            "s19",
            "send_message",
            json!({"text": "Both files are written and checked."}),
        ),
        call(
            "s20",
            "report_done",
            json!({"summary": "wrote notes/a.txt and b.txt",
            "evidence": "count.txt says 3; copy.txt matches", "files": ["notes/a.txt", "b.txt"]}),
        ),
    ];
    for step in steps {
        mock.push(Reply::tool_calls([step]));
    }
    let (code, stdout) = run(&daemon, ws.path(), "write and check two files").await;
    assert_eq!(code, 0, "{stdout}");
    let id = task_of(&stdout);
    let finished = task(&daemon, &id).await;
    assert_eq!(finished.verdict, Some(Verdict::Done));
    assert!(
        finished
            .final_message
            .unwrap()
            .contains("wrote notes/a.txt and b.txt")
    );

    let read = |p: &str| std::fs::read_to_string(ws.path().join(p)).unwrap();
    assert_eq!(read("notes/a.txt"), "alpha\ngamma\n");
    assert_eq!(read("copy.txt"), "alpha\ngamma\n");
    assert_eq!(read("b.txt"), "one\nTWO\nthree\n");
    assert_eq!(read("count.txt").trim(), "3");

    let events = task_events(&daemon, &id).await;
    let results = results(&events);
    assert_eq!(results.len(), 20, "every call has exactly one result");
    assert!(
        results
            .iter()
            .all(|(_, status, _)| *status == ToolStatus::Ok),
        "{results:#?}"
    );
    assert_eq!(mock.request_count(), 20);
    // The model saw the runtime context: the plan, in the system prompt.
    let last = mock.last_request().unwrap();
    assert!(
        last.system.contains("[x] write the files"),
        "{}",
        last.system
    );
    mock.assert_clean();
    daemon.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn anthropic_wire_runs_the_same_loop() {
    let mock = MockModel::start().await;
    let daemon = TestDaemon::start_with_model(&mock, "anthropic", &[]).await;
    let ws = tempfile::tempdir().unwrap();
    mock.push(
        Reply::tool_calls([
            call("a1", "write_file", json!({"path": "x.txt", "content": "x"})),
            call("a2", "read_file", json!({"path": "x.txt"})),
        ])
        .with_text("Writing, then reading."),
    );
    mock.push(Reply::tool_call(
        "a3",
        "send_message",
        json!({"text": "x.txt holds x"}),
    ));
    mock.push(Reply::text("That is all."));
    let (code, stdout) = run(&daemon, ws.path(), "write x").await;
    assert_eq!(code, 0, "{stdout}");
    let finished = task(&daemon, &task_of(&stdout)).await;
    assert_eq!(finished.verdict, Some(Verdict::Answer));
    assert_eq!(finished.final_message.as_deref(), Some("x.txt holds x"));
    assert_eq!(
        mock.last_request()
            .unwrap()
            .tool_result_for("a2")
            .map(|r| r.contains("x")),
        Some(true)
    );
    mock.assert_clean();
    daemon.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn verdicts_and_exit_codes() {
    let mock = MockModel::start().await;
    let daemon = TestDaemon::start_with_model(&mock, "openai", &[]).await;
    let ws = tempfile::tempdir().unwrap();

    // answer: a reply without tool calls.
    mock.push(Reply::text("The answer is 42."));
    let (code, stdout) = run(&daemon, ws.path(), "what is six times seven?").await;
    assert_eq!(code, 0);
    let t = task(&daemon, &task_of(&stdout)).await;
    assert_eq!(
        (t.verdict, t.final_message.as_deref()),
        (Some(Verdict::Answer), Some("The answer is 42."))
    );

    // blocked: report_blocked.
    mock.push(Reply::tool_call(
        "b1",
        "report_blocked",
        json!({"reason": "the site needs a login", "alternatives": ["log in for me"]}),
    ));
    let (code, stdout) = run(&daemon, ws.path(), "buy the thing").await;
    assert_eq!(code, 1);
    let t = task(&daemon, &task_of(&stdout)).await;
    assert_eq!(t.verdict, Some(Verdict::Blocked));
    assert!(t.final_message.unwrap().contains("needs a login"));

    // failed: the provider refuses (a 400 for an over-long context) — not retried.
    let before = mock.request_count();
    mock.push(Reply::json_error(
        400,
        "This model's maximum context length is 8192 tokens",
    ));
    let (code, stdout) = run(&daemon, ws.path(), "summarize the internet").await;
    assert_eq!(code, 1);
    let t = task(&daemon, &task_of(&stdout)).await;
    assert_eq!(t.verdict, Some(Verdict::Failed));
    assert!(t.final_message.unwrap().contains("maximum context length"));
    assert_eq!(mock.request_count(), before + 1, "a 400 is not retried");
    mock.assert_clean();
    daemon.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn budget_exhausted_after_the_round_limit() {
    let mock = MockModel::start().await;
    let daemon =
        TestDaemon::start_with_model(&mock, "openai", &[("LAZYBOY_MAX_ROUNDS_TOTAL", "3")]).await;
    let ws = tempfile::tempdir().unwrap();
    for i in 0..5 {
        mock.push(Reply::tool_call(format!("r{i}"), "list_dir", json!({})));
    }
    let (code, stdout) = run(&daemon, ws.path(), "look around forever").await;
    assert_eq!(code, 1);
    let t = task(&daemon, &task_of(&stdout)).await;
    assert_eq!(t.verdict, Some(Verdict::BudgetExhausted));
    assert_eq!(mock.request_count(), 3);
    daemon.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_model_configured_fails_at_once_with_a_hint() {
    let daemon = TestDaemon::start().await;
    let ws = tempfile::tempdir().unwrap();
    let (code, stdout) = run(&daemon, ws.path(), "anything").await;
    assert_eq!(code, 1);
    let t = task(&daemon, &task_of(&stdout)).await;
    assert_eq!(t.verdict, Some(Verdict::Failed));
    assert!(t.final_message.unwrap().contains("LAZYBOY_BASE_URL"));
    daemon.stop();
}
