//! Notification benchmarks (issue 17), the release daemon against loopback receivers:
//! event → push request sent (p50 / p99, the question's `at_ms` to the receiver's clock);
//! an agent's steady step with three channels configured, one of them hung, while another
//! agent's questions keep them busy, against the same with none; 1,000 questions in a burst,
//! each delivered once, and the daemon's memory before and after.
//!
//! `cargo bench -p lazyboy-tests --bench notify` — prints a markdown table for
//! `docs/benchmarks.md`. `BENCH_QUICK=1` for fewer repetitions.

use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use lazyboy_protocol::TaskList;
use lazyboy_tests::bench::{self, median, quick, status_kib};
use lazyboy_tests::mock_model::{MockModel, Reply, SeenMessage};
use lazyboy_tests::notify::{Answer, Receiver};
use lazyboy_tests::{TestDaemon, add_agent, create_task, model_config, wait_task_finished};
use serde_json::json;

fn main() {
    bench::runtime().block_on(run());
}

/// Every "ask" task asks one question; a "step N" task makes N plan updates, then ends.
fn script(mock: &MockModel) {
    let n = Arc::new(AtomicUsize::new(0));
    mock.set_fallback_fn(move |request| {
        let objective = lazyboy_tests::tasks::objective(request);
        let done = request
            .messages
            .iter()
            .filter(|m| matches!(m, SeenMessage::ToolResult { .. }))
            .count();
        let id = n.fetch_add(1, Ordering::Relaxed);
        if let Some(steps) = objective.strip_prefix("step ") {
            let steps: usize = steps.parse().unwrap_or(0);
            if done < steps {
                return Reply::tool_call(
                    format!("s{id}"),
                    "update_plan",
                    json!({"plan": [{"step": format!("step {done}"), "status": "in_progress"}]}),
                );
            }
            return Reply::text("done");
        }
        Reply::tool_call(
            format!("q{id}"),
            "request_user_input",
            json!({"question": format!("question {id}")}),
        )
    });
}

fn percentile(sorted: &[i64], p: f64) -> i64 {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

async fn daemon(mock: &MockModel, notify: &str) -> TestDaemon {
    // Top-level keys first, then the model's sections, then `[notify]`.
    let config = format!(
        "max_concurrent_tasks = 8\n{}\n{notify}\n",
        model_config(mock, "openai")
    );
    TestDaemon::start_with(&config, &[]).await
}

async fn run() {
    let mut rows: Vec<(String, String, String)> = Vec::new();

    // Event → push request sent.
    let n = if quick() { 50 } else { 300 };
    let hook = Receiver::start().await;
    let mock = MockModel::start().await;
    script(&mock);
    let d = daemon(
        &mock,
        &format!("[notify.webhook]\nurl = \"{}\"\n", hook.url("/h")),
    )
    .await;
    add_agent(&d, "a").await;
    for i in 0..n {
        create_task(&d, "a", &format!("ask {i}"), None).await;
        // Spaced, so each figure is one notification's own path, not a queue's.
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let got = hook.wait_for(n, Duration::from_secs(120)).await;
    let mut lat: Vec<i64> = got
        .iter()
        .map(|r| r.at_ms - r.json()["ts"].as_i64().unwrap())
        .collect();
    lat.sort();
    rows.push((
        format!("question → webhook request received, p50 / p99 ({n} questions)"),
        format!("{} / {} ms", percentile(&lat, 0.5), percentile(&lat, 0.99)),
        "< 100 / < 500 ms".into(),
    ));
    d.stop();

    // Steady step: none, then three channels (one hung) kept busy by another agent.
    let steps = if quick() { 30 } else { 100 };
    let reps = if quick() { 2 } else { 5 };
    let mut per_step = Vec::new();
    for busy in [false, true] {
        let hung = Receiver::start().await;
        hung.set_fallback(Answer::Hang);
        let ok = Receiver::start().await;
        let push = Receiver::start().await;
        let mock = MockModel::start().await;
        script(&mock);
        let notify = if busy {
            format!(
                "[notify]\ntimeout_secs = 600\nallow_hosts = [\"127.0.0.1:{}\"]\n\n\
                 [notify.webhook]\nurl = \"{}\"\n\n[notify.ntfy]\nurl = \"{}\"\n",
                push.addr.port(),
                hung.url("/h"),
                ok.url("/t")
            )
        } else {
            String::new()
        };
        let d = daemon(&mock, &notify).await;
        if busy {
            let rng = ring::rand::SystemRandom::new();
            let key =
                ring::agreement::EphemeralPrivateKey::generate(&ring::agreement::ECDH_P256, &rng)
                    .unwrap();
            use base64::Engine as _;
            let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
            let p256dh = b64.encode(key.compute_public_key().unwrap().as_ref());
            let response = d
                .http
                .post(d.url("/api/notify/subscriptions"))
                .json(&json!({"endpoint": push.url("/p"), "keys": {"p256dh": p256dh, "auth": b64.encode([1u8; 16])}}))
                .send()
                .await
                .unwrap();
            assert_eq!(response.status(), 201);
        }
        add_agent(&d, "stepper").await;
        add_agent(&d, "asker").await;
        let stop = tokio_util::sync::CancellationToken::new();
        let asker = {
            let (http, url, stop) = (
                d.http.clone(),
                d.url("/api/agents/asker/tasks"),
                stop.clone(),
            );
            tokio::spawn(async move {
                let mut i = 0;
                while !stop.is_cancelled() {
                    let _ = http
                        .post(&url)
                        .json(&json!({"objective": format!("ask {i}")}))
                        .send()
                        .await;
                    i += 1;
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            })
        };
        let mut times = Vec::new();
        for _ in 0..reps {
            let started = Instant::now();
            let task = create_task(&d, "stepper", &format!("step {steps}"), None).await;
            wait_task_finished(&d, &task).await;
            times.push(started.elapsed() / steps as u32);
        }
        stop.cancel();
        asker.await.unwrap();
        per_step.push(median(times));
        if busy {
            assert!(!hung.received().is_empty(), "the hung channel was tried");
            assert!(!ok.received().is_empty(), "the other channels sent");
        }
        d.stop();
    }
    let (none, busy) = (per_step[0], per_step[1]);
    rows.push((
        format!("steady step ({steps} steps, median of {reps}): no channels / three, one hung"),
        format!(
            "{:.2} / {:.2} ms ({:+.1} %)",
            none.as_secs_f64() * 1000.0,
            busy.as_secs_f64() * 1000.0,
            (busy.as_secs_f64() / none.as_secs_f64() - 1.0) * 100.0
        ),
        "within 5 %".into(),
    ));

    // A burst of 1,000 questions, first on a daemon with no channel (what the waiting tasks
    // themselves take: time to all waiting, memory), then with a webhook: the difference is
    // the notifier's share.
    let burst = if quick() { 200 } else { 1000 };
    let bare = burst_run(burst, None).await;
    let hook = Receiver::start().await;
    let sent = burst_run(burst, Some(&hook)).await;
    let got = hook.received();
    let ids: HashSet<String> = got
        .iter()
        .map(|r| r.header("x-lazyboy-delivery").unwrap().to_owned())
        .collect();
    rows.push((
        format!("{burst} questions in a burst: delivered / distinct"),
        format!("{} / {}", got.len(), ids.len()),
        format!("{burst} / {burst} (none dropped, none twice)"),
    ));
    rows.push((
        format!("{burst} tasks to all waiting: no channel / webhook (+ last delivery)"),
        format!(
            "{:.1} s / {:.1} s (+{:.1} s)",
            bare.waiting.as_secs_f64(),
            sent.waiting.as_secs_f64(),
            sent.delivered.saturating_sub(sent.waiting).as_secs_f64()
        ),
        "—".into(),
    ));
    rows.push((
        "daemon RSS before → after the burst: no channel / webhook".into(),
        format!(
            "{:.1} → {:.1} MiB / {:.1} → {:.1} MiB (the notifier's share {:+.1} MiB)",
            bare.rss.0,
            bare.rss.1,
            sent.rss.0,
            sent.rss.1,
            (sent.rss.1 - sent.rss.0) - (bare.rss.1 - bare.rss.0)
        ),
        "flat".into(),
    ));
    assert_eq!(got.len(), burst, "every question delivered once");
    assert_eq!(ids.len(), burst);

    println!("| measure | result | target |\n|---|---|---|");
    for (what, result, target) in rows {
        println!("| {what} | {result} | {target} |");
    }
}

struct Burst {
    /// From the first task created to all of them waiting for the person.
    waiting: Duration,
    /// From the first task created to the last question received (no channel: `waiting`).
    delivered: Duration,
    /// RSS in MiB before the burst and 3 s after its last delivery.
    rss: (f64, f64),
}

async fn burst_run(burst: usize, hook: Option<&Receiver>) -> Burst {
    let mock = MockModel::start().await;
    script(&mock);
    let notify = hook.map_or(String::new(), |h| {
        format!("[notify.webhook]\nurl = \"{}\"\n", h.url("/h"))
    });
    let d = daemon(&mock, &notify).await;
    add_agent(&d, "a").await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let before = status_kib(d.pid(), "VmRSS").unwrap();
    let started = Instant::now();
    for i in 0..burst {
        create_task(&d, "a", &format!("ask {i}"), None).await;
    }
    let deadline = Instant::now() + Duration::from_secs(900);
    loop {
        let list: TaskList = d
            .http
            .get(d.url("/api/tasks?state=waiting_for_human&limit=1000"))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let waiting = list.tasks.len();
        if waiting >= burst {
            break;
        }
        assert!(Instant::now() < deadline, "{waiting} of {burst} waiting");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let waiting = started.elapsed();
    if let Some(hook) = hook {
        hook.wait_for(burst, Duration::from_secs(900)).await;
    }
    let delivered = started.elapsed();
    tokio::time::sleep(Duration::from_secs(3)).await;
    let after = status_kib(d.pid(), "VmRSS").unwrap();
    d.stop();
    Burst {
        waiting,
        delivered,
        rss: (before as f64 / 1024.0, after as f64 / 1024.0),
    }
}
