//! The defaults people rely on, pinned: `exec_command` backgrounds after 30 s, heartbeats
//! come every 20 s, a subagent stops after 128 rounds, work without a `send_message` is
//! reminded once. And the tools no other suite calls: `check_subagent`, `message_subagent`,
//! `stop_subagent`, `request_takeover`.

use std::sync::Arc;
use std::time::Duration;

use lazyboy_protocol::{EventBody, TaskState, Verdict};
use lazyboy_tests::mock_model::{CapturedRequest, MockModel, Reply, SeenMessage};
use lazyboy_tests::tasks::objective;
use lazyboy_tests::{
    TestDaemon, add_agent, create_task, task_events, wait_for, wait_task_finished,
};
use serde_json::json;

/// The mock as its own provider, with the daemon's default heartbeat and budgets.
fn default_config(mock: &MockModel) -> String {
    format!(
        "default_provider = \"mock\"\n\n[providers.mock]\nwire = \"openai\"\n\
         base_url = \"{}\"\nmodel = \"mock-model\"\n",
        mock.openai_base_url()
    )
}

/// Answers every request with `route` (parent and subagents ask concurrently).
fn route(
    mock: &MockModel,
    n: usize,
    route: impl Fn(&CapturedRequest) -> Reply + Send + Sync + 'static,
) {
    let route = Arc::new(route);
    for _ in 0..n {
        let route = route.clone();
        mock.push_fn(move |request| route(request));
    }
}

/// The subagent id in a `spawn_subagent` result.
fn spawned_id(result: &str) -> String {
    let rest = result.strip_prefix("spawned subagent ").unwrap();
    rest.split(';').next().unwrap().to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exec_command_backgrounds_after_30_s_and_heartbeats_every_20_s() {
    let mock = MockModel::start().await;
    let daemon = TestDaemon::start_with(&default_config(&mock), &[]).await;
    add_agent(&daemon, "slow").await;
    let ws = tempfile::tempdir().unwrap();
    mock.push(Reply::tool_call(
        "c",
        "exec_command",
        json!({"cmd": "sleep 31; echo late"}),
    ));
    mock.push(Reply::text("it runs on"));
    mock.push(Reply::tool_call(
        "m",
        "send_message",
        json!({"text": "it finished"}),
    ));
    mock.push(Reply::text("done"));
    let id = create_task(&daemon, "slow", "run the slow thing", Some(ws.path())).await;
    let done = wait_task_finished(&daemon, &id).await;
    assert_eq!(done.verdict, Some(Verdict::Answer));
    let events = task_events(&daemon, &id).await;
    let result = events
        .iter()
        .find_map(|e| match e {
            EventBody::ToolResult {
                call_id, output, ..
            } if call_id == "c" => Some(output.clone()),
            _ => None,
        })
        .unwrap();
    assert!(result.contains("still running as cmd-"), "{result}");
    assert!(result.contains("after 30.0 s"), "{result}");
    // The call's heartbeats: one, due at 20 s (the default), none at 40 s. A loaded machine
    // may record it late, never early; the call returned at 30 s, so one is all there is.
    let beats: Vec<u64> = events
        .iter()
        .filter_map(|e| match e {
            EventBody::Heartbeat {
                operation,
                elapsed_ms,
            } if operation == "running exec_command" => Some(*elapsed_ms),
            _ => None,
        })
        .collect();
    assert_eq!(beats.len(), 1, "{beats:?}");
    assert!((19_500..30_000).contains(&beats[0]), "{beats:?}");
    daemon.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subagent_stops_after_128_rounds_by_default() {
    let mock = MockModel::start().await;
    let daemon = TestDaemon::start_with(&default_config(&mock), &[]).await;
    add_agent(&daemon, "lead").await;
    let ws = tempfile::tempdir().unwrap();
    route(&mock, 200, |request| {
        if objective(request) == "look around forever" {
            let n = request.messages.len();
            return Reply::tool_call(format!("l{n}"), "list_dir", json!({"path": "."}));
        }
        if request.tool_result_for("s").is_none() {
            return Reply::tool_call(
                "s",
                "spawn_subagent",
                json!({"objective": "look around forever"}),
            );
        }
        let last = request.last_user_text().unwrap_or_default();
        if last.contains("has finished") && request.tool_result_for("m").is_none() {
            return Reply::tool_call("m", "send_message", json!({"text": last}));
        }
        Reply::text("waiting")
    });
    let parent = create_task(&daemon, "lead", "delegate", Some(ws.path())).await;
    let done = wait_task_finished(&daemon, &parent).await;
    assert!(
        done.final_message
            .as_deref()
            .unwrap()
            .contains("budget_exhausted"),
        "{done:?}"
    );
    let child_rounds = mock
        .requests()
        .iter()
        .filter(|r| objective(r) == "look around forever")
        .count();
    assert_eq!(child_rounds, 128);
    daemon.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn work_without_a_message_is_reminded_once() {
    let mock = MockModel::start().await;
    let daemon = TestDaemon::start_with_model(&mock, "openai", &[]).await;
    add_agent(&daemon, "quiet").await;
    let ws = tempfile::tempdir().unwrap();
    mock.push(Reply::tool_call(
        "w",
        "write_file",
        json!({"path": "a.txt", "content": "a"}),
    ));
    mock.push(Reply::text("wrote it"));
    mock.push(Reply::text("still not saying anything"));
    let id = create_task(&daemon, "quiet", "write a", Some(ws.path())).await;
    let done = wait_task_finished(&daemon, &id).await;
    assert_eq!(done.verdict, Some(Verdict::Answer));
    assert_eq!(
        done.final_message.as_deref(),
        Some("still not saying anything")
    );
    let reminders = task_events(&daemon, &id)
        .await
        .into_iter()
        .filter(|e| matches!(e, EventBody::RuntimeNote { text } if text.contains("send_message")))
        .count();
    assert_eq!(reminders, 1);
    assert_eq!(
        mock.request_count(),
        3,
        "reminded once, then the turn ended"
    );
    let told = mock.requests()[2]
        .last_user_text()
        .unwrap_or_default()
        .to_owned();
    assert!(told.contains("have not told the person"), "{told}");
    daemon.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_parent_checks_messages_and_stops_its_subagent() {
    let mock = MockModel::start().await;
    let daemon = TestDaemon::start_with_model(&mock, "openai", &[]).await;
    add_agent(&daemon, "lead").await;
    let ws = tempfile::tempdir().unwrap();
    let waiting = ws.path().join("waiting");
    route(&mock, 400, move |request| {
        if objective(request) == "stand by" {
            // The subagent: ready at once; told to, it starts something long.
            if request.last_user_text() == Some("now wait for the go file") {
                if request.tool_result_for("long").is_none() {
                    return Reply::tool_call(
                        "long",
                        "exec_command",
                        json!({"cmd": "echo $$ > pid.txt; touch waiting; while [ ! -e go ]; do sleep 0.05; done", "block_until_ms": 60000}),
                    );
                }
                return Reply::text("went");
            }
            return Reply::text("ready");
        }
        let spawned = request.tool_result_for("spawn").map(spawned_id);
        let Some(child) = spawned else {
            return Reply::tool_call("spawn", "spawn_subagent", json!({"objective": "stand by"}));
        };
        let n = request.messages.len();
        let poll = |prefix: &str| {
            Reply::tool_call(
                format!("{prefix}{n}"),
                "check_subagent",
                json!({"id": child}),
            )
            .delay(Duration::from_millis(50))
        };
        let seen_done = request.messages.iter().any(
            |m| matches!(m, SeenMessage::ToolResult { content, .. } if content.contains("is done")),
        );
        if !seen_done {
            return poll("check");
        }
        if request.tool_result_for("tell").is_none() {
            return Reply::tool_call(
                "tell",
                "message_subagent",
                json!({"id": child, "text": "now wait for the go file"}),
            );
        }
        if request.tool_result_for("stop").is_none() {
            // Stop it once it really runs its long command; until then, look again.
            if !waiting.exists() {
                return poll("poll");
            }
            return Reply::tool_call("stop", "stop_subagent", json!({"id": child}));
        }
        if request.tool_result_for("say").is_none() {
            return Reply::tool_call("say", "send_message", json!({"text": "stopped my helper"}));
        }
        Reply::text("done")
    });
    let parent = create_task(&daemon, "lead", "manage a helper", Some(ws.path())).await;
    wait_for(
        Duration::from_secs(20),
        "the subagent's long command",
        || std::future::ready(ws.path().join("waiting").exists().then_some(())),
    )
    .await;
    let done = wait_task_finished(&daemon, &parent).await;
    assert_eq!(done.final_message.as_deref(), Some("stopped my helper"));
    let events = task_events(&daemon, &parent).await;
    let result = |call: &str| {
        events.iter().find_map(|e| match e {
            EventBody::ToolResult {
                call_id,
                status,
                output,
                ..
            } if call_id == call => Some((*status, output.clone())),
            _ => None,
        })
    };
    let checked: Vec<String> = events
        .iter()
        .filter_map(|e| match e {
            EventBody::ToolResult {
                call_id, output, ..
            } if call_id.starts_with("check") => Some(output.clone()),
            _ => None,
        })
        .collect();
    assert!(
        checked
            .last()
            .unwrap()
            .contains("is done (verdict answer); it said: ready"),
        "{checked:?}"
    );
    assert!(result("tell").unwrap().1.starts_with("sent to "));
    let child = events
        .iter()
        .find_map(|e| match e {
            EventBody::SubagentSpawned { task, .. } => Some(task.clone()),
            _ => None,
        })
        .unwrap();
    let (_, stopped) = result("stop").unwrap();
    assert!(stopped.contains(&child), "{stopped}");
    let child: lazyboy_protocol::Task = daemon
        .client()
        .get(&format!("/api/tasks/{child}"))
        .await
        .unwrap();
    assert_eq!(child.verdict, Some(Verdict::Cancelled));
    // The subagent's long command (it waits for a file nobody creates) was killed: its
    // process group (it leads its own: pgid = its pid) is gone.
    let pid: i32 = std::fs::read_to_string(ws.path().join("pid.txt"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    wait_for(
        Duration::from_secs(10),
        "the subagent's command group to be killed",
        || {
            let gone = nix::sys::signal::killpg(nix::unistd::Pid::from_raw(pid), None).is_err();
            std::future::ready(gone.then_some(()))
        },
    )
    .await;
    daemon.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn request_takeover_waits_for_the_person_and_the_same_task_continues() {
    let mock = MockModel::start().await;
    let daemon = TestDaemon::start_with_model(&mock, "openai", &[]).await;
    add_agent(&daemon, "shopper").await;
    mock.push(Reply::tool_call(
        "t",
        "request_takeover",
        json!({"reason": "login", "instructions": "log in to the shop, then say done"}),
    ));
    mock.push_fn(|request| {
        let answer = request.tool_result_for("t").unwrap_or_default().to_owned();
        Reply::tool_call(
            "m",
            "send_message",
            json!({"text": format!("resumed after: {answer}")}),
        )
    });
    mock.push(Reply::text("ok"));
    let id = create_task(&daemon, "shopper", "buy milk", None).await;
    let question = wait_for(Duration::from_secs(20), "the takeover question", || {
        let daemon = &daemon;
        let id = id.clone();
        async move {
            task_events(daemon, &id)
                .await
                .into_iter()
                .find_map(|e| match e {
                    EventBody::Question {
                        question, takeover, ..
                    } => Some((question, takeover)),
                    _ => None,
                })
        }
    })
    .await;
    assert_eq!(
        question,
        (
            "log in to the shop, then say done".to_owned(),
            Some("login".to_owned())
        )
    );
    let t: lazyboy_protocol::Task = daemon
        .client()
        .get(&format!("/api/tasks/{id}"))
        .await
        .unwrap();
    assert_eq!(t.state, TaskState::WaitingForHuman);
    let response = daemon
        .http
        .post(daemon.url(&format!("/api/tasks/{id}/answer")))
        .json(&json!({"text": "done"}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 202);
    let done = wait_task_finished(&daemon, &id).await;
    assert_eq!(
        done.final_message.as_deref(),
        Some("resumed after: The person answered: done")
    );
    mock.assert_clean();
    daemon.stop();
}
