//! The team as MCP tools (issue 19): the overhead of a `tools/call` of `task_status` over
//! stdio (`lazyboy mcp serve`, relaying to `/mcp` over the socket) and over streamable HTTP
//! (`/mcp` on TCP), the memory of an idle `lazyboy mcp serve`, and `ask_agent` with `wait_s`
//! for a 10-step mock task against the same task through `lazyboy run`.
//!
//! `cargo bench -p lazyboy-tests --bench mcp_server` — prints a markdown table for
//! `docs/benchmarks.md`. `BENCH_QUICK=1` for fewer repetitions.

use std::process::Stdio;
use std::time::{Duration, Instant};

use lazyboy_tests::bench::{self, median, quick, status_kib};
use lazyboy_tests::mock_model::{MockModel, Reply};
use lazyboy_tests::{TestDaemon, add_agent, bin, create_task, wait_task_finished};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdout};

fn main() {
    bench::runtime().block_on(run());
}

fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1000.0)
}

fn percentile(mut values: Vec<Duration>, p: f64) -> Duration {
    values.sort();
    values[((values.len() - 1) as f64 * p).round() as usize]
}

struct Stdio_ {
    child: Child,
    lines: Lines<BufReader<ChildStdout>>,
}

impl Stdio_ {
    async fn start(daemon: &TestDaemon) -> Stdio_ {
        let mut child = tokio::process::Command::new(bin("lazyboy"))
            .arg("--home")
            .arg(daemon.home())
            .args(["mcp", "serve"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let mut relay = Stdio_ { child, lines };
        relay
            .call(
                json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "protocolVersion": "2025-11-25", "capabilities": {},
                "clientInfo": {"name": "bench", "version": "1"}}}),
            )
            .await;
        relay
            .send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await;
        relay
    }

    async fn send(&mut self, message: &Value) {
        let stdin = self.child.stdin.as_mut().unwrap();
        stdin
            .write_all(format!("{message}\n").as_bytes())
            .await
            .unwrap();
        stdin.flush().await.unwrap();
    }

    async fn call(&mut self, request: Value) -> Value {
        self.send(&request).await;
        loop {
            let line = self.lines.next_line().await.unwrap().unwrap();
            let message: Value = serde_json::from_str(&line).unwrap();
            if message["id"] == request["id"] {
                return message;
            }
        }
    }
}

fn tool_call(id: i64, name: &str, arguments: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": name, "arguments": arguments}})
}

async fn http_session(daemon: &TestDaemon) -> String {
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "bench", "version": "1"}}});
    let response = post(daemon, None, &init).await;
    let session = response.headers()["mcp-session-id"]
        .to_str()
        .unwrap()
        .to_owned();
    response.text().await.unwrap();
    let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    post(daemon, Some(&session), &note)
        .await
        .text()
        .await
        .unwrap();
    session
}

async fn post(daemon: &TestDaemon, session: Option<&str>, body: &Value) -> reqwest::Response {
    let mut request = daemon
        .http
        .post(daemon.url("/mcp"))
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(body.to_string());
    if let Some(session) = session {
        request = request
            .header("mcp-session-id", session)
            .header("mcp-protocol-version", "2025-11-25");
    }
    request.send().await.unwrap()
}

/// `steps` model rounds: `steps - 1` plan updates, then the answer.
fn script(mock: &MockModel, steps: usize) {
    for n in 1..steps {
        mock.push(Reply::tool_call(
            format!("p{n}"),
            "update_plan",
            json!({"plan": [{"step": format!("step {n}"), "status": "in_progress"}]}),
        ));
    }
    mock.push(Reply::text("all ten steps done"));
}

async fn run() {
    let calls = if quick() { 50 } else { 500 };
    let runs = if quick() { 2 } else { 5 };
    let mock = MockModel::start().await;
    let daemon = TestDaemon::start_with_model(&mock, "openai", &[]).await;
    add_agent(&daemon, "researcher").await;
    script(&mock, 1);
    let task = create_task(&daemon, "researcher", "one step", None).await;
    wait_task_finished(&daemon, &task).await;
    let mut rows: Vec<(String, String)> = Vec::new();

    // task_status through the stdio relay.
    let mut relay = Stdio_::start(&daemon).await;
    let pid = relay.child.id().unwrap();
    tokio::time::sleep(Duration::from_secs(1)).await;
    let idle_rss = status_kib(pid, "VmRSS").unwrap();
    let mut stdio = Vec::new();
    for n in 0..calls {
        let started = Instant::now();
        let answer = relay
            .call(tool_call(10 + n, "task_status", json!({"task": task})))
            .await;
        stdio.push(started.elapsed());
        assert_eq!(answer["result"]["isError"], false, "{answer}");
    }
    let busy_rss = status_kib(pid, "VmHWM").unwrap();
    // task_status over HTTP.
    let session = http_session(&daemon).await;
    let mut http = Vec::new();
    for n in 0..calls {
        let started = Instant::now();
        let text = post(
            &daemon,
            Some(&session),
            &tool_call(10 + n, "task_status", json!({"task": task})),
        )
        .await
        .text()
        .await
        .unwrap();
        http.push(started.elapsed());
        assert!(text.contains("\"isError\":false"), "{text}");
    }
    // The plain API beside them: what the MCP layers add on top.
    let mut api = Vec::new();
    for _ in 0..calls {
        let started = Instant::now();
        let _: lazyboy_protocol::Task = daemon
            .client()
            .get(&format!("/api/tasks/{task}"))
            .await
            .unwrap();
        api.push(started.elapsed());
    }
    rows.push((
        format!("`tools/call task_status` over stdio, p50 / p95 of {calls}"),
        format!(
            "{} / {}",
            ms(median(stdio.clone())),
            ms(percentile(stdio, 0.95))
        ),
    ));
    rows.push((
        format!("`tools/call task_status` over HTTP, p50 / p95 of {calls}"),
        format!(
            "{} / {}",
            ms(median(http.clone())),
            ms(percentile(http, 0.95))
        ),
    ));
    rows.push((
        format!("`GET /api/tasks/{{id}}` over the socket (the CLI's path), p50 of {calls}"),
        ms(median(api)),
    ));
    rows.push((
        "`lazyboy mcp serve` RSS idle after initialize / peak after the calls".into(),
        format!(
            "{:.1} MiB / {:.1} MiB",
            idle_rss as f64 / 1024.0,
            busy_rss as f64 / 1024.0
        ),
    ));

    // A 10-step task: ask_agent with wait_s against lazyboy run.
    let mut asked = Vec::new();
    let mut ran = Vec::new();
    for n in 0..runs {
        script(&mock, 10);
        let started = Instant::now();
        let answer = relay
            .call(tool_call(
                10_000 + n,
                "ask_agent",
                json!({"agent": "researcher", "job": "ten steps", "wait_s": 120}),
            ))
            .await;
        asked.push(started.elapsed());
        assert_eq!(
            answer["result"]["structuredContent"]["state"], "done",
            "{answer}"
        );
        script(&mock, 10);
        let mut cli = daemon.cli();
        cli.args(["run", "--agent", "researcher", "ten steps"]);
        let started = Instant::now();
        let out = tokio::task::spawn_blocking(move || cli.output().unwrap())
            .await
            .unwrap();
        ran.push(started.elapsed());
        assert!(out.status.success(), "{out:?}");
    }
    let (asked, ran) = (median(asked), median(ran));
    rows.push((
        format!("10-step mock task, `ask_agent` with `wait_s` (stdio), median of {runs}"),
        ms(asked),
    ));
    rows.push((
        format!("the same through `lazyboy run`, median of {runs}"),
        format!(
            "{} ({:+.1} % for ask_agent)",
            ms(ran),
            (asked.as_secs_f64() / ran.as_secs_f64() - 1.0) * 100.0
        ),
    ));
    drop(relay);
    if std::env::var_os("BENCH_TIMELINE").is_some() {
        timeline(&daemon).await;
    }
    println!("| measure | figure |\n|---|---|");
    for (what, figure) in rows {
        println!("| {what} | {figure} |");
    }
    daemon.stop();
}

/// Each task's life from its events' `at_ms` (BENCH_TIMELINE=1): created → claimed →
/// finished, and the gap since the previous task finished.
async fn timeline(daemon: &TestDaemon) {
    let events = lazyboy_tests::all_events(daemon, 0).await;
    let mut order: Vec<String> = Vec::new();
    let mut at: std::collections::HashMap<String, Vec<(String, i64)>> = Default::default();
    for event in &events {
        let Some(task) = event.task.clone() else {
            continue;
        };
        if !order.contains(&task) {
            order.push(task.clone());
        }
        at.entry(task)
            .or_default()
            .push((event.kind.clone(), event.at_ms));
    }
    let mut last_end = None;
    for task in order {
        let kinds = &at[&task];
        let first = |k: &str| kinds.iter().find(|(kind, _)| kind == k).map(|(_, at)| *at);
        let created = first("task_created").unwrap_or(0);
        let claimed = first("task_state").unwrap_or(0);
        let finished = first("task_finished").unwrap_or(0);
        eprintln!(
            "{task}: gap {:?} created→state {} ms, →finished {} ms, {} events",
            last_end.map(|end| created - end),
            claimed - created,
            finished - created,
            kinds.len()
        );
        last_end = Some(finished);
    }
}
