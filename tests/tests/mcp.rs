//! MCP end to end: real servers nobody here wrote (installed by `scripts/mcp-servers`), the
//! real daemon and CLI, the mock model calling their tools as an agent would.

use std::time::Duration;

use lazyboy_protocol::{
    Agent, Effect, EventBody, McpList, McpServerInfo, McpServerState, ToolStatus, Verdict,
};
use lazyboy_tests::mcp_servers::{self, toml_str};
use lazyboy_tests::mock_model::{CapturedRequest, MockCall, MockModel, Reply};
use lazyboy_tests::{
    KillOnDrop, TestDaemon, create_task, model_config, output_of, task_events, wait_for,
    wait_task_finished,
};
use serde_json::json;

/// `[mcp.servers.NAME]` for a stdio server.
fn stdio(name: &str, command: &str, args: &[&str]) -> String {
    let args: Vec<String> = args.iter().map(|a| toml_str(a)).collect();
    format!(
        "\n[mcp.servers.{name}]\ncommand = {}\nargs = [{}]\n",
        toml_str(command),
        args.join(", ")
    )
}

/// The result of call `id` in the task's events: (status, output).
fn result_of(events: &[EventBody], id: &str) -> (ToolStatus, String) {
    events
        .iter()
        .find_map(|e| match e {
            EventBody::ToolResult {
                call_id,
                status,
                output,
                ..
            } if call_id == id => Some((*status, output.clone())),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no result for {id} in {events:#?}"))
}

fn effect_of(events: &[EventBody], id: &str) -> Option<Effect> {
    events.iter().find_map(|e| match e {
        EventBody::ToolCall {
            call_id, effect, ..
        } if call_id == id => *effect,
        _ => None,
    })
}

async fn mcp_info(daemon: &TestDaemon, name: &str) -> McpServerInfo {
    let list: McpList = daemon.client().get("/api/mcp").await.unwrap();
    list.servers.into_iter().find(|s| s.name == name).unwrap()
}

fn tools_offered(request: &CapturedRequest) -> Vec<String> {
    request.tools.clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_lists_and_calls_four_real_servers_over_stdio() {
    let ws = tempfile::tempdir().unwrap();
    std::fs::write(ws.path().join("hello.txt"), "hi there").unwrap();
    let repo = tempfile::tempdir().unwrap();
    let git = std::process::Command::new("git")
        .args(["init", "-q"])
        .current_dir(repo.path())
        .status()
        .unwrap();
    assert!(git.success());
    let ws_path = ws.path().canonicalize().unwrap().display().to_string();
    let repo_path = repo.path().canonicalize().unwrap().display().to_string();

    let mock = MockModel::start().await;
    let config = format!(
        "{}{}{}{}{}",
        model_config(&mock, "openai"),
        stdio("everything", &mcp_servers::everything(), &[]),
        stdio("fs", &mcp_servers::filesystem(), &[&ws_path]),
        stdio("time", &mcp_servers::time(), &[]),
        stdio("git", &mcp_servers::git(), &["--repository", &repo_path]),
    );
    let daemon = TestDaemon::start_with(&config, &[]).await;

    // Nothing starts until a task needs it.
    let before: McpList = daemon.client().get("/api/mcp").await.unwrap();
    assert_eq!(before.servers.len(), 4);
    assert!(
        before
            .servers
            .iter()
            .all(|s| s.state == McpServerState::NotStarted)
    );

    // The CLI sets the agent's servers; an unknown one is refused.
    let mut add = daemon.cli();
    add.args([
        "--json",
        "team",
        "add",
        "reach",
        "--mcp",
        "everything,fs,time,git",
    ]);
    let out = output_of(add).await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let agent: Agent = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(agent.mcp, ["everything", "fs", "time", "git"]);
    let mut bad = daemon.cli();
    bad.args(["team", "edit", "reach", "--mcp", "nope"]);
    let out = output_of(bad).await;
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("[mcp.servers.nope]"));
    let mut show = daemon.cli();
    show.args(["team", "show", "reach"]);
    let shown = String::from_utf8(output_of(show).await.stdout).unwrap();
    assert!(
        shown.contains("mcp:          everything, fs, time, git"),
        "{shown}"
    );

    mock.push(Reply::tool_calls([
        MockCall::new(
            "c1",
            "mcp__everything__echo",
            json!({"message": "hello mcp"}),
        ),
        MockCall::new("c2", "mcp__fs__list_directory", json!({"path": ws_path})),
        MockCall::new(
            "c3",
            "mcp__time__get_current_time",
            json!({"timezone": "UTC"}),
        ),
        MockCall::new(
            "c4",
            "mcp__git__git_status",
            json!({"repo_path": repo_path}),
        ),
        MockCall::new("c5", "mcp__everything__get-tiny-image", json!({})),
    ]))
    .push(Reply::text("done"));
    let task = create_task(&daemon, "reach", "use the servers", Some(ws.path())).await;
    let finished = wait_task_finished(&daemon, &task).await;
    assert_eq!(finished.verdict, Some(Verdict::Answer));

    let requests = mock.requests();
    let offered = tools_offered(&requests[0]);
    for name in [
        "mcp__everything__echo",
        "mcp__everything__trigger-long-running-operation",
        "mcp__fs__read_text_file",
        "mcp__fs__write_file",
        "mcp__time__get_current_time",
        "mcp__git__git_log",
        "web_fetch",
    ] {
        assert!(
            offered.iter().any(|t| t == name),
            "{name} not in {offered:?}"
        );
    }
    let events = task_events(&daemon, &task).await;
    let (status, echo) = result_of(&events, "c1");
    assert_eq!(status, ToolStatus::Ok);
    assert!(echo.contains("hello mcp"), "{echo}");
    let (status, listing) = result_of(&events, "c2");
    assert_eq!(status, ToolStatus::Ok, "{listing}");
    assert!(listing.contains("hello.txt"), "{listing}");
    let (status, time) = result_of(&events, "c3");
    assert_eq!(status, ToolStatus::Ok, "{time}");
    assert!(time.contains("UTC") && time.contains("datetime"), "{time}");
    let (status, git) = result_of(&events, "c4");
    assert_eq!(status, ToolStatus::Ok, "{git}");
    assert!(git.to_lowercase().contains("branch"), "{git}");
    let (_, image) = result_of(&events, "c5");
    assert!(image.contains("[image: image/png"), "{image}");
    // readOnlyHint tools are reads; the rest of a stdio server's tools are commands.
    assert_eq!(effect_of(&events, "c1"), Some(Effect::Read));
    assert_eq!(effect_of(&events, "c3"), Some(Effect::Read));

    let mut ls = daemon.cli();
    ls.args(["mcp", "ls"]);
    let listed = String::from_utf8(output_of(ls).await.stdout).unwrap();
    for line in [
        "everything  running  stdio",
        "fs  running",
        "time  running",
        "git  running",
    ] {
        assert!(listed.contains(line), "{line:?} in {listed}");
    }
    assert!(
        listed.contains("mcp__time__convert_time (read-only)"),
        "{listed}"
    );
    mock.assert_clean();
    daemon.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_everything_over_streamable_http() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let _server = KillOnDrop(
        std::process::Command::new(mcp_servers::everything())
            .arg("streamableHttp")
            .env("PORT", port.to_string())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap(),
    );
    wait_for(
        Duration::from_secs(30),
        "server-everything to listen",
        || async move {
            tokio::net::TcpStream::connect(("127.0.0.1", port))
                .await
                .ok()
        },
    )
    .await;

    let mock = MockModel::start().await;
    let config = format!(
        "{}\n[mcp.servers.remote]\nurl = \"http://127.0.0.1:{port}/mcp\"\nheaders = {{ X-Test = \"1\" }}\n",
        model_config(&mock, "openai")
    );
    let daemon = TestDaemon::start_with(&config, &[]).await;
    let update = lazyboy_protocol::UpdateAgent {
        mcp: Some(vec!["remote".into()]),
        ..Default::default()
    };
    let response = daemon
        .http
        .patch(daemon.url("/api/agents/default"))
        .json(&update)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);

    mock.push(Reply::tool_calls([
        MockCall::new("h1", "mcp__remote__get-sum", json!({"a": 2, "b": 40})),
        MockCall::new(
            "h2",
            "mcp__remote__get-structured-content",
            json!({"location": "New York"}),
        ),
    ]))
    .push(Reply::text("done"));
    let task = create_task(&daemon, "default", "add", None).await;
    wait_task_finished(&daemon, &task).await;
    let events = task_events(&daemon, &task).await;
    let (status, sum) = result_of(&events, "h1");
    assert_eq!(status, ToolStatus::Ok, "{sum}");
    assert!(sum.contains("42"), "{sum}");
    let (status, weather) = result_of(&events, "h2");
    assert_eq!(status, ToolStatus::Ok, "{weather}");
    assert!(weather.to_lowercase().contains("temperature"), "{weather}");
    let info = mcp_info(&daemon, "remote").await;
    assert_eq!(
        (info.state, info.transport.as_str()),
        (McpServerState::Running, "http")
    );
    mock.assert_clean();
    daemon.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_killed_mid_call_fails_that_call_and_the_next_one_restarts_it() {
    let mock = MockModel::start().await;
    let config = format!(
        "{}{}",
        model_config(&mock, "openai"),
        stdio("everything", &mcp_servers::everything(), &[])
    );
    let daemon = TestDaemon::start_with(&config, &[]).await;
    let update = lazyboy_protocol::UpdateAgent {
        mcp: Some(vec!["everything".into()]),
        ..Default::default()
    };
    daemon
        .http
        .patch(daemon.url("/api/agents/default"))
        .json(&update)
        .send()
        .await
        .unwrap()
        .error_for_status()
        .unwrap();

    mock.push(Reply::tool_call(
        "long",
        "mcp__everything__trigger-long-running-operation",
        json!({"duration": 60, "steps": 60}),
    ))
    .push(Reply::tool_call(
        "again",
        "mcp__everything__echo",
        json!({"message": "back"}),
    ))
    .push(Reply::text("done"));
    let task = create_task(&daemon, "default", "run long", None).await;

    // Progress notifications arrive as heartbeats while the call runs.
    wait_for(Duration::from_secs(30), "a progress heartbeat", || {
        let daemon = &daemon;
        let task = task.clone();
        async move {
            task_events(daemon, &task).await.into_iter().find(|e| {
                matches!(e, EventBody::Heartbeat { operation, .. }
                    if operation.starts_with("mcp__everything__trigger-long-running-operation ("))
            })
        }
    })
    .await;
    let first = mcp_info(&daemon, "everything").await;
    let pid = first.pid.expect("a running server has a pid") as i32;
    nix::sys::signal::killpg(
        nix::unistd::Pid::from_raw(pid),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();

    let finished = wait_task_finished(&daemon, &task).await;
    assert_eq!(finished.verdict, Some(Verdict::Answer));
    let events = task_events(&daemon, &task).await;
    let (status, lost) = result_of(&events, "long");
    assert_eq!(status, ToolStatus::Error, "{lost}");
    assert!(lost.contains("went away"), "{lost}");
    let (status, back) = result_of(&events, "again");
    assert_eq!(status, ToolStatus::Ok, "{back}");
    assert!(back.contains("back"), "{back}");
    let after = mcp_info(&daemon, "everything").await;
    assert_eq!(after.state, McpServerState::Running);
    assert_eq!(after.restarts, 1);
    assert_ne!(after.pid, Some(pid as u32));
    mock.assert_clean();
    daemon.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stopping_a_task_sends_notifications_cancelled_and_the_server_stays() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("cancelled");
    let mock = MockModel::start().await;
    let probe = mcp_servers::fixture("mcp_cancel_probe.py");
    let config = format!(
        "{}{}",
        model_config(&mock, "openai"),
        stdio(
            "probe",
            &mcp_servers::python(),
            &[&probe, &marker.display().to_string()]
        )
    );
    let daemon = TestDaemon::start_with(&config, &[]).await;
    daemon
        .http
        .patch(daemon.url("/api/agents/default"))
        .json(&json!({"mcp": ["probe"]}))
        .send()
        .await
        .unwrap()
        .error_for_status()
        .unwrap();
    mock.push(Reply::tool_call(
        "long",
        "mcp__probe__wait",
        json!({"seconds": 120}),
    ));
    let task = create_task(&daemon, "default", "wait", None).await;
    wait_for(Duration::from_secs(30), "the call to start", || {
        let daemon = &daemon;
        let task = task.clone();
        async move {
            task_events(daemon, &task)
                .await
                .into_iter()
                .find(|e| matches!(e, EventBody::ToolCall { call_id, .. } if call_id == "long"))
        }
    })
    .await;
    let pid = mcp_info(&daemon, "probe").await.pid;
    assert!(pid.is_some());
    daemon
        .http
        .post(daemon.url(&format!("/api/tasks/{task}/stop")))
        .send()
        .await
        .unwrap()
        .error_for_status()
        .unwrap();
    let finished = wait_task_finished(&daemon, &task).await;
    assert_eq!(finished.verdict, Some(Verdict::Cancelled));
    // The server heard notifications/cancelled: its tool's task was cancelled.
    let marker = &marker;
    wait_for(
        Duration::from_secs(10),
        "the server to see the cancellation",
        || async move { (std::fs::read_to_string(marker).ok()? == "cancelled").then_some(()) },
    )
    .await;
    let info = mcp_info(&daemon, "probe").await;
    assert_eq!((info.state, info.pid), (McpServerState::Running, pid));
    daemon.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn servers_that_cannot_start_or_answer_garbage_give_tool_errors_and_the_daemon_stays_up() {
    let mock = MockModel::start().await;
    let config = format!(
        "{}{}{}startup_timeout_secs = 2\n",
        model_config(&mock, "openai"),
        stdio("missing", "/nonexistent/mcp-server", &[]),
        stdio(
            "garbage",
            "sh",
            &["-c", "echo 'this is not json-rpc'; cat >/dev/null"]
        ),
    );
    let daemon = TestDaemon::start_with(&config, &[]).await;
    daemon
        .http
        .patch(daemon.url("/api/agents/default"))
        .json(&json!({"mcp": ["missing", "garbage"]}))
        .send()
        .await
        .unwrap()
        .error_for_status()
        .unwrap();
    mock.push(Reply::tool_calls([
        MockCall::new("m", "mcp__missing__unavailable", json!({})),
        MockCall::new("g", "mcp__garbage__unavailable", json!({})),
    ]))
    .push(Reply::text("done"));
    let task = create_task(&daemon, "default", "try", None).await;
    let finished = wait_task_finished(&daemon, &task).await;
    assert_eq!(finished.verdict, Some(Verdict::Answer));
    let events = task_events(&daemon, &task).await;
    let (status, missing) = result_of(&events, "m");
    assert_eq!(status, ToolStatus::Error);
    assert!(
        missing.contains("cannot start `/nonexistent/mcp-server`"),
        "{missing}"
    );
    let (status, garbage) = result_of(&events, "g");
    assert_eq!(status, ToolStatus::Error);
    assert!(
        garbage.contains("MCP server garbage failed to start"),
        "{garbage}"
    );
    let offered = tools_offered(&mock.requests()[0]);
    assert!(
        offered.iter().any(|t| t == "mcp__missing__unavailable"),
        "{offered:?}"
    );

    let mut test = daemon.cli();
    test.args(["mcp", "test", "missing"]);
    let out = output_of(test).await;
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("missing  failed") && text.contains("error:"),
        "{text}"
    );
    let health: lazyboy_protocol::Health = daemon.client().get("/api/health").await.unwrap();
    assert!(health.ok);
    mock.assert_clean();
    daemon.stop();
}
