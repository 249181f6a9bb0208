//! Fuses: a repeating model is reminded, then blocked; progress never trips them.

use super::*;

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
