//! Keeping the work (issue 23) at scale, on the release daemon: a backup of a million-event
//! home (time and size), append → SSE latency and an agent's step idle and while backups run
//! back to back (target: within 20 % of idle), and a retention pass on the million events
//! (time and bytes freed).
//!
//! `cargo bench -p lazyboy-tests --bench keep` — prints a markdown table for
//! `docs/benchmarks.md`. `BENCH_QUICK=1`: 100,000 events and fewer repetitions.
//! `BENCH_FILLED=FILE` keeps the filled database in FILE for the next run.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use lazyboy_protocol::{BackupMade, RetentionReport, Task, paths};
use lazyboy_tests::bench::{self, median, quick};
use lazyboy_tests::growth::{self, Growth};
use lazyboy_tests::mock_model::{MockModel, Reply};
use lazyboy_tests::{
    TestDaemon, create_task, model_config, post_message, sse, temp_home, wait_for,
};
use serde_json::json;

fn main() {
    bench::runtime().block_on(run());
}

fn ms(d: Duration) -> String {
    format!("{:.3} ms", d.as_secs_f64() * 1000.0)
}

fn mb(bytes: u64) -> String {
    format!("{:.1} MB", bytes as f64 / 1e6)
}

fn file_bytes(home: &std::path::Path) -> u64 {
    ["", "-wal"]
        .iter()
        .filter_map(|s| std::fs::metadata(home.join(format!("{}{s}", paths::DATABASE))).ok())
        .map(|m| m.len())
        .sum()
}

async fn backup(daemon: &TestDaemon, path: &std::path::Path) -> BackupMade {
    let response = daemon
        .http
        .post(daemon.url("/api/backup"))
        .json(&json!({"path": path}))
        .send()
        .await
        .unwrap();
    assert!(
        response.status().is_success(),
        "{}",
        response.text().await.unwrap()
    );
    response.json().await.unwrap()
}

/// Append → SSE receipt of `n` notes, one at a time (each waits for the last to arrive).
async fn append_latency(daemon: &TestDaemon, n: usize) -> (Duration, Duration) {
    let start_seq = post_message(&daemon.http, &daemon.url(""), "bench", "start")
        .await
        .unwrap();
    let mut ids = Box::pin(
        sse::connect_ids(
            &daemon.http,
            &daemon.url(&format!("/api/events?after={start_seq}")),
        )
        .await,
    );
    let mut times = Vec::with_capacity(n);
    for i in 0..n {
        let sent = Instant::now();
        let seq = post_message(&daemon.http, &daemon.url(""), "bench", &format!("n{i}"))
            .await
            .unwrap();
        loop {
            let id = ids.next().await.unwrap();
            if id == seq {
                break;
            }
        }
        times.push(sent.elapsed());
    }
    times.sort();
    (times[n / 2], times[n * 99 / 100])
}

/// Notes appended per second by 4 connections posting as fast as they can, for `span`.
async fn append_rate(daemon: &TestDaemon, span: Duration) -> f64 {
    let until = Instant::now() + span;
    let writers: Vec<_> = (0..4)
        .map(|w| {
            let (http, base) = (daemon.http.clone(), daemon.url(""));
            tokio::spawn(async move {
                let mut n = 0u64;
                while Instant::now() < until {
                    post_message(&http, &base, "bench", &format!("r{w}/{n}"))
                        .await
                        .unwrap();
                    n += 1;
                }
                n
            })
        })
        .collect();
    let mut total = 0;
    for writer in writers {
        total += writer.await.unwrap();
    }
    total as f64 / span.as_secs_f64()
}

/// One agent's step: a task of `steps` quick commands, timed by its results' `at_ms`.
async fn step_time(daemon: &TestDaemon, mock: &MockModel, steps: usize) -> Duration {
    let ws = tempfile::tempdir().unwrap();
    for i in 0..steps {
        mock.push(Reply::tool_call(
            format!("s{i}"),
            "exec_command",
            json!({"cmd": format!("echo step {i} >> out.txt")}),
        ));
    }
    mock.push(Reply::tool_call(
        "m",
        "send_message",
        json!({"text": "done"}),
    ));
    mock.push(Reply::text("done"));
    let before = post_message(&daemon.http, &daemon.url(""), "bench", "steps next")
        .await
        .unwrap();
    let task = create_task(daemon, "bench", "steps", Some(ws.path())).await;
    let client = daemon.client();
    wait_for(Duration::from_secs(300), "the steps", || {
        let client = client.clone();
        let path = format!("/api/tasks/{task}");
        async move {
            let t: Task = client.get(&path).await.ok()?;
            t.verdict.is_some().then_some(())
        }
    })
    .await;
    let events = lazyboy_tests::all_events(daemon, before).await;
    let at: Vec<i64> = events
        .iter()
        .filter(|e| e.task.as_deref() == Some(task.as_str()) && e.kind == "tool_result")
        .map(|e| e.at_ms)
        .collect();
    // The commands' results come first (the `send_message` after them may end the turn
    // without a result of its own).
    assert!(at.len() >= steps, "{} results for {steps} steps", at.len());
    Duration::from_micros(((at[steps - 1] - at[0]) * 1000 / (steps as i64 - 1)) as u64)
}

async fn run() {
    let shape = if quick() {
        Growth {
            notes: 90_000,
            tasks: 10,
            ..Growth::MILLION
        }
    } else {
        Growth::MILLION
    };
    let reps = if quick() { 1 } else { 3 };
    let home = temp_home();
    let filled = Instant::now();
    // `BENCH_FILLED=FILE`: the filled database is copied from FILE when it exists (a re-run
    // skips the fill's minutes), else written and saved there. The caller keeps FILE in step
    // with the schema and the shape (delete it after a migration).
    let cached = std::env::var_os("BENCH_FILLED").map(std::path::PathBuf::from);
    let db = home.path().join(paths::DATABASE);
    match &cached {
        Some(file) if file.is_file() => {
            std::fs::copy(file, &db).unwrap();
            eprintln!("copied {} in {:?}", file.display(), filled.elapsed());
        }
        _ => {
            growth::fill(home.path(), "worker", shape).await;
            eprintln!("wrote {} events in {:?}", shape.events(), filled.elapsed());
            if let Some(file) = &cached {
                std::fs::copy(&db, file).unwrap();
            }
        }
    }
    let mock = MockModel::start().await;
    std::fs::write(
        home.path().join(paths::CONFIG),
        model_config(&mock, "openai"),
    )
    .unwrap();
    let daemon = TestDaemon::start_in(home.path(), &[]).await;
    lazyboy_tests::add_agent(&daemon, "bench").await;
    let mut rows: Vec<(String, String, String)> = Vec::new();
    let db = file_bytes(home.path());
    rows.push((
        format!("the home: {} events", shape.events()),
        mb(db),
        "—".into(),
    ));

    // Backups, one after another.
    let out = tempfile::tempdir().unwrap();
    let mut times = Vec::new();
    let mut size = 0;
    for i in 0..reps {
        let made = backup(&daemon, &out.path().join(format!("b{i}.tar.gz"))).await;
        times.push(Duration::from_millis(made.took_ms));
        size = made.bytes;
        std::fs::remove_file(&made.path).unwrap();
    }
    rows.push((
        format!(
            "`lazyboy backup` of {} events, median of {reps}",
            shape.events()
        ),
        format!(
            "{} ms, {} (.tar.gz of a {} database)",
            median(times).as_millis(),
            mb(size),
            mb(db)
        ),
        "report".into(),
    ));

    // Idle, then with backups running back to back.
    let n = if quick() { 200 } else { 1000 };
    let steps = if quick() { 20 } else { 60 };
    let (idle_p50, idle_p99) = append_latency(&daemon, n).await;
    let idle_step = step_time(&daemon, &mock, steps).await;
    let busy = Arc::new(AtomicBool::new(true));
    let made = Arc::new(AtomicU64::new(0));
    let runner = {
        let (http, url, busy, made, dir) = (
            daemon.http.clone(),
            daemon.url("/api/backup"),
            busy.clone(),
            made.clone(),
            out.path().to_owned(),
        );
        tokio::spawn(async move {
            let mut i = 0;
            while busy.load(Ordering::SeqCst) {
                let path = dir.join(format!("loop{i}.tar.gz"));
                let response = http
                    .post(&url)
                    .json(&json!({"path": path}))
                    .send()
                    .await
                    .unwrap();
                assert!(response.status().is_success());
                let _ = std::fs::remove_file(&path);
                made.fetch_add(1, Ordering::SeqCst);
                i += 1;
            }
        })
    };
    // Let the first backup get going (its snapshot) before measuring.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let (busy_p50, busy_p99) = append_latency(&daemon, n).await;
    let busy_step = step_time(&daemon, &mock, steps).await;
    let busy_rate = append_rate(&daemon, Duration::from_secs(if quick() { 2 } else { 5 })).await;
    busy.store(false, Ordering::SeqCst);
    runner.await.unwrap();
    let ratio = |busy: Duration, idle: Duration| busy.as_secs_f64() / idle.as_secs_f64();
    rows.push((
        format!("append → SSE p50 / p99 ({n} appends), idle"),
        format!("{} / {}", ms(idle_p50), ms(idle_p99)),
        "—".into(),
    ));
    rows.push((
        format!(
            "append → SSE p50 / p99 while backups run ({} made meanwhile)",
            made.load(Ordering::SeqCst)
        ),
        format!(
            "{} / {} (p50 ×{:.2})",
            ms(busy_p50),
            ms(busy_p99),
            ratio(busy_p50, idle_p50)
        ),
        "p50 within 20 % of idle (×1.2)".into(),
    ));
    rows.push((
        format!("agent step ({steps} steps), idle / while backups run"),
        format!(
            "{} / {} (×{:.2})",
            ms(idle_step),
            ms(busy_step),
            ratio(busy_step, idle_step)
        ),
        "within 20 % of idle (×1.2)".into(),
    ));

    rows.push((
        "appends/s from 4 connections while backups run (the backup test's load)".into(),
        format!("{busy_rate:.0} /s"),
        "≥ 1,000 /s".into(),
    ));

    // Retention on the whole log.
    let response = daemon
        .http
        .post(daemon.url("/api/retention/run"))
        .json(&json!({"days": 30}))
        .send()
        .await
        .unwrap();
    assert!(response.status().is_success());
    let report: RetentionReport = response.json().await.unwrap();
    rows.push((
        format!(
            "retention pass on {} events ({} results stubbed)",
            shape.events(),
            report.results
        ),
        format!(
            "{} ms; {} → {} ({:.1} % freed)",
            report.took_ms,
            mb(report.file_bytes_before),
            mb(report.file_bytes_after),
            100.0 * (1.0 - report.file_bytes_after as f64 / report.file_bytes_before as f64)
        ),
        "≥ 60 % freed".into(),
    ));
    daemon.stop();
    println!("| measure | result | target |\n|---|---|---|");
    for (what, result, target) in rows {
        println!("| {what} | {result} | {target} |");
    }
}
