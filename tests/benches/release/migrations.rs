//! The migrations that read the whole log (from `LOG_MIGRATIONS_FROM` on: the dashboard's
//! indexes over `events`, the conversation's full-text backfill) applied by the release daemon
//! to a database of 1,000,000 events: from the daemon's start to its first health answer,
//! against a start of the same database afterwards (nothing left to apply).

use std::path::Path;
use std::time::{Duration, Instant};

use lazyboy::connection::Client;
use lazyboy_protocol::{Health, paths};
use lazyboy_tests::bench::quick;
use lazyboy_tests::upgrade::big_database;
use lazyboy_tests::{KillOnDrop, TestDaemon, temp_home, wait_for};

use super::Row;

/// Starts the daemon on `home`, waits for its first answer, stops it; how long it took to
/// answer.
async fn start_to_answer(home: &Path) -> Duration {
    let started = Instant::now();
    let mut daemon = KillOnDrop(
        TestDaemon::command(home)
            .args(["--listen", "127.0.0.1:0"])
            .stderr(std::fs::File::create(home.join("daemon-stderr.log")).unwrap())
            .spawn()
            .unwrap(),
    );
    let client = Client::new(home.to_owned());
    wait_for(Duration::from_secs(600), "the daemon to answer", || {
        let client = client.clone();
        async move { client.get::<Health>("/api/health").await.ok() }
    })
    .await;
    let took = started.elapsed();
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(daemon.0.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    assert!(daemon.0.wait().unwrap().success());
    took
}

pub async fn million(rows: &mut Vec<Row>) {
    let events = if quick() { 100_000 } else { 1_000_000 };
    let home = temp_home();
    let made = Instant::now();
    big_database(&home.path().join(paths::DATABASE), events).await;
    let made = made.elapsed();
    let migrating = start_to_answer(home.path()).await;
    let again = start_to_answer(home.path()).await;
    rows.push((
        format!(
            "log migrations over {events} events: start → health (a start after: {:.2} s)",
            again.as_secs_f64()
        ),
        format!("{:.2} s", migrating.as_secs_f64()),
        "report".into(),
    ));
    rows.push((
        "… making that database (one INSERT … SELECT)".into(),
        format!("{:.2} s", made.as_secs_f64()),
        "—".into(),
    ));
}
