//! Team benchmarks: a hundred agents at once, the memory of idle agents, and recovery after
//! `kill -9`, with the release daemon against the mock model at zero latency.
//!
//! `cargo bench -p lazyboy-tests --bench team` — prints a markdown table for
//! `docs/benchmarks.md`. `BENCH_QUICK=1` for a smoke run (fewer repetitions and idle agents).
//!
//! Agents run concurrently, so the order of the mock's queue says nothing about who asks next:
//! every reply is decided from its request alone. The objective (the conversation's first user
//! message) names the task and its number of steps; the number of tool results in the
//! conversation says which step comes next.

use std::cmp::Ordering;
use std::collections::HashSet;
use std::path::Path;
use std::time::{Duration, Instant};

use lazyboy::connection::Client;
use lazyboy_protocol::{Health, Task, TaskList, Verdict};
use lazyboy_tests::bench::{self, children_cpu_ticks, cpu_ticks, median, quick, status_kib};
use lazyboy_tests::mock_model::{CapturedRequest, MockModel, Reply, SeenMessage};
use lazyboy_tests::{
    KillOnDrop, TestDaemon, add_agent, create_task, model_config, stderr_of, wait_task_finished,
};
use serde_json::json;

mod restart;

/// Agents (each with one task) in the team runs.
const AGENTS: usize = 100;
/// `max_concurrent_tasks`.
const CONCURRENCY: usize = 8;
/// Steps of the scripted task.
const STEPS: usize = 20;
/// The shorter task of the differential: (t(STEPS) − t(SHORT)) / (STEPS − SHORT) is the cost
/// of a steady step without the task's fixed costs (start, `send_message`, final reply,
/// verdict), as `benches/agent.rs` computes it.
const SHORT: usize = 10;
/// Queued tasks (besides the running ones) when the recovery bench kills the daemon.
const QUEUED: usize = 100;
/// Steps a recovery-bench task takes before its model stops answering.
const STEPS_BEFORE_HANG: usize = 3;

type Row = (String, String, String);

fn main() {
    bench::runtime().block_on(run());
}

async fn run() {
    let mut rows = Vec::new();
    idle_agents(&mut rows).await;
    let mock = MockModel::start().await;
    let config = format!(
        "max_concurrent_tasks = {CONCURRENCY}\n{}",
        model_config(&mock, "openai")
    );
    let solo_step = solo(&mock, &config, &mut rows).await;
    team(&mock, &config, solo_step, &mut rows).await;
    restart::recovery(&mut rows).await;

    println!("| measure | result | target |\n|---|---|---|");
    for (what, result, target) in rows {
        println!("| {what} | {result} | {target} |");
    }
}

/// RSS per idle agent: a fresh daemon's RSS, then again with many agents created and nothing
/// running, each after the daemon settles.
async fn idle_agents(rows: &mut Vec<Row>) {
    let count: usize = if quick() { 100 } else { 1000 };
    let settle = Duration::from_secs(1);
    let daemon = TestDaemon::start().await;
    tokio::time::sleep(settle).await;
    let before = status_kib(daemon.pid(), "VmRSS").unwrap();
    for i in 0..count {
        add_agent(&daemon, &format!("idle{i:04}")).await;
    }
    tokio::time::sleep(settle).await;
    let after = status_kib(daemon.pid(), "VmRSS").unwrap();
    daemon.stop();
    rows.push((
        format!("RSS per idle agent ((RSS with {count} idle agents − RSS with none) / {count})"),
        format!(
            "{:.1} KiB ({:.1} → {:.1} MiB)",
            (after as f64 - before as f64) / count as f64,
            before as f64 / 1024.0,
            after as f64 / 1024.0
        ),
        "< 200 KiB".into(),
    ));
}

/// One agent alone, on its own daemon: the reference for the per-step figures. Returns its
/// steady step in ms.
async fn solo(mock: &MockModel, config: &str, rows: &mut Vec<Row>) -> f64 {
    let reps = if quick() { 2 } else { 5 };
    let daemon = TestDaemon::start_with(config, &[]).await;
    add_agent(&daemon, "solo").await;
    let first = mock.request_count();
    let mut walls: [Vec<Duration>; 2] = Default::default();
    let mut ticks = [Cpu::default(); 2];
    let mut workspace = String::new();
    for rep in 0..reps {
        for (i, steps) in [SHORT, STEPS].into_iter().enumerate() {
            script(mock, steps + 2, scripted);
            let before = Cpu::now(daemon.pid());
            let objective = objective(&format!("solo {rep}"), steps);
            let id = create_task(&daemon, "solo", &objective, None).await;
            let task = wait_task_finished(&daemon, &id).await;
            ticks[i] = ticks[i].plus(Cpu::now(daemon.pid()).minus(before));
            check(&task);
            walls[i].push(wall(std::slice::from_ref(&task)));
            workspace = task.workspace;
        }
    }
    assert_eq!(out_lines(&workspace), reps * (SHORT + STEPS));
    let rounds = round_as_seen(&mock.requests()[first..], STEPS);
    daemon.stop();

    let step = steady_step(&walls[0], &walls[1], 1);
    let wall20 = median(walls[1].clone());
    let cpu = ticks[1].minus(ticks[0]).per_step(reps);
    rows.push((
        format!("1 agent, {STEPS}-step task, wall time (created → verdict, median of {reps})"),
        format!("{:.1} ms", wall20.as_secs_f64() * 1000.0),
        "—".into(),
    ));
    rows.push((
        format!(
            "1 agent, per steady step ((t{STEPS} − t{SHORT}) / {})",
            STEPS - SHORT
        ),
        format!("{step:.2} ms"),
        "— (the reference)".into(),
    ));
    rows.push((
        "1 agent, CPU per steady step: daemon / its commands / mock model and bench".into(),
        cpu,
        "—".into(),
    ));
    rows.push((
        format!("1 agent, a round as the agent sees it (request → next request, {STEPS} steps)"),
        format!("{rounds:.2} ms"),
        "—".into(),
    ));
    step
}

/// A hundred agents with one task each, `CONCURRENCY` at a time, twice: with `STEPS`-step and
/// with `SHORT`-step tasks, on one fresh daemon.
async fn team(mock: &MockModel, config: &str, solo_step: f64, rows: &mut Vec<Row>) {
    let daemon = TestDaemon::start_with(config, &[]).await;
    let agents: Vec<String> = (0..AGENTS).map(|i| format!("a{i:03}")).collect();
    for agent in &agents {
        add_agent(&daemon, agent).await;
    }
    let first = mock.request_count();
    let mut walls = Vec::new();
    let mut ticks = Vec::new();
    let mut workspaces = Vec::new();
    for steps in [STEPS, SHORT] {
        script(mock, AGENTS * (steps + 2), scripted);
        let before = Cpu::now(daemon.pid());
        let mut ids = Vec::new();
        for agent in &agents {
            ids.push(create_task(&daemon, agent, &objective(agent, steps), None).await);
        }
        let tasks = wait_all_finished(&daemon, &ids).await;
        ticks.push(Cpu::now(daemon.pid()).minus(before));
        tasks.iter().for_each(check);
        walls.push(wall(&tasks));
        workspaces = tasks.into_iter().map(|t| t.workspace).collect();
    }
    assert_eq!(mock.pending(), 0);
    for workspace in &workspaces {
        assert_eq!(out_lines(workspace), STEPS + SHORT);
    }
    let peak = status_kib(daemon.pid(), "VmHWM").unwrap();
    let rounds = round_as_seen(&mock.requests()[first..], STEPS);
    daemon.stop();

    let step = steady_step(&[walls[1]], &[walls[0]], AGENTS);
    let cpu = ticks[0].minus(ticks[1]).per_step(AGENTS);
    rows.push((
        format!(
            "{AGENTS} agents × {STEPS}-step task, concurrency {CONCURRENCY}: total wall time \
             (first created → last verdict)"
        ),
        format!("{:.2} s", walls[0].as_secs_f64()),
        "—".into(),
    ));
    rows.push((
        format!(
            "{AGENTS} agents, per steady step ((T{STEPS} − T{SHORT}) / ({AGENTS} × {}))",
            STEPS - SHORT
        ),
        format!("{step:.2} ms ({:.2}× one agent)", step / solo_step),
        format!("≤ 2× one agent ({:.2} ms)", 2.0 * solo_step),
    ));
    rows.push((
        format!(
            "{AGENTS} agents, CPU per steady step: daemon / its commands / mock model and bench"
        ),
        cpu,
        "—".into(),
    ));
    rows.push((
        format!(
            "{AGENTS} agents, a round as each agent sees it (request → next request, median \
             over tasks)"
        ),
        format!("{rounds:.2} ms"),
        "—".into(),
    ));
    rows.push((
        format!("daemon peak RSS (VmHWM over both {AGENTS}-agent runs)"),
        format!("{:.1} MiB", peak as f64 / 1024.0),
        "< 100 MiB".into(),
    ));
}

/// Queues `count` replies computed by `reply`.
fn script(mock: &MockModel, count: usize, reply: fn(&CapturedRequest) -> Reply) {
    for _ in 0..count {
        mock.push_fn(reply);
    }
}

fn objective(label: &str, steps: usize) -> String {
    format!("{label}: append {steps} numbered lines to out.txt")
}

fn first_user_text(request: &CapturedRequest) -> &str {
    request
        .messages
        .iter()
        .find_map(|m| match m {
            SeenMessage::User { text } => Some(text.as_str()),
            _ => None,
        })
        .unwrap_or_default()
}

/// The number of steps the request's objective asks for, and how many are done.
fn progress(request: &CapturedRequest) -> (usize, usize) {
    let objective = first_user_text(request);
    let steps = objective
        .split(": append ")
        .nth(1)
        .and_then(|rest| rest.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("not a bench objective: {objective:?}"));
    let done = request
        .messages
        .iter()
        .filter(|m| matches!(m, SeenMessage::ToolResult { .. }))
        .count();
    (steps, done)
}

/// The scripted task: each step one numbered `exec_command` (identical calls would trip the
/// loop fuse), then `send_message`, then a text reply.
fn scripted(request: &CapturedRequest) -> Reply {
    let (steps, done) = progress(request);
    match done.cmp(&steps) {
        Ordering::Less => Reply::tool_call(
            format!("s{done}"),
            "exec_command",
            json!({"cmd": format!("echo step {done} >> out.txt")}),
        ),
        Ordering::Equal => Reply::tool_call(
            "report",
            "send_message",
            json!({"text": format!("appended {steps} lines")}),
        ),
        Ordering::Greater => Reply::text("done"),
    }
}

/// Asserts the task ended as scripted.
fn check(task: &Task) {
    assert_eq!(task.verdict, Some(Verdict::Answer), "{task:?}");
}

/// From the first task's creation to the last one's verdict, by the daemon's clock.
fn wall(tasks: &[Task]) -> Duration {
    let start = tasks.iter().map(|t| t.created_at_ms).min().unwrap();
    let end = tasks.iter().map(|t| t.updated_at_ms).max().unwrap();
    Duration::from_millis((end - start) as u64)
}

/// `(median(long) − median(short)) / (tasks × (STEPS − SHORT))`, in ms (negative if noise
/// says so: it is printed, not hidden).
fn steady_step(short: &[Duration], long: &[Duration], tasks: usize) -> f64 {
    let ms = |values: &[Duration]| median(values.to_vec()).as_secs_f64() * 1000.0;
    (ms(long) - ms(short)) / (tasks * (STEPS - SHORT)) as f64
}

/// CPU time in ticks of 10 ms: the daemon's own, the commands it ran (bash, counted once
/// reaped), and this process's (the mock model, the HTTP client, the polling).
#[derive(Debug, Clone, Copy, Default)]
struct Cpu([i64; 3]);

impl Cpu {
    fn now(daemon: u32) -> Cpu {
        let ticks = [
            cpu_ticks(daemon),
            children_cpu_ticks(daemon),
            cpu_ticks(std::process::id()),
        ];
        Cpu(ticks.map(|t| t as i64))
    }

    fn plus(self, other: Cpu) -> Cpu {
        Cpu(std::array::from_fn(|i| self.0[i] + other.0[i]))
    }

    fn minus(self, other: Cpu) -> Cpu {
        Cpu(std::array::from_fn(|i| self.0[i] - other.0[i]))
    }

    /// `self` being the extra CPU of `tasks` long tasks over as many short ones: per steady
    /// step, in ms, as "daemon / commands / mock".
    fn per_step(self, tasks: usize) -> String {
        let steps = (tasks * (STEPS - SHORT)) as f64;
        let [daemon, commands, mock] = self.0.map(|t| t as f64 * 10.0 / steps);
        format!("{daemon:.2} / {commands:.2} / {mock:.2} ms")
    }
}

/// The median over `steps`-step tasks of the mean time from one model request to the next
/// (stamped by the mock as it reads them).
fn round_as_seen(requests: &[CapturedRequest], steps: usize) -> f64 {
    let marker = format!(": append {steps} numbered");
    let mut tasks: Vec<&str> = requests
        .iter()
        .map(first_user_text)
        .filter(|o| o.contains(&marker))
        .collect();
    tasks.sort_unstable();
    tasks.dedup();
    let rounds = tasks
        .iter()
        .map(|objective| {
            let times: Vec<Instant> = requests
                .iter()
                .filter(|r| first_user_text(r) == *objective)
                .map(|r| r.received_at)
                .collect();
            assert_eq!(times.len(), steps + 2, "{objective}");
            (times[times.len() - 1] - times[0]) / (steps + 1) as u32
        })
        .collect();
    median(rounds).as_secs_f64() * 1000.0
}

/// Lines in the workspace's `out.txt`.
fn out_lines(workspace: &str) -> usize {
    let text = std::fs::read_to_string(Path::new(workspace).join("out.txt")).unwrap();
    text.lines().count()
}

/// Polls the task list every 250 ms (the wall time comes from the tasks' own timestamps, so
/// the polling does not bound its precision) until every task in `ids` has a verdict.
async fn wait_all_finished(daemon: &TestDaemon, ids: &[String]) -> Vec<Task> {
    let wanted: HashSet<&str> = ids.iter().map(String::as_str).collect();
    let give_up = Instant::now() + Duration::from_secs(600);
    loop {
        let list: TaskList = daemon.client().get("/api/tasks?limit=10000").await.unwrap();
        let tasks: Vec<Task> = list
            .tasks
            .into_iter()
            .filter(|t| wanted.contains(t.id.as_str()))
            .collect();
        if tasks.len() == ids.len() && tasks.iter().all(|t| t.verdict.is_some()) {
            return tasks;
        }
        assert!(Instant::now() < give_up, "the team did not finish in 600 s");
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}
