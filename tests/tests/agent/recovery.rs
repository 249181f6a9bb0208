//! Crashes and long waits: a killed command is unknown and never re-run; a turn that ends
//! while its command runs is revived once; heartbeats name the wait.

use super::*;

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
    // A later task in the same workspace does not follow the command (a command answers
    // only to the task that started it), but reads its log, a workspace file like any other.
    mock.push(Reply::tool_calls([
        lazyboy_tests::mock_model::MockCall::new(
            "r1",
            "await_command",
            json!({"id": started, "timeout_ms": 10000}),
        ),
        lazyboy_tests::mock_model::MockCall::new(
            "r2",
            "read_file",
            json!({"path": format!(".lazyboy-output/{started}.log")}),
        ),
    ]));
    mock.push(Reply::text("read it"));
    let (code, _) = run(&daemon, ws.path(), "read it").await;
    assert_eq!(code, 0);
    let last = mock.last_request().unwrap();
    let refused = last.tool_result_for("r1").unwrap();
    assert!(refused.contains("unknown command id"), "{refused}");
    let read = last.tool_result_for("r2").unwrap();
    assert!(read.contains("late result"), "{read}");
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
