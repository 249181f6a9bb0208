//! Work that outlives a turn: subagents and background commands. The parent never polls: it
//! ends its turn, the runtime waits, and one revival note brings the results back, also
//! across a `kill -9`. Background commands a restart cut off are reported lost, never re-run.

use std::sync::Arc;
use std::time::Duration;

use lazyboy_protocol::{EventBody, Task, ToolStatus, Verdict};
use lazyboy_tests::mock_model::{CapturedRequest, MockModel, Reply, SeenMessage};
use lazyboy_tests::{
    TestDaemon, add_agent, create_task, task_events, wait_for, wait_task_finished,
};
use serde_json::json;

/// The task's objective: the first user message of a request.
fn objective(request: &CapturedRequest) -> String {
    request
        .messages
        .iter()
        .find_map(|m| match m {
            SeenMessage::User { text } => Some(text.clone()),
            _ => None,
        })
        .unwrap_or_default()
}

fn is_revival(text: &str) -> bool {
    text.contains("The work you were waiting for has finished")
}

async fn events_of(daemon: &TestDaemon, task: &str) -> Vec<EventBody> {
    task_events(daemon, task).await
}

async fn task(daemon: &TestDaemon, id: &str) -> Task {
    daemon
        .client()
        .get(&format!("/api/tasks/{id}"))
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subagents_completion_revives_its_parent_exactly_once_across_a_kill_9() {
    let mock = MockModel::start().await;
    let mut daemon = TestDaemon::start_with_model(&mock, "openai", &[]).await;
    add_agent(&daemon, "lead").await;
    let ws = tempfile::tempdir().unwrap();
    // Parent and subagent ask the model concurrently: every reply is chosen by the request.
    let router = Arc::new(|request: &CapturedRequest| {
        if objective(request).contains("count the files") {
            // The subagent: it tries to spawn one of its own (refused), then answers slowly.
            if request.tool_result_for("c1").is_none() {
                return Reply::tool_call("c1", "spawn_subagent", json!({"objective": "deeper"}));
            }
            return Reply::text("there are 3 files").delay(Duration::from_millis(1500));
        }
        let last = request.last_user_text().unwrap_or_default().to_owned();
        if is_revival(&last) {
            let found = if last.contains("there are 3 files") {
                "3 files"
            } else {
                "nothing"
            };
            Reply::text(format!("the helper says: {found}"))
        } else if request.tool_result_for("s1").is_some() {
            Reply::text("waiting for my helper")
        } else {
            Reply::tool_call(
                "s1",
                "spawn_subagent",
                json!({"objective": "count the files", "tools": ["list_dir"]}),
            )
        }
    });
    for _ in 0..12 {
        let router = router.clone();
        mock.push_fn(move |request| router(request));
    }
    let parent = create_task(&daemon, "lead", "research with a helper", Some(ws.path())).await;

    // The parent ended its turn and waits; the subagent's answer is on its way: kill -9 now.
    wait_for(Duration::from_secs(20), "the parent to wait", || {
        let daemon = &daemon;
        let mock = &mock;
        let parent = parent.clone();
        async move {
            let ended = events_of(daemon, &parent).await.iter().any(|e| {
                matches!(e, EventBody::AssistantReply { text, .. } if text == "waiting for my helper")
            });
            let answering = mock
                .requests()
                .iter()
                .any(|r| objective(r).contains("count the files") && r.tool_result_for("c1").is_some());
            (ended && answering).then_some(())
        }
    })
    .await;
    daemon.kill9();
    daemon.restart().await;

    let done = wait_task_finished(&daemon, &parent).await;
    assert_eq!(
        (done.verdict, done.final_message.as_deref()),
        (Some(Verdict::Answer), Some("the helper says: 3 files"))
    );
    let events = events_of(&daemon, &parent).await;
    let revivals = events
        .iter()
        .filter(|e| matches!(e, EventBody::RuntimeNote { text } if is_revival(text)))
        .count();
    assert_eq!(revivals, 1, "revived exactly once");
    let parent_rounds_after_revival = mock
        .requests()
        .iter()
        .filter(|r| objective(r) == "research with a helper")
        .filter(|r| is_revival(r.last_user_text().unwrap_or_default()))
        .count();
    assert_eq!(parent_rounds_after_revival, 1);

    // The subagent: a task of the same agent with the parent as its parent, limited to the
    // tools it was given, never offered the subagent tools or questions to the person.
    let child = events
        .iter()
        .find_map(|e| match e {
            EventBody::SubagentSpawned { task, .. } => Some(task.clone()),
            _ => None,
        })
        .expect("subagent_spawned in the parent");
    let child = task(&daemon, &child).await;
    assert_eq!(child.parent.as_deref(), Some(parent.as_str()));
    assert_eq!(child.agent, "lead");
    assert_eq!(child.final_message.as_deref(), Some("there are 3 files"));
    let refused = events_of(&daemon, &child.id)
        .await
        .into_iter()
        .find_map(|e| match e {
            EventBody::ToolResult {
                call_id,
                status,
                output,
                ..
            } if call_id == "c1" => Some((status, output)),
            _ => None,
        })
        .unwrap();
    assert_eq!(refused.0, ToolStatus::Error);
    assert!(
        refused.1.contains("not available to a subagent"),
        "{}",
        refused.1
    );
    for request in mock.requests() {
        if objective(&request).contains("count the files") {
            assert!(request.tools.contains(&"list_dir".to_owned()));
            for withheld in ["spawn_subagent", "request_user_input", "exec_command"] {
                assert!(!request.tools.iter().any(|t| t == withheld), "{withheld}");
            }
        } else {
            assert!(request.tools.iter().any(|t| t == "spawn_subagent"));
        }
    }
    mock.assert_clean();
    daemon.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stopping_a_parent_stops_its_subagents_and_the_round_cap_holds() {
    let mock = MockModel::start().await;
    let daemon =
        TestDaemon::start_with_model(&mock, "openai", &[("LAZYBOY_SUBAGENT_MAX_ROUNDS", "2")])
            .await;
    add_agent(&daemon, "lead").await;
    let ws = tempfile::tempdir().unwrap();
    let router = Arc::new(|request: &CapturedRequest| {
        let goal = objective(request);
        if goal.contains("loop forever") {
            return Reply::tool_call(
                format!("l{}", request.messages.len()),
                "list_dir",
                json!({}),
            );
        }
        if goal.contains("wait for me") {
            return Reply::text("never").delay(Duration::from_secs(60));
        }
        match (
            request.tool_result_for("p1").is_some(),
            request.tool_result_for("p2").is_some(),
        ) {
            (false, _) => {
                Reply::tool_call("p1", "spawn_subagent", json!({"objective": "loop forever"}))
            }
            (true, false) => {
                Reply::tool_call("p2", "spawn_subagent", json!({"objective": "wait for me"}))
            }
            (true, true) => Reply::text("both started"),
        }
    });
    for _ in 0..12 {
        let router = router.clone();
        mock.push_fn(move |request| router(request));
    }
    let parent = create_task(&daemon, "lead", "run two helpers", Some(ws.path())).await;
    let children = wait_for(Duration::from_secs(20), "two subagents", || {
        let daemon = &daemon;
        let parent = parent.clone();
        async move {
            let ids: Vec<String> = events_of(daemon, &parent)
                .await
                .into_iter()
                .filter_map(|e| match e {
                    EventBody::SubagentSpawned { task, .. } => Some(task),
                    _ => None,
                })
                .collect();
            (ids.len() == 2).then_some(ids)
        }
    })
    .await;
    // `lazyboy tasks` shows which task each subagent belongs to.
    let listed = lazyboy_tests::output_of({
        let mut command = daemon.cli();
        command.args(["tasks", "--agent", "lead"]);
        command
    })
    .await;
    let listed = String::from_utf8(listed.stdout).unwrap();
    for child in &children {
        let row = listed
            .lines()
            .find(|l| l.starts_with(child.as_str()))
            .unwrap();
        assert!(row.contains(&format!("(subagent of {parent})")), "{row}");
    }
    // The looping one stops at LAZYBOY_SUBAGENT_MAX_ROUNDS.
    let looping = wait_task_finished(&daemon, &children[0]).await;
    assert_eq!(looping.verdict, Some(Verdict::BudgetExhausted));
    assert!(
        looping
            .final_message
            .unwrap()
            .contains("LAZYBOY_SUBAGENT_MAX_ROUNDS")
    );
    // Stopping the parent (which waits for the slow one) stops the subagent too.
    let output = lazyboy_tests::output_of({
        let mut command = daemon.cli();
        command.args(["stop", &parent]);
        command
    })
    .await;
    assert!(output.status.success(), "{output:?}");
    assert_eq!(
        wait_task_finished(&daemon, &parent).await.verdict,
        Some(Verdict::Cancelled)
    );
    assert_eq!(
        wait_task_finished(&daemon, &children[1]).await.verdict,
        Some(Verdict::Cancelled)
    );
    daemon.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn background_commands_cut_off_by_a_kill_9_are_reported_lost_not_rerun() {
    let mock = MockModel::start().await;
    let mut daemon = TestDaemon::start_with_model(&mock, "openai", &[]).await;
    add_agent(&daemon, "ops").await;
    let ws = tempfile::tempdir().unwrap();
    mock.push(Reply::tool_call(
        "b1",
        "exec_command",
        json!({"cmd": "echo begun >> ran.txt; echo begun; sleep 30 & echo $! > pid.txt; wait", "block_until_ms": 200}),
    ));
    mock.push(Reply::text("it runs in the background"));
    mock.push_fn(|request| {
        let last = request.last_user_text().unwrap_or_default();
        let text = if last.contains("were lost when the daemon restarted") {
            "noted: the command was lost".to_owned()
        } else {
            format!("unexpected: {last}")
        };
        Reply::tool_call("b2", "send_message", json!({ "text": text }))
    });
    mock.push(Reply::text("ok"));
    let id = create_task(&daemon, "ops", "start the long job", Some(ws.path())).await;
    // The turn ended and waits for the command (heartbeats, no model call): kill -9 now.
    let command = wait_for(Duration::from_secs(20), "the background command", || {
        let daemon = &daemon;
        let id = id.clone();
        async move {
            let events = events_of(daemon, &id).await;
            let waiting = events.iter().any(|e| {
                matches!(e, EventBody::AssistantReply { text, .. } if text == "it runs in the background")
            });
            let started = events.iter().find_map(|e| match e {
                EventBody::CommandStarted { command_id, .. } => Some(command_id.clone()),
                _ => None,
            });
            started.filter(|_| waiting)
        }
    })
    .await;
    daemon.kill9();
    daemon.restart().await;

    let done = wait_task_finished(&daemon, &id).await;
    assert_eq!(
        done.final_message.as_deref(),
        Some("noted: the command was lost")
    );
    let events = events_of(&daemon, &id).await;
    let ended: Vec<String> = events
        .iter()
        .filter_map(|e| match e {
            EventBody::CommandEnded { command_id, status } if *command_id == command => {
                Some(status.clone())
            }
            _ => None,
        })
        .collect();
    assert_eq!(ended.len(), 1, "{ended:?}");
    assert!(
        ended[0].contains("lost") && ended[0].contains("still running and has been stopped"),
        "{}",
        ended[0]
    );
    // What the old daemon left running was stopped, as a shutdown would have.
    let pid = std::fs::read_to_string(ws.path().join("pid.txt")).unwrap();
    let stat = format!("/proc/{}/stat", pid.trim());
    let alive = std::fs::read_to_string(&stat).is_ok_and(|s| {
        let state = s
            .rsplit_once(')')
            .unwrap()
            .1
            .split_whitespace()
            .next()
            .unwrap()
            .to_owned();
        state != "Z" && state != "X"
    });
    assert!(!alive, "the orphaned `sleep 30` still runs");
    // Its output so far is kept, and it never ran again.
    let log =
        std::fs::read_to_string(ws.path().join(format!(".lazyboy-output/{command}.log"))).unwrap();
    assert!(log.contains("begun"));
    assert_eq!(
        std::fs::read_to_string(ws.path().join("ran.txt")).unwrap(),
        "begun\n"
    );
    assert_eq!(mock.request_count(), 4);
    mock.assert_clean();
    daemon.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_while_the_parent_waits_is_taken_at_once() {
    let mock = MockModel::start().await;
    let daemon = TestDaemon::start_with_model(&mock, "openai", &[]).await;
    add_agent(&daemon, "lead").await;
    let ws = tempfile::tempdir().unwrap();
    let router = Arc::new(move |request: &CapturedRequest| {
        if objective(request).contains("slow helper") {
            return Reply::text("helper done").delay(Duration::from_millis(3000));
        }
        let last = request.last_user_text().unwrap_or_default().to_owned();
        if is_revival(&last) {
            Reply::text("all done")
        } else if last.contains("also check the logs") {
            Reply::text("noted; still waiting")
        } else if request.tool_result_for("s1").is_some() {
            Reply::text("waiting")
        } else {
            Reply::tool_call("s1", "spawn_subagent", json!({"objective": "slow helper"}))
        }
    });
    for _ in 0..8 {
        let router = router.clone();
        mock.push_fn(move |request| router(request));
    }
    let parent = create_task(&daemon, "lead", "delegate", Some(ws.path())).await;
    wait_for(Duration::from_secs(20), "the parent to wait", || {
        let daemon = &daemon;
        let parent = parent.clone();
        async move {
            events_of(daemon, &parent)
                .await
                .iter()
                .any(|e| matches!(e, EventBody::AssistantReply { text, .. } if text == "waiting"))
                .then_some(())
        }
    })
    .await;
    let accepted = lazyboy_tests::tell(&daemon, "lead", "also check the logs").await;
    assert!(accepted.steered);
    // The model hears the message while the subagent still works, then the revival follows.
    let done = wait_task_finished(&daemon, &parent).await;
    assert_eq!(done.final_message.as_deref(), Some("all done"));
    let parent_requests: Vec<String> = mock
        .requests()
        .iter()
        .filter(|r| objective(r) == "delegate")
        .map(|r| r.last_user_text().unwrap_or_default().to_owned())
        .collect();
    let heard = parent_requests
        .iter()
        .position(|t| t == "also check the logs")
        .expect("the message reached the model");
    let revived = parent_requests.iter().position(|t| is_revival(t)).unwrap();
    assert!(heard < revived, "{parent_requests:?}");
    assert_eq!(parent_requests.iter().filter(|t| is_revival(t)).count(), 1);
    mock.assert_clean();
    daemon.stop();
}
