//! Keeping a person's work (issue 23): online backup and restore, a task's export, and
//! retention, end to end through the real CLI and daemon.

use std::path::Path;
use std::process::Output;

use lazyboy_protocol::{BackupMade, Event};
use lazyboy_tests::{TestDaemon, cli, output_of};

mod backup;
mod dashboard;
mod export;
mod postgres;
mod restore;
mod retention;

/// `lazyboy --json backup FILE` on the daemon's home.
async fn backup(daemon: &TestDaemon, file: &Path) -> BackupMade {
    let mut command = daemon.cli();
    command.args(["--json", "backup"]).arg(file);
    let out = output_of(command).await;
    assert!(out.status.success(), "backup failed: {out:?}");
    serde_json::from_slice(&out.stdout).unwrap()
}

/// `lazyboy restore FILE` on `home` (no daemon).
async fn restore(home: &Path, file: &Path) -> Output {
    let mut command = cli(home);
    command.arg("restore").arg(file);
    output_of(command).await
}

/// What a restore must leave alone when it refuses: every file of the home, by name and
/// SHA-256 of its contents (the lock file's pid aside).
fn snapshot(home: &Path) -> Vec<(String, String)> {
    let mut files: Vec<(String, String)> = std::fs::read_dir(home)
        .unwrap()
        .flatten()
        .filter(|e| e.path().is_file() && e.file_name() != "lazyboyd.lock")
        .map(|e| {
            let bytes = std::fs::read(e.path()).unwrap();
            (
                e.file_name().to_string_lossy().into_owned(),
                format!("{} bytes, {:x}", bytes.len(), md5ish(&bytes)),
            )
        })
        .collect();
    files.sort();
    files
}

/// A cheap content fingerprint (FNV-1a), enough to see that a file changed.
fn md5ish(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// The events as (seq, kind, task, data), for comparing logs.
fn rows(events: &[Event]) -> Vec<(i64, String, Option<String>, String)> {
    events
        .iter()
        .map(|e| (e.seq, e.kind.clone(), e.task.clone(), e.data.to_string()))
        .collect()
}
