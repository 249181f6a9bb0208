//! The dashboard's "Export" action on a task: a link in the agent's task list that downloads
//! the task as Markdown, through the browser's own session (real Chromium).

use lazyboy_tests::browser::Browser;
use lazyboy_tests::mock_model::{MockModel, Reply};
use lazyboy_tests::{TestDaemon, create_task, wait_task_finished};
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_task_list_exports_a_task_as_markdown() {
    let mock = MockModel::start().await;
    let daemon = TestDaemon::start_with_model(&mock, "openai", &[]).await;
    mock.push(Reply::tool_call(
        "m1",
        "send_message",
        json!({"text": "the answer is 42"}),
    ));
    mock.push(Reply::text("done"));
    let task = create_task(&daemon, "default", "find the answer", None).await;
    wait_task_finished(&daemon, &task).await;

    let browser = Browser::start().await;
    browser.goto(&daemon.login_url().await).await;
    browser
        .click("//nav[@aria-label='Agents']//button[@data-name='default']")
        .await;
    browser
        .click("//lb-agent-view//button[normalize-space()='Tasks']")
        .await;
    let got = browser
        .wait_js(
            "the export link to download the task",
            &format!(
                "const a = document.querySelector(\"lb-task-list li[data-task='{task}'] a.button\");
                 if (!a || a.textContent !== 'Export') return null;
                 if (!window.__export) {{
                   window.__export = 'pending';
                   fetch(a.href).then((r) => r.text()).then((t) => {{ window.__export = t; }});
                 }}
                 return window.__export === 'pending' ? null
                   : {{ text: window.__export, download: a.getAttribute('download') }};"
            ),
        )
        .await;
    assert_eq!(got["download"], format!("task-{task}.md"));
    let text = got["text"].as_str().unwrap();
    assert!(
        text.starts_with(&format!("# Task {task}: find the answer")),
        "{text}"
    );
    assert!(text.contains("> the answer is 42"), "{text}");
    browser.close().await;
    daemon.stop();
}
