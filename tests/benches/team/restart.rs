//! Recovery: `kill -9` with tasks running and queued, then a restart, timed.

use super::*;

/// `kill -9` with `CONCURRENCY` tasks running (each waiting for a model reply that never
/// comes) and `QUEUED` queued, then a restart: how long until health answers, and until every
/// task that was running has resumed (its next model request reached the mock). Each
/// repetition kills the daemon the previous one started, in the same state.
pub(super) async fn recovery(rows: &mut Vec<Row>) {
    let reps = if quick() { 2 } else { 5 };
    let mock = MockModel::start().await;
    script(
        &mock,
        CONCURRENCY * (STEPS_BEFORE_HANG + 1 + reps),
        hang_after_steps,
    );
    let config = format!(
        "max_concurrent_tasks = {CONCURRENCY}\n{}",
        model_config(&mock, "openai")
    );
    let mut daemon = TestDaemon::start_with(&config, &[]).await;
    for i in 0..CONCURRENCY + QUEUED {
        let agent = add_agent(&daemon, &format!("r{i:03}")).await;
        create_task(&daemon, &agent, &objective(&agent, STEPS_BEFORE_HANG), None).await;
    }
    mock.wait_for_requests(CONCURRENCY * (STEPS_BEFORE_HANG + 1))
        .await;
    let running = objectives_in(&daemon, "running").await;
    assert_eq!(running.len(), CONCURRENCY);
    assert_eq!(objectives_in(&daemon, "queued").await.len(), QUEUED);
    let home = daemon.home().to_owned();
    daemon.kill9();

    let mut healths = Vec::new();
    let mut resumes = Vec::new();
    for _ in 0..reps {
        let before = mock.request_count();
        let (child, spawned, health) = spawn_timed(&home).await;
        let requests = mock.wait_for_requests(before + CONCURRENCY).await;
        let resumed: HashSet<String> = requests[before..]
            .iter()
            .map(|r| first_user_text(r).to_owned())
            .collect();
        assert_eq!(resumed, running, "the resumed tasks are the ones that ran");
        let last = requests[before..].iter().map(|r| r.received_at).max();
        resumes.push(last.unwrap() - spawned);
        healths.push(health);
        drop(child); // SIGKILL: the next repetition recovers from this kill
    }
    assert_eq!(
        mock.request_count(),
        CONCURRENCY * (STEPS_BEFORE_HANG + 1 + reps)
    );
    drop(daemon);

    let show = |values: Vec<Duration>| {
        let max = values.iter().max().copied().unwrap_or_default();
        format!(
            "{:.0} ms (max {:.0} ms)",
            median(values).as_secs_f64() * 1000.0,
            max.as_secs_f64() * 1000.0
        )
    };
    rows.push((
        format!(
            "`kill -9` with {CONCURRENCY} running + {QUEUED} queued, restart: spawn → first \
             answer to GET /api/health (median of {reps})"
        ),
        show(healths),
        "< 1 s".into(),
    ));
    rows.push((
        format!("same: spawn → all {CONCURRENCY} running tasks resumed (median of {reps})"),
        show(resumes),
        "< 3 s".into(),
    ));
}

/// Starts `lazyboyd` on `home` and polls health on its socket every millisecond; returns the
/// process, when it was spawned, and how long until health first answered.
async fn spawn_timed(home: &Path) -> (KillOnDrop, Instant, Duration) {
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(home.join("daemon-stderr.log"))
        .unwrap();
    let mut command = TestDaemon::command(home);
    command
        .args(["--listen", "127.0.0.1:0"])
        .stdout(log.try_clone().unwrap())
        .stderr(log);
    let client = Client::new(home.to_owned());
    let spawned = Instant::now();
    let mut child = KillOnDrop(command.spawn().unwrap());
    loop {
        if let Ok(health) = client.get::<Health>("/api/health").await {
            let took = spawned.elapsed();
            assert_eq!(
                health.pid,
                child.0.id(),
                "health answered by the new daemon"
            );
            return (child, spawned, took);
        }
        if let Some(status) = child.0.try_wait().unwrap() {
            panic!("lazyboyd exited with {status}:\n{}", stderr_of(home));
        }
        assert!(spawned.elapsed() < Duration::from_secs(20), "no health");
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

/// The recovery task: its steps, then a model that does not answer (for an hour).
fn hang_after_steps(request: &CapturedRequest) -> Reply {
    let (steps, done) = progress(request);
    if done < steps {
        scripted(request)
    } else {
        Reply::text("too late").delay(Duration::from_secs(3600))
    }
}

/// The objectives of the tasks in `state`.
async fn objectives_in(daemon: &TestDaemon, state: &str) -> HashSet<String> {
    let path = format!("/api/tasks?state={state}&limit=10000");
    let list: TaskList = daemon.client().get(&path).await.unwrap();
    list.tasks.into_iter().map(|t| t.objective).collect()
}
