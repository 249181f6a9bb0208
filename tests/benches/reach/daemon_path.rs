//! An MCP tool as an agent pays for it: the release daemon runs two tasks of `rounds` rounds
//! against the mock model, one calling a no-op tool (`read_file` of a 1-byte file) each
//! round, one calling `mcp__everything__echo` (server-everything over stdio, started by the
//! task's first call: the first rounds are left out). A step is the time between two model
//! requests arriving at the mock: the tool's call through the daemon's registry, its events,
//! the next request built and sent. The difference of the medians is what the MCP path adds.

use std::time::Duration;

use lazyboy_protocol::TaskState;
use lazyboy_tests::bench::median;
use lazyboy_tests::mock_model::{CapturedRequest, MockModel, Reply};
use lazyboy_tests::{TestDaemon, add_agent, create_task, mcp_servers, model_config, wait_for};
use serde_json::json;

/// Rounds left out at the start of each task (the MCP server's cold start, warm-up).
const WARMUP: usize = 5;

/// (median no-op step, median MCP step).
pub async fn steps(rounds: usize) -> (Duration, Duration) {
    let mock = MockModel::start().await;
    let config = format!(
        "{}\n[mcp.servers.everything]\ncommand = {}\nargs = []\n",
        model_config(&mock, "openai"),
        mcp_servers::toml_str(&mcp_servers::everything())
    );
    let daemon = TestDaemon::start_with(&config, &[]).await;
    add_agent(&daemon, "reach").await;
    let set: serde_json::Value = daemon
        .http
        .patch(daemon.url("/api/agents/reach"))
        .json(&json!({"mcp": ["everything"]}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(set["mcp"], json!(["everything"]), "{set}");
    let ws = tempfile::tempdir().unwrap();
    std::fs::write(ws.path().join("one.txt"), "x").unwrap();

    let noop = run(&daemon, &mock, rounds, ws.path(), |i| {
        Reply::tool_call(format!("n{i}"), "read_file", json!({"path": "one.txt"}))
    })
    .await;
    let mcp = run(&daemon, &mock, rounds, ws.path(), |i| {
        Reply::tool_call(
            format!("m{i}"),
            "mcp__everything__echo",
            json!({"message": format!("round {i}")}),
        )
    })
    .await;
    daemon.stop();
    (noop, mcp)
}

/// One task of `rounds` calls made by `call`, then a reply; the median step after warm-up.
async fn run(
    daemon: &TestDaemon,
    mock: &MockModel,
    rounds: usize,
    ws: &std::path::Path,
    call: impl Fn(usize) -> Reply,
) -> Duration {
    let before = mock.requests().len();
    for i in 0..rounds {
        mock.push(call(i));
    }
    mock.push(Reply::text("done"));
    let task = create_task(daemon, "reach", "call it many times", Some(ws)).await;
    wait_for(Duration::from_secs(120), "the bench task", || {
        let client = daemon.client();
        let path = format!("/api/tasks/{task}");
        async move {
            let t: lazyboy_protocol::Task = client.get(&path).await.ok()?;
            (t.state == TaskState::Done).then_some(())
        }
    })
    .await;
    let requests: Vec<CapturedRequest> = mock.requests().into_iter().skip(before).collect();
    assert!(requests.len() > rounds, "{} requests", requests.len());
    // Every call worked: the last request carries the last call's result, not an error.
    let last = requests[rounds].messages.len();
    assert!(last > 0);
    let result = requests[rounds]
        .messages
        .iter()
        .rev()
        .find_map(|m| match m {
            lazyboy_tests::mock_model::SeenMessage::ToolResult {
                content, is_error, ..
            } => Some((content.clone(), *is_error)),
            _ => None,
        })
        .unwrap_or_default();
    assert!(
        !result.1 && !result.0.is_empty(),
        "the last call did not work: {result:?}"
    );
    let steps: Vec<Duration> = requests[WARMUP..=rounds]
        .windows(2)
        .map(|w| w[1].received_at - w[0].received_at)
        .collect();
    median(steps)
}
