//! Foundation benchmarks against the release daemon over real HTTP.
//!
//! `cargo bench -p lazyboy-tests --bench foundation` — prints a markdown table for
//! `docs/benchmarks.md`. Set `BENCH_QUICK=1` for a shorter run.

use std::time::{Duration, Instant};

use futures_util::StreamExt;
use lazyboy_tests::bench::{self, cpu_ticks, quick, status_kib};
use lazyboy_tests::{TestDaemon, add_agent, bin, post_message, sse};
use tokio::sync::mpsc;

fn main() {
    bench::runtime().block_on(run());
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let index = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[index]
}

fn ms(d: Duration) -> String {
    format!("{:.3} ms", d.as_secs_f64() * 1000.0)
}

fn rss_kib(pid: u32) -> u64 {
    status_kib(pid, "VmRSS").unwrap()
}

async fn run() {
    let mut rows: Vec<(String, String, String)> = Vec::new();
    let daemon = TestDaemon::start().await;
    // Idle RSS of a fresh daemon, after it settles.
    tokio::time::sleep(Duration::from_millis(500)).await;
    rows.push((
        "idle daemon RSS (fresh)".into(),
        format!("{:.1} MiB", rss_kib(daemon.pid()) as f64 / 1024.0),
        "< 30 MiB".into(),
    ));
    add_agent(&daemon, "bench").await;

    for subscribers in [1usize, 100] {
        let samples = if quick() {
            200
        } else {
            2000 / subscribers.min(4)
        };
        let cpu_before = cpu_ticks(daemon.pid());
        let (p50, p99) = latency(&daemon, subscribers, samples).await;
        let cpu = (cpu_ticks(daemon.pid()) - cpu_before) as f64 * 10_000.0 / samples as f64;
        rows.push((
            format!("daemon CPU per append with {subscribers} subscriber(s)"),
            format!("{cpu:.0} µs"),
            "—".into(),
        ));
        rows.push((
            format!(
                "append → SSE receipt, {subscribers} subscriber(s), p50 / p99 ({samples} appends)"
            ),
            format!("{} / {}", ms(p50), ms(p99)),
            "p50 < 1 ms, p99 < 5 ms".into(),
        ));
    }

    let serial = if quick() { 2_000 } else { 10_000 };
    let rate = appends(&daemon, 1, serial).await;
    rows.push((
        "appends/s, 1 client, one event per request".into(),
        format!("{rate:.0}"),
        "—".into(),
    ));
    let total = if quick() { 20_000 } else { 100_000 };
    let rate = appends(&daemon, 8, total - serial).await;
    rows.push((
        "appends/s, 8 concurrent clients".into(),
        format!("{rate:.0}"),
        "—".into(),
    ));

    let (count, took) = replay(&daemon).await;
    rows.push((
        format!("replay of {count} events to a new SSE subscriber"),
        ms(took),
        "< 1 s for 100,000".into(),
    ));
    // Past the reader pool's 30 s idle timeout.
    tokio::time::sleep(Duration::from_secs(if quick() { 1 } else { 35 })).await;
    rows.push((
        format!("idle daemon RSS (35 s after the above, {count} events in the log)"),
        format!("{:.1} MiB", rss_kib(daemon.pid()) as f64 / 1024.0),
        "< 30 MiB".into(),
    ));

    let (p50, p95) = status_wall(&daemon);
    rows.push((
        "`lazyboy daemon status` wall time, p50 / p95 (50 runs)".into(),
        format!("{} / {}", ms(p50), ms(p95)),
        "< 20 ms".into(),
    ));
    let mut daemon = daemon;
    let (status, took) = daemon.terminate();
    assert!(status.success(), "lazyboyd exited with {status}");
    rows.push((
        format!("SIGTERM → exit, with {count} events in the log"),
        ms(took),
        "< 5 s".into(),
    ));
    let mut stops: Vec<Duration> = Vec::new();
    for _ in 0..if quick() { 3 } else { 10 } {
        let fresh = TestDaemon::start().await;
        let mut fresh = fresh;
        let (status, took) = fresh.terminate();
        assert!(status.success(), "lazyboyd exited with {status}");
        stops.push(took);
    }
    stops.sort();
    rows.push((
        format!(
            "SIGTERM → exit, fresh daemon, p50 / max ({} runs)",
            stops.len()
        ),
        format!(
            "{} / {}",
            ms(percentile(&stops, 0.5)),
            ms(stops[stops.len() - 1])
        ),
        "< 5 s".into(),
    ));

    println!("| measure | result | target |\n|---|---|---|");
    for (what, result, target) in rows {
        println!("| {what} | {result} | {target} |");
    }
}

/// Appends one event at a time and waits until every subscriber has it; the latency of each
/// receipt is measured from just before the POST was sent.
async fn latency(daemon: &TestDaemon, subscribers: usize, samples: usize) -> (Duration, Duration) {
    let (tx, mut rx) = mpsc::unbounded_channel::<(i64, Instant)>();
    let mut tasks = Vec::new();
    for _ in 0..subscribers {
        let mut stream = Box::pin(sse::connect_ids(&daemon.http, &daemon.url("/api/events")).await);
        let tx = tx.clone();
        tasks.push(tokio::spawn(async move {
            while let Some(seq) = stream.next().await {
                if tx.send((seq, Instant::now())).is_err() {
                    return;
                }
            }
        }));
    }
    let base = daemon.url("");
    let mut latencies = Vec::with_capacity(samples * subscribers);
    for i in 0..samples {
        let sent = Instant::now();
        let seq = post_message(&daemon.http, &base, "bench", &format!("latency {i}"))
            .await
            .unwrap();
        let mut got = 0;
        while got < subscribers {
            let (received_seq, at) = rx.recv().await.unwrap();
            assert_eq!(received_seq, seq);
            latencies.push(at - sent);
            got += 1;
        }
    }
    for task in tasks {
        task.abort();
    }
    latencies.sort();
    (percentile(&latencies, 0.5), percentile(&latencies, 0.99))
}

/// Appends `count` events from `clients` concurrent clients; returns appends per second.
async fn appends(daemon: &TestDaemon, clients: usize, count: usize) -> f64 {
    let started = Instant::now();
    let tasks: Vec<_> = (0..clients)
        .map(|c| {
            let http = daemon.http.clone();
            let base = daemon.url("");
            tokio::spawn(async move {
                for i in 0..count / clients {
                    post_message(&http, &base, "bench", &format!("load {c}/{i}"))
                        .await
                        .unwrap();
                }
            })
        })
        .collect();
    for task in tasks {
        task.await.unwrap();
    }
    (count / clients * clients) as f64 / started.elapsed().as_secs_f64()
}

/// A new subscriber replays the whole log; returns how many events and how long it took.
async fn replay(daemon: &TestDaemon) -> (usize, Duration) {
    let last = lazyboy_tests::all_events(daemon, 0)
        .await
        .last()
        .unwrap()
        .seq;
    let started = Instant::now();
    let mut stream =
        Box::pin(sse::connect_ids(&daemon.http, &daemon.url("/api/events?after=0")).await);
    let mut count = 0;
    while let Some(seq) = stream.next().await {
        count += 1;
        if seq == last {
            break;
        }
    }
    (count, started.elapsed())
}

fn status_wall(daemon: &TestDaemon) -> (Duration, Duration) {
    let lazyboy = bin("lazyboy");
    let mut times: Vec<Duration> = (0..50)
        .map(|_| {
            let started = Instant::now();
            let output = std::process::Command::new(&lazyboy)
                .env("LAZYBOY_DAEMON_BIN", bin("lazyboyd"))
                .args(["daemon", "status"])
                .env("LAZYBOY_HOME", daemon.home())
                .output()
                .unwrap();
            assert!(output.status.success());
            started.elapsed()
        })
        .collect();
    times.sort();
    (percentile(&times, 0.5), percentile(&times, 0.95))
}
