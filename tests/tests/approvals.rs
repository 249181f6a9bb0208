//! Approvals end to end: with `approve = ["command"]` an agent's command shows as a question
//! of kind approval (what exactly will run); denied, the model is told why and a counter file
//! proves it never ran; approved, it runs once; the calls after it in the same reply run in
//! order once the person has decided; an allow rule pre-approves; "approve the same for the
//! rest of this task" does; and an open approval survives `kill -9` of the daemon.

use std::path::Path;
use std::time::Duration;

use lazyboy_protocol::{Approval, EventBody, Task, TaskState, ToolStatus, Verdict};
use lazyboy_tests::mock_model::{MockCall, MockModel, Reply};
use lazyboy_tests::{
    TestDaemon, create_task, output_of, task_events, wait_for, wait_task_finished,
};
use serde_json::json;

async fn careful(daemon: &TestDaemon, allow: &[&str]) {
    let response = daemon
        .http
        .post(daemon.url("/api/agents"))
        .json(&json!({"name": "careful", "approve": ["command"], "allow": allow}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 201, "{}", response.text().await.unwrap());
}

/// Waits for the `n`th approval question of the task (1-based) and the task waiting on it.
async fn approval(daemon: &TestDaemon, task: &str, n: usize) -> (String, Approval) {
    wait_for(Duration::from_secs(30), "an approval question", || {
        let client = daemon.client();
        let task = task.to_owned();
        async move {
            let t: Task = client.get(&format!("/api/tasks/{task}")).await.ok()?;
            if t.state != TaskState::WaitingForHuman {
                return None;
            }
            task_events(daemon, &task)
                .await
                .into_iter()
                .filter_map(|e| match e {
                    EventBody::Question {
                        call_id,
                        approval: Some(a),
                        ..
                    } => Some((call_id, *a)),
                    _ => None,
                })
                .nth(n - 1)
        }
    })
    .await
}

fn result_of(events: &[EventBody], call: &str) -> Option<(ToolStatus, String)> {
    events.iter().find_map(|e| match e {
        EventBody::ToolResult {
            call_id,
            status,
            output,
            ..
        } if call_id == call => Some((*status, output.clone())),
        _ => None,
    })
}

fn counter(ws: &Path) -> String {
    std::fs::read_to_string(ws.join("counter.txt")).unwrap_or_default()
}

async fn cli(daemon: &TestDaemon, args: &[&str]) {
    let mut command = daemon.cli();
    command.args(args);
    let out = output_of(command).await;
    assert!(out.status.success(), "{args:?}: {out:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deny_tells_the_model_and_never_runs_approve_runs_once_and_the_batch_goes_on_in_order() {
    let mock = MockModel::start().await;
    let daemon = TestDaemon::start_with_model(&mock, "openai", &[]).await;
    careful(&daemon, &["cat counter.txt"]).await;
    let ws = tempfile::tempdir().unwrap();
    // Each reply: a command that needs approval, then one the allow list pre-approves.
    mock.push(Reply::tool_calls([
        MockCall::new("a", "exec_command", json!({"cmd": "echo a >> counter.txt"})),
        MockCall::new("b", "exec_command", json!({"cmd": "cat counter.txt"})),
    ]));
    mock.push(Reply::tool_calls([
        MockCall::new("c", "exec_command", json!({"cmd": "echo c >> counter.txt"})),
        MockCall::new("d", "exec_command", json!({"cmd": "cat counter.txt"})),
    ]));
    mock.push(Reply::text("counted"));
    let id = create_task(&daemon, "careful", "count", Some(ws.path())).await;

    let (call, shown) = approval(&daemon, &id, 1).await;
    assert_eq!(call, "a");
    assert_eq!(shown.command.as_deref(), Some("echo a >> counter.txt"));
    assert_eq!(shown.workdir.as_deref(), Some("."));
    let events = task_events(&daemon, &id).await;
    assert!(
        result_of(&events, "b").is_none(),
        "the later call waits too"
    );
    cli(&daemon, &["deny", &id, "not in this repo"]).await;

    let (call, _) = approval(&daemon, &id, 2).await;
    assert_eq!(call, "c");
    let events = task_events(&daemon, &id).await;
    assert_eq!(
        result_of(&events, "a"),
        Some((
            ToolStatus::Error,
            "denied by the person: not in this repo".into()
        ))
    );
    let (_, after_denial) = result_of(&events, "b").unwrap();
    assert!(after_denial.contains("No such file"), "{after_denial}");
    assert_eq!(counter(ws.path()), "", "the denied command ran");
    cli(&daemon, &["approve", &id]).await;

    let done = wait_task_finished(&daemon, &id).await;
    assert_eq!(done.verdict, Some(Verdict::Answer));
    assert_eq!(
        counter(ws.path()),
        "c\n",
        "the approved command ran exactly once"
    );
    let events = task_events(&daemon, &id).await;
    let (_, after_approval) = result_of(&events, "d").unwrap();
    assert!(
        after_approval.contains("c\n"),
        "d ran after c: {after_approval}"
    );
    // What the model saw: the denial as a's result, in the reply's order.
    let requests = mock.requests();
    assert_eq!(
        requests[1].tool_result_for("a"),
        Some("denied by the person: not in this repo")
    );
    let decided: Vec<_> = events
        .iter()
        .filter(|e| matches!(e, EventBody::ApprovalDecided { .. }))
        .collect();
    assert_eq!(decided.len(), 2);
    mock.assert_clean();
    daemon.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn approve_for_the_rest_of_the_task_covers_the_same_command_only() {
    let mock = MockModel::start().await;
    let daemon = TestDaemon::start_with_model(&mock, "openai", &[]).await;
    careful(&daemon, &[]).await;
    let ws = tempfile::tempdir().unwrap();
    let same = json!({"cmd": "echo x >> counter.txt"});
    mock.push(Reply::tool_call("a", "exec_command", same.clone()));
    mock.push(Reply::tool_call("b", "exec_command", same));
    mock.push(Reply::tool_call(
        "c",
        "exec_command",
        json!({"cmd": "echo y >> counter.txt"}),
    ));
    mock.push(Reply::text("done"));
    let id = create_task(&daemon, "careful", "count", Some(ws.path())).await;
    approval(&daemon, &id, 1).await;
    // Through the API's answer route, as the dashboard may: option 3.
    let response = daemon
        .http
        .post(daemon.url(&format!("/api/tasks/{id}/answer")))
        .json(&json!({"option": 3}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 202, "{}", response.text().await.unwrap());
    // b is the same command: it runs without asking; c is another one: it asks.
    let (call, _) = approval(&daemon, &id, 2).await;
    assert_eq!(call, "c");
    assert_eq!(counter(ws.path()), "x\nx\n");
    // A typed reason at the `run` prompt is a denial with that reason.
    let response = daemon
        .http
        .post(daemon.url(&format!("/api/tasks/{id}/answer")))
        .json(&json!({"text": "enough x"}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 202);
    wait_task_finished(&daemon, &id).await;
    assert_eq!(counter(ws.path()), "x\nx\n");
    let events = task_events(&daemon, &id).await;
    assert_eq!(
        result_of(&events, "c").unwrap().1,
        "denied by the person: enough x"
    );
    // An ordinary question cannot be "approved" (nor picked by `lazyboy approve`).
    mock.push(Reply::tool_call(
        "q",
        "request_user_input",
        json!({"question": "which colour?", "options": ["red", "blue"]}),
    ));
    let asking = create_task(&daemon, "careful", "paint", Some(ws.path())).await;
    wait_for(Duration::from_secs(30), "the question", || {
        let client = daemon.client();
        let path = format!("/api/tasks/{asking}");
        async move {
            let t: Task = client.get(&path).await.ok()?;
            (t.state == TaskState::WaitingForHuman).then_some(())
        }
    })
    .await;
    let refused = daemon
        .http
        .post(daemon.url(&format!("/api/tasks/{asking}/approve")))
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 409);
    assert!(refused.text().await.unwrap().contains("not_an_approval"));
    cli(&daemon, &["stop", &asking]).await;
    daemon.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_open_approval_survives_kill_9_and_the_command_has_not_run() {
    let mock = MockModel::start().await;
    let mut daemon = TestDaemon::start_with_model(&mock, "openai", &[]).await;
    careful(&daemon, &[]).await;
    let ws = tempfile::tempdir().unwrap();
    mock.push(Reply::tool_call(
        "a",
        "exec_command",
        json!({"cmd": "echo ran >> counter.txt"}),
    ));
    mock.push(Reply::text("ran it"));
    let id = create_task(&daemon, "careful", "run it", Some(ws.path())).await;
    approval(&daemon, &id, 1).await;
    daemon.kill9();
    daemon.restart().await;
    let (call, _) = approval(&daemon, &id, 1).await;
    assert_eq!(call, "a");
    let events = task_events(&daemon, &id).await;
    assert!(result_of(&events, "a").is_none(), "{events:#?}");
    assert!(
        !events
            .iter()
            .any(|e| matches!(e, EventBody::ToolCall { .. })),
        "no intent was recorded: the call never started"
    );
    assert_eq!(counter(ws.path()), "");
    assert_eq!(mock.request_count(), 1, "no model request while it waits");
    // Still answerable after the restart; it runs once.
    cli(&daemon, &["approve", &id]).await;
    let done = wait_task_finished(&daemon, &id).await;
    assert_eq!(done.verdict, Some(Verdict::Answer));
    assert_eq!(counter(ws.path()), "ran\n");
    mock.assert_clean();
    daemon.stop();
}

/// At the `run` prompt: the sandbox and the approvals are stated at the start, the approval
/// shows what will run, and a typed "1" approves it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_run_prompt_states_the_boundaries_and_approves_with_a_typed_1() {
    use std::io::Write;
    use std::process::Stdio;

    let mock = MockModel::start().await;
    let daemon = TestDaemon::start_with_model(&mock, "openai", &[]).await;
    careful(&daemon, &[]).await;
    let ws = tempfile::tempdir().unwrap();
    mock.push(Reply::tool_call(
        "a",
        "exec_command",
        json!({"cmd": "echo typed >> counter.txt"}),
    ));
    mock.push(Reply::text("ran"));
    let out_path = daemon.home().join("run.out");
    let err_path = daemon.home().join("run.err");
    let mut run = lazyboy_tests::KillOnDrop(
        daemon
            .cli()
            .args(["run", "--agent", "careful", "--workspace"])
            .arg(ws.path())
            .arg("count once")
            .stdin(Stdio::piped())
            .stdout(std::fs::File::create(&out_path).unwrap())
            .stderr(std::fs::File::create(&err_path).unwrap())
            .spawn()
            .unwrap(),
    );
    let mut stdin = run.0.stdin.take().unwrap();
    let read = |path: &Path| std::fs::read_to_string(path).unwrap_or_default();
    wait_for(Duration::from_secs(20), "run to show the approval", || {
        std::future::ready(
            read(&out_path)
                .contains("3. Approve the same")
                .then_some(()),
        )
    })
    .await;
    let shown = read(&out_path);
    assert!(
        shown.contains("  command:\n    1 │ echo typed >> counter.txt\n"),
        "{shown}"
    );
    assert_eq!(counter(ws.path()), "");
    writeln!(stdin, "1").unwrap();
    let status = wait_for(Duration::from_secs(30), "run to exit", || {
        std::future::ready(run.0.try_wait().unwrap())
    })
    .await;
    assert!(status.success(), "{}\n{}", read(&out_path), read(&err_path));
    assert_eq!(counter(ws.path()), "typed\n");
    let said = read(&err_path);
    // The sandbox is said once, in doctor and the README, not on every run.
    assert!(!said.contains("sandbox"), "{said}");
    assert!(
        said.contains("(approvals: command calls wait for you"),
        "{said}"
    );
    assert!(read(&out_path).contains("✓ approved"));
    daemon.stop();
}
