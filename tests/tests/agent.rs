//! The agent loop end to end: the real daemon, the real CLI, the production provider code,
//! against the mock model over real HTTP.

use std::path::Path;
use std::time::Duration;

use lazyboy_protocol::{EventBody, Task, ToolStatus, Verdict};
use lazyboy_tests::mock_model::{MockCall, MockModel, Reply};
use lazyboy_tests::{TestDaemon, output_of, task_events, wait_for, wait_task_finished};
use serde_json::json;

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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigint_to_run_cancels_with_130() {
    let mock = MockModel::start().await;
    let daemon = TestDaemon::start_with_model(&mock, "openai", &[]).await;
    let ws = tempfile::tempdir().unwrap();
    mock.push(Reply::tool_call(
        "c1",
        "exec_command",
        json!({"cmd": "echo $$ > pid.txt; sleep 60; echo never >> late.txt"}),
    ));
    let mut command = daemon.cli();
    command
        .args(["run", "wait a minute", "--workspace"])
        .arg(ws.path());
    command.stdout(std::process::Stdio::piped());
    let mut child = lazyboy_tests::KillOnDrop(command.spawn().unwrap());
    // Wait until the command is really running, then Ctrl-C the CLI.
    let pid_file = ws.path().join("pid.txt");
    wait_for(Duration::from_secs(20), "the command to start", || {
        let text = std::fs::read_to_string(&pid_file).unwrap_or_default();
        std::future::ready(text.ends_with('\n').then_some(()))
    })
    .await;
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.0.id() as i32),
        nix::sys::signal::Signal::SIGINT,
    )
    .unwrap();
    let status = tokio::task::spawn_blocking(move || child.0.wait().unwrap())
        .await
        .unwrap();
    assert_eq!(status.code(), Some(130));
    let page: lazyboy_protocol::EventPage = daemon
        .client()
        .get("/api/events/page?after=0")
        .await
        .unwrap();
    let id = page.events.iter().find_map(|e| e.task.clone()).unwrap();
    let t = wait_task_finished(&daemon, &id).await;
    assert_eq!(t.verdict, Some(Verdict::Cancelled));
    let events = task_events(&daemon, &id).await;
    assert_eq!(
        results(&events).len(),
        1,
        "the interrupted call still got its one result"
    );
    // The command's process group is gone (it leads its own group: pgid = its pid).
    let pid: i32 = std::fs::read_to_string(ws.path().join("pid.txt"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    wait_for(
        Duration::from_secs(10),
        "the command's group to be killed",
        || {
            let gone = nix::sys::signal::killpg(nix::unistd::Pid::from_raw(pid), None).is_err();
            std::future::ready(gone.then_some(()))
        },
    )
    .await;
    assert!(
        !ws.path().join("late.txt").exists(),
        "the command was killed"
    );
    daemon.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn loop_fuses_remind_at_two_and_block_at_six() {
    let mock = MockModel::start().await;
    let daemon = TestDaemon::start_with_model(&mock, "openai", &[]).await;
    let ws = tempfile::tempdir().unwrap();
    for i in 0..10 {
        mock.push(Reply::tool_call(
            format!("f{i}"),
            "exec_command",
            json!({"cmd": "echo x >> runs.txt; echo same"}),
        ));
    }
    let (code, stdout) = run(&daemon, ws.path(), "keep trying").await;
    assert_eq!(code, 1);
    let id = task_of(&stdout);
    let t = task(&daemon, &id).await;
    assert_eq!(t.verdict, Some(Verdict::Blocked));
    let message = t.final_message.unwrap();
    assert!(message.contains("6 times"), "{message}");
    // It says what the repetition cost.
    assert!(
        message.contains("6 model rounds") && message.contains("tokens"),
        "{message}"
    );
    let runs = std::fs::read_to_string(ws.path().join("runs.txt")).unwrap();
    assert_eq!(
        runs.lines().count(),
        6,
        "stopped at the sixth identical call"
    );
    let notes: Vec<_> = task_events(&daemon, &id)
        .await
        .into_iter()
        .filter(|e| matches!(e, EventBody::RuntimeNote { .. }))
        .collect();
    assert_eq!(
        notes.len(),
        4,
        "a reminder from the second to the fifth repetition"
    );
    // The model was told, in the request after the second call.
    let requests = mock.requests();
    assert!(
        !requests[1]
            .messages
            .iter()
            .any(|m| format!("{m:?}").contains("same arguments"))
    );
    assert!(
        requests[2]
            .messages
            .iter()
            .any(|m| format!("{m:?}").contains("same arguments"))
    );
    daemon.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waits_that_bring_new_output_never_trip_a_fuse() {
    let mock = MockModel::start().await;
    let daemon = TestDaemon::start_with_model(&mock, "openai", &[]).await;
    let ws = tempfile::tempdir().unwrap();
    mock.push(Reply::tool_call(
        "start",
        "exec_command",
        // The same line every time: only "new output" keeps these waits from counting.
        json!({"cmd": "for i in $(seq 1 12); do echo tick; sleep 0.15; done", "block_until_ms": 10}),
    ));
    // Keep awaiting the same command with the same arguments until it exits.
    let id = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
    for n in 0..40 {
        let id = id.clone();
        mock.push_fn(move |request| {
            let last = request.last_tool_result().unwrap_or("");
            if let Some(found) = last.split_whitespace().find(|w| w.starts_with("cmd-")) {
                let mut id = id.lock().unwrap();
                if id.is_empty() {
                    *id = found.trim_end_matches([':', ',', '.']).to_owned();
                }
            }
            if last.contains("exit") {
                return Reply::text("finished watching");
            }
            let id = id.lock().unwrap().clone();
            Reply::tool_call(
                format!("await{n}"),
                "await_command",
                json!({"id": id, "timeout_ms": 200}),
            )
        });
    }
    let (code, stdout) = run(&daemon, ws.path(), "watch the ticker").await;
    assert_eq!(code, 0, "{stdout}");
    let task_id = task_of(&stdout);
    let events = task_events(&daemon, &task_id).await;
    let awaits = results(&events)
        .iter()
        .filter(|(id, _, _)| id.starts_with("await"))
        .count();
    assert!(awaits >= 6, "the model awaited {awaits} times");
    assert!(
        !events.iter().any(
            |e| matches!(e, EventBody::RuntimeNote { text } if text.contains("same arguments"))
        ),
        "no reminder for waits with new output"
    );
    daemon.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn report_done_is_refused_while_a_plan_step_is_open() {
    let mock = MockModel::start().await;
    let daemon = TestDaemon::start_with_model(&mock, "openai", &[]).await;
    let ws = tempfile::tempdir().unwrap();
    mock.push(Reply::tool_call(
        "p1",
        "update_plan",
        json!({"plan": [{"step": "do it", "status": "in_progress"}]}),
    ));
    mock.push(Reply::tool_call(
        "d1",
        "report_done",
        json!({"summary": "done", "evidence": "trust me"}),
    ));
    mock.push(Reply::tool_call(
        "p2",
        "update_plan",
        json!({"plan": [{"step": "do it", "status": "completed"}]}),
    ));
    mock.push(Reply::tool_call(
        "d2",
        "report_done",
        json!({"summary": "done", "evidence": "checked"}),
    ));
    let (code, stdout) = run(&daemon, ws.path(), "do it").await;
    assert_eq!(code, 0);
    let events = task_events(&daemon, &task_of(&stdout)).await;
    let all = results(&events);
    let refused = all.iter().find(|(id, _, _)| id == "d1").unwrap();
    assert_eq!(refused.1, ToolStatus::Error);
    assert!(refused.2.contains("not completed: do it"), "{}", refused.2);
    assert_eq!(
        all.iter().find(|(id, _, _)| id == "d2").unwrap().1,
        ToolStatus::Ok
    );
    // report_done with company is refused too.
    mock.push(Reply::tool_calls([
        call("x1", "list_dir", json!({})),
        call(
            "x2",
            "report_done",
            json!({"summary": "s", "evidence": "e"}),
        ),
    ]));
    mock.push(Reply::text("ok"));
    let (_, stdout) = run(&daemon, ws.path(), "again").await;
    let events = task_events(&daemon, &task_of(&stdout)).await;
    let alone = results(&events)
        .into_iter()
        .find(|(id, _, _)| id == "x2")
        .unwrap();
    assert!(alone.2.contains("must be the only call"), "{}", alone.2);
    daemon.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn path_escapes_are_refused() {
    let mock = MockModel::start().await;
    let daemon = TestDaemon::start_with_model(&mock, "openai", &[]).await;
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret.txt"), "secret").unwrap();
    let ws = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(outside.path(), ws.path().join("link")).unwrap();
    let secret = outside.path().join("secret.txt").display().to_string();
    mock.push(Reply::tool_calls([
        call("e1", "read_file", json!({"path": "../../../../etc/passwd"})),
        call("e2", "read_file", json!({"path": secret})),
        call("e3", "read_file", json!({"path": "link/secret.txt"})),
    ]));
    mock.push(Reply::tool_calls([
        call(
            "e4",
            "write_file",
            json!({"path": "link/planted.txt", "content": "x"}),
        ),
        call(
            "e5",
            "exec_command",
            json!({"cmd": "pwd", "workdir": "../"}),
        ),
    ]));
    mock.push(Reply::text("could not"));
    let (code, stdout) = run(&daemon, ws.path(), "read secrets").await;
    assert_eq!(code, 0);
    let events = task_events(&daemon, &task_of(&stdout)).await;
    for (id, status, output) in results(&events) {
        assert_eq!(status, ToolStatus::Error, "{id}: {output}");
        assert!(
            output.contains("outside the workspace") || output.contains("escapes the workspace"),
            "{id}: {output}"
        );
        assert!(
            !output.contains("secret\n") && !output.contains("root:"),
            "{id} leaked: {output}"
        );
    }
    assert!(!outside.path().join("planted.txt").exists());
    daemon.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_tool_arguments_are_told_to_the_model() {
    let mock = MockModel::start().await;
    let daemon = TestDaemon::start_with_model(&mock, "openai", &[]).await;
    let ws = tempfile::tempdir().unwrap();
    mock.push(Reply::raw_tool_call(
        "j1",
        "write_file",
        "{\"path\": \"a.txt\", \"content\": ",
    ));
    mock.push(Reply::tool_call("j2", "write_file", json!({"path": 5})));
    mock.push(Reply::tool_call("j3", "no_such_tool", json!({})));
    mock.push(Reply::text("gave up"));
    let (code, _) = run(&daemon, ws.path(), "write a file").await;
    assert_eq!(code, 0);
    let requests = mock.requests();
    assert!(
        requests[1]
            .tool_result_for("j1")
            .unwrap()
            .contains("not valid JSON")
    );
    assert!(requests[2].tool_result_for("j2").unwrap().contains("path"));
    assert!(
        requests[3]
            .tool_result_for("j3")
            .unwrap()
            .contains("no tool named")
    );
    mock.assert_clean();
    daemon.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broken_provider_ends_the_task_failed_with_its_message() {
    let mock = MockModel::start().await;
    let daemon = TestDaemon::start_with_model(&mock, "openai", &[]).await;
    let ws = tempfile::tempdir().unwrap();
    for _ in 0..3 {
        mock.push(Reply::error(500, "upstream exploded"));
    }
    let (code, stdout) = run(&daemon, ws.path(), "anything").await;
    assert_eq!(code, 1);
    let t = task(&daemon, &task_of(&stdout)).await;
    assert_eq!(t.verdict, Some(Verdict::Failed));
    assert!(t.final_message.unwrap().contains("upstream exploded"));
    assert_eq!(mock.request_count(), 3, "retried up to max_attempts");
    // A stream cut off mid-way, every time: retried, then failed with a clear message.
    for _ in 0..3 {
        mock.push(Reply::text("partial answer that never ends").cut_off());
    }
    let (code, stdout) = run(&daemon, ws.path(), "again").await;
    assert_eq!(code, 1);
    let id = task_of(&stdout);
    let t = task(&daemon, &id).await;
    assert_eq!(t.verdict, Some(Verdict::Failed));
    assert!(
        t.final_message.as_deref().unwrap().contains("broke off"),
        "{t:?}"
    );
    let events = task_events(&daemon, &id).await;
    assert!(matches!(
        events.last(),
        Some(EventBody::TaskFinished {
            verdict: Verdict::Failed,
            ..
        })
    ));
    // Odd but valid streams: id and name repeated in every chunk, explicit nulls, and no
    // [DONE] at the end. The call is assembled once and the task completes.
    mock.push(
        Reply::tool_call(
            "q1",
            "write_file",
            json!({"path": "q.txt", "content": "quirky"}),
        )
        .repeat_id_and_name()
        .explicit_nulls(),
    );
    mock.push(Reply::text("all good").no_terminator());
    let (code, stdout) = run(&daemon, ws.path(), "quirks").await;
    assert_eq!(code, 0, "{stdout}");
    let events = task_events(&daemon, &task_of(&stdout)).await;
    let calls: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            EventBody::AssistantReply { tool_calls, .. } => Some(tool_calls.clone()),
            _ => None,
        })
        .flatten()
        .collect();
    assert_eq!(calls.len(), 1);
    assert_eq!(
        (calls[0].id.as_str(), calls[0].name.as_str()),
        ("q1", "write_file")
    );
    assert_eq!(
        std::fs::read_to_string(ws.path().join("q.txt")).unwrap(),
        "quirky"
    );
    daemon
        .client()
        .get::<lazyboy_protocol::Health>("/api/health")
        .await
        .unwrap();
    daemon.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_during_a_command_gives_unknown_and_never_reruns_it() {
    let mock = MockModel::start().await;
    let mut daemon = TestDaemon::start_with_model(&mock, "openai", &[]).await;
    let ws = tempfile::tempdir().unwrap();
    mock.push(Reply::tool_call(
        "k1",
        "exec_command",
        json!({"cmd": "echo ran >> counter.txt; sleep 20", "block_until_ms": 60000}),
    ));
    mock.push_fn(|request| {
        let result = request.tool_result_for("k1").unwrap_or("").to_owned();
        Reply::tool_call(
            "k2",
            "send_message",
            json!({"text": format!("after recovery I saw: {result}")}),
        )
    });
    mock.push(Reply::text("ok"));
    let task = lazyboy_tests::create_task(&daemon, "default", "count once", Some(ws.path())).await;
    let counter = ws.path().join("counter.txt");
    wait_for(Duration::from_secs(20), "the command to run", || {
        let counter = counter.clone();
        async move { counter.exists().then_some(()) }
    })
    .await;
    daemon.kill9();
    daemon.restart().await;
    let t = wait_task_finished(&daemon, &task).await;
    assert_eq!(t.verdict, Some(Verdict::Answer));
    let events = task_events(&daemon, &task).await;
    let results = results(&events);
    assert_eq!(
        results.iter().filter(|r| r.0 == "k1").count(),
        1,
        "exactly one result for the call"
    );
    assert_eq!(results[0].1, ToolStatus::Unknown);
    let message = t.final_message.unwrap();
    assert!(message.contains("outcome unknown"), "{message}");
    assert_eq!(
        std::fs::read_to_string(&counter).unwrap(),
        "ran\n",
        "never run twice"
    );
    assert!(events.iter().any(|e| matches!(
        e,
        EventBody::TaskState {
            state: lazyboy_protocol::TaskState::Recovering
        }
    )));
    mock.assert_clean();
    daemon.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_ending_while_its_command_runs_waits_and_is_revived_once() {
    let mock = MockModel::start().await;
    let daemon = TestDaemon::start_with_model(&mock, "openai", &[]).await;
    let ws = tempfile::tempdir().unwrap();
    mock.push(Reply::tool_call(
        "o1",
        "exec_command",
        json!({"cmd": "sleep 1; echo late result", "block_until_ms": 20}),
    ));
    mock.push(Reply::tool_call(
        "o2",
        "send_message",
        json!({"text": "started; it will take a while"}),
    ));
    // The turn ends while the command runs: no verdict yet, and no model call while it waits.
    mock.push(Reply::text("it runs on"));
    mock.push(Reply::tool_call(
        "o3",
        "send_message",
        json!({"text": "it printed: late result"}),
    ));
    mock.push(Reply::text("done"));
    let (code, stdout) = run(&daemon, ws.path(), "start it").await;
    assert_eq!(code, 0);
    let id = task_of(&stdout);
    let t = task(&daemon, &id).await;
    assert_eq!(
        (t.verdict, t.final_message.as_deref()),
        (Some(Verdict::Answer), Some("it printed: late result"))
    );
    assert_eq!(mock.request_count(), 5);
    // The fourth request is the revival: the model is told how the command ended, with its
    // output, once.
    let revival = mock.requests()[3].last_user_text().unwrap().to_owned();
    assert!(
        revival.contains("The work you were waiting for has finished")
            && revival.contains("exited with code 0")
            && revival.contains("late result"),
        "{revival}"
    );
    let events = task_events(&daemon, &id).await;
    let revivals = events
        .iter()
        .filter(|e| matches!(e, EventBody::RuntimeNote { text } if text.contains("waiting for has finished")))
        .count();
    assert_eq!(revivals, 1);
    let started = events
        .iter()
        .find_map(|e| match e {
            EventBody::CommandStarted { command_id, .. } => Some(command_id.clone()),
            _ => None,
        })
        .expect("the command was recorded as background work");
    // Its end is recorded too (by the watcher, possibly just after the revival).
    wait_for(Duration::from_secs(10), "command_ended", || {
        let daemon = &daemon;
        let id = id.clone();
        let started = started.clone();
        async move {
            task_events(daemon, &id)
                .await
                .iter()
                .any(|e| {
                    matches!(e, EventBody::CommandEnded { command_id, status } if *command_id == started && status.contains("code 0"))
                })
                .then_some(())
        }
    })
    .await;
    // A later task in the same workspace still reads the ended command by id.
    mock.push(Reply::tool_call(
        "r1",
        "await_command",
        json!({"id": started, "timeout_ms": 10000}),
    ));
    mock.push(Reply::text("read it"));
    let (code, _) = run(&daemon, ws.path(), "read it").await;
    assert_eq!(code, 0);
    let result = mock
        .last_request()
        .unwrap()
        .tool_result_for("r1")
        .unwrap()
        .to_owned();
    assert!(result.contains("exited with code 0"), "{result}");
    let log =
        std::fs::read_to_string(ws.path().join(format!(".lazyboy-output/{started}.log"))).unwrap();
    assert!(log.contains("late result"));
    mock.assert_clean();
    daemon.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn heartbeats_name_the_wait_without_calling_the_model() {
    let mock = MockModel::start().await;
    // heartbeat_secs = 1 in the test config.
    let daemon = TestDaemon::start_with_model(&mock, "openai", &[]).await;
    let ws = tempfile::tempdir().unwrap();
    mock.push(Reply::text("slow answer").delay(Duration::from_millis(2500)));
    let (code, stdout) = run(&daemon, ws.path(), "think slowly").await;
    assert_eq!(code, 0);
    let beats: Vec<(String, u64)> = task_events(&daemon, &task_of(&stdout))
        .await
        .into_iter()
        .filter_map(|e| match e {
            EventBody::Heartbeat {
                operation,
                elapsed_ms,
            } => Some((operation, elapsed_ms)),
            _ => None,
        })
        .collect();
    assert!(beats.len() >= 2, "{beats:?}");
    assert!(beats.iter().all(|(op, _)| op == "waiting for the model"));
    assert!(beats[1].1 > beats[0].1 && beats[0].1 >= 900, "{beats:?}");
    assert_eq!(mock.request_count(), 1, "heartbeats never call the model");
    daemon.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_repl_runs_a_task_per_line() {
    use std::io::Write;
    let mock = MockModel::start().await;
    let daemon = TestDaemon::start_with_model(&mock, "openai", &[]).await;
    let ws = tempfile::tempdir().unwrap();
    mock.push(Reply::tool_call(
        "r1",
        "send_message",
        json!({"text": "four"}),
    ));
    mock.push(Reply::text("ok"));
    mock.push(Reply::tool_call(
        "r2",
        "send_message",
        json!({"text": "six"}),
    ));
    mock.push(Reply::text("ok"));
    let mut command = daemon.cli();
    command
        .current_dir(ws.path())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped());
    let mut child = command.spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    writeln!(stdin, "what is 2+2").unwrap();
    // A line typed while a task runs steers it; the next task starts from an idle prompt.
    let finished = |n: usize| {
        let client = daemon.client();
        move || {
            let client = client.clone();
            async move {
                let page: lazyboy_protocol::EventPage =
                    client.get("/api/events/page?after=0").await.ok()?;
                let done = page
                    .events
                    .iter()
                    .filter(|e| e.kind == "task_finished")
                    .count();
                (done >= n).then_some(())
            }
        }
    };
    wait_for(Duration::from_secs(20), "the first task", finished(1)).await;
    writeln!(stdin, "what is 3+3").unwrap();
    wait_for(Duration::from_secs(20), "the second task", finished(2)).await;
    drop(stdin);
    let output = tokio::task::spawn_blocking(move || child.wait_with_output().unwrap())
        .await
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stdout}");
    let four = stdout.find("four").expect("first answer");
    let six = stdout.find("six").expect("second answer");
    assert!(four < six, "{stdout}");
    assert_eq!(
        mock.request_count(),
        4,
        "{:#?}",
        mock.requests()
            .iter()
            .map(|r| r.messages.clone())
            .collect::<Vec<_>>()
    );
    daemon.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_readme_environment_configures_a_model_and_keeps_the_key_secret() {
    let mock = MockModel::start().await;
    let base_url = mock.openai_base_url();
    let daemon = TestDaemon::start_with(
        "",
        &[
            ("LAZYBOY_BASE_URL", base_url.as_str()),
            ("LAZYBOY_MODEL", "some-model"),
            ("LAZYBOY_API_KEY", "sk-very-secret-123"),
        ],
    )
    .await;
    let ws = tempfile::tempdir().unwrap();
    mock.push(Reply::tool_call(
        "env1",
        "exec_command",
        json!({"cmd": "env"}),
    ));
    mock.push(Reply::text("hello from the env-configured model"));
    let (code, stdout) = run(&daemon, ws.path(), "say hello").await;
    let env = mock
        .last_request()
        .unwrap()
        .tool_result_for("env1")
        .unwrap()
        .to_owned();
    assert!(env.contains("PATH="), "{env}");
    assert!(
        !env.contains("sk-very") && !env.contains("LAZYBOY_"),
        "secrets reached a command: {env}"
    );
    assert_eq!(code, 0, "{stdout}");
    let request = mock.last_request().unwrap();
    assert_eq!(request.model, "some-model");
    assert_eq!(
        request.authorization.as_deref(),
        Some("Bearer sk-very-secret-123")
    );
    // The key reaches the provider and nothing else: not the database, not the logs.
    let files = [
        "lazyboy.db",
        "lazyboy.db-wal",
        "logs/lazyboyd.log",
        "daemon-stderr.log",
    ];
    let mut checked = 0;
    for file in files {
        let Ok(bytes) = std::fs::read(daemon.home().join(file)) else {
            continue;
        };
        checked += bytes.len();
        let text = String::from_utf8_lossy(&bytes);
        assert!(
            !text.contains("sk-very-secret-123"),
            "the key leaked into {file}"
        );
        assert!(
            !text.contains("sk-very"),
            "part of the key leaked into {file}"
        );
    }
    let log = std::fs::read_to_string(daemon.home().join("logs/lazyboyd.log")).unwrap();
    assert!(log.contains("lazyboyd ready"), "the log was read: {log}");
    assert!(
        checked > 10_000,
        "the database and logs were read ({checked} bytes)"
    );
    daemon.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fuses_inside_one_batch_keep_every_call_answered_once() {
    let mock = MockModel::start().await;
    let daemon = TestDaemon::start_with_model(&mock, "openai", &[]).await;
    let ws = tempfile::tempdir().unwrap();
    let same = || json!({"cmd": "echo x >> n.txt; echo same"});
    // Two identical calls in one reply: the reminder comes after both results.
    mock.push(Reply::tool_calls([
        call("m1", "exec_command", same()),
        call("m2", "exec_command", same()),
    ]));
    // Then six more in one reply: the sixth identical overall (m6) stops the task; the
    // rest of the batch is skipped, not left unanswered.
    mock.push(Reply::tool_calls(
        (3..=8).map(|i| call(&format!("m{i}"), "exec_command", same())),
    ));
    let (code, stdout) = run(&daemon, ws.path(), "repeat").await;
    assert_eq!(code, 1, "{stdout}");
    let events = task_events(&daemon, &task_of(&stdout)).await;
    let results = results(&events);
    let statuses: Vec<_> = results
        .iter()
        .map(|(id, status, _)| (id.as_str(), *status))
        .collect();
    assert_eq!(
        statuses,
        [
            ("m1", ToolStatus::Ok),
            ("m2", ToolStatus::Ok),
            ("m3", ToolStatus::Ok),
            ("m4", ToolStatus::Ok),
            ("m5", ToolStatus::Ok),
            ("m6", ToolStatus::Ok),
            ("m7", ToolStatus::Skipped),
            ("m8", ToolStatus::Skipped),
        ]
    );
    let runs = std::fs::read_to_string(ws.path().join("n.txt")).unwrap();
    assert_eq!(runs.lines().count(), 6);
    // The second request saw both results, then the reminder (the mock checks the order).
    let second = &mock.requests()[1];
    assert!(format!("{:?}", second.messages.last().unwrap()).contains("same arguments"));
    daemon.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn files_agents_create_get_the_persons_usual_permissions() {
    use std::os::unix::fs::PermissionsExt;
    let mock = MockModel::start().await;
    let daemon = TestDaemon::start_with_model(&mock, "openai", &[]).await;
    let ws = tempfile::tempdir().unwrap();
    mock.push(Reply::tool_calls([
        call(
            "u1",
            "write_file",
            json!({"path": "written.txt", "content": "x"}),
        ),
        call("u2", "exec_command", json!({"cmd": "touch touched.txt"})),
    ]));
    mock.push(Reply::text("ok"));
    let (code, _) = run(&daemon, ws.path(), "make files").await;
    assert_eq!(code, 0);
    // The daemon inherited this process's umask (and tightened its own to 077).
    let mask = nix::sys::stat::umask(nix::sys::stat::Mode::from_bits_truncate(0o022));
    nix::sys::stat::umask(mask);
    let expected = 0o666 & !mask.bits();
    for file in ["written.txt", "touched.txt"] {
        let mode = std::fs::metadata(ws.path().join(file))
            .unwrap()
            .permissions()
            .mode()
            & 0o777;
        assert_eq!(mode, expected, "{file}");
    }
    daemon.stop();
}
