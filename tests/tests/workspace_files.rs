//! Issue 21, findings 5 and 7, and the home as a second line, each attacked from an agent's
//! own commands through the real daemon:
//! - a background command replaces its own log with a symlink to `<home>/token`: the
//!   revival note quotes the end of its output from the daemon's memory, so the token
//!   reaches neither the model, nor the log, nor the dashboard;
//! - a command replaces `.lazyboy-output` with a symlink to a directory of the home: the next
//!   command's log and a spilled result land in a fresh `.lazyboy-output`, nothing there;
//! - a confined agent sharing a workspace with an unconfined one types into, waits for and
//!   kills the other's shell by id: refused as unknown, nothing typed, the shell still runs;
//! - a workspace that contains the LazyBoy home: the file tools refuse the home's files,
//!   directly and through a symlink, and walks never enter it.

use std::path::Path;
use std::time::Duration;

use lazyboy_protocol::{EventBody, TaskState, ToolStatus, Verdict};
use lazyboy_tests::mock_model::{MockCall, MockModel, Reply};
use lazyboy_tests::{
    TestDaemon, add_agent, all_events, create_task, model_config, output_of, task_events, wait_for,
    wait_task_finished,
};
use serde_json::json;

fn result_of(events: &[EventBody], call: &str) -> (ToolStatus, String) {
    events
        .iter()
        .find_map(|e| match e {
            EventBody::ToolResult {
                call_id,
                status,
                output,
                ..
            } if call_id == call => Some((*status, output.clone())),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no result for {call}: {events:#?}"))
}

async fn add(daemon: &TestDaemon, body: serde_json::Value) {
    let response = daemon
        .http
        .post(daemon.url("/api/agents"))
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 201, "{}", response.text().await.unwrap());
}

/// The home's API token, as the person's CLI gets it (written on first ask).
async fn token(daemon: &TestDaemon) -> String {
    let mut command = daemon.cli();
    command.args(["daemon", "token"]);
    let out = output_of(command).await;
    assert!(out.status.success(), "{out:?}");
    let token = String::from_utf8(out.stdout).unwrap().trim().to_owned();
    assert!(token.len() >= 32, "{token}");
    assert_eq!(
        std::fs::read_to_string(daemon.home().join("token"))
            .unwrap()
            .trim(),
        token
    );
    token
}

/// Every text file under `dir` (the daemon's own logs), concatenated.
fn texts_under(dir: &Path) -> String {
    let mut all = String::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            all.push_str(&texts_under(&path));
        } else if let Ok(text) = std::fs::read_to_string(&path) {
            all.push_str(&text);
        }
    }
    all
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_log_replaced_by_a_symlink_to_the_token_is_never_quoted() {
    let mock = MockModel::start().await;
    let daemon = TestDaemon::start_with_model(&mock, "openai", &[]).await;
    add_agent(&daemon, "logger").await;
    let token = token(&daemon).await;
    let target = daemon.home().join("token");
    // Its output ends after the swap, so "the end of its output" is what the revival quotes.
    let cmd = format!(
        "echo before-swap; sleep 0.3; log=.lazyboy-output/$LAZYBOYD_COMMAND_ID.log; \
         rm -f \"$log\" && ln -s {} \"$log\" && echo swapped-the-log; sleep 0.2; echo after-swap",
        target.display()
    );
    mock.push(Reply::tool_call(
        "c",
        "exec_command",
        json!({ "cmd": cmd, "block_until_ms": 50 }),
    ));
    // No calls: the turn waits for the command, then the revival note reaches the model.
    mock.push(Reply::text("waiting for it"));
    mock.push(Reply::tool_call(
        "m",
        "send_message",
        json!({"text": "it ended"}),
    ));
    mock.push(Reply::text("done"));
    let ws = tempfile::tempdir().unwrap();
    let id = create_task(&daemon, "logger", "watch a command", Some(ws.path())).await;
    let finished = wait_task_finished(&daemon, &id).await;
    assert_eq!(finished.verdict, Some(Verdict::Answer), "{finished:?}");

    let events = task_events(&daemon, &id).await;
    let revival = events
        .iter()
        .find_map(|e| match e {
            EventBody::RuntimeNote { text } if text.contains("the end of its output") => {
                Some(text.clone())
            }
            _ => None,
        })
        .expect("a revival note");
    assert!(
        revival.contains("swapped-the-log") && revival.contains("after-swap"),
        "the note quotes what the command printed: {revival}"
    );
    assert!(
        !revival.contains(&token),
        "the token in the note: {revival}"
    );
    for request in mock.requests() {
        assert!(
            !request.body.to_string().contains(&token),
            "sent to the model"
        );
    }
    // The log as the dashboard and every client read it, and the dashboard's own pages.
    for event in all_events(&daemon, 0).await {
        assert!(!event.data.to_string().contains(&token), "{event:?}");
    }
    let client = daemon.client();
    for page in ["/api/state", "/api/agents/logger/conversation"] {
        let body: serde_json::Value = client.get(page).await.unwrap();
        assert!(!body.to_string().contains(&token), "{page}");
    }
    // The daemon's logs, and the token file itself (never written through the link).
    assert!(!texts_under(&daemon.home().join("logs")).contains(&token));
    assert_eq!(std::fs::read_to_string(&target).unwrap().trim(), token);
    mock.assert_clean();
    daemon.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_output_directory_replaced_by_a_symlink_is_never_written_through() {
    let mock = MockModel::start().await;
    let daemon = TestDaemon::start_with_model(&mock, "openai", &[]).await;
    add_agent(&daemon, "planter").await;
    // A directory of the home, which the sandbox cannot write.
    let victim = daemon.home().join("victim");
    std::fs::create_dir(&victim).unwrap();
    let plant = format!(
        "rm -rf .lazyboy-output && ln -s {} .lazyboy-output && echo planted",
        victim.display()
    );
    mock.push(Reply::tool_call(
        "p",
        "exec_command",
        json!({ "cmd": plant }),
    ));
    // A command (its log) whose output is long enough to spill.
    mock.push(Reply::tool_call(
        "s",
        "exec_command",
        json!({"cmd": "seq 1 20000"}),
    ));
    mock.push(Reply::tool_call(
        "m",
        "send_message",
        json!({"text": "ran"}),
    ));
    mock.push(Reply::text("done"));
    let ws = tempfile::tempdir().unwrap();
    let id = create_task(&daemon, "planter", "plant", Some(ws.path())).await;
    assert_eq!(
        wait_task_finished(&daemon, &id).await.verdict,
        Some(Verdict::Answer)
    );
    let events = task_events(&daemon, &id).await;
    let (_, planted) = result_of(&events, "p");
    assert!(planted.contains("planted"), "{planted}");
    let (status, spilled) = result_of(&events, "s");
    assert_eq!(status, ToolStatus::Ok, "{spilled}");
    assert!(
        spilled.contains("the whole output is in .lazyboy-output/"),
        "{spilled}"
    );

    let left: Vec<_> = std::fs::read_dir(&victim).unwrap().collect();
    assert!(left.is_empty(), "written into the home: {left:?}");
    let out = ws.path().join(".lazyboy-output");
    let meta = std::fs::symlink_metadata(&out).unwrap();
    assert!(meta.is_dir(), "the link was replaced by a real directory");
    let names: Vec<String> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(names.iter().any(|n| n.ends_with(".log")), "{names:?}");
    let spill = names
        .iter()
        .find(|n| n.ends_with(".txt"))
        .expect("the spill");
    let whole = std::fs::read_to_string(out.join(spill)).unwrap();
    assert_eq!(whole.lines().count(), 20000);
    mock.assert_clean();
    daemon.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_agents_shell_in_a_shared_workspace_is_not_ours() {
    let mock = MockModel::start().await;
    let daemon = TestDaemon::start_with_model(&mock, "openai", &[]).await;
    add(&daemon, json!({"name": "owner", "sandbox": "off"})).await;
    add(&daemon, json!({"name": "intruder"})).await;
    let ws = tempfile::tempdir().unwrap();

    // The unconfined owner keeps a shell reading commands from its stdin.
    mock.push(Reply::tool_call(
        "sh",
        "exec_command",
        json!({"cmd": "bash", "block_until_ms": 100}),
    ));
    mock.push(Reply::text("my shell runs"));
    let owner = create_task(&daemon, "owner", "keep a shell", Some(ws.path())).await;
    let (shell, pgid) = wait_for(Duration::from_secs(30), "the owner's shell", || {
        let daemon = &daemon;
        let owner = owner.clone();
        async move {
            task_events(daemon, &owner)
                .await
                .into_iter()
                .find_map(|e| match e {
                    EventBody::CommandStarted {
                        command_id, pgid, ..
                    } => Some((command_id, pgid.unwrap())),
                    _ => None,
                })
        }
    })
    .await;
    wait_for(Duration::from_secs(10), "the owner's turn to end", || {
        let pending = mock.pending();
        async move { (pending == 0).then_some(()) }
    })
    .await;

    // The confined intruder, in the same workspace, knows the id (it can list the logs).
    let line = "echo typed-by-intruder; echo x > pwned.txt\n";
    let calls = [
        ("w", "write_stdin", json!({"id": shell, "chars": line})),
        ("a", "await_command", json!({"id": shell, "timeout_ms": 0})),
        ("k", "kill_command", json!({"id": shell})),
    ];
    mock.push(Reply::tool_calls(
        calls.map(|(call, tool, args)| MockCall::new(call, tool, args)),
    ));
    mock.push(Reply::tool_call(
        "m",
        "send_message",
        json!({"text": "tried"}),
    ));
    mock.push(Reply::text("tried"));
    let intruder = create_task(&daemon, "intruder", "use the shell", Some(ws.path())).await;
    assert_eq!(
        wait_task_finished(&daemon, &intruder).await.verdict,
        Some(Verdict::Answer)
    );
    let events = task_events(&daemon, &intruder).await;
    for call in ["w", "a", "k"] {
        let (status, text) = result_of(&events, call);
        assert_eq!(status, ToolStatus::Error, "{call}: {text}");
        assert!(
            text.contains(&format!("unknown command id: {shell}")),
            "{call}: {text}"
        );
        assert!(!text.contains("typed-by-intruder"), "{call}: {text}");
    }
    // Not killed: still running, its task still waiting on it.
    assert!(
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(pgid), None).is_ok(),
        "the owner's shell was killed"
    );
    let owner_events = task_events(&daemon, &owner).await;
    assert!(
        !owner_events
            .iter()
            .any(|e| matches!(e, EventBody::CommandEnded { .. })),
        "{owner_events:#?}"
    );
    let task: lazyboy_protocol::Task = daemon
        .client()
        .get(&format!("/api/tasks/{owner}"))
        .await
        .unwrap();
    assert_eq!(task.state, TaskState::Running);
    // Nothing was typed: the shell ran no line of the intruder's.
    let log = std::fs::read_to_string(ws.path().join(format!(".lazyboy-output/{shell}.log")))
        .unwrap_or_default();
    assert!(!log.contains("typed-by-intruder"), "{log}");
    assert!(!ws.path().join("pwned.txt").exists());
    daemon
        .http
        .post(daemon.url(&format!("/api/tasks/{owner}/stop")))
        .send()
        .await
        .unwrap()
        .error_for_status()
        .unwrap();
    assert_eq!(
        wait_task_finished(&daemon, &owner).await.verdict,
        Some(Verdict::Cancelled)
    );
    assert!(!ws.path().join("pwned.txt").exists());
    mock.assert_clean();
    daemon.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_workspace_holding_the_home_never_reaches_it_through_the_file_tools() {
    const SECRET: &str = "home-secret-6f1c0d";
    let mock = MockModel::start().await;
    // The workspace holds the home (a person who pointed an agent at `~`).
    let ws = tempfile::tempdir().unwrap();
    let home = ws.path().join("lbhome");
    std::fs::create_dir(&home).unwrap();
    std::fs::write(home.join("config.toml"), model_config(&mock, "openai")).unwrap();
    std::fs::write(home.join("secret.txt"), format!("{SECRET}\n")).unwrap();
    std::os::unix::fs::symlink("lbhome/secret.txt", ws.path().join("to_secret")).unwrap();
    std::fs::write(ws.path().join("mine.txt"), "mine\n").unwrap();
    let daemon = TestDaemon::start_in(&home, &[]).await;
    // Unconfined: confined agents are refused such a workspace (a first line); this is the
    // second, in the file tools themselves.
    add(&daemon, json!({"name": "wide", "sandbox": "off"})).await;
    let calls = [
        ("r1", "read_file", json!({"path": "lbhome/secret.txt"})),
        ("r2", "read_file", json!({"path": "to_secret"})),
        (
            "w",
            "write_file",
            json!({"path": "lbhome/planted.txt", "content": "x"}),
        ),
        (
            "e",
            "edit_file",
            json!({"path": "to_secret", "old": "home-secret", "new": "gone"}),
        ),
        ("l", "list_dir", json!({"path": ".", "depth": 3})),
        ("l2", "list_dir", json!({"path": "lbhome"})),
        ("s", "search", json!({"pattern": "home-secret"})),
        (
            "s2",
            "search",
            json!({"pattern": "home-secret", "path": "lbhome"}),
        ),
        ("ok", "read_file", json!({"path": "mine.txt"})),
    ];
    mock.push(Reply::tool_calls(
        calls.map(|(call, tool, args)| MockCall::new(call, tool, args)),
    ));
    mock.push(Reply::tool_call(
        "d",
        "report_done",
        json!({"summary": "s", "evidence": "e", "files": ["to_secret"]}),
    ));
    mock.push(Reply::tool_call(
        "m",
        "send_message",
        json!({"text": "could not"}),
    ));
    mock.push(Reply::text("could not"));
    let id = create_task(&daemon, "wide", "read the home", Some(ws.path())).await;
    assert_eq!(
        wait_task_finished(&daemon, &id).await.verdict,
        Some(Verdict::Answer)
    );
    let events = task_events(&daemon, &id).await;
    for call in ["r1", "r2", "w", "e", "l2", "s2", "d"] {
        let (status, text) = result_of(&events, call);
        assert_eq!(status, ToolStatus::Error, "{call}: {text}");
        assert!(text.contains("LazyBoy home"), "{call}: {text}");
    }
    let (_, listing) = result_of(&events, "l");
    assert!(
        listing.contains("lbhome/ (the LazyBoy home: not listed)"),
        "{listing}"
    );
    assert!(
        !listing.lines().any(|l| l.starts_with("lbhome/s")) && !listing.contains("lazyboy.db"),
        "{listing}"
    );
    let (_, found) = result_of(&events, "s");
    assert!(found.starts_with("no matches"), "{found}");
    let (status, mine) = result_of(&events, "ok");
    assert!(status == ToolStatus::Ok && mine.contains("mine"), "{mine}");
    // No call names it: only a read could have brought it.
    for request in mock.requests() {
        assert!(
            !request.body.to_string().contains(SECRET),
            "sent to the model"
        );
    }
    assert!(!home.join("planted.txt").exists());
    assert_eq!(
        std::fs::read_to_string(home.join("secret.txt")).unwrap(),
        format!("{SECRET}\n")
    );
    mock.assert_clean();
    daemon.stop();
}
