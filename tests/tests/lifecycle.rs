//! One daemon per home, graceful shutdown, private files, schema guard, and the CLI's
//! daemon management.

use std::os::unix::fs::PermissionsExt;
use std::process::Output;
use std::time::Duration;

use futures_util::StreamExt;
use lazyboy_protocol::{Health, paths};
use lazyboy_tests::{TestDaemon, add_agent, cli, post_message, sse, temp_home, wait_for};

fn text(output: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[tokio::test]
async fn a_second_daemon_on_the_same_home_is_refused() {
    let daemon = TestDaemon::start().await;
    let output = TestDaemon::command(daemon.home())
        .args(["--listen", "127.0.0.1:0"])
        .output()
        .unwrap();
    assert!(!output.status.success());
    let (_, stderr) = text(&output);
    assert!(
        stderr.contains(&format!(
            "another lazyboyd (pid {}) is already running",
            daemon.pid()
        )),
        "{stderr}"
    );
    // The first one is unharmed.
    daemon.client().get::<Health>("/api/health").await.unwrap();
    daemon.stop();
}

#[tokio::test]
async fn sigterm_ends_open_streams_and_exits_cleanly() {
    let home = temp_home();
    let daemon = TestDaemon::start_in(home.path(), &[]).await;
    add_agent(&daemon, "ops").await;
    let mut stream =
        Box::pin(sse::connect(&daemon.http, &daemon.url("/api/events?after=0"), None).await);
    assert_eq!(stream.next().await.unwrap().event.agent, "default");
    assert_eq!(stream.next().await.unwrap().event.agent, "ops");
    // `stop` asserts exit 0 within 5 s and the socket removed.
    daemon.stop();
    assert!(stream.next().await.is_none(), "the SSE stream ended");
    let log = std::fs::read_to_string(home.path().join(paths::LOGS).join("lazyboyd.log")).unwrap();
    assert!(
        log.contains("SIGTERM: shutting down") && log.contains("lazyboyd stopped"),
        "{log}"
    );
}

#[tokio::test]
async fn home_socket_and_database_are_private() {
    let daemon = TestDaemon::start().await;
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(daemon.home()), 0o700);
    assert_eq!(mode(&daemon.home().join(paths::SOCKET)), 0o600);
    assert_eq!(mode(&daemon.home().join(paths::DATABASE)), 0o600);
    assert_eq!(mode(&daemon.home().join(paths::LOCK)), 0o600);
    daemon.stop();
}

#[tokio::test]
async fn a_database_from_a_newer_version_is_refused() {
    let mut daemon = TestDaemon::start().await;
    daemon.kill9();
    let db = daemon.home().join(paths::DATABASE);
    let status = std::process::Command::new("python3")
        .arg("-c")
        .arg(
            "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); \
             c.execute(\"INSERT INTO _sqlx_migrations (version, description, success, checksum, \
             execution_time) VALUES (99990101000000, 'from the future', 1, x'00', 0)\"); c.commit()",
        )
        .arg(&db)
        .status()
        .unwrap();
    assert!(status.success());
    let output = TestDaemon::command(daemon.home())
        .args(["--listen", "127.0.0.1:0"])
        .output()
        .unwrap();
    assert!(!output.status.success());
    let (_, stderr) = text(&output);
    assert!(
        stderr.contains("was written by a newer lazyboyd (schema version 99990101000000"),
        "{stderr}"
    );
}

#[tokio::test]
async fn cli_starts_stops_and_reports_the_daemon() {
    let home = temp_home();
    let home = home.path();
    let status = cli(home).args(["daemon", "status"]).output().unwrap();
    assert_eq!(
        status.status.code(),
        Some(3),
        "status does not start a daemon"
    );
    assert!(text(&status).0.contains("not running"));

    let started = cli(home)
        .args(["daemon", "start", "--json"])
        .output()
        .unwrap();
    assert!(started.status.success(), "{:?}", text(&started));
    let health: Health = serde_json::from_slice(&started.stdout).unwrap();
    let again = cli(home)
        .args(["daemon", "start", "--json"])
        .output()
        .unwrap();
    let again: Health = serde_json::from_slice(&again.stdout).unwrap();
    assert_eq!(again.pid, health.pid, "start is idempotent");

    let status = cli(home).args(["daemon", "status"]).output().unwrap();
    let (stdout, _) = text(&status);
    assert!(status.status.success());
    for needle in [
        &health.pid.to_string(),
        &health.version,
        &home.display().to_string(),
        &health.url,
    ] {
        assert!(
            stdout.contains(needle.as_str()),
            "{needle} missing from {stdout}"
        );
    }

    let stopped = cli(home).args(["daemon", "stop"]).output().unwrap();
    assert!(stopped.status.success());
    assert!(
        !lazyboy::daemon_proc::lock_is_held(home),
        "stop waits for the exit"
    );
    assert!(!home.join(paths::SOCKET).exists());
    let stopped = cli(home).args(["daemon", "stop"]).output().unwrap();
    assert!(stopped.status.success() && text(&stopped).0.contains("not running"));

    // Any other command starts the daemon on demand.
    let added = cli(home)
        .args(["agent", "add", "ops", "--model", "m"])
        .output()
        .unwrap();
    assert!(added.status.success(), "{:?}", text(&added));
    let listed = cli(home).args(["agent", "ls"]).output().unwrap();
    assert!(text(&listed).0.contains("ops"));
    let bad = cli(home).args(["agent", "add", "Bad!"]).output().unwrap();
    assert_eq!(bad.status.code(), Some(1));
    assert!(text(&bad).1.contains("invalid agent name"));
    let removed = cli(home).args(["agent", "rm", "ops"]).output().unwrap();
    assert!(removed.status.success());
    let events = cli(home).args(["events"]).output().unwrap();
    let (stdout, _) = text(&events);
    assert_eq!(
        stdout.lines().collect::<Vec<_>>(),
        [
            "#1 default agent_created",
            "#2 ops agent_created model m",
            "#3 ops agent_deleted"
        ]
    );
    assert!(
        cli(home)
            .args(["daemon", "stop"])
            .output()
            .unwrap()
            .status
            .success()
    );
}

#[tokio::test]
async fn cli_daemon_outlives_the_starting_session() {
    let home = temp_home();
    // Start from a throwaway session, as a terminal would, then end that session.
    let status = std::process::Command::new("setsid")
        .arg("--wait")
        .arg(lazyboy_tests::bin("lazyboy"))
        .args(["daemon", "start"])
        .env("LAZYBOY_HOME", home.path())
        .env("LAZYBOY_DAEMON_BIN", lazyboy_tests::bin("lazyboyd"))
        .env("LAZYBOY_WEB_PORT", "0")
        .stdout(std::process::Stdio::null())
        .status()
        .unwrap();
    assert!(status.success());
    let client = lazyboy::connection::Client::new(home.path().to_owned());
    let health: Health = client.get("/api/health").await.unwrap();
    let sid = std::fs::read_to_string(format!("/proc/{}/stat", health.pid)).unwrap();
    // Field 6 of /proc/PID/stat is the session id: the daemon leads its own session.
    let fields: Vec<&str> = sid.rsplit(')').next().unwrap().split_whitespace().collect();
    assert_eq!(
        fields[3],
        health.pid.to_string(),
        "the daemon called setsid"
    );
    assert!(
        cli(home.path())
            .args(["daemon", "stop"])
            .output()
            .unwrap()
            .status
            .success()
    );
}

#[tokio::test]
async fn events_follow_resumes_across_a_daemon_restart() {
    let mut daemon = TestDaemon::start().await;
    add_agent(&daemon, "ops").await;
    let out_path = daemon.home().join("follow.out");
    let follow = lazyboy_tests::KillOnDrop(
        daemon
            .cli()
            .args(["events", "--follow", "--json"])
            .stdout(std::fs::File::create(&out_path).unwrap())
            .spawn()
            .unwrap(),
    );
    let lines = |min: usize| {
        let path = out_path.clone();
        move || {
            let text = std::fs::read_to_string(&path).unwrap_or_default();
            let seqs: Vec<i64> = text
                .lines()
                .map(|l| {
                    serde_json::from_str::<lazyboy_protocol::Event>(l)
                        .unwrap()
                        .seq
                })
                .collect();
            std::future::ready((seqs.len() >= min).then_some(seqs))
        }
    };
    post_message(&daemon.http, &daemon.url(""), "ops", "one")
        .await
        .unwrap();
    // default's and ops' creation, then "one".
    wait_for(Duration::from_secs(10), "three lines", lines(3)).await;
    daemon.kill9();
    daemon.restart().await;
    post_message(&daemon.http, &daemon.url(""), "ops", "two")
        .await
        .unwrap();
    post_message(&daemon.http, &daemon.url(""), "ops", "three")
        .await
        .unwrap();
    let seqs = wait_for(
        Duration::from_secs(20),
        "five lines after the restart",
        lines(5),
    )
    .await;
    assert_eq!(seqs, [1, 2, 3, 4, 5], "every seq once, in order");
    drop(follow);
    daemon.stop();
}

#[tokio::test]
async fn a_protocol_mismatch_is_reported_clearly() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let home = temp_home();
    // A pretend daemon from another version, answering every request with its health.
    let listener = tokio::net::UnixListener::bind(home.path().join(paths::SOCKET)).unwrap();
    tokio::spawn(async move {
        loop {
            let (mut stream, _) = listener.accept().await.unwrap();
            let mut buf = [0u8; 4096];
            let _ = stream.read(&mut buf).await;
            let body = r#"{"ok":true,"version":"9.9.9","pid":4242,"protocol":999}"#;
            let response = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
                body.len()
            );
            let _ = stream.write_all(response.as_bytes()).await;
        }
    });
    let home_path = home.path().to_owned();
    let output = tokio::task::spawn_blocking(move || {
        cli(&home_path).args(["agent", "ls"]).output().unwrap()
    })
    .await
    .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let (_, stderr) = text(&output);
    // ... and says what to do: restart the daemon with this version.
    assert!(
        stderr.contains("speaks protocol 999, but this lazyboy")
            && stderr.contains(&format!(
                "speaks protocol {}",
                lazyboy_protocol::PROTOCOL_VERSION
            ))
            && stderr.contains("`lazyboy daemon restart`"),
        "{stderr}"
    );
}
