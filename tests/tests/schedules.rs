//! Schedules on the real daemon: `lazyboy schedule add|ls|rm|pause|resume`; slots fire with
//! no client attached; a slot missed while the daemon was down runs once at start (or is
//! skipped when asked); schedules survive restarts.
//!
//! No model is configured: a fired task fails at once with "no model configured", and the
//! tests only count the tasks a schedule created (by their objective, which each test makes
//! unique).

use std::future::Future;
use std::path::Path;
use std::process::Output;
use std::time::{Duration, Instant};

use lazyboy_protocol::{ErrorBody, Event, EventBody, Schedule, ScheduleList, Task, TaskList};
use lazyboy_tests::{TestDaemon, add_agent, all_events, output_of, wait_for};

/// Runs the CLI on the daemon's home; panics with its stderr if it fails.
async fn cli_ok(daemon: &TestDaemon, args: &[&str]) -> String {
    let output = cli(daemon, args).await;
    assert!(
        output.status.success(),
        "lazyboy {args:?} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap()
}

async fn cli(daemon: &TestDaemon, args: &[&str]) -> Output {
    let mut command = daemon.cli();
    command.args(args);
    output_of(command).await
}

/// `lazyboy --json schedule ...` whose answer is a schedule.
async fn cli_schedule(daemon: &TestDaemon, args: &[&str]) -> Schedule {
    let mut all = vec!["--json", "schedule"];
    all.extend_from_slice(args);
    serde_json::from_str(&cli_ok(daemon, &all).await).unwrap()
}

async fn schedules(daemon: &TestDaemon) -> Vec<Schedule> {
    let list: ScheduleList = daemon.client().get("/api/schedules").await.unwrap();
    list.schedules
}

/// The tasks whose objective is `job`, oldest first.
async fn tasks_of(daemon: &TestDaemon, job: &str) -> Vec<Task> {
    let list: TaskList = daemon.client().get("/api/tasks?limit=10000").await.unwrap();
    let mut tasks: Vec<Task> = list
        .tasks
        .into_iter()
        .filter(|t| t.objective == job)
        .collect();
    tasks.reverse();
    tasks
}

/// The `schedule_fired` events of `schedule`: (task, due_at_ms, missed).
fn fired(events: &[Event], schedule: &str) -> Vec<(String, i64, bool)> {
    events
        .iter()
        .filter_map(|e| match e.body() {
            Some(EventBody::ScheduleFired {
                schedule: s,
                task,
                due_at_ms,
                missed,
            }) if s == schedule => Some((task, due_at_ms, missed)),
            _ => None,
        })
        .collect()
}

/// Checks `probe` over `window`, failing as soon as it is false: "nothing more happens".
async fn holds_for<F, Fut>(window: Duration, what: &str, mut probe: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let end = Instant::now() + window;
    loop {
        assert!(probe().await, "{what}");
        if Instant::now() >= end {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Waits until at least `n` tasks with objective `job` exist; returns them.
async fn wait_tasks(daemon: &TestDaemon, job: &str, n: usize) -> Vec<Task> {
    wait_for(
        Duration::from_secs(30),
        &format!("{n} tasks of {job:?}"),
        || async move {
            let tasks = tasks_of(daemon, job).await;
            (tasks.len() >= n).then_some(tasks)
        },
    )
    .await
}

/// Simulates downtime: the stopped daemon's schedule `id` was due at `due`.
fn set_due(daemon: &TestDaemon, id: &str, due: i64) {
    sql(
        &daemon.home().join("lazyboy.db"),
        &format!("UPDATE schedules SET next_run_at_ms = {due} WHERE id = '{id}'"),
    );
}

/// Edits the stopped daemon's database with python3's sqlite3.
fn sql(db: &Path, statement: &str) {
    let status = std::process::Command::new("python3")
        .arg("-c")
        .arg("import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute(sys.argv[2]); c.commit()")
        .arg(db)
        .arg(statement)
        .status()
        .unwrap();
    assert!(status.success(), "python3 failed on {statement}");
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

/// Stops the daemon cleanly, keeping its home for a restart.
fn stop_keeping_home(daemon: &mut TestDaemon) {
    let (status, _) = daemon.terminate();
    assert!(status.success(), "lazyboyd exited with {status}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_seconds_schedule_fires_unattended_pauses_resumes_and_is_removed() {
    let daemon = TestDaemon::start().await;
    add_agent(&daemon, "ticker").await;
    add_agent(&daemon, "doomed").await;
    let job = "tick: look at the queue";
    let ghost_job = "the job of a deleted agent";
    cli_schedule(&daemon, &["add", "doomed", "*/2 * * * * *", ghost_job]).await;

    let before = now_ms();
    let added = cli_schedule(&daemon, &["add", "ticker", "*/2 * * * * *", job]).await;
    assert!(added.id.starts_with("s-"), "{added:?}");
    assert_eq!((added.agent.as_str(), added.paused), ("ticker", false));
    let next = added.next_run_at_ms.unwrap();
    let after = now_ms();
    assert!(
        next > before && next <= after + 2000,
        "next {next}, added between {before} and {after}"
    );

    // Nobody is attached: the daemon fires on its own.
    let tasks = wait_tasks(&daemon, job, 2).await;
    let workspace = daemon.home().join("workspaces").join("ticker");
    assert!(tasks.iter().all(|t| Path::new(&t.workspace) == workspace));
    let events = all_events(&daemon, 0).await;
    let shots = fired(&events, &added.id);
    assert!(shots.len() >= 2 && shots.iter().all(|(_, _, missed)| !missed));
    assert!(shots.iter().any(|(task, _, _)| task == &tasks[0].id));

    let listed = cli_ok(&daemon, &["schedule", "ls"]).await;
    let row = listed.lines().find(|l| l.contains(&added.id)).unwrap();
    assert!(
        row.contains("ticker") && row.contains("*/2 * * * * *") && row.contains("active"),
        "{listed}"
    );
    assert!(listed.starts_with("ID"), "{listed}");

    // A deleted agent's schedules stop (and are no longer listed).
    wait_tasks(&daemon, ghost_job, 1).await;
    cli_ok(&daemon, &["agent", "rm", "doomed"]).await;
    let ghosts = tasks_of(&daemon, ghost_job).await.len();
    assert!(schedules(&daemon).await.iter().all(|s| s.agent != "doomed"));

    let paused = cli_schedule(&daemon, &["pause", &added.id]).await;
    assert!(
        paused.paused && paused.next_run_at_ms.is_none(),
        "{paused:?}"
    );
    let count = tasks_of(&daemon, job).await.len();
    holds_for(
        Duration::from_secs(5),
        "a paused schedule, or a deleted agent's, fired",
        || async {
            tasks_of(&daemon, job).await.len() == count
                && tasks_of(&daemon, ghost_job).await.len() == ghosts
        },
    )
    .await;
    let listed = cli_ok(&daemon, &["schedule", "ls", "--agent", "ticker"]).await;
    assert!(listed.contains("paused"), "{listed}");

    let before = now_ms();
    let resumed = cli_schedule(&daemon, &["resume", &added.id]).await;
    assert!(!resumed.paused, "{resumed:?}");
    assert!(resumed.next_run_at_ms.unwrap() > before, "{resumed:?}");
    wait_tasks(&daemon, job, count + 1).await;

    let removed = cli_ok(&daemon, &["schedule", "rm", &added.id]).await;
    assert!(removed.contains(&added.id), "{removed}");
    assert!(schedules(&daemon).await.is_empty());
    let count = tasks_of(&daemon, job).await.len();
    holds_for(
        Duration::from_secs(5),
        "a removed schedule fired",
        || async { tasks_of(&daemon, job).await.len() == count },
    )
    .await;
    let again = cli(&daemon, &["schedule", "rm", &added.id]).await;
    assert!(!again.status.success());
    assert!(String::from_utf8_lossy(&again.stderr).contains("no schedule"));

    // A bad expression: a 400 naming the problem, and nothing stored.
    let bad = cli(&daemon, &["schedule", "add", "ticker", "61 * * * *", job]).await;
    assert!(!bad.status.success());
    let stderr = String::from_utf8_lossy(&bad.stderr);
    assert!(
        stderr.contains("the minute field \"61\"") && stderr.contains("400"),
        "{stderr}"
    );
    for cron in ["every day", "* * *", "*/0 * * * *", "0 0 30 2 *"] {
        let response = daemon
            .http
            .post(daemon.url("/api/agents/ticker/schedules"))
            .json(&serde_json::json!({"cron": cron, "objective": job}))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status().as_u16(), 400, "{cron}");
        let body: ErrorBody = response.json().await.unwrap();
        assert_eq!(body.error.code, "invalid_cron", "{cron}");
        assert!(body.error.message.contains(cron), "{}", body.error.message);
    }
    let unknown = daemon
        .http
        .post(daemon.url("/api/agents/nobody/schedules"))
        .json(&serde_json::json!({"cron": "* * * * *", "objective": job}))
        .send()
        .await
        .unwrap();
    assert_eq!(unknown.status().as_u16(), 404);
    assert!(schedules(&daemon).await.is_empty());
    daemon.stop();
}

/// The must-survive case: five and more minutely slots pass while the daemon is down; at the
/// next start the schedule runs once, not once per slot, and moves to a slot in the future.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_schedule_due_while_the_daemon_was_down_runs_once_at_start() {
    let mut daemon = TestDaemon::start().await;
    add_agent(&daemon, "nightly").await;
    let job = "summarize what happened overnight";
    let added = cli_schedule(&daemon, &["add", "nightly", "* * * * *", job]).await;
    stop_keeping_home(&mut daemon);

    // Seven minutes of downtime: the slot it was waiting for and six more went by.
    let due = added.next_run_at_ms.unwrap() - 7 * 60_000;
    set_due(&daemon, &added.id, due);
    let restarted_at = now_ms();
    daemon.restart().await;

    let tasks = wait_tasks(&daemon, job, 1).await;
    assert!(tasks[0].created_at_ms >= restarted_at);
    let schedule = wait_for(Duration::from_secs(10), "the next slot", || async {
        let list = schedules(&daemon).await;
        let s = list.into_iter().find(|s| s.id == added.id)?;
        (s.next_run_at_ms? > due).then_some(s)
    })
    .await;
    let next = schedule.next_run_at_ms.unwrap();
    assert!(
        next > restarted_at,
        "next run {next} is not after the start"
    );
    assert!(schedule.last_run_at_ms.unwrap() >= restarted_at);

    // Give a per-slot catch-up every chance to show itself. Only tasks from before the next
    // regular slot count (a minute boundary may legitimately pass while this waits).
    holds_for(
        Duration::from_secs(3),
        "a missed schedule ran more than once",
        || async {
            let tasks = tasks_of(&daemon, job).await;
            tasks.iter().filter(|t| t.created_at_ms < next).count() == 1
        },
    )
    .await;
    let events = all_events(&daemon, 0).await;
    let missed: Vec<_> = fired(&events, &added.id)
        .into_iter()
        .filter(|(_, _, missed)| *missed)
        .collect();
    assert_eq!(missed, vec![(tasks[0].id.clone(), due, true)]);
    daemon.stop();
}

/// `--skip-missed` (and the config's `[schedules] run_missed = false`): a slot missed while
/// the daemon was down queues nothing, and the schedule moves on to a future slot.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn missed_slots_are_skipped_when_asked() {
    for (config, flag) in [("", true), ("[schedules]\nrun_missed = false\n", false)] {
        let mut daemon = TestDaemon::start_with(config, &[]).await;
        add_agent(&daemon, "careful").await;
        let job = "only on time";
        let mut args = vec!["add", "careful", "* * * * *", job];
        if flag {
            args.push("--skip-missed");
        }
        let added = cli_schedule(&daemon, &args).await;
        assert_eq!(added.skip_missed, flag);
        stop_keeping_home(&mut daemon);

        let due = added.next_run_at_ms.unwrap() - 6 * 60_000;
        set_due(&daemon, &added.id, due);
        let restarted_at = now_ms();
        daemon.restart().await;

        // The missed slot is handled (skipped or run) in one transaction with the move to
        // the next slot: once the schedule has moved, the outcome is final.
        let schedule = wait_for(
            Duration::from_secs(20),
            "the missed slot handled",
            || async {
                let s = schedules(&daemon).await.into_iter().next()?;
                (s.next_run_at_ms? > due).then_some(s)
            },
        )
        .await;
        let next = schedule.next_run_at_ms.unwrap();
        assert!(
            next > restarted_at,
            "next run {next} is not after the start"
        );
        // Nothing ran for the missed slots (a regular slot may come later, at `next`).
        let tasks = tasks_of(&daemon, job).await;
        assert!(
            tasks.iter().all(|t| t.created_at_ms >= next),
            "a skipped slot ran: {tasks:?}"
        );
        assert_eq!(schedule.last_run_at_ms, None);
        let events = all_events(&daemon, 0).await;
        let skipped: Vec<(i64, String)> = events
            .into_iter()
            .filter_map(|e| match e.body() {
                Some(EventBody::ScheduleSkipped {
                    schedule,
                    due_at_ms,
                    reason,
                }) if schedule == added.id => Some((due_at_ms, reason)),
                _ => None,
            })
            .collect();
        assert_eq!(skipped.len(), 1, "{skipped:?}");
        assert_eq!(skipped[0].0, due);
        assert!(skipped[0].1.contains("missed"), "{}", skipped[0].1);
        daemon.stop();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn schedules_survive_a_restart() {
    let mut daemon = TestDaemon::start().await;
    add_agent(&daemon, "keeper").await;
    let job = "keep going after restarts";
    let active = cli_schedule(&daemon, &["add", "keeper", "*/2 * * * * *", job]).await;
    let quiet_job = "paused job";
    let paused = cli_schedule(&daemon, &["add", "keeper", "*/2 * * * * *", quiet_job]).await;
    cli_schedule(&daemon, &["pause", &paused.id]).await;
    wait_tasks(&daemon, job, 1).await;
    stop_keeping_home(&mut daemon);

    let restarted_at = now_ms();
    daemon.restart().await;
    let listed = schedules(&daemon).await;
    let mut ids: Vec<(&str, bool)> = listed.iter().map(|s| (s.id.as_str(), s.paused)).collect();
    ids.sort();
    let mut expected = vec![(active.id.as_str(), false), (paused.id.as_str(), true)];
    expected.sort();
    assert_eq!(ids, expected);
    wait_for(
        Duration::from_secs(30),
        "a task fired after the restart",
        || async {
            let tasks = tasks_of(&daemon, job).await;
            tasks
                .iter()
                .any(|t| t.created_at_ms >= restarted_at)
                .then_some(())
        },
    )
    .await;
    assert!(tasks_of(&daemon, quiet_job).await.is_empty());
    daemon.stop();
}
