//! Migrations on databases that matter: the ones that read the whole log, applied to a
//! million events and cut by `kill -9` in the middle, leave a database the next start
//! finishes (each migration is one transaction with its record); a database from a newer
//! release is refused, with a message that says so, and left as it was, on SQLite and on
//! PostgreSQL.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use lazyboy::connection::Client;
use lazyboy_protocol::{Health, paths};
use lazyboy_tests::upgrade::{LOG_MIGRATIONS_FROM, big_database};
use lazyboy_tests::{KillOnDrop, TestDaemon, temp_home, wait_for};
use sqlx::sqlite::SqliteConnectOptions;
use sqlx::{ConnectOptions, Connection};

use super::text;

/// `(version, success)` of each applied migration, and `PRAGMA integrity_check`.
async fn state(db: &Path) -> (Vec<(i64, bool)>, String) {
    let mut conn = SqliteConnectOptions::new()
        .filename(db)
        .read_only(true)
        .connect()
        .await
        .unwrap();
    let applied = sqlx::query_as("SELECT version, success FROM _sqlx_migrations ORDER BY version")
        .fetch_all(&mut conn)
        .await
        .unwrap();
    let integrity: String = sqlx::query_scalar("PRAGMA integrity_check")
        .fetch_one(&mut conn)
        .await
        .unwrap();
    conn.close().await.unwrap();
    (applied, integrity)
}

/// Starts `lazyboyd` on `home` (stderr to `daemon-stderr.log`) without waiting for it.
fn spawn(home: &Path) -> KillOnDrop {
    let log = std::fs::File::create(home.join("daemon-stderr.log")).unwrap();
    KillOnDrop(
        TestDaemon::command(home)
            .args(["--listen", "127.0.0.1:0"])
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .unwrap(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn log_migrations_over_a_million_events_survive_kill_9_midway() {
    let home = temp_home();
    let db = home.path().join(paths::DATABASE);
    let messages = big_database(&db, 1_000_000).await;
    let (before, _) = state(&db).await;
    assert!(before.iter().all(|(v, _)| *v < LOG_MIGRATIONS_FROM));

    // Killed as soon as it says it applies the migrations (the log's indexes and its
    // full-text backfill take seconds over a million events).
    let mut first = spawn(home.path());
    let log = home.path().join("daemon-stderr.log");
    wait_for(
        Duration::from_secs(60),
        "the daemon to start migrating",
        || {
            let said = std::fs::read_to_string(&log).unwrap_or_default();
            std::future::ready(said.contains("applying ").then_some(()))
        },
    )
    .await;
    first.0.kill().unwrap();
    first.0.wait().unwrap();
    let (midway, integrity) = state(&db).await;
    assert_eq!(integrity, "ok");
    assert!(
        midway.iter().all(|(_, ok)| *ok),
        "a migration is recorded half done: {midway:?}"
    );
    let all = super::upgrade::migration_versions();
    assert!(
        midway.len() < all.len(),
        "the kill came after every migration ({midway:?}): it tests nothing"
    );

    // The next start applies the rest, over the whole log.
    let mut second = spawn(home.path());
    let client = Client::new(home.path().to_owned());
    let health: Health = wait_for(Duration::from_secs(300), "the restarted daemon", || {
        let client = client.clone();
        if let Some(status) = second.0.try_wait().unwrap() {
            panic!(
                "lazyboyd exited with {status}:\n{}",
                std::fs::read_to_string(&log).unwrap_or_default()
            );
        }
        async move { client.get::<Health>("/api/health").await.ok() }
    })
    .await;
    assert!(health.ok);
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(second.0.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    assert!(second.0.wait().unwrap().success());
    let (after, integrity) = state(&db).await;
    assert_eq!(integrity, "ok");
    assert_eq!(after.iter().map(|(v, _)| *v).collect::<Vec<_>>(), all);
    let mut conn = SqliteConnectOptions::new()
        .filename(&db)
        .read_only(true)
        .connect()
        .await
        .unwrap();
    let events: i64 = sqlx::query_scalar("SELECT count(*) FROM events")
        .fetch_one(&mut conn)
        .await
        .unwrap();
    assert!(events >= 1_000_000, "{events}");
    // The backfill indexed every message once, though it was cut the first time.
    let indexed: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM conversation_fts WHERE conversation_fts MATCH 'history'",
    )
    .fetch_one(&mut conn)
    .await
    .unwrap();
    assert_eq!(indexed, messages);
    conn.close().await.unwrap();
}

#[tokio::test]
async fn a_newer_sqlite_database_is_refused_and_left_as_it_was() {
    // The home outlives the first daemon (a TestDaemon's own home goes with it).
    let owned = temp_home();
    let home = owned.path().to_owned();
    TestDaemon::start_in(&home, &[]).await.stop();
    let db = home.join(paths::DATABASE);
    let mut conn = SqliteConnectOptions::new()
        .filename(&db)
        .connect()
        .await
        .unwrap();
    sqlx::query(
        "INSERT INTO _sqlx_migrations (version, description, success, checksum, \
         execution_time) VALUES (99990101000000, 'from the future', 1, x'00', 0)",
    )
    .execute(&mut conn)
    .await
    .unwrap();
    sqlx::query("PRAGMA wal_checkpoint(TRUNCATE)")
        .execute(&mut conn)
        .await
        .unwrap();
    conn.close().await.unwrap();
    let bytes = std::fs::read(&db).unwrap();
    let output = TestDaemon::command(&home)
        .args(["--listen", "127.0.0.1:0"])
        .output()
        .unwrap();
    let (_, stderr) = text(&output);
    assert!(!output.status.success());
    assert!(
        stderr.contains("was written by a newer lazyboyd (schema version 99990101000000"),
        "{stderr}"
    );
    assert!(
        std::fs::read(&db).unwrap() == bytes,
        "the database was changed"
    );
    let wal = home.join("lazyboy.db-wal");
    assert!(
        std::fs::metadata(&wal).map_or(true, |m| m.len() == 0),
        "the refusal wrote to the WAL"
    );
}

/// Every table of the schema `url` points at, each with a digest of its rows.
async fn snapshot(url: &str) -> Vec<(String, i64, String)> {
    let mut conn = sqlx::PgConnection::connect(url).await.unwrap();
    let tables: Vec<String> = sqlx::query_scalar(
        "SELECT table_name::text FROM information_schema.tables \
         WHERE table_schema = current_schema() ORDER BY 1",
    )
    .fetch_all(&mut conn)
    .await
    .unwrap();
    let mut out = Vec::new();
    for table in tables {
        let (rows, digest): (i64, Option<String>) = sqlx::query_as(&format!(
            "SELECT count(*), md5(string_agg(t::text, '|' ORDER BY t::text)) FROM \"{table}\" t"
        ))
        .fetch_one(&mut conn)
        .await
        .unwrap();
        out.push((table, rows, digest.unwrap_or_default()));
    }
    conn.close().await.unwrap();
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_newer_postgres_schema_is_refused_and_left_as_it_was() {
    let url = lazyboy_tests::fleet::postgres_url().await;
    let env = [
        ("LAZYBOY_DATABASE_URL", url.as_str()),
        ("LAZYBOY_NODE", "n1"),
    ];
    let daemon = TestDaemon::start_with("", &env).await;
    lazyboy_tests::add_agent(&daemon, "kept").await;
    daemon.stop();
    let mut conn = sqlx::PgConnection::connect(&url).await.unwrap();
    sqlx::query(
        "INSERT INTO _sqlx_migrations (version, description, success, checksum, \
         execution_time) VALUES (99990101000000, 'from the future', true, '\\x00', 0)",
    )
    .execute(&mut conn)
    .await
    .unwrap();
    conn.close().await.unwrap();
    let before = snapshot(&url).await;
    assert!(
        before
            .iter()
            .any(|(t, rows, _)| t == "agents" && *rows >= 2)
    );

    let home = temp_home();
    let output = TestDaemon::command(home.path())
        .args(["--listen", "127.0.0.1:0"])
        .env("LAZYBOY_DATABASE_URL", &url)
        .env("LAZYBOY_NODE", "n2")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    let (_, stderr) = text(&output);
    assert!(!output.status.success());
    assert!(
        stderr.contains("was written by a newer lazyboyd (schema version 99990101000000"),
        "{stderr}"
    );
    assert!(
        !stderr.contains(&url),
        "the URL (a secret) was printed: {stderr}"
    );
    assert_eq!(snapshot(&url).await, before, "the database was changed");
}
