//! Several daemons on one PostgreSQL database (issue 14), each a real `lazyboyd` on its own
//! home as a named node: tasks that run exactly once within the limits across both, a
//! `kill -9` whose tasks the other daemon recovers (in-flight calls `unknown`, never re-run),
//! a schedule that fires once with both up, nodes and pins; a node name held by a live
//! daemon is refused at once, one left by a killed daemon waited out, saying so.

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::time::{Duration, Instant};

use lazyboy_protocol::{EventBody, NodeList, Task, TaskList, TaskState, ToolStatus, Verdict};
use lazyboy_tests::fleet::{postgres_url, start_node};
use lazyboy_tests::mock_model::{CapturedRequest, MockModel, Reply};
use lazyboy_tests::{TestDaemon, add_agent, all_events, create_task, model_config, wait_for};
use serde_json::json;

const LEASE: Duration = Duration::from_millis(1500);

/// The model every task meets: its first request runs `command` for the job named in the
/// objective (`job-N`); once a result is in, it answers.
fn one_command_per_job(mock: &MockModel, counts: &Path, then: &'static str, delay: Duration) {
    let counts = counts.to_owned();
    mock.set_fallback_fn(move |request: &CapturedRequest| {
        if request.last_tool_result().is_some() {
            return Reply::text("done").delay(delay);
        }
        let objective = request.last_user_text().unwrap_or_default();
        let job = objective
            .split_whitespace()
            .find(|w| w.starts_with("job-"))
            .unwrap_or("job-unknown");
        let file = counts.join(job);
        let cmd = format!("echo ran >> {}{then}", file.display());
        Reply::tool_call("c1", "exec_command", json!({ "cmd": cmd })).delay(delay)
    });
}

/// How many times each job's command ran.
fn runs(counts: &Path) -> HashMap<String, usize> {
    std::fs::read_dir(counts)
        .unwrap()
        .map(|entry| {
            let entry = entry.unwrap();
            let text = std::fs::read_to_string(entry.path()).unwrap();
            (
                entry.file_name().to_string_lossy().into_owned(),
                text.lines().count(),
            )
        })
        .collect()
}

async fn tasks(daemon: &TestDaemon) -> Vec<Task> {
    let list: TaskList = daemon.client().get("/api/tasks?limit=1000").await.unwrap();
    list.tasks
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_daemons_run_forty_tasks_once_each_within_the_limits() {
    let url = postgres_url().await;
    let mock = MockModel::start().await;
    let counts = tempfile::tempdir().unwrap();
    one_command_per_job(&mock, counts.path(), "", Duration::from_millis(120));
    let config = format!(
        "max_concurrent_tasks = 3\n{}",
        model_config(&mock, "openai")
    );
    let a = start_node(&config, &url, "a", LEASE).await;
    let b = start_node(&config, &url, "b", LEASE).await;
    let agents: Vec<String> = (0..8).map(|i| format!("g{i}")).collect();
    for agent in &agents {
        add_agent(&a, agent).await;
    }
    // Two agents live on b: only b may run their tasks.
    for pinned in ["g6", "g7"] {
        let response = a
            .http
            .patch(a.url(&format!("/api/agents/{pinned}")))
            .json(&json!({ "node": "b" }))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200);
    }
    let workspace = tempfile::tempdir().unwrap();
    let mut created = Vec::new();
    for n in 0..40 {
        let daemon = if n % 2 == 0 { &a } else { &b };
        let agent = &agents[n % 8];
        created.push(
            create_task(
                daemon,
                agent,
                &format!("do job-{n}"),
                Some(workspace.path()),
            )
            .await,
        );
    }
    wait_for(Duration::from_secs(120), "all 40 tasks to end", || async {
        let list: TaskList = a
            .client()
            .get("/api/tasks?state=done&limit=100")
            .await
            .ok()?;
        (list.tasks.len() == 40).then_some(())
    })
    .await;

    // Each task's side effect happened exactly once.
    let ran = runs(counts.path());
    assert_eq!(ran.len(), 40, "{ran:?}");
    assert!(ran.values().all(|n| *n == 1), "a task ran twice: {ran:?}");
    let tasks = tasks(&b).await;
    let node_of: HashMap<String, String> = tasks
        .iter()
        .map(|t| (t.id.clone(), t.node.clone().unwrap_or_default()))
        .collect();
    let agent_of: HashMap<String, String> = tasks
        .iter()
        .map(|t| (t.id.clone(), t.agent.clone()))
        .collect();
    for task in &tasks {
        assert_eq!(task.verdict, Some(Verdict::Answer));
        if task.agent == "g6" || task.agent == "g7" {
            assert_eq!(
                task.node.as_deref(),
                Some("b"),
                "a pinned agent's task ran elsewhere"
            );
        }
    }
    let per_node = |node: &str| node_of.values().filter(|n| *n == node).count();
    assert!(per_node("a") > 0 && per_node("b") > 0, "{node_of:?}");
    assert_eq!(per_node("a") + per_node("b"), 40);

    // The log (one order for both writers): one task per agent at a time across both
    // daemons, at most 3 per daemon.
    let mut open: Vec<String> = Vec::new();
    let mut peak = 0;
    for event in all_events(&a, 0).await {
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
            }
            Some(EventBody::TaskFinished { .. }) => open.retain(|t| t != task),
            _ => {}
        }
        for node in ["a", "b"] {
            let here = open.iter().filter(|t| node_of[*t] == node).count();
            assert!(here <= 3, "{here} tasks ran at once on {node}");
        }
        peak = peak.max(open.len());
    }
    assert!(
        peak > 3,
        "the two daemons ran tasks side by side (peak {peak})"
    );
    mock.assert_clean();

    let nodes: NodeList = a.client().get("/api/nodes").await.unwrap();
    assert_eq!(nodes.this, "a");
    let names: Vec<(&str, bool)> = nodes
        .nodes
        .iter()
        .map(|n| (n.name.as_str(), n.alive))
        .collect();
    assert_eq!(names, [("a", true), ("b", true)]);
    let mut cli = a.cli();
    cli.arg("nodes");
    let listed = lazyboy_tests::output_of(cli).await;
    let listed = String::from_utf8_lossy(&listed.stdout).into_owned();
    assert!(listed.contains("* a") && listed.contains(" b "), "{listed}");
    a.stop();
    b.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_killed_daemons_tasks_are_recovered_by_the_other_and_never_rerun() {
    let url = postgres_url().await;
    let mock = MockModel::start().await;
    let counts = tempfile::tempdir().unwrap();
    // The command outlives the daemon that started it: its call is in flight at the kill.
    one_command_per_job(&mock, counts.path(), "; sleep 10", Duration::ZERO);
    let config = model_config(&mock, "openai");
    let mut a = start_node(&config, &url, "a", LEASE).await;
    let workspace = tempfile::tempdir().unwrap();
    let mut ids = Vec::new();
    for n in 0..3 {
        let agent = add_agent(&a, &format!("k{n}")).await;
        ids.push(create_task(&a, &agent, &format!("do job-{n}"), Some(workspace.path())).await);
    }
    wait_for(
        Duration::from_secs(30),
        "every command to be running on a",
        || async { (runs(counts.path()).len() == 3).then_some(()) },
    )
    .await;
    // b comes up while a lives: a's tasks stay a's.
    let b = start_node(&config, &url, "b", LEASE).await;
    let before: Vec<Task> = tasks(&b).await;
    assert!(
        before
            .iter()
            .all(|t| t.node.as_deref() == Some("a") && t.state == TaskState::Running)
    );
    let killed = Instant::now();
    a.kill9();
    let finished = wait_for(Duration::from_secs(60), "b to finish a's tasks", || async {
        let list = tasks(&b).await;
        list.iter().all(|t| t.verdict.is_some()).then_some(list)
    })
    .await;
    let took = killed.elapsed();
    assert!(
        took >= LEASE / 2,
        "recovered before a's lease could run out ({took:?})"
    );
    for task in &finished {
        assert_eq!(task.verdict, Some(Verdict::Answer), "{task:?}");
        assert_eq!(task.node.as_deref(), Some("b"));
        let events = lazyboy_tests::task_events(&b, &task.id).await;
        assert!(events.contains(&EventBody::TaskState {
            state: TaskState::Recovering
        }));
        let results: Vec<&ToolStatus> = events
            .iter()
            .filter_map(|e| match e {
                EventBody::ToolResult { status, .. } => Some(status),
                _ => None,
            })
            .collect();
        assert_eq!(
            results,
            [&ToolStatus::Unknown],
            "the in-flight call is unknown, once"
        );
    }
    let ran = runs(counts.path());
    assert!(
        ran.values().all(|n| *n == 1),
        "a command ran again: {ran:?}"
    );
    let nodes: NodeList = b.client().get("/api/nodes").await.unwrap();
    let a_node = nodes.nodes.iter().find(|n| n.name == "a").unwrap();
    assert!(!a_node.alive && a_node.running.is_empty(), "{a_node:?}");
    mock.assert_clean();
    b.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_schedule_due_with_both_daemons_up_fires_once_per_slot() {
    let url = postgres_url().await;
    let mock = MockModel::start().await;
    mock.set_fallback(Reply::text("tick done"));
    let config = model_config(&mock, "openai");
    let a = start_node(&config, &url, "a", LEASE).await;
    let b = start_node(&config, &url, "b", LEASE).await;
    add_agent(&a, "ticker").await;
    let response = b
        .http
        .post(b.url("/api/agents/ticker/schedules"))
        .json(&json!({ "cron": "* * * * * *", "objective": "tick" }))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 201, "{}", response.text().await.unwrap());
    let fired = wait_for(Duration::from_secs(30), "six slots to fire", || async {
        let fired: Vec<i64> = all_events(&a, 0)
            .await
            .iter()
            .filter_map(|e| match e.body() {
                Some(EventBody::ScheduleFired { due_at_ms, .. }) => Some(due_at_ms),
                _ => None,
            })
            .collect();
        (fired.len() >= 6).then_some(fired)
    })
    .await;
    let unique: HashSet<i64> = fired.iter().copied().collect();
    assert_eq!(unique.len(), fired.len(), "a slot fired twice: {fired:?}");
    let created = all_events(&a, 0)
        .await
        .iter()
        .filter(|e| matches!(e.body(), Some(EventBody::TaskCreated { .. })))
        .count();
    assert!(created >= fired.len());
    a.stop();
    b.stop();
}

/// `lazyboy daemon start` for a second home on the same database and node name (two homes
/// on one host, no `--node`): refused at once while the holder lives, naming it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_name_held_by_a_live_daemon_is_refused_at_once() {
    let url = postgres_url().await;
    // A lease long enough that waiting one out would show.
    let lease = Duration::from_secs(30);
    let first = start_node("", &url, "shared", lease).await;
    // Frozen, so its heartbeat stands still as a killed daemon's would: what tells them
    // apart is that its process lives.
    let frozen = nix::unistd::Pid::from_raw(first.pid() as i32);
    nix::sys::signal::kill(frozen, nix::sys::signal::Signal::SIGSTOP).unwrap();
    let home = lazyboy_tests::temp_home();
    let mut start = lazyboy_tests::cli(home.path());
    start
        .args(["daemon", "start"])
        .env("LAZYBOY_DATABASE_URL", &url)
        .env("LAZYBOY_NODE", "shared")
        .env("LAZYBOY_LEASE_TTL_MS", lease.as_millis().to_string());
    let began = Instant::now();
    let output = lazyboy_tests::output_of(start).await;
    let took = began.elapsed();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "{stderr}");
    assert!(
        took < lease / 2,
        "it waited for a live daemon's heartbeat to go stale ({took:?}): {stderr}"
    );
    for part in [
        "\"shared\" is held by a live lazyboyd".to_owned(),
        format!("pid {}", first.pid()),
        first.health.url.clone(),
        "--node".to_owned(),
    ] {
        assert!(stderr.contains(&part), "{part:?} missing: {stderr}");
    }
    assert!(
        !stderr.contains(&url),
        "the database URL (a secret) was printed: {stderr}"
    );
    nix::sys::signal::kill(frozen, nix::sys::signal::Signal::SIGCONT).unwrap();
    first.stop();
}

/// The same name left by a daemon killed with -9: its heartbeat is still fresh, so the new
/// daemon waits it out, and `daemon start` says what it waits for and for how long.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_name_left_by_a_killed_daemon_is_waited_out_saying_so() {
    let url = postgres_url().await;
    let lease = Duration::from_secs(3);
    let mut first = start_node("", &url, "left", lease).await;
    let pid = first.pid();
    first.kill9();
    let home = lazyboy_tests::temp_home();
    let mut start = lazyboy_tests::cli(home.path());
    start
        .args(["--json", "daemon", "start"])
        .env("LAZYBOY_DATABASE_URL", &url)
        .env("LAZYBOY_NODE", "left")
        .env("LAZYBOY_LEASE_TTL_MS", lease.as_millis().to_string());
    let output = lazyboy_tests::output_of(start).await;
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert!(
        stderr.contains(&format!("\"left\" is held by pid {pid}"))
            && stderr.contains("waiting up to 4 s"),
        "{stderr}"
    );
    let health: lazyboy_protocol::Health = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(health.node, "left");
    let mut stop = lazyboy_tests::cli(home.path());
    stop.args(["daemon", "stop"]);
    assert!(lazyboy_tests::output_of(stop).await.status.success());
}
