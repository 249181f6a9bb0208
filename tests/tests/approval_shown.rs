//! Approvals show exactly what will run, in the CLI (issue 21, finding 14): a command whose
//! second line is hidden behind a long first line, a carriage return, an ANSI escape and a
//! bidi override is shown by `lazyboy run` line by line, every trick as a visible escape and
//! nothing the terminal would interpret; what the person approved is what runs. A command
//! longer than the prompt shows is cut saying how much is hidden and how to see it, and
//! `lazyboy approve --show TASK` prints all of it.

use std::io::Write;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use lazyboy_protocol::DashboardState;
use lazyboy_tests::mock_model::{MockModel, Reply};
use lazyboy_tests::{KillOnDrop, TestDaemon, create_task, output_of, wait_for};
use serde_json::json;

async fn careful(daemon: &TestDaemon, ws: &Path) {
    let response = daemon
        .http
        .post(daemon.url("/api/agents"))
        .json(&json!({"name": "careful", "approve": ["command"],
                      "workspace": ws.display().to_string()}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 201, "{}", response.text().await.unwrap());
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

/// The attack: the old prompt printed this as one line cut at 120 characters, with
/// the escapes stripped and the bidi override live; the second line ran unseen.
const HIDDEN: &str = "echo checking the build \u{1b}[8m# \
    xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx \
    \u{202e}txt.tnemucod\u{202c}\r# all fine\ntouch second-line-ran";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_run_prompt_shows_every_line_and_every_hidden_character() {
    let mock = MockModel::start().await;
    let daemon = TestDaemon::start_with_model(&mock, "openai", &[]).await;
    let ws = tempfile::tempdir().unwrap();
    careful(&daemon, ws.path()).await;
    mock.push(Reply::tool_call(
        "a",
        "exec_command",
        json!({"cmd": HIDDEN}),
    ));
    mock.push(Reply::tool_call(
        "m",
        "send_message",
        json!({"text": "ran"}),
    ));
    mock.push(Reply::text("ran"));
    let out_path = daemon.home().join("run.out");
    let mut run = KillOnDrop(
        daemon
            .cli()
            .args(["run", "--agent", "careful", "--workspace"])
            .arg(ws.path())
            .arg("check the build")
            .stdin(Stdio::piped())
            .stdout(std::fs::File::create(&out_path).unwrap())
            .stderr(std::fs::File::create(daemon.home().join("run.err")).unwrap())
            .spawn()
            .unwrap(),
    );
    let mut stdin = run.0.stdin.take().unwrap();
    wait_for(Duration::from_secs(20), "run to show the approval", || {
        std::future::ready(
            read(&out_path)
                .contains("3. Approve the same")
                .then_some(()),
        )
    })
    .await;
    let shown = read(&out_path);
    let first = format!(
        "    1 │ echo checking the build \\x1b[8m# {} \\u{{202e}}txt.tnemucod\\u{{202c}}\\r# all \
         fine\n",
        "x".repeat(104)
    );
    assert!(
        shown.contains("? Approve exec_command (command)?\n"),
        "{shown}"
    );
    assert!(shown.contains("  command (2 lines):\n"), "{shown}");
    assert!(
        shown.contains(&first),
        "the whole first line, visibly:\n{shown}"
    );
    assert!(
        shown.contains("    2 │ touch second-line-ran\n"),
        "the hidden second line:\n{shown}"
    );
    for raw in ['\u{1b}', '\u{202e}', '\u{202c}', '\r'] {
        assert!(
            !shown.contains(raw),
            "{raw:?} reached the terminal:\n{shown:?}"
        );
    }
    assert!(!ws.path().join("second-line-ran").exists());
    // The person approves what they saw: both lines run.
    writeln!(stdin, "1").unwrap();
    let status = wait_for(Duration::from_secs(30), "run to exit", || {
        std::future::ready(run.0.try_wait().unwrap())
    })
    .await;
    assert!(status.success(), "{}", read(&out_path));
    assert!(ws.path().join("second-line-ran").exists());
    mock.assert_clean();
    daemon.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_command_says_what_is_hidden_and_approve_show_prints_it_all() {
    let mock = MockModel::start().await;
    let daemon = TestDaemon::start_with_model(&mock, "openai", &[]).await;
    let ws = tempfile::tempdir().unwrap();
    careful(&daemon, ws.path()).await;
    let long: String = (1..=100)
        .map(|i| format!("echo {i} >> out.txt\n"))
        .collect();
    mock.push(Reply::tool_call("a", "exec_command", json!({"cmd": long})));
    mock.push(Reply::tool_call(
        "m",
        "send_message",
        json!({"text": "denied"}),
    ));
    mock.push(Reply::text("denied"));
    let task = create_task(&daemon, "careful", "count to 100", Some(ws.path())).await;
    wait_for(Duration::from_secs(30), "the approval", || {
        let client = daemon.client();
        async move {
            let state: DashboardState = client.get("/api/state").await.ok()?;
            state
                .questions
                .iter()
                .any(|q| q.approval.is_some())
                .then_some(())
        }
    })
    .await;
    let out_path = daemon.home().join("follow.out");
    let mut follow = KillOnDrop(
        daemon
            .cli()
            .args(["follow", &task])
            .stdout(std::fs::File::create(&out_path).unwrap())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    wait_for(
        Duration::from_secs(20),
        "follow to show the approval",
        || {
            std::future::ready(
                read(&out_path)
                    .contains("3. Approve the same")
                    .then_some(()),
            )
        },
    )
    .await;
    let shown = read(&out_path);
    assert!(shown.contains("  command (100 lines):\n"), "{shown}");
    assert!(shown.contains("     40 │ echo 40 >> out.txt\n"), "{shown}");
    assert!(!shown.contains("echo 41 >>"), "{shown}");
    let hidden: usize = (41..=100)
        .map(|i| format!("echo {i} >> out.txt").len())
        .sum();
    assert!(
        shown.contains(&format!(
            "    … {hidden} more characters (60 more lines) not shown: `lazyboy approve --show \
             {task}` prints all of it\n"
        )),
        "{shown}"
    );

    let all = output_of({
        let mut command = daemon.cli();
        command.args(["approve", "--show", &task]);
        command
    })
    .await;
    assert!(
        all.status.success(),
        "{}",
        String::from_utf8_lossy(&all.stderr)
    );
    let all = String::from_utf8_lossy(&all.stdout).into_owned();
    for i in 1..=100 {
        assert!(
            all.contains(&format!("{i:>7} │ echo {i} >> out.txt\n")),
            "line {i}:\n{all}"
        );
    }
    assert!(!all.contains("not shown"), "{all}");
    // --show decided nothing; `lazyboy events` points to it too.
    assert!(!ws.path().join("out.txt").exists());
    let events = output_of({
        let mut command = daemon.cli();
        command.args(["events"]);
        command
    })
    .await;
    let events = String::from_utf8_lossy(&events.stdout).into_owned();
    assert!(
        events.contains(&format!(
            "question approval: exec_command (command); `lazyboy approve --show {task}` shows \
             what will run"
        )),
        "{events}"
    );
    let deny = output_of({
        let mut command = daemon.cli();
        command.args(["deny", &task, "too long"]);
        command
    })
    .await;
    assert!(deny.status.success());
    let status = wait_for(Duration::from_secs(30), "follow to exit", || {
        std::future::ready(follow.0.try_wait().unwrap())
    })
    .await;
    assert!(status.success(), "{}", read(&out_path));
    assert!(
        !ws.path().join("out.txt").exists(),
        "the denied command never ran"
    );
    mock.assert_clean();
    daemon.stop();
}
