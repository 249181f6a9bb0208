//! Who may use the team through MCP: `--agents` (stdio) and `[mcp_server] agents` (HTTP) hide
//! and refuse every other agent; an agent's own confined command calling `/mcp` has no
//! credential and gets 401 over TCP (on the socket 401, or no connection where seccomp refuses
//! it UNIX sockets) with nothing queued; a client that cancels a wait ends it.

use std::time::Duration;

use futures_util::StreamExt;
use lazyboy_protocol::{TaskList, TaskState, ToolStatus};
use lazyboy_tests::mock_model::{MockModel, Reply};
use lazyboy_tests::{
    TestDaemon, add_agent, create_task, model_config, task_events, wait_for, wait_task_finished,
};
use serde_json::{Value, json};

use super::bad_input::{Http, Relay, sse_messages};
use super::{run_sdk, sdk, steps};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scoped_client_sees_and_uses_only_its_agents() {
    let mock = MockModel::start().await;
    let config = format!(
        "{}\n[mcp_server]\nagents = [\"researcher\"]\n",
        model_config(&mock, "openai")
    );
    let daemon = TestDaemon::start_with(&config, &[]).await;
    add_agent(&daemon, "researcher").await;
    add_agent(&daemon, "secret").await;
    mock.push(Reply::text("secret stuff"));
    let hidden = create_task(&daemon, "secret", "keep it", None).await;
    wait_task_finished(&daemon, &hidden).await;
    // stdio with --agents researcher (the fixture adds it), and HTTP scoped by the config.
    for transport in ["stdio", "http"] {
        let all = run_sdk(sdk(&daemon, transport, "legacy", "scope", &[&hidden])).await;
        let agents = &steps(&all, "list_agents")[0]["data"]["agents"];
        let names: Vec<&str> = agents
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["researcher"], "{transport}");
        for (step, says) in [
            ("ask_agent", "no agent named \"secret\""),
            ("tell_agent", "no agent named \"secret\""),
            ("task_status", "no task"),
            ("stop_task", "no task"),
        ] {
            let answer = steps(&all, step)[0];
            assert_eq!(answer["error"], true, "{transport} {step}: {answer}");
            assert!(answer["text"].as_str().unwrap().contains(says), "{answer}");
            assert!(!answer["text"].as_str().unwrap().contains("secret stuff"));
        }
        assert_eq!(steps(&all, "read")[0]["error"], true, "{transport}");
    }
    // Nothing happened to the hidden agent: its one task, untouched.
    let tasks: TaskList = daemon
        .client()
        .get("/api/tasks?agent=secret")
        .await
        .unwrap();
    assert_eq!(tasks.tasks.len(), 1);
    assert_eq!(tasks.tasks[0].state, TaskState::Done);
    // The socket without --agents is not narrowed by the TCP listener's config.
    let mut relay = Relay::start(&daemon, &[]).await;
    let listed = relay.tool(1, "list_agents", json!({})).await;
    let text = listed["result"]["content"][0]["text"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(text.contains("secret"), "{text}");
    drop(relay);
    daemon.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agents_own_command_calling_mcp_is_refused_and_queues_nothing() {
    let mock = MockModel::start().await;
    let daemon = TestDaemon::start_with_model(&mock, "openai", &[]).await;
    let socket = daemon.home().join("lazyboyd.sock");
    let url = daemon.url("/mcp");
    let post = |target: &str, body: &str| {
        format!(
            "curl -s -o /dev/null -w '%{{http_code}}\\n' -X POST {target} \
             -H 'content-type: application/json' -H 'accept: application/json, text/event-stream' \
             -d '{body}'"
        )
    };
    let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}"#;
    let ask = r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"ask_agent","arguments":{"agent":"worker","job":"escalate"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}"#;
    let script = [
        post(&url, init),
        post(&url, ask),
        post(
            &format!("--unix-socket {} http://localhost/mcp", socket.display()),
            init,
        ),
        post(
            &format!("--unix-socket {} http://localhost/mcp", socket.display()),
            ask,
        ),
    ]
    .join("; ");
    // `; true`: curl exits 7 where seccomp (no AF_UNIX sockets) stops the socket's connect.
    let script = format!("{script}; true");
    mock.push(Reply::tool_call(
        "c1",
        "exec_command",
        json!({"cmd": script}),
    ));
    mock.push(Reply::text("tried"));
    add_agent(&daemon, "worker").await;
    let ws = tempfile::tempdir().unwrap();
    let task = create_task(&daemon, "worker", "reach the team", Some(ws.path())).await;
    assert_eq!(
        wait_task_finished(&daemon, &task).await.state,
        TaskState::Done
    );
    let output = task_events(&daemon, &task)
        .await
        .into_iter()
        .find_map(|e| match e {
            lazyboy_protocol::EventBody::ToolResult {
                call_id,
                output,
                status,
                ..
            } if call_id == "c1" => {
                assert_eq!(status, ToolStatus::Ok, "{output}");
                Some(output)
            }
            _ => None,
        })
        .unwrap();
    let codes: Vec<&str> = output.lines().filter(|l| l.len() == 3).collect();
    assert_eq!(codes.len(), 4, "{output}");
    // TCP: the API's authentication answers, 401.
    assert_eq!(codes[..2], ["401", "401"], "{output}");
    // The socket: 401, or no connection at all (000) where the sandbox's seccomp layer
    // refuses the command any UNIX socket.
    for code in &codes[2..] {
        assert!(["401", "000"].contains(code), "{output}");
    }
    // Only the agent's own task: nothing was queued through /mcp.
    let tasks: TaskList = daemon.client().get("/api/tasks").await.unwrap();
    assert_eq!(tasks.tasks.len(), 1, "{:?}", tasks.tasks);
    daemon.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_wait_ends_at_once() {
    let mock = MockModel::start().await;
    let daemon = TestDaemon::start_with_model(&mock, "openai", &[]).await;
    add_agent(&daemon, "researcher").await;
    mock.push(Reply::text("slow").delay(Duration::from_secs(60)));
    let task = create_task(&daemon, "researcher", "take long", None).await;
    mock.wait_for_requests(1).await;
    let http = Http::open(&daemon).await;
    let call = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {
        "name": "wait_task", "arguments": {"task": task, "timeout_s": 600},
        "_meta": {"progressToken": "p7"}}});
    let response = http.post(call.to_string().into_bytes()).await;
    assert_eq!(response.status(), 200);
    let mut stream = response.bytes_stream();
    // Progress (the task's heartbeats) shows the wait is open; then the client cancels.
    let seen = tokio::time::timeout(Duration::from_secs(30), async {
        let mut seen = String::new();
        while !seen.contains("notifications/progress") {
            let bytes = stream.next().await.expect("the stream is open").unwrap();
            seen.push_str(&String::from_utf8_lossy(&bytes));
        }
        seen
    })
    .await
    .expect("a progress notification within 30 s");
    let progress = sse_messages(&seen);
    assert!(
        progress
            .iter()
            .any(|m| m["params"]["progressToken"] == "p7"),
        "{seen}"
    );
    let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": 7, "reason": "the person moved on"}});
    assert_eq!(
        http.post(cancel.to_string().into_bytes()).await.status(),
        202
    );
    // The stream ends well before the 600 s wait would, with no outcome for the call.
    let rest = tokio::time::timeout(Duration::from_secs(10), async {
        let mut rest = String::new();
        while let Some(Ok(bytes)) = stream.next().await {
            rest.push_str(&String::from_utf8_lossy(&bytes));
        }
        rest
    })
    .await
    .expect("the cancelled wait ended within 10 s");
    let answered: Vec<Value> = sse_messages(&rest)
        .into_iter()
        .filter(|m| m["id"] == 7 && m["result"].is_object())
        .collect();
    assert!(answered.is_empty(), "a cancelled wait answered: {rest}");
    // The daemon's wait itself ended, not only the stream (rmcp closes the stream whatever
    // the handler does; the handler's end is the daemon's log line).
    let log = daemon.home().join("daemon-stderr.log");
    wait_for(Duration::from_secs(10), "the daemon's wait to end", || {
        let log = std::fs::read_to_string(&log).unwrap_or_default();
        async move { log.contains("an MCP call ended: cancelled").then_some(()) }
    })
    .await;
    // The task itself goes on: cancelling a wait is not stopping the task.
    let status = http.tool(8, "task_status", json!({"task": task})).await;
    assert_eq!(
        status["result"]["structuredContent"]["state"], "running",
        "{status}"
    );
    daemon.stop();
}
