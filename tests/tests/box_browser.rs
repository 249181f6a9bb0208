//! Logins live in each agent's own profile in the box's volume: a cookie set in the box's
//! browser is still there after `browser_release` (another agent's profile came on screen in
//! between), after `lazyboy box stop` / `start`, and after a daemon restart; another agent
//! never sees it.

use lazyboy_protocol::ToolStatus;
use lazyboy_tests::boxes::{SITE, TestBox, daemon, result_of, start_with_site};
use lazyboy_tests::mock_model::{MockModel, Reply};
use lazyboy_tests::{TestDaemon, add_agent, create_task, output_of, task_events};
use serde_json::json;

/// Runs one task for `agent` that opens `/whoami` and reads it; returns what it read.
async fn whoami(daemon: &TestDaemon, mock: &MockModel, agent: &str) -> String {
    mock.push(Reply::tool_call(
        "w1",
        "browser_navigate",
        json!({"url": format!("{SITE}/whoami")}),
    ))
    .push(Reply::tool_call("w2", "browser_snapshot", json!({})))
    .push(Reply::text("read it"));
    let task = create_task(daemon, agent, "who am I", None).await;
    lazyboy_tests::boxes::wait_finished(daemon, &task).await;
    let (status, text) = result_of(&task_events(daemon, &task).await, "w2");
    assert_eq!(status, ToolStatus::Ok, "{text}");
    text
}

async fn cli(daemon: &TestDaemon, args: &[&str]) -> String {
    let mut command = daemon.cli();
    command.args(args);
    let out = output_of(command).await;
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{args:?}: {text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    text
}

#[tokio::test]
async fn a_login_survives_release_box_restarts_and_daemon_restarts() {
    let test_box = TestBox::new();
    let mock = MockModel::start().await;
    let mut daemon = daemon(&mock, "openai", &test_box).await;
    start_with_site(&daemon, &test_box).await;
    add_agent(&daemon, "ann").await;
    add_agent(&daemon, "zed").await;

    mock.push(Reply::tool_call(
        "l1",
        "browser_navigate",
        json!({"url": format!("{SITE}/login?user=ann")}),
    ))
    .push(Reply::tool_call("l2", "browser_release", json!({})))
    .push(Reply::text("logged in"));
    let login = create_task(&daemon, "ann", "log in", None).await;
    lazyboy_tests::boxes::wait_finished(&daemon, &login).await;
    let events = task_events(&daemon, &login).await;
    assert!(result_of(&events, "l1").1.contains("Logged in"));
    assert_eq!(result_of(&events, "l2").0, ToolStatus::Ok);

    // Another agent's profile comes on screen (ann's Chromium is closed), then ann's again.
    assert!(whoami(&daemon, &mock, "zed").await.contains("session=none"));
    assert!(whoami(&daemon, &mock, "ann").await.contains("session=ann"));

    let stopped = cli(&daemon, &["box", "stop"]).await;
    assert!(stopped.starts_with("box: stopped"), "{stopped}");
    assert!(!test_box.running());
    let started = cli(&daemon, &["box", "start"]).await;
    assert!(started.starts_with("box: running"), "{started}");
    let status = cli(&daemon, &["box", "status", "--json"]).await;
    let status: lazyboy_protocol::BoxStatus = serde_json::from_str(&status).unwrap();
    assert_eq!(status.container.as_deref(), Some(test_box.name.as_str()));
    test_box.serve().await;
    assert!(whoami(&daemon, &mock, "ann").await.contains("session=ann"));

    let (code, _) = daemon.terminate();
    assert!(code.success());
    daemon.restart().await;
    assert!(whoami(&daemon, &mock, "ann").await.contains("session=ann"));
    assert!(whoami(&daemon, &mock, "zed").await.contains("session=none"));
    mock.assert_clean();
    daemon.stop();
}
