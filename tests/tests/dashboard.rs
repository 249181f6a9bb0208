//! The dashboard (`web/index.html`) in a real headless Chromium, driven through WebDriver
//! (chromedriver): the phone path. A person sees an agent's question on the page, answers it
//! with a button, and the same task resumes; then they message the idle agent from the page
//! and it starts a new task.
//!
//! Chromium and chromedriver are the Debian packages (`scripts/test` installs them). Without
//! them this test fails, naming the packages: it never skips. Every wait polls the DOM or the
//! API up to a deadline; a timeout prints what the page showed.

use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use fantoccini::{Client, ClientBuilder, Locator};
use lazyboy_protocol::{Task, TaskList, TaskState, Verdict};
use lazyboy_tests::mock_model::{MockModel, Reply};
use lazyboy_tests::{TestDaemon, add_agent, create_task, wait_for, wait_task_finished};
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use serde::Deserialize;
use serde_json::json;
use tempfile::TempDir;

const CHROMIUM: &str = "/usr/bin/chromium";
const CHROMEDRIVER: &str = "/usr/bin/chromedriver";
/// How long anything gets to show; generous for 2 busy cores (the whole test takes ~3 s).
const DEADLINE: Duration = Duration::from_secs(20);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_person_answers_a_question_and_messages_an_agent_from_the_page() {
    let mock = MockModel::start().await;
    // Task 1 asks; the answer comes back as that call's result and is echoed to the person.
    mock.push(Reply::tool_call(
        "q1",
        "request_user_input",
        json!({"question": "Which shop?", "options": ["Corner shop", "Big market"]}),
    ));
    mock.push_fn(|request| {
        let answer = request.tool_result_for("q1").unwrap_or("(no result)");
        Reply::tool_call(
            "m1",
            "send_message",
            json!({"text": format!("going to: {answer}")}),
        )
    });
    mock.push(Reply::text("done"));
    // Task 2 is the message typed on the page; it echoes its objective.
    mock.push_fn(|request| {
        let objective = request.last_user_text().unwrap_or("(no user text)");
        Reply::tool_call(
            "m2",
            "send_message",
            json!({"text": format!("noted: {objective}")}),
        )
    });
    mock.push(Reply::text("done"));

    // The browser starts while the daemon does (each takes most of a second).
    let started = Instant::now();
    let (browser, daemon) = tokio::join!(
        Browser::start(),
        TestDaemon::start_with_model(&mock, "openai", &[])
    );
    add_agent(&daemon, "shopper").await;
    let first = create_task(&daemon, "shopper", "buy apples", None).await;
    let path = format!("/api/tasks/{first}");
    wait_for(DEADLINE, "the task to wait for the person", || {
        let client = daemon.client();
        let path = path.clone();
        async move {
            let task: Task = client.get(&path).await.ok()?;
            (task.state == TaskState::WaitingForHuman).then_some(())
        }
    })
    .await;

    // The page shows the question with its options, and the agent waiting for the person.
    let ready = started.elapsed();
    browser.client.goto(&daemon.url("/")).await.unwrap();
    let width = browser
        .wait_page("the question card and shopper's red dot", |page| {
            let card = page
                .questions
                .iter()
                .find(|c| c.text.contains("Which shop?"))?;
            let shopper = page.agent("shopper")?;
            (page.status == "live"
                && card.text.starts_with("shopper asks")
                && card.options == ["Corner shop", "Big market"]
                && shopper.dot.as_deref() == Some("dot waiting_for_human"))
            .then_some(page.width)
        })
        .await;
    assert!(
        width <= 600,
        "a phone-sized viewport (the narrow layout), not {width}px"
    );
    let shown = started.elapsed();

    // One tap on "Big market" resumes the same task with that answer.
    browser
        .click(
            "//div[@id='questions']/div[@class='question'][contains(p, 'Which shop?')]\
             /button[normalize-space()='Big market']",
        )
        .await;
    let done = wait_task_finished(&daemon, &first).await;
    assert_eq!(done.verdict, Some(Verdict::Answer));
    assert_eq!(
        done.final_message.as_deref(),
        Some("going to: The person answered: Big market")
    );
    let requests = mock.requests();
    assert_eq!(
        requests[1].tool_result_for("q1"),
        Some("The person answered: Big market"),
        "the answer is the asking call's result, in the same task"
    );
    browser
        .wait_page("the card to go and the message to show", |page| {
            (page.questions.is_empty()
                && page.agent("shopper")?.dot.as_deref() != Some("dot waiting_for_human")
                && page
                    .log
                    .iter()
                    .any(|row| row.contains("going to: The person answered: Big market")))
            .then_some(())
        })
        .await;

    // Now the agent is idle: pick it, type a message, send. It starts a new task.
    browser
        .click("//nav[@id='agents']/button[contains(., 'shopper')]")
        .await;
    browser
        .wait_page("shopper to be selected", |page| {
            page.agent("shopper")?.active.then_some(())
        })
        .await;
    let text = browser.client.find(Locator::Id("text")).await.unwrap();
    text.send_keys("also get bread").await.unwrap();
    browser.click("//form[@id='send']/button").await;
    let second = wait_for(DEADLINE, "a task from the typed message", || {
        let client = daemon.client();
        async move {
            let list: TaskList = client.get("/api/tasks?agent=shopper").await.ok()?;
            list.tasks
                .into_iter()
                .find(|task| task.objective == "also get bread")
        }
    })
    .await;
    assert_ne!(second.id, first, "a new task, not the finished one");
    let done = wait_task_finished(&daemon, &second.id).await;
    assert_eq!(done.final_message.as_deref(), Some("noted: also get bread"));
    browser
        .wait_page("the input to clear and the reply to show", |page| {
            (page.text.is_empty()
                && page
                    .log
                    .iter()
                    .any(|row| row.contains("noted: also get bread")))
            .then_some(())
        })
        .await;
    assert_eq!(mock.request_count(), 5);
    println!(
        "browser and daemon up, task waiting: {ready:?}; question on the page: {shown:?}; \
         all done: {:?}",
        started.elapsed()
    );
    browser.close().await;
}

/// What the page shows, read in one script so a poll sees one consistent state.
#[derive(Debug, Deserialize)]
struct Page {
    status: String,
    questions: Vec<Card>,
    agents: Vec<AgentButton>,
    /// Each event row's text.
    log: Vec<String>,
    /// The message box's value.
    text: String,
    /// The viewport's width in CSS pixels.
    width: u32,
}

#[derive(Debug, Deserialize)]
struct Card {
    text: String,
    options: Vec<String>,
}

#[derive(Debug, Deserialize)]
struct AgentButton {
    name: String,
    /// The dot's class list (`dot waiting_for_human`); none for "All agents".
    dot: Option<String>,
    active: bool,
}

impl Page {
    fn agent(&self, name: &str) -> Option<&AgentButton> {
        self.agents.iter().find(|agent| agent.name == name)
    }
}

const READ_PAGE: &str = r#"
const text = (node) => [...node.childNodes].filter((n) => n.nodeType === Node.TEXT_NODE)
  .map((n) => n.textContent).join('');
return {
  status: document.getElementById('status').textContent,
  questions: [...document.querySelectorAll('#questions .question')].map((card) => ({
    text: card.querySelector('p').textContent,
    options: [...card.querySelectorAll(':scope > button')].map((b) => b.textContent),
  })),
  agents: [...document.querySelectorAll('#agents button')].map((button) => ({
    name: text(button),
    dot: button.querySelector('.dot')?.className ?? null,
    active: button.classList.contains('active'),
  })),
  log: [...document.querySelectorAll('#log .event')].map((row) => row.textContent),
  text: document.getElementById('text').value,
  width: window.innerWidth,
};
"#;

/// A headless Chromium under its own chromedriver, on a fresh profile. Dropping it kills
/// chromedriver's whole process group (Chromium with it), so a failing test leaks nothing.
struct Browser {
    client: Client,
    driver: DriverProcess,
    _profile: TempDir,
}

impl Browser {
    async fn start() -> Browser {
        for (binary, package) in [(CHROMIUM, "chromium"), (CHROMEDRIVER, "chromium-driver")] {
            assert!(
                Path::new(binary).is_file(),
                "{binary} is missing: this test needs a real browser. Install it with \
                 `apt-get install -y chromium chromium-driver` (scripts/test does; package \
                 `{package}`)"
            );
        }
        let profile = tempfile::Builder::new()
            .prefix("lbchrome")
            .tempdir_in("/tmp")
            .unwrap();
        let port = free_port();
        let log = profile.path().join("chromedriver.log");
        let child = Command::new(CHROMEDRIVER)
            .arg(format!("--port={port}"))
            .arg(format!("--log-path={}", log.display()))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            // Its own group: Chromium and its helpers are killed with it.
            .process_group(0)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {CHROMEDRIVER}: {e}"));
        let mut driver = DriverProcess(child);
        let webdriver = format!("http://127.0.0.1:{port}");
        let http = reqwest::Client::new();
        wait_for(DEADLINE, "chromedriver to be ready", || {
            if let Some(status) = driver.0.try_wait().unwrap() {
                panic!(
                    "chromedriver exited with {status}:\n{}",
                    std::fs::read_to_string(&log).unwrap_or_default()
                );
            }
            let status = http.get(format!("{webdriver}/status")).send();
            async move {
                let body: serde_json::Value = status.await.ok()?.json().await.ok()?;
                (body["value"]["ready"] == true).then_some(())
            }
        })
        .await;

        let mut args = vec![
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            // A phone-sized viewport: the page's narrow layout is the one under test.
            "--window-size=412,915",
        ]
        .into_iter()
        .map(str::to_owned)
        .collect::<Vec<_>>();
        args.push(format!(
            "--user-data-dir={}",
            profile.path().join("profile").display()
        ));
        let capabilities = json!({
            "browserName": "chrome",
            "goog:chromeOptions": { "binary": CHROMIUM, "args": args },
        });
        let serde_json::Value::Object(capabilities) = capabilities else {
            unreachable!()
        };
        let client = ClientBuilder::new(hyper_util::client::legacy::connect::HttpConnector::new())
            .capabilities(capabilities)
            .connect(&webdriver)
            .await
            .unwrap_or_else(|e| {
                panic!(
                    "chromedriver could not start {CHROMIUM}: {e}\n{}",
                    std::fs::read_to_string(&log).unwrap_or_default()
                )
            });
        Browser {
            client,
            driver,
            _profile: profile,
        }
    }

    /// Polls the page until `check` yields `Some`; at the deadline, panics showing the page.
    async fn wait_page<T>(&self, what: &str, mut check: impl FnMut(&Page) -> Option<T>) -> T {
        let give_up = Instant::now() + DEADLINE;
        loop {
            let page = self.page().await;
            if let Some(value) = check(&page) {
                return value;
            }
            assert!(
                Instant::now() < give_up,
                "timed out after {DEADLINE:?} waiting for {what}; the page shows {page:#?}"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    async fn page(&self) -> Page {
        let value = self.client.execute(READ_PAGE, Vec::new()).await.unwrap();
        serde_json::from_value(value).unwrap()
    }

    /// Clicks the element at `xpath` as a pointer does. The page re-renders its agent list as
    /// events arrive, so an element found a moment ago can be replaced before the click lands:
    /// that (and only that) is retried.
    async fn click(&self, xpath: &str) {
        let give_up = Instant::now() + DEADLINE;
        loop {
            let element = match self.client.find(Locator::XPath(xpath)).await {
                Ok(element) => element,
                Err(e) => panic!(
                    "finding {xpath}: {e}; the page shows {:#?}",
                    self.page().await
                ),
            };
            match element.click().await {
                Ok(()) => return,
                Err(e) if e.is_stale_element_reference() && Instant::now() < give_up => {}
                Err(e) => panic!("clicking {xpath}: {e}"),
            }
        }
    }

    /// Ends the session (Chromium quits), then stops chromedriver.
    async fn close(self) {
        self.client.close().await.unwrap();
        drop(self.driver);
    }
}

/// chromedriver, leader of its own process group; the whole group is killed on drop.
struct DriverProcess(Child);

impl Drop for DriverProcess {
    fn drop(&mut self) {
        let _ = killpg(Pid::from_raw(self.0.id() as i32), Signal::SIGKILL);
        let _ = self.0.wait();
    }
}

/// A port nothing listens on right now (the kernel's pick, released for chromedriver).
fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}
