//! Long-work benchmarks (issue 11): per-step overhead late in a long task against early in
//! it, bytes sent to the model over a 300-round task with and without the context budget,
//! and the time to fit a request from a 10,000-event task.
//!
//! `cargo bench -p lazyboy-tests --bench context` — prints a markdown table for
//! `docs/benchmarks.md`. `BENCH_QUICK=1` for a 100-round task.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use lazyboy_protocol::{EventBody, ToolCallRecord, ToolStatus};
use lazyboy_tests::bench::{self, median, quick};
use lazyboy_tests::mock_model::{CapturedRequest, MockModel, Reply};
use lazyboy_tests::{TestDaemon, add_agent, create_task, model_config, wait_for};
use lazyboyd::agent::history::History;
use lazyboyd::context::tokens::Counter;
use lazyboyd::context::{Parts, build, stub_tokens};
use serde_json::json;

fn main() {
    bench::runtime().block_on(run());
}

fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1000.0)
}

/// One long task: `rounds` reads of a 4 KiB file, then the end. Returns the mock's requests.
async fn long_task(rounds: usize, context: u64) -> Vec<CapturedRequest> {
    let mock = MockModel::start().await;
    let config = model_config(&mock, "openai").replace(
        "model = \"mock-model\"",
        &format!("model = \"gpt-4o\"\ncontext_tokens = {context}"),
    );
    let daemon = TestDaemon::start_with(&config, &[]).await;
    add_agent(&daemon, "reader").await;
    let ws = tempfile::tempdir().unwrap();
    let words: String = (0..900).map(|i| format!("w{i} ")).collect();
    std::fs::write(ws.path().join("big.txt"), &words).unwrap();
    let n = Arc::new(AtomicUsize::new(0));
    let counter = n.clone();
    let router = Arc::new(move |request: &CapturedRequest| {
        if request.system.contains("You condense") {
            return Reply::text("Goals: read big.txt. Done: read it.");
        }
        let i = counter.fetch_add(1, Ordering::SeqCst);
        if i < rounds {
            Reply::tool_call(format!("r{i}"), "read_file", json!({"path": "big.txt"}))
        } else {
            Reply::text("finished")
        }
    });
    for _ in 0..rounds * 2 + 50 {
        let router = router.clone();
        mock.push_fn(move |request| router(request));
    }
    let id = create_task(
        &daemon,
        "reader",
        "read big.txt many times",
        Some(ws.path()),
    )
    .await;
    wait_for(Duration::from_secs(900), "the long task", || {
        let client = daemon.client();
        let id = id.clone();
        async move {
            let t: lazyboy_protocol::Task = client.get(&format!("/api/tasks/{id}")).await.ok()?;
            t.verdict.is_some().then_some(())
        }
    })
    .await;
    daemon.stop();
    mock.requests()
        .into_iter()
        .filter(|r| !r.system.contains("You condense"))
        .collect()
}

/// The daemon's time per step around round `at`: from one request's arrival to the next,
/// median over 10 rounds (the mock answers at once; a read of 4 KiB is the tool's work).
fn step_at(requests: &[CapturedRequest], at: usize) -> Duration {
    let steps: Vec<Duration> = requests[at - 5..at + 5]
        .windows(2)
        .map(|w| w[1].received_at - w[0].received_at)
        .collect();
    median(steps)
}

fn bytes_sent(requests: &[CapturedRequest]) -> usize {
    requests.iter().map(|r| r.body.to_string().len()).sum()
}

/// A 10,000-event task (objective, then replies, intents and 4 KiB results) folded into a
/// history, then fitted to a 128k window: the first fit counts every message, a later one
/// reuses the counts as the loop does.
fn fit_10k() -> (Duration, Duration, usize) {
    let mut history = History::default();
    let mut seq = 1;
    history.apply_at(
        seq,
        &EventBody::TaskCreated {
            objective: "read everything".into(),
            workspace: "/w".into(),
        },
    );
    let result: String = (0..900).map(|i| format!("w{i} ")).collect();
    while seq < 10_000 {
        let id = format!("c{seq}");
        let call = ToolCallRecord {
            id: id.clone(),
            name: "read_file".into(),
            arguments: "{\"path\":\"big.txt\"}".into(),
        };
        for body in [
            EventBody::AssistantReply {
                text: String::new(),
                tool_calls: vec![call],
            },
            EventBody::ToolCall {
                call_id: id.clone(),
                name: "read_file".into(),
                arguments: "{}".into(),
                effect: None,
            },
            EventBody::ToolResult {
                call_id: id,
                name: "read_file".into(),
                status: ToolStatus::Ok,
                output: result.clone(),
                progress: false,
            },
        ] {
            seq += 1;
            history.apply_at(seq, &body);
        }
    }
    let counter = Counter::for_model("gpt-4o");
    let started = Instant::now();
    let tokens: Vec<u64> = history
        .messages
        .iter()
        .map(|m| counter.message(m))
        .collect();
    let stubs: Vec<u64> = history
        .messages
        .iter()
        .zip(&history.meta)
        .zip(&tokens)
        .map(|((m, meta), t)| stub_tokens(&counter, m, *meta, *t))
        .collect();
    let fit = |tokens: &[u64]| {
        build(
            &counter,
            &Parts {
                fixed: 3000,
                messages: &history.messages,
                meta: &history.meta,
                tokens,
                stub_tokens: &stubs,
                summary: Some((5000, "Done: read the first half.")),
                context: 128_000,
            },
        )
        .unwrap()
    };
    fit(&tokens);
    let first = started.elapsed();
    let mut later = Vec::new();
    for _ in 0..20 {
        let started = Instant::now();
        let built = fit(&tokens);
        later.push(started.elapsed());
        assert!(built.dropped > 0);
    }
    (first, median(later), history.messages.len())
}

async fn run() {
    let rounds = if quick() { 100 } else { 300 };
    let trimmed = long_task(rounds, 16_000).await;
    let untrimmed = long_task(rounds, 1_000_000).await;
    let (first_fit, fit, messages) = tokio::task::spawn_blocking(fit_10k).await.unwrap();
    let early = step_at(&trimmed, 10);
    let late = step_at(&trimmed, rounds - 6);
    let early_whole = step_at(&untrimmed, 10);
    let late_whole = step_at(&untrimmed, rounds - 6);
    let rows = [
        (
            format!("step at round 10 / round {} (16k window)", rounds - 6),
            format!(
                "{} / {} ({:.2}×)",
                ms(early),
                ms(late),
                late.as_secs_f64() / early.as_secs_f64()
            ),
            "late within 1.5× of early".to_owned(),
        ),
        (
            "the same without trimming (1M window)".to_owned(),
            format!(
                "{} / {} ({:.2}×)",
                ms(early_whole),
                ms(late_whole),
                late_whole.as_secs_f64() / early_whole.as_secs_f64()
            ),
            "— (today's growth)".to_owned(),
        ),
        (
            format!("bytes sent to the model over {rounds} rounds, 16k window / untrimmed"),
            format!(
                "{:.1} MB / {:.1} MB",
                bytes_sent(&trimmed) as f64 / 1e6,
                bytes_sent(&untrimmed) as f64 / 1e6
            ),
            "report".to_owned(),
        ),
        (
            format!("fit a request from a 10,000-event task ({messages} messages), counts cached"),
            ms(fit),
            "< 5 ms".to_owned(),
        ),
        (
            "the first fit of it (every message counted with tiktoken)".to_owned(),
            ms(first_fit),
            "report".to_owned(),
        ),
    ];
    println!("| measure | result | target |\n|---|---|---|");
    for (what, result, target) in rows {
        println!("| {what} | {result} | {target} |");
    }
}
