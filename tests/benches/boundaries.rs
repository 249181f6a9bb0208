//! Boundaries benchmarks (issue 13): what the sandbox adds to a command, and how long an
//! approval takes from the question to the command starting.
//!
//! `cargo bench -p lazyboy-tests --bench boundaries` — prints a markdown table for
//! `docs/benchmarks.md`. `BENCH_QUICK=1` for fewer repetitions.
//!
//! - Sandbox overhead: `true` started and waited for through the daemon's own
//!   `CommandRegistry` and `Host` machine (the library, in this process, with the release
//!   `lazyboy-sandbox` as the sandbox helper), unconfined and under `workspace-write`, for two
//!   homes: one at a usual depth outside the temp dir, and one inside `/tmp` as the tests put
//!   it (then the temp dir is split entry by entry around the home, the most rules); and
//!   under `workspace-write` in a repository (its `.git` read-only: a mount namespace).
//! - A cgroup per task (root: the daemon's own setup, `confine::cgroup::start`): the first
//!   command of a new task (its task and command cgroups made, the helper joining), against
//!   the same command with no cgroups; and the task's end (`confine::end_task`: kill, then
//!   removal).
//! - Approval round trip: a real daemon, an agent with `approve = ["command"]`; from the
//!   `question` event's own timestamp (`at_ms`: when the daemon recorded it), through the
//!   bench noticing it (polling the task, as a client would), `lazyboy approve T` (a new CLI
//!   process, as a person would type it), to the command recording its own start
//!   (`date +%s%N`).

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use lazyboy_protocol::{EventBody, Sandbox, Task, TaskState};
use lazyboy_tests::bench::{self, median, quick};
use lazyboy_tests::mock_model::{MockModel, Reply};
use lazyboy_tests::{TestDaemon, all_events, bin, output_of, wait_for, wait_task_finished};
use lazyboyd::confine::Confinement;
use lazyboyd::confine::machine::Host;
use lazyboyd::tools::CommandRegistry;
use lazyboyd::tools::commands::StartSpec;
use serde_json::json;
use tokio_util::sync::CancellationToken;

fn main() {
    bench::runtime().block_on(run());
}

fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1000.0)
}

async fn run() {
    let mut rows: Vec<(String, String, String)> = Vec::new();
    // The helper the daemon runs, as it finds it beside `lazyboyd`.
    lazyboyd::confine::set_helper(&bin("lazyboy-sandbox"));
    let reps = if quick() { 20 } else { 200 };
    let usual = tempfile::tempdir_in("/var/tmp").unwrap();
    let usual_home = usual.path().join("share").join("lazyboy");
    std::fs::create_dir_all(&usual_home).unwrap();
    let test_home = lazyboy_tests::temp_home();
    for (what, home) in [
        ("home outside the temp dir", usual_home.as_path()),
        ("home inside /tmp (as the tests)", test_home.path()),
    ] {
        let ws = tempfile::tempdir().unwrap();
        let off = exec_true(Sandbox::Off, ws.path(), home, reps).await;
        let boxed = exec_true(Sandbox::WorkspaceWrite, ws.path(), home, reps).await;
        let rules = Confinement {
            sandbox: Sandbox::WorkspaceWrite,
            workspace: ws.path().canonicalize().unwrap(),
            home: home.canonicalize().unwrap(),
            temp: std::env::temp_dir().canonicalize().unwrap(),
            git_write: false,
        }
        .grants()
        .len();
        rows.push((
            format!("`exec_command` of `true`, sandbox off ({what}; median of {reps})"),
            ms(off),
            "—".into(),
        ));
        rows.push((
            format!("… under workspace-write ({rules} Landlock rules)"),
            ms(boxed),
            "—".into(),
        ));
        rows.push((
            "… added by the sandbox".into(),
            ms(boxed.saturating_sub(off)),
            "< 2 ms".into(),
        ));
        let repo = tempfile::tempdir().unwrap();
        std::fs::create_dir(repo.path().join(".git")).unwrap();
        let in_repo = exec_true(Sandbox::WorkspaceWrite, repo.path(), home, reps).await;
        rows.push((
            "… in a repository (`.git` read-only: a mount namespace), added".into(),
            ms(in_repo.saturating_sub(off)),
            "< 2 ms".into(),
        ));
    }
    cgroup_rows(&mut rows, reps).await;
    let (round_trip, cli) = approval_round_trip(if quick() { 3 } else { 15 }).await;
    rows.push((
        "approval: question event → `lazyboy approve` → the command starts (median)".into(),
        ms(round_trip),
        "< 50 ms".into(),
    ));
    rows.push((
        "… of which the `lazyboy approve` process (spawn to exit)".into(),
        ms(cli),
        "—".into(),
    ));
    println!("| what | figure | target |\n|---|---|---|");
    for (what, figure, target) in rows {
        println!("| {what} | {figure} | {target} |");
    }
}

/// The cost of a task's cgroup: its first command against one with no cgroups, then its end.
async fn cgroup_rows(rows: &mut Vec<(String, String, String)>, reps: usize) {
    let home = lazyboy_tests::temp_home();
    let ws = tempfile::tempdir().unwrap();
    let plain = exec_true(Sandbox::Off, ws.path(), home.path(), reps).await;
    let base = match lazyboyd::confine::cgroup::start(home.path()) {
        Ok((base, _)) => base,
        Err(why) => {
            rows.push((
                "a cgroup per task".into(),
                format!("not measured: {why}"),
                "—".into(),
            ));
            return;
        }
    };
    let (mut firsts, mut ends) = (Vec::new(), Vec::new());
    let registry = CommandRegistry::new();
    let never = CancellationToken::new();
    let root = lazyboyd::tools::workspace::Root::open(ws.path()).unwrap();
    for i in 0..reps + 5 {
        let task = format!("bench-{i}");
        let confinement = Confinement::new(Sandbox::Off, ws.path());
        let machine = Arc::new(Host::confined(confinement).in_task(&task));
        let spec = StartSpec {
            machine,
            task_id: task.clone(),
            cmd: "true".into(),
            workdir: ws.path().to_path_buf(),
            workdir_fd: None,
            output: root.output().unwrap(),
            timeout: Duration::from_secs(30),
        };
        let started = Instant::now();
        let command = registry.start(spec).await.unwrap();
        command.wait_exit(Duration::from_secs(30), &never).await;
        let first = started.elapsed();
        assert!(
            command.exit().unwrap().success(),
            "{}",
            command.take_output()
        );
        let ending = Instant::now();
        lazyboyd::confine::end_task(&task);
        let end = ending.elapsed();
        if i >= 5 {
            firsts.push(first);
            ends.push(end);
        }
    }
    let first = median(firsts);
    rows.push((
        format!(
            "a task's first command (`true`, sandbox off) in its own cgroup (median of {reps})"
        ),
        ms(first),
        "—".into(),
    ));
    rows.push((
        "… added by the task's cgroup (made, joined)".into(),
        ms(first.saturating_sub(plain)),
        "< 5 ms".into(),
    ));
    rows.push((
        "… the task's end (`cgroup.kill`, removal started)".into(),
        ms(median(ends)),
        "—".into(),
    ));
    // What the bench made goes (the removals run on the blocking pool).
    tokio::time::sleep(Duration::from_millis(200)).await;
    lazyboyd::confine::end_all();
    let _ = std::fs::remove_dir(base);
}

/// The median time to start `true` and see it exit, through the daemon's registry.
async fn exec_true(sandbox: Sandbox, ws: &Path, home: &Path, reps: usize) -> Duration {
    let registry = CommandRegistry::new();
    let confinement = Confinement {
        sandbox,
        workspace: ws.canonicalize().unwrap(),
        home: home.canonicalize().unwrap(),
        temp: std::env::temp_dir().canonicalize().unwrap(),
        git_write: false,
    };
    let machine = Arc::new(Host::confined(confinement));
    let never = CancellationToken::new();
    let output = lazyboyd::tools::workspace::Root::open(ws)
        .unwrap()
        .output()
        .unwrap();
    let mut times = Vec::new();
    for i in 0..reps + 5 {
        let spec = StartSpec {
            machine: machine.clone(),
            task_id: "bench".into(),
            cmd: "true".into(),
            workdir: ws.to_path_buf(),
            workdir_fd: None,
            output: output.clone(),
            timeout: Duration::from_secs(30),
        };
        let started = Instant::now();
        let command = registry.start(spec).await.unwrap();
        command.wait_exit(Duration::from_secs(30), &never).await;
        let took = started.elapsed();
        let exit = command.exit().unwrap();
        assert!(exit.success(), "{exit}: {}", command.take_output());
        // The first few warm the page cache.
        if i >= 5 {
            times.push(took);
        }
    }
    median(times)
}

/// Medians of (question recorded → command started, the CLI's own spawn-to-exit).
async fn approval_round_trip(reps: usize) -> (Duration, Duration) {
    let mock = MockModel::start().await;
    let daemon = TestDaemon::start_with_model(&mock, "openai", &[]).await;
    let created = daemon
        .http
        .post(daemon.url("/api/agents"))
        .json(&json!({"name": "careful", "approve": ["command"]}))
        .send()
        .await
        .unwrap();
    assert_eq!(created.status(), 201);
    let (mut trips, mut clis) = (Vec::new(), Vec::new());
    for _ in 0..reps {
        let ws = tempfile::tempdir().unwrap();
        mock.push(Reply::tool_call(
            "c",
            "exec_command",
            json!({"cmd": "date +%s%N > started.ns"}),
        ));
        mock.push(Reply::text("done"));
        let id = lazyboy_tests::create_task(&daemon, "careful", "go", Some(ws.path())).await;
        let asked_ms = wait_question(&daemon, &id).await;
        let mut approve = daemon.cli();
        approve.args(["approve", &id]);
        let cli_started = Instant::now();
        let out = output_of(approve).await;
        clis.push(cli_started.elapsed());
        assert!(out.status.success(), "{out:?}");
        wait_task_finished(&daemon, &id).await;
        let ns: u128 = std::fs::read_to_string(ws.path().join("started.ns"))
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        let asked_ns = u128::try_from(asked_ms).unwrap() * 1_000_000;
        trips.push(Duration::from_nanos(
            u64::try_from(ns.saturating_sub(asked_ns)).unwrap(),
        ));
    }
    daemon.stop();
    (median(trips), median(clis))
}

/// Waits for the task's approval question; returns the question event's `at_ms`.
async fn wait_question(daemon: &TestDaemon, id: &str) -> i64 {
    wait_for(Duration::from_secs(30), "the approval question", || {
        let client = daemon.client();
        let path = format!("/api/tasks/{id}");
        async move {
            let t: Task = client.get(&path).await.ok()?;
            if t.state != TaskState::WaitingForHuman {
                return None;
            }
            all_events(daemon, 0)
                .await
                .into_iter()
                .filter(|e| e.task.as_deref() == Some(id))
                .find(|e| {
                    matches!(
                        e.body(),
                        Some(EventBody::Question {
                            approval: Some(_),
                            ..
                        })
                    )
                })
                .map(|e| e.at_ms)
        }
    })
    .await
}
