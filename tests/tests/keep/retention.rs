//! Retention on a million-event log: the bulky tool outputs of old tasks become stubs, at
//! least 60 % of the file is freed, every other event is byte for byte as it was, and the
//! conversation and a replay from seq 0 still work. A dry run changes nothing. An agent's
//! confined command cannot ask for a pass, a backup or an export.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use futures_util::StreamExt;
use lazyboy_protocol::{RetentionReport, paths};
use lazyboy_tests::growth::{self, Growth};
use lazyboy_tests::mock_model::{MockModel, Reply};
use lazyboy_tests::{TestDaemon, output_of, sse, temp_home, wait_for, wait_task_finished};
use serde_json::json;

/// Reads the log straight from the file (python3's sqlite3), events up to `upto`: a digest
/// of each (a tool result by its seq, call and status; anything else whole), how many events,
/// how many tool results and stubs, and the last seq.
fn log_digest(db: &Path, upto: i64) -> (String, usize, usize, usize, i64) {
    let script = "import hashlib, json, sqlite3, sys\n\
        db = sqlite3.connect(sys.argv[1])\n\
        h = hashlib.sha256(); n = 0; results = 0; stubs = 0; last = 0\n\
        for seq, kind, thread, task, at, data in db.execute('SELECT seq, kind, thread_id, task_id, at_ms, data FROM events WHERE seq <= ? ORDER BY seq', (int(sys.argv[2]),)):\n\
        \x20   last = seq; n += 1\n\
        \x20   if kind == 'tool_result':\n\
        \x20       results += 1; d = json.loads(data)\n\
        \x20       stubs += 'removed' in d\n\
        \x20       h.update(f'{seq}|{kind}|{thread}|{task}|{at}|{d[\"call_id\"]}|{d[\"status\"]}\\n'.encode())\n\
        \x20   else:\n\
        \x20       h.update(f'{seq}|{kind}|{thread}|{task}|{at}|{data}\\n'.encode())\n\
        print(h.hexdigest(), n, results, stubs, last)\n";
    let out = Command::new("python3")
        .args(["-c", script])
        .arg(db)
        .arg(upto.to_string())
        .output()
        .expect("python3 is needed (scripts/test installs it)");
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8(out.stdout).unwrap();
    let parts: Vec<&str> = text.split_whitespace().collect();
    (
        parts[0].to_owned(),
        parts[1].parse().unwrap(),
        parts[2].parse().unwrap(),
        parts[3].parse().unwrap(),
        parts[4].parse().unwrap(),
    )
}

/// The conversation's items that are not tool work (which shows the stubs), as JSON.
async fn said(daemon: &TestDaemon, agent: &str) -> Vec<serde_json::Value> {
    let page: serde_json::Value = daemon
        .client()
        .get(&format!("/api/agents/{agent}/conversation?limit=200"))
        .await
        .unwrap();
    page["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|item| item["type"] != "work")
        .cloned()
        .collect()
}

fn file_bytes(home: &Path) -> u64 {
    ["", "-wal"]
        .iter()
        .filter_map(|s| std::fs::metadata(home.join(format!("{}{s}", paths::DATABASE))).ok())
        .map(|m| m.len())
        .sum()
}

/// `lazyboy --json retention run [--dry-run] [--days N]`.
async fn pass(daemon: &TestDaemon, dry_run: bool, days: Option<u32>) -> RetentionReport {
    let mut command = daemon.cli();
    command.args(["--json", "retention", "run"]);
    if let Some(days) = days {
        command.args(["--days", &days.to_string()]);
    }
    if dry_run {
        command.arg("--dry-run");
    }
    let out = output_of(command).await;
    assert!(out.status.success(), "{out:?}");
    serde_json::from_slice(&out.stdout).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn retention_on_a_million_events_frees_most_of_the_file_and_keeps_the_conversation() {
    let home = temp_home();
    let shape = Growth::MILLION;
    let clock = std::time::Instant::now();
    growth::fill(home.path(), "worker", shape).await;
    eprintln!("{:?}: wrote {} events", clock.elapsed(), shape.events());
    // The pass is asked for (`--days 30`): with `[retention]` configured, the daemon's own
    // pass would start a minute in and race the dry run.
    let daemon = TestDaemon::start_in(home.path(), &[]).await;
    let db = home.path().join(paths::DATABASE);
    let (digest, count, results, stubs, last) = log_digest(&db, i64::MAX);
    assert_eq!((results, stubs), (shape.tasks * shape.calls_per_task, 0));
    assert!(count > shape.events(), "{count} events");
    eprintln!("{:?}: digested", clock.elapsed());
    let conversation = said(&daemon, "worker").await;
    assert!(conversation.iter().any(|i| i["type"] == "agent_message"));

    // Dry: the figures, and nothing changes.
    let size_before = file_bytes(home.path());
    let dry = pass(&daemon, true, Some(30)).await;
    assert!(dry.dry_run);
    assert_eq!(
        (dry.results as usize, dry.tasks as usize),
        (results, shape.tasks)
    );
    assert_eq!(
        log_digest(&db, i64::MAX),
        (digest.clone(), count, results, 0, last)
    );
    let mut command = daemon.cli();
    command.args(["retention", "run", "--dry-run", "--days", "30"]);
    let printed = String::from_utf8(output_of(command).await.stdout).unwrap();
    assert!(
        printed.contains(&format!(
            "would replace {results} tool outputs of 100 tasks"
        )),
        "{printed}"
    );

    eprintln!("{:?}: dry run checked", clock.elapsed());
    let report = pass(&daemon, false, Some(30)).await;
    let size_after = file_bytes(home.path());
    eprintln!(
        "retention on {count} events: {} results, file {size_before} → {size_after} bytes \
         ({:.1} % freed) in {} ms",
        report.results,
        100.0 * (1.0 - size_after as f64 / size_before as f64),
        report.took_ms
    );
    assert_eq!(report.results as usize, results);
    assert!(
        size_after * 10 <= size_before * 4,
        "at least 60 % of the file freed: {size_before} → {size_after}"
    );
    // Every event is where it was, and all but the results' bodies byte for byte; each
    // result is a stub; one retention_pass per task was appended after them.
    assert_eq!(
        log_digest(&db, last),
        (digest, count, results, results, last),
        "only the results' bodies changed"
    );
    let (_, all, _, _, newest) = log_digest(&db, i64::MAX);
    assert_eq!(
        (all, newest),
        (count + shape.tasks, last + shape.tasks as i64)
    );
    assert_eq!(
        said(&daemon, "worker").await,
        conversation,
        "the conversation reads the same"
    );

    eprintln!("{:?}: pass checked", clock.elapsed());
    // Replay from seq 0 reaches the end, every seq in order, the stubs marked.
    let mut stream =
        Box::pin(sse::connect(&daemon.http, &daemon.url("/api/events?after=0"), None).await);
    let (mut seen, mut previous, mut marked) = (0, 0, 0);
    tokio::time::timeout(Duration::from_secs(600), async {
        while let Some(message) = stream.next().await {
            let event = message.event;
            assert!(event.seq > previous, "in order");
            previous = event.seq;
            seen += 1;
            if event.kind == "tool_result" {
                let output = event.data["output"].as_str().unwrap();
                assert!(output.starts_with("(removed after 30 days: "), "{output}");
                assert!(event.data["removed"]["bytes"].as_u64().unwrap() >= 4096);
                marked += 1;
            }
            if event.seq == newest {
                break;
            }
        }
    })
    .await
    .expect("the replay reached the end");
    assert_eq!((seen, marked), (all, results));
    eprintln!("{:?}: replayed", clock.elapsed());
    daemon.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stubbed_result_reads_as_removed_in_the_conversation_and_the_model_sees_it() {
    let mock = MockModel::start().await;
    let config = format!(
        "{}\n[retention]\ntool_output_days = 0\n",
        lazyboy_tests::model_config(&mock, "openai")
    );
    let daemon = TestDaemon::start_with(&config, &[]).await;
    let ws = tempfile::tempdir().unwrap();
    mock.push(Reply::tool_call(
        "big",
        "exec_command",
        json!({"cmd": "seq 1 3000"}),
    ));
    mock.push(Reply::tool_call(
        "m1",
        "send_message",
        json!({"text": "counted"}),
    ));
    mock.push(Reply::text("counted"));
    let task = lazyboy_tests::create_task(&daemon, "default", "count", Some(ws.path())).await;
    wait_task_finished(&daemon, &task).await;
    // Ended now: tool_output_days = 0 takes it at once.
    let report = pass(&daemon, false, None).await;
    assert_eq!((report.results, report.tasks), (1, 1));
    let text = reqwest_text(&daemon, "/api/agents/default/conversation").await;
    assert!(text.contains("(removed after 0 days: 14 KB)"), "{text}");
    let events = lazyboy_tests::task_events(&daemon, &task).await;
    assert!(events.iter().any(|e| matches!(
        e,
        lazyboy_protocol::EventBody::RetentionPass {
            results: 1,
            days: 0,
            ..
        }
    )));
    // A second pass finds nothing left to do.
    assert_eq!(pass(&daemon, false, None).await.results, 0);
    // The task continued later sees the stub, not the old output.
    let asked = mock.request_count();
    mock.push(Reply::text("still counted"));
    let response = daemon
        .http
        .post(daemon.url(&format!("/api/tasks/{task}/continue")))
        .json(&json!({"text": "again?"}))
        .send()
        .await
        .unwrap();
    assert!(
        response.status().is_success(),
        "{}",
        response.text().await.unwrap()
    );
    wait_for(
        Duration::from_secs(30),
        "the model to be asked again",
        || {
            let mock = &mock;
            async move { (mock.request_count() > asked).then_some(()) }
        },
    )
    .await;
    let seen = mock.requests()[asked]
        .tool_result_for("big")
        .unwrap()
        .to_owned();
    assert!(
        seen.starts_with("(removed after 0 days: 14 KB)\ncmd-")
            && seen.ends_with("[… 2999 lines …]\n2999\n3000"),
        "{seen}"
    );
    daemon.stop();
}

async fn reqwest_text(daemon: &TestDaemon, path: &str) -> String {
    daemon
        .http
        .get(daemon.url(path))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agents_confined_command_cannot_back_up_export_or_run_retention() {
    let mock = MockModel::start().await;
    let daemon = TestDaemon::start_with_model(&mock, "openai", &[]).await;
    let ws = tempfile::tempdir().unwrap();
    let socket = daemon.home().join("lazyboyd.sock");
    let url = daemon.health.url.clone();
    let probe = |method: &str, path: &str| {
        format!(
            "curl -s -o /dev/null -w '%{{http_code}} ' -X {method} -H 'content-type: application/json' \
             -d '{{}}' {url}{path}; curl -s -o /dev/null -w '%{{http_code}} ' -X {method} \
             -H 'content-type: application/json' -d '{{}}' --unix-socket {} http://localhost/{path}; ",
            socket.display()
        )
    };
    let cmd = format!(
        "{}{}{}echo",
        probe("POST", "api/backup"),
        probe("POST", "api/retention/run"),
        probe("GET", "api/tasks/x/export")
    );
    mock.push(Reply::tool_call(
        "c1",
        "exec_command",
        json!({ "cmd": cmd }),
    ));
    mock.push(Reply::text("tried"));
    let task = lazyboy_tests::create_task(&daemon, "default", "try", Some(ws.path())).await;
    wait_task_finished(&daemon, &task).await;
    let seen = mock
        .requests()
        .iter()
        .find_map(|r| r.tool_result_for("c1").map(str::to_owned))
        .unwrap();
    let codes: Vec<&str> = seen
        .split_whitespace()
        .filter(|w| w.len() == 3 && w.chars().all(|c| c.is_ascii_digit()))
        .collect();
    assert_eq!(codes.len(), 6, "{seen}");
    assert!(
        codes.iter().all(|c| *c == "401" || *c == "000"),
        "a confined command got in: {seen}"
    );
    assert!(codes.contains(&"401"), "{seen}");
    let backups = daemon.home().join(paths::BACKUPS);
    assert!(!backups.exists(), "no backup was made");
    daemon.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_log_refuses_every_change_but_a_results_body_through_the_door() {
    let home = temp_home();
    let shape = Growth {
        notes: 3,
        tasks: 1,
        calls_per_task: 1,
        output_bytes: 2000,
    };
    growth::fill(home.path(), "w", shape).await;
    let script = "import sqlite3, sys\n\
        db = sqlite3.connect(sys.argv[1], isolation_level=None)\n\
        def attempt(door, sql):\n\
        \x20   db.execute('BEGIN')\n\
        \x20   if door: db.execute('INSERT INTO events_rewrite (id) VALUES (1)')\n\
        \x20   try:\n\
        \x20       db.execute(sql); outcome = 'ok'\n\
        \x20   except sqlite3.DatabaseError as e:\n\
        \x20       outcome = str(e)\n\
        \x20   db.execute('ROLLBACK')\n\
        \x20   print(outcome)\n\
        body = \"UPDATE events SET data = json_set(data, '$.output', 'x') WHERE kind = 'tool_result'\"\n\
        attempt(False, body)\n\
        attempt(True, \"UPDATE events SET data = '{}' WHERE kind = 'user_message'\")\n\
        attempt(True, \"UPDATE events SET seq = seq + 1000 WHERE kind = 'tool_result'\")\n\
        attempt(True, \"UPDATE events SET at_ms = 0 WHERE kind = 'tool_result'\")\n\
        attempt(True, 'DELETE FROM events')\n\
        attempt(True, body)\n";
    let out = Command::new("python3")
        .args(["-c", script])
        .arg(home.path().join(paths::DATABASE))
        .output()
        .expect("python3 is needed (scripts/test installs it)");
    assert!(out.status.success(), "{out:?}");
    let outcomes: Vec<String> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect();
    let refused = "events are append-only".to_owned();
    assert_eq!(
        outcomes,
        [
            refused.clone(),
            refused.clone(),
            refused.clone(),
            refused.clone(),
            refused,
            "ok".to_owned()
        ]
    );
}
