//! CLI verbs end to end: `lazyboy completions`, `lazyboy tell`, and the one stdin reader of
//! `lazyboy run` (a line steers the running task, or answers its open question).

use std::io::Write;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use lazyboy_protocol::{MessageAccepted, MessageAction, TaskList, TaskState, Verdict};
use lazyboy_tests::mock_model::{MockModel, Reply};
use lazyboy_tests::{KillOnDrop, TestDaemon, add_agent, cli, output_of, temp_home, wait_for};
use serde_json::json;

/// A command that holds its task running until `go` appears in its workspace.
fn held_command() -> serde_json::Value {
    json!({"cmd": "touch started; while [ ! -e go ]; do sleep 0.02; done; echo a"})
}

async fn wait_file(path: &Path, what: &str) {
    wait_for(Duration::from_secs(20), what, || {
        std::future::ready(path.exists().then_some(()))
    })
    .await;
}

#[test]
fn output_into_a_closed_pipe_ends_quietly_like_a_unix_tool() {
    // `lazyboy completions bash | head -0`, made deterministic: the reader is gone before the
    // CLI writes.
    let home = temp_home();
    let (reader, writer) = nix::unistd::pipe().unwrap();
    drop(reader);
    let output = cli(home.path())
        .args(["completions", "bash"])
        .stdout(Stdio::from(writer))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(141), "stderr: {stderr}");
    assert!(!stderr.contains("panicked"), "stderr: {stderr}");
}

#[test]
fn completions_for_bash_zsh_and_fish_name_the_verbs() {
    let home = temp_home();
    for shell in ["bash", "zsh", "fish"] {
        let output = cli(home.path())
            .args(["completions", shell])
            .output()
            .unwrap();
        assert!(
            output.status.success(),
            "{shell}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        let script = String::from_utf8(output.stdout).unwrap();
        assert!(!script.trim().is_empty(), "{shell}: empty");
        for verb in ["daemon", "team", "tell", "run", "schedule"] {
            assert!(script.contains(verb), "{shell} does not mention {verb}");
        }
        if shell == "bash" {
            let file = home.path().join("lazyboy.bash");
            std::fs::write(&file, &script).unwrap();
            let check = std::process::Command::new("bash")
                .arg("-n")
                .arg(&file)
                .output()
                .unwrap();
            assert!(
                check.status.success(),
                "bash -n: {}",
                String::from_utf8_lossy(&check.stderr)
            );
        }
    }
    // Completions need no daemon, and start none.
    assert!(!home.path().join(lazyboy_protocol::paths::SOCKET).exists());
}

/// `lazyboy tell AGENT TEXT [--json]`, run off the test's runtime.
async fn tell(daemon: &TestDaemon, args: &[&str]) -> String {
    let mut command = daemon.cli();
    command.arg("tell").args(args);
    let output = output_of(command).await;
    assert!(
        output.status.success(),
        "tell {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tell_starts_a_task_when_idle_and_steers_it_while_it_runs() {
    let mock = MockModel::start().await;
    let daemon = TestDaemon::start_with_model(&mock, "openai", &[]).await;
    add_agent(&daemon, "writer").await;
    mock.push(Reply::tool_call("c1", "exec_command", held_command()));
    mock.push_fn(|request| {
        let last = request.last_user_text().unwrap_or("").to_owned();
        Reply::tool_call(
            "m1",
            "send_message",
            json!({"text": format!("heard: {last}")}),
        )
    });
    mock.push(Reply::text("ok"));

    let said = tell(&daemon, &["writer", "write a"]).await;
    let task = said
        .trim()
        .strip_prefix("started task ")
        .unwrap_or_else(|| panic!("{said:?}"))
        .to_owned();
    let workspace = daemon.home().join("workspaces").join("writer");
    wait_file(&workspace.join("started"), "the held command to start").await;

    let said = tell(&daemon, &["writer", "only a"]).await;
    assert_eq!(said.trim(), format!("steered task {task}"));
    std::fs::write(workspace.join("go"), "").unwrap();
    let done = lazyboy_tests::wait_task_finished(&daemon, &task).await;
    assert_eq!(done.final_message.as_deref(), Some("heard: only a"));
    let requests = mock.requests();
    assert_eq!(requests[1].last_user_text(), Some("only a"));

    // Idle again: the next message starts a new task; --json prints the daemon's answer.
    let said = tell(&daemon, &["writer", "--json", "and now b"]).await;
    let accepted: MessageAccepted = serde_json::from_str(said.trim()).unwrap();
    assert_eq!(accepted.action, MessageAction::Started);
    let next = accepted.task.unwrap();
    assert_ne!(next, task);
    lazyboy_tests::wait_task_finished(&daemon, &next).await;
    daemon.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_line_typed_during_run_steers_the_task_and_the_next_answers_its_question() {
    let mock = MockModel::start().await;
    let daemon = TestDaemon::start_with_model(&mock, "openai", &[]).await;
    add_agent(&daemon, "writer").await;
    mock.push(Reply::tool_call("c1", "exec_command", held_command()));
    mock.push_fn(|request| {
        let last = request.last_user_text().unwrap_or("").to_owned();
        Reply::tool_call(
            "q1",
            "request_user_input",
            json!({"question": format!("heard {last}; which colour?"), "options": ["red", "blue"]}),
        )
    });
    mock.push_fn(|request| {
        let answer = request.tool_result_for("q1").unwrap_or("").to_owned();
        Reply::tool_call("m1", "send_message", json!({"text": answer}))
    });
    mock.push(Reply::text("ok"));

    let ws = tempfile::tempdir().unwrap();
    let out_path = daemon.home().join("run.out");
    let err_path = daemon.home().join("run.err");
    let mut run = KillOnDrop(
        daemon
            .cli()
            .args(["run", "--agent", "writer", "--workspace"])
            .arg(ws.path())
            .arg("write a")
            .stdin(Stdio::piped())
            .stdout(std::fs::File::create(&out_path).unwrap())
            .stderr(std::fs::File::create(&err_path).unwrap())
            .spawn()
            .unwrap(),
    );
    let mut stdin = run.0.stdin.take().unwrap();
    wait_file(&ws.path().join("started"), "the held command to start").await;
    let list: TaskList = daemon
        .client()
        .get("/api/tasks?agent=writer")
        .await
        .unwrap();
    let task = list.tasks[0].id.clone();

    // Typed while the task runs: it steers it.
    writeln!(stdin, "only a").unwrap();
    let read =
        |path: std::path::PathBuf| move || std::fs::read_to_string(&path).unwrap_or_default();
    let err = read(err_path.clone());
    wait_for(Duration::from_secs(20), "run to say it steered", || {
        std::future::ready(
            err()
                .contains(&format!("steered task {task}"))
                .then_some(()),
        )
    })
    .await;
    std::fs::write(ws.path().join("go"), "").unwrap();

    // Typed while its question is open (and shown): it answers it.
    let out = read(out_path.clone());
    wait_for(Duration::from_secs(20), "run to show the question", || {
        std::future::ready(out().contains("which colour?").then_some(()))
    })
    .await;
    // The question event comes first, the task's state a moment later.
    wait_for(
        Duration::from_secs(20),
        "the task to wait for the person",
        || async {
            let waiting: lazyboy_protocol::Task = daemon
                .client()
                .get(&format!("/api/tasks/{task}"))
                .await
                .unwrap();
            (waiting.state == TaskState::WaitingForHuman).then_some(())
        },
    )
    .await;
    writeln!(stdin, "2").unwrap();

    let status = wait_for(Duration::from_secs(30), "run to exit", || {
        std::future::ready(run.0.try_wait().unwrap())
    })
    .await;
    assert!(status.success(), "{}\n{}", out(), err());
    let requests = mock.requests();
    assert_eq!(requests[1].last_user_text(), Some("only a"));
    assert!(
        requests[1].messages.iter().any(|m| matches!(
            m,
            lazyboy_tests::mock_model::SeenMessage::User { text } if text == "write a"
        )),
        "the objective is still there"
    );
    let done = lazyboy_tests::wait_task_finished(&daemon, &task).await;
    assert_eq!(done.verdict, Some(Verdict::Answer));
    assert_eq!(
        done.final_message.as_deref(),
        Some("The person answered: blue")
    );
    assert!(out().contains("heard only a; which colour?"), "{}", out());
    // One task: neither line started another.
    let list: TaskList = daemon
        .client()
        .get("/api/tasks?agent=writer")
        .await
        .unwrap();
    assert_eq!(list.tasks.len(), 1, "{:?}", list.tasks);
    daemon.stop();
}
