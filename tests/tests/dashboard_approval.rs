//! Approvals from the dashboard, in a real headless Chromium (WebDriver) at a phone's size:
//! an agent with `approve = ["command"]` asks before a command runs; the page shows exactly
//! what will run (the command; for a file, its diff), the person taps "Approve" and the
//! command runs once; a second call is denied from the page and never runs. `/api/state`
//! carries the same preview for the list of open questions.

use std::path::Path;
use std::time::Duration;

use lazyboy_protocol::{DashboardState, Verdict};
use lazyboy_tests::browser::{Browser, SIZES};
use lazyboy_tests::mock_model::{MockModel, Reply};
use lazyboy_tests::{TestDaemon, wait_for, wait_task_finished};
use serde_json::json;

fn counter(dir: &Path) -> String {
    std::fs::read_to_string(dir.join("counter.txt")).unwrap_or_default()
}

/// Waits until the daemon lists an open question whose approval runs `command`.
async fn open_approval(daemon: &TestDaemon, command: &str) -> DashboardState {
    wait_for(Duration::from_secs(30), "the open approval", || {
        let client = daemon.client();
        let command = command.to_owned();
        async move {
            let state: DashboardState = client.get("/api/state").await.ok()?;
            let shown = state.questions.iter().any(|q| {
                q.approval
                    .as_ref()
                    .is_some_and(|a| a.command.as_deref() == Some(command.as_str()))
            });
            shown.then_some(state)
        }
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approval_shows_what_will_run_and_is_decided_from_the_page() {
    let browser = Browser::start().await;
    let mock = MockModel::start().await;
    let daemon = TestDaemon::start_with_model(&mock, "openai", &[]).await;
    let ws = tempfile::tempdir().unwrap();
    let created = daemon
        .http
        .post(daemon.url("/api/agents"))
        .json(&json!({"name": "careful", "approve": ["command"],
                      "workspace": ws.path().display().to_string()}))
        .send()
        .await
        .unwrap();
    assert_eq!(created.status(), 201, "{}", created.text().await.unwrap());
    mock.push(Reply::tool_call(
        "a",
        "exec_command",
        json!({"cmd": "echo approved >> counter.txt"}),
    ));
    mock.push(Reply::tool_call(
        "b",
        "exec_command",
        json!({"cmd": "echo denied >> counter.txt"}),
    ));
    mock.push(Reply::tool_call(
        "m",
        "send_message",
        json!({"text": "one line written, the other denied"}),
    ));
    mock.push(Reply::text("one line written, the other denied"));

    browser.set_viewport(SIZES[0]).await;
    browser.goto(&daemon.login_url().await).await;
    browser
        .click("//nav[@aria-label='Agents']//button[@data-name='careful']")
        .await;
    let task = lazyboy_tests::create_task(&daemon, "careful", "count", None).await;

    // The first call waits: the page shows the command itself, under the question.
    let state = open_approval(&daemon, "echo approved >> counter.txt").await;
    assert_eq!(state.questions[0].task, task);
    let card = "//*[@role='log']//*[@role='group'][.//pre[normalize-space()=\
                'echo approved >> counter.txt']]";
    browser
        .wait_js(
            "the approval card with its command",
            "return [...document.querySelectorAll('[role=log] lb-question pre')]
               .some((p) => p.textContent === 'echo approved >> counter.txt')",
        )
        .await;
    assert_eq!(
        counter(ws.path()),
        "",
        "nothing runs before the person decides"
    );
    browser
        .click(&format!("{card}//button[normalize-space()='Approve']"))
        .await;

    // It ran once; the second call waits in turn and is denied from the page.
    open_approval(&daemon, "echo denied >> counter.txt").await;
    assert_eq!(counter(ws.path()), "approved\n");
    browser
        .click(
            "//*[@role='log']//*[@role='group'][.//pre[normalize-space()=\
             'echo denied >> counter.txt']]//button[normalize-space()='Deny']",
        )
        .await;
    let finished = wait_task_finished(&daemon, &task).await;
    assert_eq!(finished.verdict, Some(Verdict::Answer));
    let told = mock.requests()[2].tool_result_for("b").map(str::to_owned);
    assert!(
        told.as_deref()
            .is_some_and(|m| m.starts_with("denied by the person")),
        "the model is told: {told:?}"
    );
    assert_eq!(
        counter(ws.path()),
        "approved\n",
        "the denied call never ran"
    );
    mock.assert_clean();
    daemon.stop();
    browser.close().await;
}
