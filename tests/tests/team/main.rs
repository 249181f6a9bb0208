//! Background tasks and the scheduler: `lazyboy ask`, `tasks`, `follow`, `stop`; one task per
//! agent at a time, a global concurrency limit, FIFO per agent.

use std::collections::HashMap;
use std::time::Duration;

use lazyboy_protocol::{EventBody, TaskList, TaskState, Verdict};
use lazyboy_tests::mock_model::{MockModel, Reply};
use lazyboy_tests::{TestDaemon, add_agent, all_events, model_config, output_of, wait_for};

mod answers;
mod recovery;
mod restart;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn twenty_agents_three_tasks_each_respect_the_limits() {
    let mock = MockModel::start().await;
    mock.set_fallback(Reply::text("ok").delay(Duration::from_millis(100)));
    // Top-level keys go before the tables.
    let config = format!(
        "max_concurrent_tasks = 4\n{}",
        model_config(&mock, "openai")
    );
    let daemon = TestDaemon::start_with(&config, &[]).await;
    let agents: Vec<String> = (0..20).map(|i| format!("a{i:02}")).collect();
    for agent in &agents {
        add_agent(&daemon, agent).await;
    }
    let mut created: HashMap<String, Vec<String>> = HashMap::new();
    for round in 0..3 {
        for agent in &agents {
            let mut command = daemon.cli();
            command.args(["ask", agent, &format!("job {round} for {agent}")]);
            let output = output_of(command).await;
            assert!(output.status.success());
            let id = String::from_utf8(output.stdout).unwrap().trim().to_owned();
            created.entry(agent.clone()).or_default().push(id);
        }
    }
    let client = daemon.client();
    wait_for(Duration::from_secs(60), "all 60 tasks done", || {
        let client = client.clone();
        async move {
            let list: TaskList = client.get("/api/tasks?state=done").await.ok()?;
            (list.tasks.len() == 60).then_some(())
        }
    })
    .await;

    // Replay the log: intervals from `running` to `task_finished`, in seq order.
    let events = all_events(&daemon, 0).await;
    let agent_of: HashMap<String, String> = created
        .iter()
        .flat_map(|(agent, ids)| ids.iter().map(move |id| (id.clone(), agent.clone())))
        .collect();
    let mut open: Vec<String> = Vec::new();
    let mut started_order: HashMap<String, Vec<String>> = HashMap::new();
    let mut peak = 0;
    for event in &events {
        let Some(task) = &event.task else { continue };
        match event.body() {
            Some(EventBody::TaskState {
                state: TaskState::Running,
            }) => {
                let agent = &agent_of[task];
                assert!(
                    !open.iter().any(|t| &agent_of[t] == agent),
                    "two tasks of {agent} ran at once"
                );
                open.push(task.clone());
                peak = peak.max(open.len());
                started_order
                    .entry(agent.clone())
                    .or_default()
                    .push(task.clone());
            }
            Some(EventBody::TaskFinished { verdict, .. }) => {
                assert_eq!(verdict, Verdict::Answer);
                open.retain(|t| t != task);
            }
            _ => {}
        }
        assert!(open.len() <= 4, "more than 4 tasks ran at once");
    }
    assert_eq!(peak, 4, "the limit was reached, and never exceeded");
    for (agent, ids) in &created {
        assert_eq!(
            &started_order[agent], ids,
            "{agent}'s tasks started in the order queued"
        );
    }
    assert_eq!(mock.request_count(), 60);
    mock.assert_clean();

    // `tasks` lists them; `follow` on a finished task prints it and exits with its code.
    let mut command = daemon.cli();
    command.args(["tasks", "--agent", "a03"]);
    let listed = String::from_utf8(output_of(command).await.stdout).unwrap();
    assert_eq!(
        listed.lines().filter(|l| l.contains("a03")).count(),
        3,
        "{listed}"
    );
    let mut command = daemon.cli();
    command.args(["follow", &created["a03"][0]]);
    let followed = output_of(command).await;
    assert_eq!(followed.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&followed.stdout).contains("[answer]"));
    daemon.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stopped_queued_task_never_starts() {
    let mock = MockModel::start().await;
    let daemon = TestDaemon::start_with_model(&mock, "openai", &[]).await;
    add_agent(&daemon, "ops").await;
    mock.push(Reply::text("slow").delay(Duration::from_millis(1500)));
    let ask = |objective: &'static str| {
        let mut command = daemon.cli();
        command.args(["ask", "ops", objective]);
        command
    };
    let first = String::from_utf8(output_of(ask("first")).await.stdout)
        .unwrap()
        .trim()
        .to_owned();
    let second = String::from_utf8(output_of(ask("second")).await.stdout)
        .unwrap()
        .trim()
        .to_owned();
    let task: lazyboy_protocol::Task = daemon
        .client()
        .get(&format!("/api/tasks/{second}"))
        .await
        .unwrap();
    assert_eq!(
        task.state,
        TaskState::Queued,
        "ops is busy with the first task"
    );
    let mut command = daemon.cli();
    command.args(["stop", &second]);
    assert!(output_of(command).await.status.success());
    let first_done = lazyboy_tests::wait_task_finished(&daemon, &first).await;
    assert_eq!(first_done.verdict, Some(Verdict::Answer));
    let second_done: lazyboy_protocol::Task = daemon
        .client()
        .get(&format!("/api/tasks/{second}"))
        .await
        .unwrap();
    assert_eq!(second_done.verdict, Some(Verdict::Cancelled));
    assert_eq!(
        mock.request_count(),
        1,
        "the stopped task never reached the model"
    );
    daemon.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_question_answered_after_a_restart_resumes_the_same_task() {
    let mock = MockModel::start().await;
    let mut daemon = TestDaemon::start_with_model(&mock, "openai", &[]).await;
    add_agent(&daemon, "shopper").await;
    mock.push(Reply::tool_call(
        "q1",
        "request_user_input",
        serde_json::json!({"question": "Which size?", "options": ["small", "large"]}),
    ));
    mock.push_fn(|request| {
        let answer = request.tool_result_for("q1").unwrap_or("").to_owned();
        Reply::tool_call(
            "m1",
            "send_message",
            serde_json::json!({"text": format!("ordering: {answer}")}),
        )
    });
    mock.push(Reply::text("ok"));
    let mut command = daemon.cli();
    command.args(["ask", "shopper", "buy a shirt"]);
    let id = String::from_utf8(output_of(command).await.stdout)
        .unwrap()
        .trim()
        .to_owned();
    let waiting = |daemon: &TestDaemon| {
        let client = daemon.client();
        let path = format!("/api/tasks/{id}");
        move || {
            let client = client.clone();
            let path = path.clone();
            async move {
                let task: lazyboy_protocol::Task = client.get(&path).await.ok()?;
                (task.state == TaskState::WaitingForHuman).then_some(task)
            }
        }
    };
    wait_for(Duration::from_secs(20), "the question", waiting(&daemon)).await;
    // Answering something that is not asked is refused, and so is a bad option.
    let bad = daemon
        .http
        .post(daemon.url(&format!("/api/tasks/{id}/answer")))
        .json(&serde_json::json!({"option": 3}))
        .send()
        .await
        .unwrap();
    assert_eq!(bad.status(), 400);

    // The daemon dies; the question survives it, and nothing resumes by itself.
    daemon.kill9();
    daemon.restart().await;
    let task = wait_for(Duration::from_secs(20), "still waiting", waiting(&daemon)).await;
    assert_eq!(task.verdict, None);
    assert_eq!(mock.request_count(), 1);

    let mut command = daemon.cli();
    command.args(["answer", &id, "--option", "2"]);
    assert!(output_of(command).await.status.success());
    let done = lazyboy_tests::wait_task_finished(&daemon, &id).await;
    assert_eq!(done.verdict, Some(Verdict::Answer));
    assert_eq!(
        done.final_message.as_deref(),
        Some("ordering: The person answered: large")
    );
    // Same task, one answer: the call that asked got exactly one result.
    let results: Vec<_> = all_events(&daemon, 0)
        .await
        .into_iter()
        .filter(|e| e.task.as_deref() == Some(id.as_str()) && e.kind == "tool_result")
        .filter(|e| e.data["call_id"] == "q1")
        .collect();
    assert_eq!(results.len(), 1);
    let again = daemon
        .http
        .post(daemon.url(&format!("/api/tasks/{id}/answer")))
        .json(&serde_json::json!({"text": "twice"}))
        .send()
        .await
        .unwrap();
    assert_eq!(again.status(), 409, "a finished task takes no answer");
    daemon.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn continue_resumes_an_ended_task_with_its_history() {
    let mock = MockModel::start().await;
    let daemon =
        TestDaemon::start_with_model(&mock, "openai", &[("LAZYBOY_MAX_ROUNDS_TOTAL", "2")]).await;
    add_agent(&daemon, "ops").await;
    for i in 0..2 {
        mock.push(Reply::tool_call(
            format!("l{i}"),
            "list_dir",
            serde_json::json!({}),
        ));
    }
    let mut command = daemon.cli();
    command.args(["ask", "ops", "look around"]);
    let id = String::from_utf8(output_of(command).await.stdout)
        .unwrap()
        .trim()
        .to_owned();
    let first = lazyboy_tests::wait_task_finished(&daemon, &id).await;
    assert_eq!(first.verdict, Some(Verdict::BudgetExhausted));

    mock.push_fn(|request| {
        // The whole history came along: both earlier calls and the request to continue.
        let seen = format!("{:?}", request.messages);
        let ok = seen.contains("l0") && seen.contains("l1") && seen.contains("Continue this task");
        Reply::tool_call(
            "c1",
            "send_message",
            serde_json::json!({"text": format!("history kept: {ok}")}),
        )
    });
    mock.push(Reply::text("ok"));
    let mut command = daemon.cli();
    command.args(["continue", &id]);
    assert!(output_of(command).await.status.success());
    let mut command = daemon.cli();
    command.args(["follow", &id]);
    let followed = output_of(command).await;
    assert_eq!(followed.status.code(), Some(0));
    let done: lazyboy_protocol::Task = daemon
        .client()
        .get(&format!("/api/tasks/{id}"))
        .await
        .unwrap();
    assert_eq!(done.verdict, Some(Verdict::Answer));
    assert_eq!(done.final_message.as_deref(), Some("history kept: true"));
    // Following the ended task replays both turns, to the last verdict.
    let mut command = daemon.cli();
    command.args(["follow", &id]);
    let replayed = output_of(command).await;
    assert_eq!(replayed.status.code(), Some(0));
    let printed = String::from_utf8(replayed.stdout).unwrap();
    assert!(
        printed.contains("budget_exhausted") && printed.contains("history kept: true"),
        "{printed}"
    );
    daemon.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_agents_memory_search_never_returns_anothers_memory() {
    let mock = MockModel::start().await;
    let daemon = TestDaemon::start_with_model(&mock, "openai", &[]).await;
    add_agent(&daemon, "alice").await;
    add_agent(&daemon, "bob").await;
    let ask = |agent: &str, job: &str| {
        let mut command = daemon.cli();
        command.args(["ask", agent, job]);
        command
    };
    mock.push(Reply::tool_call(
        "w1",
        "memory_write",
        serde_json::json!({"text": "alice's door code is 4711", "key": "door"}),
    ));
    mock.push(Reply::text("noted"));
    let a = String::from_utf8(output_of(ask("alice", "remember")).await.stdout).unwrap();
    lazyboy_tests::wait_task_finished(&daemon, a.trim()).await;
    for (id, agent) in [("s1", "bob"), ("s2", "alice")] {
        mock.push(Reply::tool_call(
            id,
            "memory_search",
            serde_json::json!({"query": "door code"}),
        ));
        mock.push(Reply::text("searched"));
        let t = String::from_utf8(output_of(ask(agent, "recall")).await.stdout).unwrap();
        lazyboy_tests::wait_task_finished(&daemon, t.trim()).await;
    }
    let requests = mock.requests();
    let bob_saw = requests
        .iter()
        .find_map(|r| r.tool_result_for("s1"))
        .unwrap();
    let alice_saw = requests
        .iter()
        .find_map(|r| r.tool_result_for("s2"))
        .unwrap();
    assert_eq!(bob_saw, "nothing found");
    assert!(alice_saw.contains("4711"), "{alice_saw}");
    daemon.stop();
}
