//! The dashboard in a real headless Chromium (WebDriver), at a phone's 390x844 and a laptop's
//! 1280x800: what a person does from the page. They add an agent, message it, see its tool
//! work folded, its `send_message` as a bubble and its plan as a checklist, answer its
//! question with a button (the same task finishes), and Stop a running task (`cancelled`).
//! Model text carrying HTML and a `javascript:` link renders inert. The app installs: a valid
//! manifest, a service worker on localhost, Chromium's installability checks, and offline it
//! opens from the worker's cache saying the daemon is unreachable, then reconnects. While
//! the page is hidden it renders nothing, counts what needs the person in the title and shows
//! a notification (through the service worker); shown again, it catches up.
//!
//! Screenshots of both sizes go to `target/screenshots/`; `LAZYBOY_SCREENSHOTS=docs` writes
//! the ones in `docs/screenshots/` that the README shows.

use std::time::Duration;

use lazyboy_protocol::{TaskList, TaskState, Verdict};
use lazyboy_tests::browser::{Browser, SIZES, Viewport, screenshot_dir};
use lazyboy_tests::mock_model::{MockCall, MockModel, Reply};
use lazyboy_tests::{TestDaemon, wait_for, wait_task_finished};
use serde::Deserialize;
use serde_json::json;

mod page;

/// What the selected agent's view shows, read in one script so a poll sees one state.
#[derive(Debug, Deserialize)]
struct View {
    view: String,
    status: String,
    agent_bubbles: Vec<String>,
    person_bubbles: Vec<String>,
    work: Vec<String>,
    /// `[status, step]` of the visible plan.
    plan: Vec<(String, String)>,
    questions: Vec<QuestionCard>,
    verdicts: Vec<String>,
    said: String,
    width: u32,
}

#[derive(Debug, Deserialize)]
struct QuestionCard {
    /// The text of the element that labels the group.
    label: String,
    buttons: Vec<String>,
    answered: Option<String>,
}

const READ_VIEW: &str = r#"
const log = document.querySelector('[role=log][aria-label=Conversation]');
const all = (sel) => log ? [...log.querySelectorAll(sel)] : [];
return {
  view: document.body.dataset.view,
  status: document.querySelector('lb-connection').dataset.status,
  agent_bubbles: all('lb-message.agent .bubble').map((b) => b.textContent),
  person_bubbles: all('lb-message.person .bubble').map((b) => b.textContent),
  work: all('lb-work summary').map((s) => s.textContent),
  plan: all('lb-plan:not([hidden]) li').map((li) => [li.dataset.status, li.lastChild.textContent]),
  questions: all('lb-question').map((q) => {
    const group = q.querySelector('[role=group]');
    return {
      label: document.getElementById(group.getAttribute('aria-labelledby')).textContent,
      buttons: [...group.querySelectorAll('button')].map((b) => b.textContent),
      answered: q.querySelector('.answered')?.textContent ?? null,
    };
  }),
  verdicts: all('lb-verdict').map((v) => v.textContent),
  said: document.querySelector('lb-composer .said')?.textContent ?? '',
  width: innerWidth,
};
"#;

async fn view(browser: &Browser) -> View {
    serde_json::from_value(browser.eval(READ_VIEW, vec![]).await).unwrap()
}

/// Polls the view until `check` holds; panics at the deadline showing it.
async fn wait_view<T>(browser: &Browser, what: &str, check: impl Fn(&View) -> Option<T>) -> T {
    let give_up = std::time::Instant::now() + lazyboy_tests::browser::DEADLINE;
    loop {
        let view = view(browser).await;
        if let Some(value) = check(&view) {
            return value;
        }
        assert!(
            std::time::Instant::now() < give_up,
            "timed out waiting for {what}; the view shows {view:#?}\nconsole:\n{}",
            browser.console().await
        );
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

/// A Docker address where no engine answers: the box is unavailable for this daemon.
const NO_DOCKER: &str = "unix:///nonexistent/docker.sock";

fn button(text: &str) -> String {
    format!("//button[normalize-space()='{text}']")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_person_adds_an_agent_messages_it_answers_and_stops_it() {
    let browser = Browser::start().await;
    for size in SIZES {
        person_flow(&browser, size).await;
    }
    browser.close().await;
}

async fn person_flow(browser: &Browser, size: Viewport) {
    let mock = MockModel::start().await;
    mock.push(Reply::tool_call(
        "c1",
        "exec_command",
        json!({"cmd": "echo fetching prices"}),
    ));
    mock.push(Reply::tool_calls([
        MockCall::new(
            "p1",
            "update_plan",
            json!({"plan": [{"step": "Pick a shop", "status": "in_progress"},
                            {"step": "Buy apples", "status": "pending"}]}),
        ),
        MockCall::new(
            "m1",
            "send_message",
            json!({"text": "On it: **apples** first"}),
        ),
    ]));
    mock.push(Reply::tool_call(
        "q1",
        "request_user_input",
        json!({"question": "Which shop?", "options": ["Corner shop", "Big market"]}),
    ));
    mock.push_fn(|request| {
        let answer = request.tool_result_for("q1").unwrap_or("(no result)");
        Reply::tool_call(
            "m2",
            "send_message",
            json!({"text": format!("going to: {answer}")}),
        )
    });
    mock.push(Reply::tool_call(
        "k1",
        "request_takeover",
        json!({"reason": "login", "instructions": "Log in to the shop"}),
    ));
    mock.push(Reply::tool_calls([
        MockCall::new(
            "p2",
            "update_plan",
            json!({"plan": [{"step": "Pick a shop", "status": "completed"},
                            {"step": "Buy apples", "status": "completed"}]}),
        ),
        MockCall::new(
            "w1",
            "write_file",
            json!({"path": "receipt.txt", "content": "apples x6"}),
        ),
    ]));
    mock.push(Reply::tool_call(
        "d1",
        "report_done",
        json!({"summary": "Bought **apples**", "evidence": "receipt.txt written",
               "files": ["receipt.txt"]}),
    ));
    // The second task's model call hangs until the person stops it.
    mock.push(Reply::text("never seen").delay(Duration::from_secs(120)));
    let daemon = TestDaemon::start_with_model(&mock, "openai", &[("DOCKER_HOST", NO_DOCKER)]).await;
    browser.set_viewport(size).await;
    browser.goto(&daemon.login_url().await).await;
    browser
        .wait_js(
            "the board",
            "return document.querySelector('nav[aria-label=Agents] button.agent') !== null",
        )
        .await;

    // Add an agent from the page.
    let name = format!("shopper-{}", size.width);
    browser.click("//button[@id='add-agent']").await;
    browser
        .type_into("//dialog[@id='agent-dialog']//input[@name='name']", &name)
        .await;
    browser
        .type_into(
            "//dialog[@id='agent-dialog']//textarea[@name='instructions']",
            "Buy groceries.",
        )
        .await;
    browser
        .click("//dialog[@id='agent-dialog']//button[normalize-space()='Add agent']")
        .await;
    let created: lazyboy_protocol::Agent = wait_for(
        lazyboy_tests::browser::DEADLINE,
        "the agent to exist",
        || {
            let client = daemon.client();
            let path = format!("/api/agents/{name}");
            async move { client.get(&path).await.ok() }
        },
    )
    .await;
    assert_eq!(created.instructions, "Buy groceries.");
    wait_view(browser, "the new agent's view", |v| {
        (v.view == "agent" && v.status == "live").then_some(())
    })
    .await;

    // Message it: a task starts; its work folds into a line, its message is a bubble, its
    // plan a checklist, its question a group with a button per option.
    browser
        .type_into("//textarea[@aria-label='Message']", "buy apples")
        .await;
    browser.click(&button("Send")).await;
    let shown = wait_view(browser, "the bubble, plan, work line and question", |v| {
        let question = v.questions.iter().find(|q| q.label == "Which shop?")?;
        (v.person_bubbles.contains(&"buy apples".to_owned())
            && v.agent_bubbles.contains(&"On it: apples first".to_owned())
            && v.work.iter().any(|w| w.starts_with("ran 1 command"))
            && v.plan
                == [
                    ("in_progress".to_owned(), "Pick a shop".to_owned()),
                    ("pending".to_owned(), "Buy apples".to_owned()),
                ]
            && question.buttons.contains(&"Big market".to_owned()))
        .then_some(v.width)
    })
    .await;
    assert_eq!(shown, size.width);
    assert_eq!(view(browser).await.said, "Started a new task.");
    let strong = browser
        .eval(
            "return document.querySelector('[role=log] lb-message.agent .bubble strong')?.textContent",
            vec![],
        )
        .await;
    assert_eq!(strong, "apples", "Markdown renders");
    browser
        .screenshot(&screenshot_dir().join(format!("dashboard-{}.png", size.name())))
        .await;
    if size.mobile {
        // The phone's home: the board with the badge, and the question waiting below it.
        browser.click(&button("Agents")).await;
        browser
            .wait_js(
                "the list with the waiting question",
                &format!(
                    "return document.body.dataset.view === 'list'
                       && !document.querySelector(\"nav button.agent[data-name='{name}'] .badge\").hidden
                       && document.querySelector('#questions lb-question') !== null"
                ),
            )
            .await;
        browser
            .screenshot(&screenshot_dir().join(format!("dashboard-{}-agents.png", size.name())))
            .await;
        browser
            .click(&format!(
                "//nav[@aria-label='Agents']//button[@data-name='{name}']"
            ))
            .await;
    }
    let tasks: TaskList = daemon
        .client()
        .get(&format!("/api/tasks?agent={name}"))
        .await
        .unwrap();
    let first = tasks.tasks[0].id.clone();
    assert_eq!(tasks.tasks[0].state, TaskState::WaitingForHuman);

    // One click on "Big market" answers, and the same task finishes.
    browser
        .click(
            "//*[@role='log']//*[@role='group'][.//p[normalize-space()='Which shop?']]\
             //button[normalize-space()='Big market']",
        )
        .await;
    wait_view(
        browser,
        "the answer, the reply and the takeover card",
        |v| {
            (v.agent_bubbles
                .contains(&"going to: The person answered: Big market".to_owned())
                && v.questions
                    .iter()
                    .any(|q| q.answered.as_deref() == Some("Answered: Big market"))
                && v.questions.iter().any(|q| {
                    q.label == "Log in to the shop"
                        && q.buttons
                            .starts_with(&["Open the computer".into(), "Done".into()])
                }))
            .then_some(())
        },
    )
    .await;
    assert_eq!(
        mock.requests()[3].tool_result_for("q1"),
        Some("The person answered: Big market")
    );
    // The takeover card opens the computer panel (no Docker for this daemon: it says so),
    // and "Done" hands the task back.
    browser
        .click("//*[@role='log']//button[normalize-space()='Open the computer']")
        .await;
    browser
        .wait_js(
            "the computer panel",
            "const d = document.querySelector('dialog.computer');
             return d.open && d.textContent.includes('No computer')",
        )
        .await;
    browser
        .click("//dialog[contains(@class,'computer')]//button[normalize-space()='Close']")
        .await;
    browser
        .click(
            "//*[@role='log']//*[@role='group'][.//p[normalize-space()='Log in to the shop']]\
             //button[normalize-space()='Done']",
        )
        .await;
    let done = wait_task_finished(&daemon, &first).await;
    assert_eq!(done.verdict, Some(Verdict::Done), "{done:?}");
    assert_eq!(
        mock.requests()[5].tool_result_for("k1"),
        Some("The person answered: Done")
    );
    // The verdict carries the report and a download link for its file.
    let href = format!("/api/tasks/{first}/files/receipt.txt");
    let report = browser
        .wait_js(
            "the completion report",
            &format!(
                "const v = [...document.querySelectorAll('[role=log] lb-verdict.done')].pop();
                 const a = v && v.querySelector('a[download]');
                 return a && a.getAttribute('href') === {href:?}
                   ? v.querySelector('.markdown strong')?.textContent : null"
            ),
        )
        .await;
    assert_eq!(report, "apples");
    // A second message starts a task whose model call hangs; Stop ends it cancelled.
    browser
        .type_into("//textarea[@aria-label='Message']", "wait here")
        .await;
    browser.click(&button("Send")).await;
    let second = wait_for(
        lazyboy_tests::browser::DEADLINE,
        "the second task to run",
        || {
            let client = daemon.client();
            let path = format!("/api/tasks?agent={name}");
            async move {
                let list: TaskList = client.get(&path).await.ok()?;
                let task = list
                    .tasks
                    .into_iter()
                    .find(|t| t.objective == "wait here")?;
                (task.state == TaskState::Running).then_some(task)
            }
        },
    )
    .await;
    mock.wait_for_requests(8).await;
    browser
        .click("//lb-agent-view//button[normalize-space()='Stop']")
        .await;
    let stopped = wait_task_finished(&daemon, &second.id).await;
    assert_eq!(stopped.verdict, Some(Verdict::Cancelled));
    wait_view(browser, "the stopped verdict", |v| {
        v.verdicts
            .iter()
            .any(|t| t.starts_with("Stopped"))
            .then_some(())
    })
    .await;
    // The agent's task list shows both, with their states.
    browser
        .click("//lb-agent-view//button[normalize-space()='Tasks']")
        .await;
    browser
        .wait_js(
            "the task list",
            "const states = [...document.querySelectorAll('lb-task-list li')].map((li) => li.dataset.state);
             return states.join(',') === 'cancelled,done'",
        )
        .await;
    assert_eq!(mock.request_count(), 8);
    mock.assert_clean();
    daemon.stop();
}
