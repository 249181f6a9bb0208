//! The previous release's database, opened by this daemon: every migration this checkout has
//! applies (read from `migrations/sqlite/` as it is when the test runs, so migrations added
//! later are covered as they land), what the old release answered is still answered, the
//! memories are the same rows, and the task it left waiting for the person is answered and
//! resumes where it stopped.

use std::collections::BTreeMap;
use std::time::Duration;

use lazyboy_tests::mock_model::{MockModel, Reply};
use lazyboy_tests::upgrade::{self, AGENTS, SHOP_WORKSPACE, contains};
use lazyboy_tests::{TestDaemon, task_events, temp_home, wait_task_finished};
use serde_json::{Value, json};
use sqlx::sqlite::SqliteConnectOptions;
use sqlx::{ConnectOptions, Connection};

use super::repo;

/// The versions of the migrations in this checkout.
pub(super) fn migration_versions() -> Vec<i64> {
    let mut versions: Vec<i64> = std::fs::read_dir(repo().join("migrations/sqlite"))
        .unwrap()
        .filter_map(|e| {
            let name = e.ok()?.file_name().into_string().ok()?;
            name.strip_suffix(".sql")?.split('_').next()?.parse().ok()
        })
        .collect();
    versions.sort();
    versions
}

/// `(agent, key, text)` of every memory, read straight from the file.
async fn memories(db: &std::path::Path) -> Vec<(String, Option<String>, String)> {
    let mut conn = SqliteConnectOptions::new()
        .filename(db)
        .read_only(true)
        .connect()
        .await
        .unwrap();
    let rows = sqlx::query_as(
        "SELECT a.name, m.key, m.text FROM memories m JOIN agents a ON a.id = m.agent_id \
         ORDER BY m.id",
    )
    .fetch_all(&mut conn)
    .await
    .unwrap();
    conn.close().await.unwrap();
    rows
}

fn check(old: &Value, new: &Value, what: &str) {
    if let Err(difference) = contains(old, new, what) {
        panic!("{what} changed across the upgrade: {difference}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_previous_releases_database_upgrades_and_its_waiting_task_resumes() {
    let fixture = upgrade::fixture_dir();
    let expected: Value =
        serde_json::from_str(&std::fs::read_to_string(fixture.join("expected.json")).unwrap())
            .unwrap();
    let home = temp_home();
    let db = home.path().join("lazyboy.db");
    std::fs::copy(fixture.join("lazyboy.db"), &db).unwrap();
    std::fs::create_dir_all(SHOP_WORKSPACE).unwrap();
    let before = memories(&db).await;
    assert!(before.len() >= 2, "the fixture has memories: {before:?}");

    let mock = MockModel::start().await;
    std::fs::write(home.path().join("config.toml"), upgrade::config(&mock)).unwrap();
    let daemon = TestDaemon::start_in(home.path(), &[]).await;

    // Every migration of this checkout is recorded as applied.
    let mut conn = SqliteConnectOptions::new()
        .filename(&db)
        .read_only(true)
        .connect()
        .await
        .unwrap();
    let applied: Vec<(i64, bool)> =
        sqlx::query_as("SELECT version, success FROM _sqlx_migrations ORDER BY version")
            .fetch_all(&mut conn)
            .await
            .unwrap();
    conn.close().await.unwrap();
    assert!(applied.iter().all(|(_, ok)| *ok), "{applied:?}");
    let applied: Vec<i64> = applied.into_iter().map(|(v, _)| v).collect();
    assert_eq!(applied, migration_versions());

    // What the old release answered is answered the same (the new one may say more).
    let client = daemon.client();
    let get = |path: String| {
        let client = client.clone();
        async move { client.get::<Value>(&path).await.unwrap() }
    };
    let agents = get("/api/agents".into()).await;
    let by_name = |list: &Value| -> BTreeMap<String, Value> {
        list["agents"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| (a["name"].as_str().unwrap().to_owned(), a.clone()))
            .collect()
    };
    let (old_agents, new_agents) = (by_name(&expected["agents"]), by_name(&agents));
    assert_eq!(
        old_agents.keys().collect::<Vec<_>>(),
        new_agents.keys().collect::<Vec<_>>()
    );
    for (name, old) in &old_agents {
        let new = &new_agents[name];
        for field in [
            "instructions",
            "model",
            "thread",
            "created_at_ms",
            "mcp",
            "approve",
            "allow",
            "usage",
        ] {
            check(&old[field], &new[field], &format!("agent {name}'s {field}"));
        }
        // The sandbox an agent was given is kept; `default` had none stored and gets the new
        // default (confined, issue 20).
        let sandbox = if name == "default" {
            json!("workspace-write")
        } else {
            old["sandbox"].clone()
        };
        assert_eq!(new["sandbox"], sandbox, "agent {name}");
    }
    let tasks = get("/api/tasks".into()).await;
    check(&expected["tasks"], &tasks, "the task list");
    let mut schedules = expected["schedules"].clone();
    // The next slot is recomputed at start: a missed one is skipped (run_missed = false).
    for schedule in schedules["schedules"].as_array_mut().unwrap() {
        schedule.as_object_mut().unwrap().remove("next_run_at_ms");
    }
    check(
        &schedules,
        &get("/api/schedules".into()).await,
        "the schedules",
    );
    let finished = expected["finished_task"].as_str().unwrap();
    check(
        &expected["files"],
        &get(format!("/api/tasks/{finished}/files")).await,
        "the finished task's deliverables",
    );
    for agent in AGENTS {
        // `seq` is the log's newest seq when the page was read, not part of the page; what
        // this daemon wrote since (a note that a schedule's slot was missed while the
        // fixture lay on disk, depending on today's date) is newer than it and left out.
        let mut old = expected["conversations"][agent].clone();
        let old_seq = old.as_object_mut().unwrap().remove("seq").unwrap();
        let old_seq = old_seq.as_i64().unwrap();
        let mut new = get(format!("/api/agents/{agent}/conversation?limit=200")).await;
        new["items"]
            .as_array_mut()
            .unwrap()
            .retain(|item| item["seq"].as_i64().unwrap() <= old_seq);
        check(&old, &new, &format!("{agent}'s conversation"));
    }
    let old_events = expected["events"]["events"].as_array().unwrap();
    let page = get(format!(
        "/api/events/page?after=0&limit={}",
        old_events.len()
    ))
    .await;
    check(&expected["events"], &page, "the event log");
    assert_eq!(memories(&db).await, before, "the memories changed");

    // The task the old daemon left waiting: answered now, it resumes and reads its memory.
    let waiting = expected["waiting_task"].as_str().unwrap().to_owned();
    mock.push_fn(|request| {
        let answer = request.tool_result_for("q1").unwrap_or_default();
        assert!(
            answer.contains("Shop A"),
            "the answer reached the model: {answer}"
        );
        Reply::tool_call("s1", "memory_search", json!({"query": "card"}))
    });
    // Tells the person (a plain reply after work earns a reminder to), then ends.
    mock.push_fn(|request| {
        let found = request.tool_result_for("s1").unwrap_or_default().to_owned();
        Reply::tool_call(
            "m1",
            "send_message",
            json!({"text": format!("ordered at Shop A; memory: {found}")}),
        )
    });
    mock.push_fn(|request| {
        let said = request.tool_result_for("m1").unwrap_or_default().to_owned();
        Reply::text(format!(
            "ordered at Shop A; the card on file ends in 4242 ({said})"
        ))
    });
    let response = daemon
        .http
        .post(daemon.url(&format!("/api/tasks/{waiting}/answer")))
        .json(&json!({"option": 1}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 202, "{}", response.text().await.unwrap());
    let done = tokio::time::timeout(
        Duration::from_secs(60),
        wait_task_finished(&daemon, &waiting),
    )
    .await
    .unwrap();
    assert_eq!(
        done.verdict,
        Some(lazyboy_protocol::Verdict::Answer),
        "{done:?}"
    );
    let message = done.final_message.unwrap_or_default();
    if !message.contains("ends in 4242") {
        let events = task_events(&daemon, &waiting).await;
        panic!("{message}\n{events:#?}");
    }
    // The resumed conversation is one the model accepts (every result answers its call).
    mock.assert_clean();
    daemon.stop();
}
