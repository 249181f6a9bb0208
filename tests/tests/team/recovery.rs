//! A crash with many tasks in flight, and steering in the middle of a batch.

use super::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_with_twenty_tasks_in_flight_loses_nothing_and_reruns_nothing() {
    let mock = MockModel::start().await;
    let config = format!(
        "max_concurrent_tasks = 20\n{}",
        model_config(&mock, "openai")
    );
    let mut daemon = TestDaemon::start_with(&config, &[]).await;
    let ws = tempfile::tempdir().unwrap();
    // Each task's first round starts a slow command that counts its runs; after that, the
    // task reports what it saw, then ends. Every reply depends only on the request, so the
    // order in which 20 concurrent tasks reach the mock does not matter.
    for _ in 0..100 {
        mock.push_fn(|request| {
            let objective = request
                .messages
                .iter()
                .find_map(|m| match m {
                    lazyboy_tests::mock_model::SeenMessage::User { text } => Some(text.clone()),
                    _ => None,
                })
                .unwrap_or_default();
            let n = objective.trim_start_matches("job ").to_owned();
            if request.tool_result_for(&format!("y{n}")).is_some() {
                return Reply::text("ok");
            }
            match request.tool_result_for(&format!("x{n}")) {
                None => Reply::tool_call(
                    format!("x{n}"),
                    "exec_command",
                    serde_json::json!({"cmd": format!("echo ran >> count{n}.txt; sleep 30"), "block_until_ms": 60000}),
                ),
                Some(result) => Reply::tool_call(
                    format!("y{n}"),
                    "send_message",
                    serde_json::json!({"text": format!("after restart: {}", result.split(':').next().unwrap_or(""))}),
                ),
            }
        });
    }
    let mut ids = Vec::new();
    for n in 0..20 {
        let agent = format!("w{n:02}");
        add_agent(&daemon, &agent).await;
        let task =
            lazyboy_tests::create_task(&daemon, &agent, &format!("job {n}"), Some(ws.path())).await;
        ids.push(task);
    }
    let counters: Vec<_> = (0..20)
        .map(|n| ws.path().join(format!("count{n}.txt")))
        .collect();
    wait_for(Duration::from_secs(30), "all 20 commands running", || {
        let all = counters.iter().all(|c| c.exists());
        std::future::ready(all.then_some(()))
    })
    .await;
    let acknowledged = all_events(&daemon, 0).await;
    daemon.kill9();
    daemon.restart().await;
    for id in &ids {
        let task = lazyboy_tests::wait_task_finished(&daemon, id).await;
        assert_eq!(task.verdict, Some(Verdict::Answer), "{id}: {task:?}");
        let message = task.final_message.unwrap();
        assert!(message.contains("outcome unknown"), "{id}: {message}");
    }
    for counter in &counters {
        assert_eq!(
            std::fs::read_to_string(counter).unwrap(),
            "ran\n",
            "a tool ran twice"
        );
    }
    let after = all_events(&daemon, 0).await;
    for event in &acknowledged {
        assert!(
            after.iter().any(|e| e == event),
            "event {} was lost",
            event.seq
        );
    }
    let unknown = after
        .iter()
        .filter(|e| e.kind == "tool_result" && e.data["status"] == "unknown")
        .count();
    assert_eq!(unknown, 20, "every in-flight call got an unknown result");
    daemon.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn steering_mid_batch_skips_the_rest_and_the_new_instruction_wins() {
    let mock = MockModel::start().await;
    let daemon = TestDaemon::start_with_model(&mock, "openai", &[]).await;
    add_agent(&daemon, "writer").await;
    let ws = tempfile::tempdir().unwrap();
    mock.push(Reply::tool_calls([
        lazyboy_tests::mock_model::MockCall::new(
            "b1",
            "exec_command",
            serde_json::json!({"cmd": "touch started; while [ ! -e go ]; do sleep 0.02; done; echo a >> s.txt"}),
        ),
        lazyboy_tests::mock_model::MockCall::new(
            "b2",
            "exec_command",
            serde_json::json!({"cmd": "echo b >> s.txt"}),
        ),
        lazyboy_tests::mock_model::MockCall::new(
            "b3",
            "exec_command",
            serde_json::json!({"cmd": "echo c >> s.txt"}),
        ),
    ]));
    mock.push_fn(|request| {
        let last = request.last_user_text().unwrap_or("").to_owned();
        Reply::tool_call(
            "b4",
            "send_message",
            serde_json::json!({"text": format!("understood: {last}")}),
        )
    });
    mock.push(Reply::text("ok"));
    let task =
        lazyboy_tests::create_task(&daemon, "writer", "write a, b and c", Some(ws.path())).await;
    let started = ws.path().join("started");
    wait_for(Duration::from_secs(20), "the first call to run", || {
        std::future::ready(started.exists().then_some(()))
    })
    .await;
    // The person changes their mind while the first call runs.
    let accepted = lazyboy_tests::tell(&daemon, "writer", "only a, nothing else").await;
    assert!(accepted.steered);
    assert_eq!(accepted.task.as_deref(), Some(task.as_str()));
    let steer = accepted.seq;
    std::fs::write(ws.path().join("go"), "").unwrap();
    let done = lazyboy_tests::wait_task_finished(&daemon, &task).await;
    assert_eq!(
        done.final_message.as_deref(),
        Some("understood: only a, nothing else")
    );
    assert_eq!(
        std::fs::read_to_string(ws.path().join("s.txt")).unwrap(),
        "a\n"
    );
    let events: Vec<_> = all_events(&daemon, 0)
        .await
        .into_iter()
        .filter(|e| e.task.as_deref() == Some(task.as_str()))
        .collect();
    assert!(
        events
            .iter()
            .any(|e| e.seq == steer && e.kind == "user_message")
    );
    let statuses: Vec<_> = events
        .iter()
        .filter(|e| e.kind == "tool_result")
        .map(|e| {
            (
                e.data["call_id"].as_str().unwrap().to_owned(),
                e.data["status"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        statuses,
        [
            ("b1".to_owned(), "ok".to_owned()),
            ("b2".to_owned(), "skipped".to_owned()),
            ("b3".to_owned(), "skipped".to_owned()),
            ("b4".to_owned(), "ok".to_owned()),
        ]
    );
    daemon.stop();
}
