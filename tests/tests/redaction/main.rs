//! Redaction against the real daemon: a provider key (named by the config's `api_key_env`)
//! that a command prints, plainly, base64-encoded in both alphabets at several alignments,
//! wrapped, split across lines or as hex; that the model repeats in its reply, in a delta
//! split mid-key, in `send_message`, `report_progress`, a plan, a memory, a question and its
//! options, the final report and a summary; and the API token, rotated. In every case the key
//! is nowhere: not in the database file, the event log (`lazyboy events`, the events API),
//! `/api/state`, the conversation API, the daemon's logs, or the requests the model received
//! (only its `Authorization` header carries it, as it must).

use std::path::Path;
use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, URL_SAFE, URL_SAFE_NO_PAD};
use lazyboy_protocol::{DashboardState, EventBody, Verdict};
use lazyboy_tests::mock_model::{MockCall, MockModel, Reply};
use lazyboy_tests::{
    TestDaemon, add_agent, create_task, model_config, task_events, temp_home, wait_for,
    wait_task_finished,
};
use serde_json::json;
use tempfile::TempDir;

mod leaks;
mod model;
mod token;

/// The provider's key: long enough that `base64` wraps it, with bytes that make `+` and `/`
/// in the standard alphabet (so the two alphabets differ).
const KEY: &str = "sk-proj-Zt9~Qv2>xK7?mW4nR8pL3sJ6hF1dG5aE0cB9yU2iO7tY4wX8vN3mQ6zP1k";
const KEY_ENV: &str = "MOCK_PROVIDER_KEY";

/// A daemon whose provider is `mock` (as `model`, with `extra` lines), its key in
/// `MOCK_PROVIDER_KEY`; on a home of the test's own, which outlives the daemon's stop.
async fn daemon_with_key(mock: &MockModel, model: &str, extra: &str) -> (TempDir, TestDaemon) {
    let config = model_config(mock, "openai").replace(
        "model = \"mock-model\"",
        &format!("model = \"{model}\"\napi_key_env = \"{KEY_ENV}\"{extra}"),
    );
    let home = temp_home();
    std::fs::write(home.path().join("config.toml"), config).unwrap();
    let daemon = TestDaemon::start_in(home.path(), &[(KEY_ENV, KEY)]).await;
    (home, daemon)
}

/// The result the task recorded for `call`.
fn result_of(events: &[EventBody], call: &str) -> String {
    events
        .iter()
        .find_map(|e| match e {
            EventBody::ToolResult {
                call_id, output, ..
            } if call_id == call => Some(output.clone()),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no result for {call}: {events:#?}"))
}

/// Checks every place while the daemon runs, then stops it and checks its home.
async fn assert_nowhere(daemon: TestDaemon, mock: &MockModel, agent: &str, secrets: &[&str]) {
    leaks::assert_clean_while_running(&daemon, mock, agent, secrets).await;
    let home = daemon.home().to_owned();
    daemon.stop();
    leaks::assert_clean_home(&home, secrets, &[lazyboy_protocol::paths::TOKEN]);
}

/// `cat`, `base64` (wrapped and not, after 0, 1 and 2 other bytes, both alphabets, padded and
/// not), `cut` across two lines and `od` hex, each of the key in a file of the workspace.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_a_command_prints_in_any_form_is_stored_and_sent_redacted() {
    assert!(STANDARD.encode(KEY).contains('+') && URL_SAFE.encode(KEY).contains('-'));
    let mock = MockModel::start().await;
    let (_home, daemon) = daemon_with_key(&mock, "mock-model", "").await;
    add_agent(&daemon, "leaky").await;
    let ws = tempfile::tempdir().unwrap();
    // The key reaches the commands the way a leak would: from a file, not from the model.
    std::fs::write(ws.path().join("key.txt"), KEY).unwrap();
    let commands = [
        ("plain", "cat key.txt"),
        ("b64", "base64 -w0 key.txt"),
        ("wrapped", "base64 key.txt"),
        (
            "url",
            "printf 'Authorization: Bearer %s' \"$(cat key.txt)\" | base64 -w0 | tr '+/' '-_' \
             | tr -d =",
        ),
        ("shift2", "printf 'xy%s' \"$(cat key.txt)\" | base64 -w0"),
        ("split", "cut -c1-30 key.txt; echo; cut -c31- key.txt"),
        ("hex", "od -An -tx1 -v key.txt"),
    ];
    mock.push(Reply::tool_calls(commands.iter().map(|(id, cmd)| {
        MockCall::new(*id, "exec_command", json!({ "cmd": cmd }))
    })));
    mock.push(Reply::tool_call(
        "m",
        "send_message",
        json!({"text": "read it"}),
    ));
    mock.push(Reply::text("read it"));
    let id = create_task(&daemon, "leaky", "read the key", Some(ws.path())).await;
    let done = wait_task_finished(&daemon, &id).await;
    assert_eq!(done.verdict, Some(Verdict::Answer), "{done:?}");
    let events = task_events(&daemon, &id).await;
    for (call, _) in commands {
        let out = result_of(&events, call);
        assert!(
            out.contains(&format!("[redacted {KEY_ENV}")),
            "{call}: {out}"
        );
    }
    // The model still authenticated with the key: only the header carries it.
    for request in mock.requests() {
        assert_eq!(
            request.authorization.as_deref(),
            Some(format!("Bearer {KEY}").as_str())
        );
    }
    mock.assert_clean();
    assert_nowhere(daemon, &mock, "leaky", &[KEY]).await;
}

/// Waits for the open question of `task` in `/api/state`.
async fn open_question(daemon: &TestDaemon, task: &str) -> lazyboy_protocol::OpenQuestion {
    wait_for(Duration::from_secs(30), "the question", || {
        let client = daemon.client();
        let task = task.to_owned();
        async move {
            let state: DashboardState = client.get("/api/state").await.ok()?;
            state.questions.into_iter().find(|q| q.task == task)
        }
    })
    .await
}

/// The key in a workspace file, for a command to print.
fn leak_file(ws: &Path, name: &str, secret: &str) {
    std::fs::write(ws.join(name), secret).unwrap();
}
