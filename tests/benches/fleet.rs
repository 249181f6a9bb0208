//! Fleet benchmarks (issue 14): appends/s and append → SSE latency on PostgreSQL with one
//! and two daemons next to SQLite; task claim throughput with two daemons and 1,000 queued
//! tasks; failover time after `kill -9` (lease TTL plus claim).
//!
//! `scripts/postgres-cluster cargo bench -p lazyboy-tests --bench fleet` — prints a markdown
//! table for `docs/benchmarks.md`. `BENCH_QUICK=1` for a smoke run.

use std::time::{Duration, Instant};

use futures_util::StreamExt;
use lazyboy_protocol::{EventBody, TaskState};
use lazyboy_tests::bench::{self, median, quick};
use lazyboy_tests::fleet::{postgres_url, start_node};
use lazyboy_tests::mock_model::{MockModel, Reply};
use lazyboy_tests::{
    TestDaemon, add_agent, all_events, create_task, model_config, post_message, sse, wait_for,
};
use lazyboyd::bus::Bus;
use lazyboyd::store::{Database, Fleet, Store};
use sqlx::Connection;
use tokio::sync::mpsc;

type Row = (String, String, String);

fn main() {
    bench::runtime().block_on(run());
}

async fn run() {
    let mut rows = Vec::new();
    let lease = Duration::from_secs(30);
    let sqlite = TestDaemon::start().await;
    events(&mut rows, "SQLite, one daemon", &sqlite, &sqlite).await;
    sqlite.stop();
    let url = postgres_url().await;
    let one = start_node("", &url, "a", lease).await;
    events(&mut rows, "PostgreSQL, one daemon", &one, &one).await;
    let two = start_node("", &url, "b", lease).await;
    events(
        &mut rows,
        "PostgreSQL, two daemons (written on b, read on a)",
        &two,
        &one,
    )
    .await;
    one.stop();
    two.stop();
    claims(&mut rows).await;
    failover(&mut rows).await;
    println!("| measure | result | target |\n|---|---|---|");
    for (what, result, target) in rows {
        println!("| {what} | {result} | {target} |");
    }
}

fn ms(d: Duration) -> String {
    format!("{:.3} ms", d.as_secs_f64() * 1000.0)
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

/// Appends/s (1 and 8 clients) on `writer`, and append → SSE receipt on `reader`.
async fn events(rows: &mut Vec<Row>, setup: &str, writer: &TestDaemon, reader: &TestDaemon) {
    let agent = format!("bench{}", writer.health.pid);
    add_agent(writer, &agent).await;
    let samples = if quick() { 100 } else { 1000 };
    let mut stream = Box::pin(sse::connect_ids(&reader.http, &reader.url("/api/events")).await);
    let (tx, mut rx) = mpsc::unbounded_channel::<(i64, Instant)>();
    let follower = tokio::spawn(async move {
        while let Some(seq) = stream.next().await {
            if tx.send((seq, Instant::now())).is_err() {
                return;
            }
        }
    });
    let base = writer.url("");
    let mut latencies = Vec::with_capacity(samples);
    for i in 0..samples {
        let sent = Instant::now();
        let seq = post_message(&writer.http, &base, &agent, &format!("latency {i}"))
            .await
            .unwrap();
        loop {
            let (received, at) = rx.recv().await.unwrap();
            if received == seq {
                latencies.push(at - sent);
                break;
            }
        }
    }
    follower.abort();
    latencies.sort();
    rows.push((
        format!("{setup}: append → SSE receipt, p50 / p99 ({samples} appends)"),
        format!(
            "{} / {}",
            ms(percentile(&latencies, 0.5)),
            ms(percentile(&latencies, 0.99))
        ),
        "report".into(),
    ));
    for clients in [1usize, 8] {
        let count = if quick() { 400 } else { 4000 };
        let started = Instant::now();
        let workers: Vec<_> = (0..clients)
            .map(|c| {
                let (http, base, agent) = (writer.http.clone(), base.clone(), agent.clone());
                tokio::spawn(async move {
                    for i in 0..count / clients {
                        post_message(&http, &base, &agent, &format!("{c}/{i}"))
                            .await
                            .unwrap();
                    }
                })
            })
            .collect();
        for worker in workers {
            worker.await.unwrap();
        }
        let rate = count as f64 / started.elapsed().as_secs_f64();
        rows.push((
            format!("{setup}: appends/s, {clients} client(s), one event per request"),
            format!("{rate:.0}"),
            "report".into(),
        ));
    }
}

/// 1,000 queued tasks over 100 agents, two daemons (16 slots each) claiming them. The tasks
/// have no model, so each ends `failed` at once: what is measured is claim, start and end.
async fn claims(rows: &mut Vec<Row>) {
    let tasks = if quick() { 200 } else { 1000 };
    let url = postgres_url().await;
    let setup = Store::connect(
        &Database::Postgres(url.clone()),
        Bus::default(),
        Fleet {
            node: "setup".into(),
            ..Fleet::default()
        },
    )
    .await
    .unwrap();
    for a in 0..100 {
        let name = format!("c{a:03}");
        setup.create_agent(&name, "", None, None).await.unwrap();
        // Pinned to nobody until both daemons are up.
        setup.pin_agent(&name, Some("gate")).await.unwrap();
    }
    for t in 0..tasks {
        setup
            .create_task(&format!("c{:03}", t % 100), "job", "/tmp")
            .await
            .unwrap();
    }
    let config = "max_concurrent_tasks = 16\n";
    let lease = Duration::from_secs(30);
    let a = start_node(config, &url, "a", lease).await;
    let b = start_node(config, &url, "b", lease).await;
    let mut conn = sqlx::PgConnection::connect(&url).await.unwrap();
    let opened = Instant::now();
    sqlx::query("UPDATE agents SET node = NULL")
        .execute(&mut conn)
        .await
        .unwrap();
    // One more task: its event wakes both daemons' schedulers at once.
    setup.create_task("c000", "job", "/tmp").await.unwrap();
    // Counted in the database: the API's task list is a page of at most 1,000.
    let ended = || async {
        let mut conn = sqlx::PgConnection::connect(&url).await.ok()?;
        let n: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM tasks WHERE state = 'failed'")
            .fetch_one(&mut conn)
            .await
            .ok()?;
        (usize::try_from(n).ok()? == tasks + 1).then_some(())
    };
    wait_for(Duration::from_secs(300), "every task to end", ended).await;
    let took = opened.elapsed();
    let running: Vec<i64> = all_events(&a, 0)
        .await
        .iter()
        .filter(|e| {
            matches!(
                e.body(),
                Some(EventBody::TaskState {
                    state: TaskState::Running
                })
            )
        })
        .map(|e| e.at_ms)
        .collect();
    let span = Duration::from_millis(
        (running.iter().max().unwrap() - running.iter().min().unwrap()) as u64,
    );
    let on_a: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM tasks WHERE owner = 'a'")
        .fetch_one(&mut conn)
        .await
        .unwrap();
    let on_a = usize::try_from(on_a).unwrap();
    rows.push((
        format!(
            "claims/s, 2 daemons × 16 slots, {} queued tasks (first to last claim)",
            tasks + 1
        ),
        format!(
            "{:.0} ({} on a, {} on b)",
            running.len() as f64 / span.as_secs_f64(),
            on_a,
            tasks + 1 - on_a
        ),
        "report".into(),
    ));
    rows.push((
        format!(
            "{} queued tasks claimed, started and ended by 2 daemons (wall)",
            tasks + 1
        ),
        format!("{:.2} s", took.as_secs_f64()),
        "report".into(),
    ));
    a.stop();
    b.stop();
    setup.close().await;
}

/// `kill -9` of the daemon running a task (its model request in flight) until the other
/// daemon records the task `recovering`, with a 3 s lease (the default is 30 s).
async fn failover(rows: &mut Vec<Row>) {
    let lease = Duration::from_secs(3);
    let runs = if quick() { 1 } else { 3 };
    let mut times = Vec::new();
    for _ in 0..runs {
        let url = postgres_url().await;
        let mock = MockModel::start().await;
        mock.set_fallback(Reply::text("late").delay(Duration::from_secs(120)));
        let config = model_config(&mock, "openai");
        let mut a = start_node(&config, &url, "a", lease).await;
        add_agent(&a, "f").await;
        let task = create_task(&a, "f", "wait for the model", None).await;
        mock.wait_for_requests(1).await;
        // b comes up once a runs the task (up before, b could have claimed it itself).
        let b = start_node(&config, &url, "b", lease).await;
        let killed = Instant::now();
        a.kill9();
        wait_for(Duration::from_secs(60), "b to recover the task", || async {
            lazyboy_tests::task_events(&b, &task)
                .await
                .contains(&EventBody::TaskState {
                    state: TaskState::Recovering,
                })
                .then_some(())
        })
        .await;
        times.push(killed.elapsed());
        drop(b);
    }
    rows.push((
        format!("failover after kill -9, lease TTL 3 s: kill → `recovering` on the other daemon, median of {runs}"),
        format!("{:.2} s", median(times).as_secs_f64()),
        "≤ TTL + TTL/3 + claim".into(),
    ));
}
