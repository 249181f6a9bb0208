//! The upgrade fixture: a home made by an older release, kept in `tests/fixtures/<tag>/`
//! (`lazyboy.db` and `expected.json`, what that release's API answered), so that every later
//! daemon is tested against a real old database rather than a list of today's migrations.
//!
//! [`make`] drives the old release's `lazyboyd` (built from its git tag by
//! `scripts/make-upgrade-fixture`, through the `lazyboy-make-fixture` program) against the
//! mock model: agents with their boundaries and MCP servers, a finished task with tool calls,
//! a plan, a message and a deliverable file, memories, a task waiting for an answer, a
//! schedule, notes in the agents' chats. `tests/tests/release/upgrade.rs` opens a copy with
//! the daemon under test. [`contains`] is how the two are compared: what the old release
//! answered must be there, unchanged, in what the new one answers (which may say more).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use lazyboy::connection::{Client, Method};
use serde_json::{Value, json};

use crate::mock_model::{MockModel, Reply, SeenMessage};
use crate::wait_for;

/// The release the fixture was made by.
pub const FIXTURE_TAG: &str = "v0.1.0";

/// The waiting task's workspace. Stored in the database as an absolute path, so it is the
/// same on every machine; the test creates it before the task resumes.
pub const SHOP_WORKSPACE: &str = "/tmp/lazyboy-fixture-v0.1.0/shop";

/// `tests/fixtures/<FIXTURE_TAG>/`.
pub fn fixture_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures")
        .join(FIXTURE_TAG)
}

/// The fixture's `config.toml` with the model at `mock`: the provider the fixture was made
/// with (`mock`), the MCP server its agents name, and missed schedule slots skipped (the
/// fixture's schedule would otherwise fire at the test's start).
pub fn config(mock: &MockModel) -> String {
    format!(
        "default_provider = \"mock\"\nheartbeat_secs = 1\n\n[providers.mock]\nwire = \"openai\"\n\
         base_url = \"{}\"\nmodel = \"mock-model\"\n\n[retry]\nmax_attempts = 3\nbase_ms = 5\n\
         max_ms = 50\n\n[schedules]\nrun_missed = false\n\n[mcp.servers.notes]\n\
         command = \"lazyboy-fixture-notes-server\"\n",
        mock.openai_base_url()
    )
}

/// Checks that `new` holds everything `old` does: the same keys with the same values, arrays
/// of the same length element by element; `new` may add keys. `Err` names the first path
/// where they differ.
pub fn contains(old: &Value, new: &Value, path: &str) -> Result<(), String> {
    match (old, new) {
        (Value::Object(old), Value::Object(new)) => {
            for (key, value) in old {
                let at = format!("{path}.{key}");
                match new.get(key) {
                    Some(theirs) => contains(value, theirs, &at)?,
                    None => return Err(format!("{at} is gone (was {value})")),
                }
            }
            Ok(())
        }
        (Value::Array(old), Value::Array(new)) => {
            if old.len() != new.len() {
                return Err(format!("{path} has {} items, was {}", new.len(), old.len()));
            }
            for (i, (a, b)) in old.iter().zip(new).enumerate() {
                contains(a, b, &format!("{path}[{i}]"))?;
            }
            Ok(())
        }
        (a, b) if a == b => Ok(()),
        (a, b) => Err(format!("{path} is {b}, was {a}")),
    }
}

/// The agents the fixture holds.
pub const AGENTS: [&str; 4] = ["default", "researcher", "shopper", "ops"];

/// What the mock model does while the fixture is made: each task follows a script chosen by
/// its objective, from the results it has seen so far.
fn script(mock: &MockModel) {
    mock.set_fallback_fn(|request| {
        let objective = request
            .messages
            .iter()
            .find_map(|m| match m {
                SeenMessage::User { text } => Some(text.clone()),
                _ => None,
            })
            .unwrap_or_default();
        let seen = |id: &str| request.tool_result_for(id).is_some();
        let call = |id: &str, name: &str, args: Value| Reply::tool_call(id, name, args);
        if objective.starts_with("compare") {
            return if !seen("r1") {
                Reply::tool_calls([
                    crate::mock_model::MockCall::new(
                        "r0",
                        "update_plan",
                        json!({"plan": [{"step": "write notes", "status": "in_progress"},
                                        {"step": "check them", "status": "pending"}]}),
                    ),
                    crate::mock_model::MockCall::new(
                        "r1",
                        "write_file",
                        json!({"path": "notes.md", "content": "# Laptops\n\n- A: 14 inch\n- B: 16 inch\n"}),
                    ),
                ])
            } else if !seen("r2") {
                call("r2", "exec_command", json!({"cmd": "wc -l notes.md"}))
            } else if !seen("r3") {
                call(
                    "r3",
                    "memory_write",
                    json!({"text": "The person prefers 14-inch laptops.", "key": "laptop-size"}),
                )
            } else if !seen("r4") {
                call(
                    "r4",
                    "update_plan",
                    json!({"plan": [{"step": "write notes", "status": "completed"},
                                    {"step": "check them", "status": "completed"}]}),
                )
            } else if !seen("r5") {
                call("r5", "send_message", json!({"text": "The notes are in notes.md."}))
            } else {
                call(
                    "r6",
                    "report_done",
                    json!({"summary": "Compared the two laptops.",
                           "evidence": "wc -l notes.md: 4 lines", "files": ["notes.md"]}),
                )
            };
        }
        if objective.starts_with("remember") {
            return if !seen("m1") {
                call(
                    "m1",
                    "memory_write",
                    json!({"text": "The card on file ends in 4242.", "key": "card"}),
                )
            } else {
                Reply::text("Remembered.")
            };
        }
        if objective.starts_with("order") {
            return call(
                "q1",
                "request_user_input",
                json!({"question": "Which shop?", "options": ["Shop A", "Shop B"]}),
            );
        }
        Reply::text("ok")
    });
}

/// A running old `lazyboyd`, killed on drop.
struct OldDaemon {
    child: Child,
    client: Client,
}

impl Drop for OldDaemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl OldDaemon {
    async fn start(binary: &Path, home: &Path) -> OldDaemon {
        let log = std::fs::File::create(home.join("daemon-stderr.log")).unwrap();
        let child = Command::new(binary)
            .args(["--listen", "127.0.0.1:0"])
            .env("LAZYBOY_HOME", home)
            .env("RUST_LOG", "info")
            .env_remove("LAZYBOY_TOKEN")
            .env_remove("LAZYBOY_DATABASE_URL")
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .unwrap();
        let client = Client::new(home.to_owned());
        let probe = client.clone();
        wait_for(Duration::from_secs(60), "the old daemon to answer", || {
            let probe = probe.clone();
            async move { probe.get::<Value>("/api/health").await.ok() }
        })
        .await;
        OldDaemon { child, client }
    }

    async fn call(&self, method: Method, path: &str, body: Value) -> Value {
        self.client
            .call::<Value>(method, path, Some(&body))
            .await
            .unwrap_or_else(|e| panic!("{path}: {e}"))
    }

    async fn get(&self, path: &str) -> Value {
        self.client
            .get::<Value>(path)
            .await
            .unwrap_or_else(|e| panic!("{path}: {e}"))
    }

    async fn wait_state(&self, task: &str, state: &str) {
        let path = format!("/api/tasks/{task}");
        wait_for(Duration::from_secs(60), &format!("{task} {state}"), || {
            let path = path.clone();
            async move {
                let task = self.client.get::<Value>(&path).await.ok()?;
                (task["state"] == state).then_some(())
            }
        })
        .await;
    }

    async fn task(&self, agent: &str, objective: &str, workspace: Option<&str>) -> String {
        let mut body = json!({"objective": objective});
        if let Some(dir) = workspace {
            body["workspace"] = json!(dir);
        }
        let accepted = self
            .call(Method::POST, &format!("/api/agents/{agent}/tasks"), body)
            .await;
        accepted["task"].as_str().unwrap().to_owned()
    }
}

/// Makes the fixture with the old release's daemon `binary`, into `out` (`lazyboy.db`,
/// `expected.json`).
pub async fn make(binary: &Path, out: &Path) {
    let mock = MockModel::start().await;
    script(&mock);
    let home = crate::temp_home();
    std::fs::write(home.path().join("config.toml"), config(&mock)).unwrap();
    let _ = std::fs::remove_dir_all(Path::new(SHOP_WORKSPACE).parent().unwrap());
    std::fs::create_dir_all(SHOP_WORKSPACE).unwrap();
    let old = OldDaemon::start(binary, home.path()).await;
    let health = old.get("/api/health").await;

    for body in [
        json!({"name": "researcher", "instructions": "Research carefully; cite sources."}),
        json!({"name": "shopper", "instructions": "Never spend over 50 EUR.",
               "approve": ["command"], "allow": ["git status"], "sandbox": "read-only",
               "mcp": ["notes"]}),
        json!({"name": "ops", "model": "mock-model", "sandbox": "off"}),
    ] {
        old.call(Method::POST, "/api/agents", body).await;
    }
    let finished = old.task("researcher", "compare two laptops", None).await;
    old.wait_state(&finished, "done").await;
    let remembered = old.task("shopper", "remember my card", None).await;
    old.wait_state(&remembered, "done").await;
    let waiting = old
        .task("shopper", "order a blue shirt", Some(SHOP_WORKSPACE))
        .await;
    old.wait_state(&waiting, "waiting_for_human").await;
    old.call(
        Method::POST,
        "/api/agents/ops/schedules",
        json!({"cron": "0 8 * * 1-5", "objective": "summarize the overnight issues"}),
    )
    .await;
    for (agent, text) in [("ops", "the backups moved to /srv/b"), ("default", "hello")] {
        old.call(
            Method::POST,
            &format!("/api/agents/{agent}/messages"),
            json!({"text": text, "note": true}),
        )
        .await;
    }

    let mut conversations = serde_json::Map::new();
    for agent in AGENTS {
        let page = old
            .get(&format!("/api/agents/{agent}/conversation?limit=200"))
            .await;
        conversations.insert(agent.to_owned(), page);
    }
    let expected = json!({
        "made_by": {"version": health["version"], "protocol": health["protocol"]},
        "finished_task": finished,
        "waiting_task": waiting,
        "agents": old.get("/api/agents").await,
        "tasks": old.get("/api/tasks").await,
        "schedules": old.get("/api/schedules").await,
        "files": old.get(&format!("/api/tasks/{finished}/files")).await,
        "conversations": conversations,
        "events": old.get("/api/events/page?after=0&limit=1000").await,
    });
    // A clean stop folds the WAL into the file: one file is the whole database.
    old.call(Method::POST, "/api/daemon/stop", json!({})).await;
    let mut old = old;
    let status = old.child.wait().unwrap();
    assert!(status.success(), "the old daemon stopped with {status}");
    std::fs::create_dir_all(out).unwrap();
    std::fs::copy(home.path().join("lazyboy.db"), out.join("lazyboy.db")).unwrap();
    for leftover in ["lazyboy.db-wal", "lazyboy.db-shm"] {
        let path = home.path().join(leftover);
        assert!(
            std::fs::metadata(&path).map_or(true, |m| m.len() == 0),
            "{} is not empty after a clean stop",
            path.display()
        );
    }
    std::fs::write(
        out.join("expected.json"),
        serde_json::to_string_pretty(&expected).unwrap() + "\n",
    )
    .unwrap();
}

/// The first migration that reads the whole event log on an existing database: the
/// dashboard's partial indexes over `events`, then the conversation's full-text backfill
/// (`20261201120100`). A database from before it is what [`big_database`] makes.
pub const LOG_MIGRATIONS_FROM: i64 = 20261201110000;

/// Makes a SQLite database at the schema from before [`LOG_MIGRATIONS_FROM`] (this
/// checkout's migrations up to it, through sqlx's migrator as the daemon applies them) with
/// `events` events of one agent: a mix of messages (which the conversation's index and its
/// full-text search cover), tool calls and results, and streamed deltas. Returns how many
/// events of the conversation's kinds it wrote.
pub async fn big_database(db: &Path, events: i64) -> i64 {
    use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode};
    use sqlx::{ConnectOptions, Connection};
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let older = tempfile::tempdir().unwrap();
    for entry in std::fs::read_dir(repo.join("migrations/sqlite")).unwrap() {
        let entry = entry.unwrap();
        let name = entry.file_name().into_string().unwrap();
        let version: i64 = name.split('_').next().unwrap().parse().unwrap();
        if version < LOG_MIGRATIONS_FROM {
            std::fs::copy(entry.path(), older.path().join(&name)).unwrap();
        }
    }
    let migrator = sqlx::migrate::Migrator::new(older.path()).await.unwrap();
    let mut conn = SqliteConnectOptions::new()
        .filename(db)
        .create_if_missing(true)
        .journal_mode(SqliteJournalMode::Wal)
        .connect()
        .await
        .unwrap();
    migrator.run_direct(&mut conn).await.unwrap();
    let at = 1_700_000_000_000_i64;
    sqlx::query("INSERT INTO agents (id, name, created_at_ms) VALUES (1, 'bulk', ?)")
        .bind(at)
        .execute(&mut conn)
        .await
        .unwrap();
    sqlx::query("INSERT INTO threads (id, agent_id, kind, created_at_ms) VALUES ('bulk-chat', 1, 'chat', ?)")
        .bind(at)
        .execute(&mut conn)
        .await
        .unwrap();
    // One statement: a million single inserts would take minutes in a debug build.
    sqlx::query(
        "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?1) \
         INSERT INTO events (thread_id, agent_id, task_id, kind, data, at_ms) \
         SELECT 'bulk-chat', 1, NULL, \
                CASE i % 8 WHEN 0 THEN 'user_message' WHEN 1 THEN 'agent_message' \
                           WHEN 2 THEN 'tool_call' WHEN 3 THEN 'tool_result' \
                           ELSE 'assistant_delta' END, \
                json_object('text', 'event ' || i || ' of a long history'), ?2 + i \
         FROM n",
    )
    .bind(events)
    .bind(at)
    .execute(&mut conn)
    .await
    .unwrap();
    let messages: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM events WHERE kind IN ('user_message', 'agent_message')",
    )
    .fetch_one(&mut conn)
    .await
    .unwrap();
    conn.close().await.unwrap();
    messages
}
