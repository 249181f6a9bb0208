//! `lazyboy daemon restart` with 8 tasks in the middle of a tool call (each command counts its
//! runs and waits for a file), measured as the crash tests measure "no call re-run": after the
//! restart every counter says one run, and no result is `unknown`. Reported: from the calls
//! finishing (the file appears) to the new daemon answering, and the whole restart.

use std::process::Stdio;
use std::time::{Duration, Instant};

use lazyboy_protocol::Verdict;
use lazyboy_tests::mock_model::{MockModel, Reply, SeenMessage};
use lazyboy_tests::{
    KillOnDrop, TestDaemon, add_agent, all_events, create_task, model_config, output_of, wait_for,
    wait_task_finished,
};

use super::Row;

const TASKS: usize = 8;

pub async fn eight_tasks(rows: &mut Vec<Row>) {
    let mock = MockModel::start().await;
    mock.set_fallback_fn(|request| {
        let objective = request
            .messages
            .iter()
            .find_map(|m| match m {
                SeenMessage::User { text } => Some(text.clone()),
                _ => None,
            })
            .unwrap_or_default();
        let n = objective.trim_start_matches("job ").to_owned();
        match request.tool_result_for(&format!("x{n}")) {
            None => Reply::tool_call(
                format!("x{n}"),
                "exec_command",
                serde_json::json!({
                    "cmd": format!("echo ran >> count{n}.txt; while [ ! -e go ]; do sleep 0.01; done"),
                    "block_until_ms": 60000
                }),
            ),
            Some(_) => Reply::text("done"),
        }
    });
    let config = format!(
        "max_concurrent_tasks = {TASKS}\n{}",
        model_config(&mock, "openai")
    );
    let daemon = TestDaemon::start_with(&config, &[]).await;
    let ws = tempfile::tempdir().unwrap();
    let mut ids = Vec::new();
    for n in 0..TASKS {
        let agent = add_agent(&daemon, &format!("r{n}")).await;
        ids.push(create_task(&daemon, &agent, &format!("job {n}"), Some(ws.path())).await);
    }
    let counters: Vec<_> = (0..TASKS)
        .map(|n| ws.path().join(format!("count{n}.txt")))
        .collect();
    wait_for(Duration::from_secs(60), "every command running", || {
        std::future::ready(counters.iter().all(|c| c.exists()).then_some(()))
    })
    .await;
    let began = Instant::now();
    let mut restart = KillOnDrop(
        daemon
            .cli()
            .args(["daemon", "restart"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    // The calls finish a moment into the restart.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let released = Instant::now();
    std::fs::write(ws.path().join("go"), "").unwrap();
    let status = wait_for(Duration::from_secs(120), "the restart", || {
        std::future::ready(restart.0.try_wait().unwrap())
    })
    .await;
    let after_calls = released.elapsed();
    let whole = began.elapsed();
    assert!(status.success());
    for id in &ids {
        let task = wait_task_finished(&daemon, id).await;
        assert_eq!(task.verdict, Some(Verdict::Answer));
    }
    let reran = counters
        .iter()
        .filter(|c| std::fs::read_to_string(c).unwrap() != "ran\n")
        .count();
    let unknown = all_events(&daemon, 0)
        .await
        .iter()
        .filter(|e| e.kind == "tool_result" && e.data["status"] != "ok")
        .count();
    assert_eq!((reran, unknown), (0, 0));
    let mut stop = daemon.cli();
    stop.args(["daemon", "stop"]);
    assert!(output_of(stop).await.status.success());
    rows.push((
        format!("`daemon restart`, {TASKS} tasks mid-tool: calls done → new daemon answering"),
        format!("{:.0} ms", after_calls.as_secs_f64() * 1000.0),
        "report".into(),
    ));
    rows.push((
        "… the whole restart (calls released 500 ms in); calls re-run / `unknown`".into(),
        format!(
            "{:.0} ms; {reran} / {unknown}",
            whole.as_secs_f64() * 1000.0
        ),
        "0 / 0".into(),
    ));
}
