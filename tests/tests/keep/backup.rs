//! `lazyboy backup` while the daemon works: a consistent prefix of the log that a daemon
//! resumes as after a crash; a daemon killed mid-backup leaves no file that looks complete.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use lazyboy_protocol::{EventBody, TaskState, ToolStatus, Verdict, paths};
use lazyboy_tests::mock_model::{MockModel, Reply};
use lazyboy_tests::{
    TestDaemon, add_agent, all_events, create_task, history, post_message, task_events, temp_home,
    wait_for, wait_task_finished,
};
use serde_json::json;

use super::{backup, restore, rows};

const STEPS: usize = 200;
/// The step in flight when the backup is taken: a command that runs for a while.
const SLOW: usize = 120;

/// The model's side of a 200-step task: step n runs `echo n >> steps.txt`, the slow step
/// also marks `once.txt` and sleeps; then it answers.
fn script(mock: &MockModel) {
    mock.set_fallback_fn(|request| {
        let next = (0..STEPS).find(|n| request.tool_result_for(&format!("s{n}")).is_none());
        match next {
            Some(n) if n == SLOW => Reply::tool_call(
                format!("s{n}"),
                "exec_command",
                json!({"cmd": "echo ran >> once.txt; sleep 30", "block_until_ms": 60000}),
            ),
            Some(n) => Reply::tool_call(
                format!("s{n}"),
                "exec_command",
                json!({"cmd": format!("echo {n} >> steps.txt")}),
            ),
            None => Reply::text("all steps done"),
        }
    });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_backup_during_work_restores_a_prefix_that_resumes_as_after_a_crash() {
    let mock = MockModel::start().await;
    script(&mock);
    let daemon = TestDaemon::start_with_model(&mock, "openai", &[]).await;
    let ws = tempfile::tempdir().unwrap();
    add_agent(&daemon, "noisy").await;
    let task = create_task(&daemon, "default", "200 steps", Some(ws.path())).await;

    // Another client appends as fast as it can (4 connections) for the whole backup.
    let stop = Arc::new(AtomicBool::new(false));
    let appended = Arc::new(AtomicU64::new(0));
    let writers: Vec<_> = (0..4)
        .map(|w| {
            let (http, base, stop, appended) = (
                daemon.http.clone(),
                daemon.url(""),
                stop.clone(),
                appended.clone(),
            );
            tokio::spawn(async move {
                let mut i = 0;
                while !stop.load(Ordering::SeqCst) {
                    post_message(&http, &base, "noisy", &format!("{w}/{i}"))
                        .await
                        .unwrap();
                    appended.fetch_add(1, Ordering::SeqCst);
                    i += 1;
                }
            })
        })
        .collect();
    let once = ws.path().join("once.txt");
    wait_for(Duration::from_secs(120), "the slow step to run", || {
        let once = once.clone();
        async move { once.exists().then_some(()) }
    })
    .await;
    let file = tempfile::tempdir().unwrap();
    let archive = file.path().join("during.tar.gz");
    let (before, started) = (appended.load(Ordering::SeqCst), Instant::now());
    let made = backup(&daemon, &archive).await;
    let rate = (appended.load(Ordering::SeqCst) - before) as f64 / started.elapsed().as_secs_f64();
    stop.store(true, Ordering::SeqCst);
    for writer in writers {
        writer.await.unwrap();
    }
    eprintln!(
        "appends during the backup: {rate:.0}/s; {} events in it",
        made.manifest.counts.events
    );
    let mode = std::os::unix::fs::PermissionsExt::mode(
        &std::fs::metadata(&archive).unwrap().permissions(),
    );
    assert_eq!(mode & 0o777, 0o600, "the archive is private");
    assert!(
        made.manifest.files.iter().all(|f| f.name != paths::TOKEN),
        "no secrets by default"
    );
    let original = all_events(&daemon, 0).await;
    daemon.stop();

    let home = temp_home();
    let out = restore(home.path(), &archive).await;
    assert!(out.status.success(), "{out:?}");
    let config = std::fs::read_to_string(home.path().join(paths::CONFIG)).unwrap();
    assert!(config.contains("[providers.mock]"), "the config came back");
    let restored = TestDaemon::start_in(home.path(), &[]).await;
    // The backup's log is a prefix of the original's: the same events, seq for seq, up to its
    // last, with no gap and nothing torn.
    let last = made.manifest.counts.last_seq;
    let mine: Vec<_> = rows(&all_events(&restored, 0).await)
        .into_iter()
        .filter(|r| r.0 <= last)
        .collect();
    let theirs: Vec<_> = rows(&original)
        .into_iter()
        .filter(|r| r.0 <= last)
        .collect();
    assert_eq!(mine.len() as i64, made.manifest.counts.events);
    assert!(
        mine == theirs,
        "the restored log is not a prefix of the original"
    );

    // Then it resumes as after a crash: the call in flight is unknown, never run again, and
    // the task goes on to its end.
    let t = wait_task_finished(&restored, &task).await;
    assert_eq!(t.verdict, Some(Verdict::Answer));
    let events = task_events(&restored, &task).await;
    let slow: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            EventBody::ToolResult {
                call_id, status, ..
            } if call_id == &format!("s{SLOW}") => Some(*status),
            _ => None,
        })
        .collect();
    assert_eq!(slow, vec![ToolStatus::Unknown], "one result, unknown");
    assert_eq!(
        std::fs::read_to_string(&once).unwrap(),
        "ran\n",
        "never run twice"
    );
    assert!(events.iter().any(|e| matches!(
        e,
        EventBody::TaskState {
            state: TaskState::Recovering
        }
    )));
    mock.assert_clean();
    restored.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_mid_backup_leaves_no_file_that_looks_complete() {
    let home = temp_home();
    history::fill(home.path(), "busy", 200_000).await;
    let mut daemon = TestDaemon::start_in(home.path(), &[]).await;
    let backups = home.path().join(paths::BACKUPS);
    let mut command = daemon.cli();
    command
        .arg("backup")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let child = command.spawn().unwrap();
    // Killed while the archive itself is written (a `.tar.gz` growing, after the snapshot):
    // the moment a write straight to the final name would leave a partial file that looks
    // complete.
    let leftover = wait_for(
        Duration::from_secs(120),
        "the archive to be written",
        || {
            let backups = backups.clone();
            async move {
                std::fs::read_dir(&backups).ok()?.flatten().find_map(|e| {
                    let name = e.file_name().to_string_lossy().into_owned();
                    let growing = e.metadata().is_ok_and(|m| m.len() > 0);
                    (name.ends_with(".tar.gz") && growing).then_some(name)
                })
            }
        },
    )
    .await;
    daemon.kill9();
    let out = tokio::task::spawn_blocking(move || child.wait_with_output().unwrap())
        .await
        .unwrap();
    assert!(!out.status.success(), "the backup was cut short: {out:?}");
    let names: Vec<String> = std::fs::read_dir(&backups)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        names.iter().all(|n| n.starts_with(".lazyboy-backup-")),
        "only temporary names after the kill: {names:?} (saw {leftover})"
    );

    daemon.restart().await;
    let names: Vec<String> = std::fs::read_dir(&backups)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        names.is_empty(),
        "the restart cleared what the kill left: {names:?}"
    );
    // And the next backup is whole.
    let file = backups.join("after.tar.gz");
    let made = backup(&daemon, &file).await;
    assert!(made.manifest.counts.events >= 200_000);
    daemon.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_daemon_backs_up_by_itself_as_an_event_and_prunes() {
    let daemon = TestDaemon::start_with("[backup]\nevery = \"1s\"\nkeep = 2\n", &[]).await;
    let made = wait_for(Duration::from_secs(120), "three backups of its own", || {
        let daemon = &daemon;
        async move {
            let made: Vec<(String, u64)> = all_events(daemon, 0)
                .await
                .into_iter()
                .filter_map(|e| match e.body() {
                    Some(EventBody::BackupMade { path, pruned, .. }) => Some((path, pruned)),
                    _ => None,
                })
                .collect();
            (made.len() >= 3).then_some(made)
        }
    })
    .await;
    let backups = daemon.home().join(paths::BACKUPS);
    let kept: Vec<String> = std::fs::read_dir(&backups)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("lazyboy-") && n.ends_with(".tar.gz"))
        .collect();
    assert!(kept.len() <= 2, "pruned to keep = 2: {kept:?}");
    assert!(made.iter().map(|m| m.1).sum::<u64>() >= 1, "{made:?}");
    // The newest named in the log is among those kept, and restores.
    let newest = std::path::Path::new(&made.last().unwrap().0).to_owned();
    assert!(newest.starts_with(&backups));
    let home = temp_home();
    let out = restore(home.path(), &newest).await;
    assert!(out.status.success() || !newest.exists(), "{out:?}");
    daemon.stop();
}
