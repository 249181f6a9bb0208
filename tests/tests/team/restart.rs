//! `lazyboy daemon restart` with tasks in the middle of a tool call: the old daemon lets the
//! calls finish and record their results (their checkpoints) before it exits, starts nothing
//! new meanwhile, and the new daemon resumes every task from there; no call runs twice and
//! none is reported `unknown` (measured as in the crash tests: each command counts its runs).

use std::io::Read;
use std::process::Stdio;

use super::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restart_lets_running_tool_calls_finish_and_reruns_nothing() {
    let mock = MockModel::start().await;
    let config = format!(
        "max_concurrent_tasks = 8\n{}",
        model_config(&mock, "openai")
    );
    let daemon = TestDaemon::start_with(&config, &[]).await;
    let ws = tempfile::tempdir().unwrap();
    // Each task runs one command that counts its runs and waits for `go`; then it answers.
    mock.set_fallback_fn(|request| {
        let objective = request
            .messages
            .iter()
            .find_map(|m| match m {
                lazyboy_tests::mock_model::SeenMessage::User { text } => Some(text.clone()),
                _ => None,
            })
            .unwrap_or_default();
        let n = objective.trim_start_matches("job ").to_owned();
        match request.tool_result_for(&format!("x{n}")) {
            None => Reply::tool_call(
                format!("x{n}"),
                "exec_command",
                serde_json::json!({
                    "cmd": format!("echo ran >> count{n}.txt; while [ ! -e go ]; do sleep 0.02; done; echo finished"),
                    "block_until_ms": 60000
                }),
            ),
            Some(result) => Reply::text(format!("saw: {result}")),
        }
    });
    let mut ids = Vec::new();
    for n in 0..8 {
        let agent = format!("r{n}");
        add_agent(&daemon, &agent).await;
        ids.push(
            lazyboy_tests::create_task(&daemon, &agent, &format!("job {n}"), Some(ws.path())).await,
        );
    }
    let counters: Vec<_> = (0..8)
        .map(|n| ws.path().join(format!("count{n}.txt")))
        .collect();
    wait_for(Duration::from_secs(30), "all 8 commands running", || {
        std::future::ready(counters.iter().all(|c| c.exists()).then_some(()))
    })
    .await;

    let mut restart = lazyboy_tests::KillOnDrop(
        daemon
            .cli()
            .args(["daemon", "restart", "--json"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    // The old daemon says what it waits for, and waits: meanwhile a new task stays queued.
    let stderr = restart.0.stderr.take().unwrap();
    let (lines, said) = std::sync::mpsc::channel::<String>();
    std::thread::spawn(move || {
        use std::io::BufRead;
        for line in std::io::BufReader::new(stderr).lines() {
            let Ok(line) = line else { return };
            if lines.send(line).is_err() {
                return;
            }
        }
    });
    let mut told = Vec::new();
    let waiting = "waiting up to 60 s for 8 running task(s) to finish their tool calls";
    wait_for(
        Duration::from_secs(30),
        "restart to say what it waits for",
        || {
            told.extend(said.try_iter());
            std::future::ready(told.iter().any(|l| l.contains(waiting)).then_some(()))
        },
    )
    .await;
    add_agent(&daemon, "late").await;
    let late = lazyboy_tests::create_task(&daemon, "late", "job late", Some(ws.path())).await;
    assert!(
        restart.0.try_wait().unwrap().is_none(),
        "restart did not wait for the running calls"
    );
    std::fs::write(ws.path().join("go"), "").unwrap();
    let status = wait_for(Duration::from_secs(60), "restart to finish", || {
        std::future::ready(restart.0.try_wait().unwrap())
    })
    .await;
    told.extend(said.try_iter());
    let mut stdout = String::new();
    restart
        .0
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut stdout)
        .unwrap();
    assert!(status.success(), "{told:?}");
    let health: lazyboy_protocol::Health = serde_json::from_str(stdout.trim()).unwrap();
    assert_ne!(health.pid, daemon.pid(), "a new daemon answers");

    for id in ids.iter().chain([&late]) {
        let task = lazyboy_tests::wait_task_finished(&daemon, id).await;
        assert_eq!(task.verdict, Some(Verdict::Answer), "{id}: {task:?}");
    }
    // The task queued while the old daemon drained was started by the new one.
    let nodes: lazyboy_protocol::NodeList = daemon.client().get("/api/nodes").await.unwrap();
    let started_at = nodes.nodes[0].started_at_ms;
    let events = all_events(&daemon, 0).await;
    let late_ran = events
        .iter()
        .find(|e| {
            e.task.as_deref() == Some(late.as_str())
                && e.kind == "task_state"
                && e.data["state"] == "running"
        })
        .unwrap();
    assert!(
        late_ran.at_ms >= started_at,
        "the draining daemon started {late}"
    );
    for counter in &counters {
        assert_eq!(
            std::fs::read_to_string(counter).unwrap(),
            "ran\n",
            "a tool ran twice"
        );
    }
    let results: Vec<_> = events.iter().filter(|e| e.kind == "tool_result").collect();
    assert_eq!(results.len(), 9, "{results:#?}");
    for result in results {
        assert_eq!(
            result.data["status"], "ok",
            "cut off, not checkpointed: {result:?}"
        );
        assert!(
            result.data["output"]
                .as_str()
                .unwrap_or("")
                .contains("finished"),
            "{result:?}"
        );
    }
    let mut stop = daemon.cli();
    stop.args(["daemon", "stop"]);
    assert!(output_of(stop).await.status.success());
}
