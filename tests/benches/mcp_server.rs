//! The team as MCP tools (issue 19): the overhead of a `tools/call` of `task_status` over
//! stdio (`lazyboy mcp serve`, relaying to `/mcp` over the socket) and over streamable HTTP
//! (`/mcp` on TCP), the memory of an idle `lazyboy mcp serve`, and `ask_agent` with `wait_s`
//! for a 10-step mock task against the same task through `lazyboy run` (and through a fresh
//! `lazyboy mcp serve`, which pays the setup `run` pays), each task's life split by its
//! events' `at_ms` into the caller's way in, the daemon's time and the caller's way out.
//!
//! `cargo bench -p lazyboy-tests --bench mcp_server` — prints a markdown table for
//! `docs/benchmarks.md`. `BENCH_QUICK=1` for fewer repetitions; `BENCH_TIMELINE=1` prints
//! each 10-step task's line.

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

struct Relay {
    child: Child,
    lines: Lines<BufReader<ChildStdout>>,
}

impl Relay {
    async fn start(daemon: &TestDaemon) -> Relay {
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
        let mut relay = Relay { child, lines };
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
    let runs = if quick() { 4 } else { 30 };
    let mock = MockModel::start().await;
    let daemon = TestDaemon::start_with_model(&mock, "openai", &[]).await;
    add_agent(&daemon, "researcher").await;
    script(&mock, 1);
    let task = create_task(&daemon, "researcher", "one step", None).await;
    wait_task_finished(&daemon, &task).await;
    let mut rows: Vec<(String, String)> = Vec::new();

    // task_status through the stdio relay.
    let mut relay = Relay::start(&daemon).await;
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

    drop(relay);
    rows.extend(compare(&daemon, &mock, runs).await);
    println!("| measure | figure |\n|---|---|");
    for (what, figure) in rows {
        println!("| {what} | {figure} |");
    }
    daemon.stop();
}

/// Which caller a 10-step task came through.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Caller {
    /// `ask_agent` with `wait_s` through an open `lazyboy mcp serve` session (how an MCP
    /// client uses it: the server lives as long as the client).
    Ask,
    /// The same from a `lazyboy mcp serve` spawned for it: spawn, `initialize`, the call;
    /// the setup a `lazyboy run` pays every time.
    Cold,
    /// `lazyboy run --agent`, a process spawned per task.
    Run,
}

const CALLERS: [Caller; 3] = [Caller::Ask, Caller::Run, Caller::Cold];

/// One timed task: who asked, the objective that names it, when the call started (wall
/// clock, to set beside the events' `at_ms`) and how long it took.
struct Timed {
    caller: Caller,
    objective: String,
    started_ms: f64,
    wall: Duration,
    /// Messages in the task's last model request (does the context grow task by task?).
    messages: usize,
    /// A fresh server's spawn → `initialize` answered and `initialized` sent.
    setup: Option<Duration>,
}

fn unix_ms() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64() * 1000.0)
}

/// The 10-step task `runs` times through each caller, alternating (and alternating which
/// goes first), then each task's life split by its events' `at_ms`: the call → created (the
/// caller's way in), created → claimed → finished (the daemon), finished → the caller has
/// its answer (its way out). `BENCH_TIMELINE=1` also prints each task's line.
async fn compare(daemon: &TestDaemon, mock: &MockModel, runs: i64) -> Vec<(String, String)> {
    let mut relay = Relay::start(daemon).await;
    // One workspace for both callers: `lazyboy run` would otherwise work in the bench's
    // directory and `ask_agent` in the agent's own.
    let dir = lazyboy_tests::temp_home();
    let workspace = dir.path().display().to_string();
    let mut timed = Vec::new();
    for n in 0..runs {
        // Each caller goes first, second and third in turn.
        for k in 0..CALLERS.len() {
            let caller = CALLERS[(n as usize + k) % CALLERS.len()];
            timed.push(one_task(daemon, mock, &mut relay, caller, n, &workspace).await);
        }
    }
    drop(relay);
    let events = lazyboy_tests::all_events(daemon, 0).await;
    let mut phases: std::collections::HashMap<Caller, [Vec<f64>; 5]> = Default::default();
    for run in &timed {
        let created = events
            .iter()
            .find(|e| e.kind == "task_created" && e.data["objective"] == run.objective.as_str())
            .unwrap_or_else(|| panic!("no task_created for {:?}", run.objective));
        let task = created.task.clone().unwrap();
        let at = |kind: &str| {
            events
                .iter()
                .find(|e| e.task.as_deref() == Some(task.as_str()) && e.kind == kind)
                .map(|e| e.at_ms as f64)
                .unwrap_or_else(|| panic!("task {task} has no {kind}"))
        };
        let (created_ms, claimed, finished) =
            (created.at_ms as f64, at("task_state"), at("task_finished"));
        let wall = run.wall.as_secs_f64() * 1000.0;
        let life = [
            wall,
            created_ms - run.started_ms,
            claimed - created_ms,
            finished - created_ms,
            run.started_ms + wall - finished,
        ];
        if std::env::var_os("BENCH_TIMELINE").is_some() {
            eprintln!(
                "{:?} {task}: wall {:.1} ms, call→created {:.1}, created→claimed {:.0}, \
                 created→finished {:.0}, finished→answer {:.1}; {} messages{}",
                run.caller,
                life[0],
                life[1],
                life[2],
                life[3],
                life[4],
                run.messages,
                run.setup
                    .map(|d| format!(", setup {:.1} ms", d.as_secs_f64() * 1000.0))
                    .unwrap_or_default()
            );
        }
        let entry = phases.entry(run.caller).or_default();
        for (values, value) in entry.iter_mut().zip(life) {
            values.push(value);
        }
    }
    let med = |caller: Caller, i: usize| {
        let mut values = phases[&caller][i].clone();
        values.sort_by(f64::total_cmp);
        values[values.len() / 2]
    };
    let (asked, cold, ran) = (
        med(Caller::Ask, 0),
        med(Caller::Cold, 0),
        med(Caller::Run, 0),
    );
    let versus = |ms: f64| {
        format!(
            "{ms:.1} ms ({:+.1} % against `lazyboy run`)",
            (ms / ran - 1.0) * 100.0
        )
    };
    let split = |caller: Caller| {
        format!(
            "{:.1} / {:.0} / {:.0} / {:.1} ms",
            med(caller, 1),
            med(caller, 2),
            med(caller, 3),
            med(caller, 4)
        )
    };
    let setup = median(timed.iter().filter_map(|t| t.setup).collect());
    vec![
        (
            format!("10-step mock task through `lazyboy run`, median of {runs}"),
            format!("{ran:.1} ms"),
        ),
        (
            format!("the same, `ask_agent` with `wait_s` in an open stdio session, median of {runs}"),
            versus(asked),
        ),
        (
            format!("the same, `ask_agent` from a fresh `lazyboy mcp serve` (spawn, initialize, call), median of {runs}"),
            versus(cold),
        ),
        (
            "… `lazyboy run`: spawn → created / → claimed / → finished / finished → exit".into(),
            split(Caller::Run),
        ),
        (
            "… `ask_agent`, open session: call → created / → claimed / → finished / finished → answer".into(),
            split(Caller::Ask),
        ),
        (
            "… `ask_agent`, fresh server: spawn → created / → claimed / → finished / finished → answer".into(),
            split(Caller::Cold),
        ),
        (
            "… … of which the fresh server's spawn → `initialize` answered, `initialized` sent"
                .into(),
            ms(setup),
        ),
    ]
}

/// One 10-step task through `caller`, timed from the call to its answer.
async fn one_task(
    daemon: &TestDaemon,
    mock: &MockModel,
    relay: &mut Relay,
    caller: Caller,
    n: i64,
    workspace: &str,
) -> Timed {
    script(mock, 10);
    let objective = format!("ten steps, {caller:?} {n}");
    let started_ms = unix_ms();
    let started = Instant::now();
    let ask = json!({"agent": "researcher", "job": objective, "wait_s": 120,
        "workspace": workspace});
    let mut setup = None;
    let wall = match caller {
        Caller::Ask | Caller::Cold => {
            let mut fresh = None;
            let relay = match caller {
                Caller::Cold => fresh.insert(Relay::start(daemon).await),
                _ => relay,
            };
            setup = (caller == Caller::Cold).then(|| started.elapsed());
            let answer = relay.call(tool_call(10_000 + n, "ask_agent", ask)).await;
            let wall = started.elapsed();
            assert_eq!(
                answer["result"]["structuredContent"]["state"], "done",
                "{answer}"
            );
            wall
        }
        Caller::Run => {
            let mut cli = daemon.cli();
            cli.args(["run", "--agent", "researcher", "--workspace", workspace])
                .arg(&objective);
            let out = tokio::task::spawn_blocking(move || cli.output().unwrap())
                .await
                .unwrap();
            let wall = started.elapsed();
            assert!(out.status.success(), "{out:?}");
            wall
        }
    };
    Timed {
        caller,
        objective,
        started_ms,
        wall,
        messages: mock.last_request().map_or(0, |r| r.messages.len()),
        setup,
    }
}
