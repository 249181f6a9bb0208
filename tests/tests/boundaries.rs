//! Boundaries, attacked the way a steered model would: from the agent's own commands.
//! - Its processes cannot use the daemon's API: they cannot read the token, so the local
//!   socket and loopback TCP refuse them (401) and nothing is written, also from a process it
//!   double-forked; the person's CLI and HTTP client go on working. (The attacks on the
//!   caller check itself are in `auth/`.)
//! - Under `workspace-write` its commands cannot read the LazyBoy home (`cat lazyboy.db`,
//!   `ls`) nor write outside the workspace (`~/outside.txt`), and a denied write is an
//!   ordinary error result; inside the workspace they write as before. `read-only` writes
//!   nothing, the file tools included.
//! - A configured key's value printed by a command is stored, and sent, redacted.
//! - Both helpers confine: `lazyboy-sandbox` (what the daemon runs) and the daemon's own
//!   hidden `--sandbox-exec` mode (what it falls back to when copied alone).
//!
//! Needs `curl` (scripts/test installs it).

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use lazyboy_protocol::{EventBody, Task, TaskState, ToolStatus};
use lazyboy_tests::mock_model::{MockModel, Reply};
use lazyboy_tests::{TestDaemon, all_events, bin, create_task, output_of, task_events, wait_for};
use serde_json::json;

fn need_curl() {
    assert!(
        std::process::Command::new("curl")
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success()),
        "curl is missing: install it (apt-get install curl; scripts/test does)"
    );
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

async fn wait_state(daemon: &TestDaemon, id: &str, state: TaskState) -> Task {
    wait_for(
        Duration::from_secs(30),
        &format!("{id} to be {state:?}"),
        || {
            let client = daemon.client();
            let path = format!("/api/tasks/{id}");
            async move {
                let t: Task = client.get(&path).await.ok()?;
                (t.state == state).then_some(t)
            }
        },
    )
    .await
}

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

/// `curl` printing the body and then the status code.
fn curl(target: &str, path: &str, body: &str) -> String {
    format!(
        "curl -s -w ' HTTP%{{http_code}}' -X POST -H 'content-type: application/json' -d '{body}' \
         {target}{path}"
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agents_commands_cannot_use_the_daemons_api() {
    need_curl();
    let mock = MockModel::start().await;
    let daemon = TestDaemon::start_with_model(&mock, "openai", &[]).await;
    // An agent with the default sandbox: it cannot read the home, so it has no token. (One
    // with `sandbox = "off"` runs as the person and is trusted as the person.)
    add(&daemon, json!({"name": "victim"})).await;
    add(&daemon, json!({"name": "attacker"})).await;
    mock.push(Reply::tool_call(
        "q",
        "request_user_input",
        json!({"question": "may I deploy?", "options": ["yes", "no"]}),
    ));
    let victim = create_task(&daemon, "victim", "deploy", None).await;
    wait_state(&daemon, &victim, TaskState::WaitingForHuman).await;
    let victim_events = task_events(&daemon, &victim).await.len();

    let socket = daemon.home().join("lazyboyd.sock");
    let unix = format!("--unix-socket {} http://x", socket.display());
    let tcp = daemon.health.url.trim_end_matches('/').to_owned();
    let own: Arc<Mutex<Option<String>>> = Arc::default();
    let seen = own.clone();
    let (unix_c, tcp_c, victim_c) = (unix.clone(), tcp.clone(), victim.clone());
    mock.push_fn(move |_| {
        // The command answers its own task: wait (bounded) until the test knows its id.
        let deadline = Instant::now() + Duration::from_secs(10);
        let own = loop {
            if let Some(id) = seen.lock().unwrap().clone() {
                break id;
            }
            assert!(Instant::now() < deadline, "the task id never came");
            std::thread::sleep(Duration::from_millis(5));
        };
        let answer = r#"{"text":"yes"}"#;
        let note = r#"{"text":"pwned","note":true}"#;
        let cmd = [
            curl(
                &format!("-o - {unix_c}"),
                &format!("/api/tasks/{own}/answer"),
                answer,
            ),
            // Without the marker in its environment: nothing about the process matters.
            format!(
                "env -i PATH=\"$PATH\" {}",
                curl(
                    &format!("-o - {unix_c}"),
                    &format!("/api/tasks/{victim_c}/answer"),
                    answer,
                )
            ),
            curl(&tcp_c, &format!("/api/tasks/{victim_c}/answer"), answer),
            curl(&tcp_c, "/api/agents/victim/messages", note),
            format!("curl -s -w ' HTTP%{{http_code}}' {tcp_c}/api/agents"),
            // Double-forked into its own session, without the marker.
            format!(
                "setsid -f env -i PATH=\"$PATH\" bash -c \"{} > late.txt\"; \
                 for i in $(seq 200); do [ -s late.txt ] && break; sleep 0.05; done; \
                 cat late.txt",
                curl(&tcp_c, "/api/agents/victim/messages", note).replace('"', "\\\"")
            ),
        ]
        .join("; echo; ");
        Reply::tool_call("c1", "exec_command", json!({ "cmd": cmd }))
    });
    mock.push(Reply::text("tried"));
    let ws = tempfile::tempdir().unwrap();
    let attacker = create_task(&daemon, "attacker", "answer yourself", Some(ws.path())).await;
    *own.lock().unwrap() = Some(attacker.clone());
    wait_state(&daemon, &attacker, TaskState::Done).await;

    let (_, output) = result_of(&task_events(&daemon, &attacker).await, "c1");
    // Over TCP the four requests reach the daemon and are refused for want of the
    // token. The two over the socket never connect (the sandbox's seccomp filter
    // refuses AF_UNIX sockets: curl reports 000) or, were that layer gone, are
    // refused the same way: either way none is served.
    assert_eq!(
        output.matches("HTTP401").count() + output.matches("HTTP000").count(),
        6,
        "{output}"
    );
    assert!(output.matches("HTTP401").count() >= 4, "{output}");
    assert!(output.contains("unauthorized"), "{output}");
    assert!(!output.contains("HTTP20"), "{output}");
    // Nothing was written: the victim still waits, its question open, its chat untouched.
    let after = task_events(&daemon, &victim).await;
    assert_eq!(after.len(), victim_events, "{after:#?}");
    assert_eq!(
        wait_state(&daemon, &victim, TaskState::WaitingForHuman)
            .await
            .state,
        TaskState::WaitingForHuman
    );
    let notes = all_events(&daemon, 0).await;
    assert!(
        !notes
            .iter()
            .any(|e| e.data.to_string().contains("pwned") && e.kind == "user_message"),
        "a note landed"
    );
    // The person's CLI (local socket) and browser (TCP) work as before.
    let agents = daemon
        .http
        .get(daemon.url("/api/agents"))
        .send()
        .await
        .unwrap();
    assert_eq!(agents.status(), 200);
    let mut answer = daemon.cli();
    answer.args(["answer", &victim, "no"]);
    let out = output_of(answer).await;
    assert!(out.status.success(), "{out:?}");
    daemon.stop();
}

#[test]
fn both_sandbox_helpers_grant_only_what_they_are_told() {
    let granted = tempfile::tempdir().unwrap();
    let other = tempfile::tempdir().unwrap();
    let script = format!(
        "echo a > {g}/ok && echo granted-written; echo b > {o}/no || echo other-denied",
        g = granted.path().display(),
        o = other.path().display()
    );
    for (program, flag) in [
        (bin("lazyboy-sandbox"), None),
        (bin("lazyboy-sandbox"), Some("--sandbox-exec")),
        (bin("lazyboyd"), Some("--sandbox-exec")),
    ] {
        let output = std::process::Command::new(&program)
            .args(flag)
            .args(["-r", "/", "-w", "/dev/null", "-w"])
            .arg(granted.path())
            .args(["--", "sh", "-c", &script])
            .output()
            .unwrap();
        let out = String::from_utf8_lossy(&output.stdout);
        let err = String::from_utf8_lossy(&output.stderr);
        let name = program.display();
        assert!(out.contains("granted-written"), "{name}: {out} {err}");
        assert!(out.contains("other-denied"), "{name}: {out} {err}");
        assert!(err.contains("Permission denied"), "{name}: {err}");
        assert!(!other.path().join("no").exists(), "{name} wrote outside");
        std::fs::remove_file(granted.path().join("ok")).unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn workspace_write_hides_the_home_and_keeps_writes_in_the_workspace() {
    let mock = MockModel::start().await;
    // `~` is a directory of its own, outside the workspace and the temp dir.
    let person_home = tempfile::tempdir_in("/var/tmp").unwrap();
    let home_env = person_home.path().display().to_string();
    let daemon =
        TestDaemon::start_with_model(&mock, "openai", &[("HOME", &home_env), ("TMPDIR", "/tmp")])
            .await;
    add(&daemon, json!({"name": "boxed"})).await;
    let lb = daemon.home().display().to_string();
    let probe = format!(
        "cat {lb}/lazyboy.db > /dev/null && echo db-read || echo db-denied; \
         ls {lb} > /dev/null && echo home-listed || echo home-denied; \
         echo inside > inside.txt && echo inside-written; \
         mkdir -p sub && echo deep > sub/deep.txt && echo sub-written"
    );
    mock.push(Reply::tool_call(
        "p",
        "exec_command",
        json!({ "cmd": probe }),
    ));
    mock.push(Reply::tool_call(
        "w",
        "exec_command",
        json!({"cmd": "echo x > ~/outside.txt"}),
    ));
    mock.push(Reply::text("probed"));
    let ws = tempfile::tempdir().unwrap();
    let id = create_task(&daemon, "boxed", "probe", Some(ws.path())).await;
    wait_state(&daemon, &id, TaskState::Done).await;
    let events = task_events(&daemon, &id).await;
    let (_, probed) = result_of(&events, "p");
    for word in ["db-denied", "home-denied", "inside-written", "sub-written"] {
        assert!(probed.contains(word), "{word} missing:\n{probed}");
    }
    assert!(probed.contains("Permission denied"), "{probed}");
    // The denied write is an ordinary failed call the model can read.
    let (status, denied) = result_of(&events, "w");
    assert_eq!(status, ToolStatus::Error, "{denied}");
    assert!(denied.contains("Permission denied"), "{denied}");
    let requests = mock.requests();
    let seen = requests[2].tool_result_for("w").unwrap_or("");
    assert!(seen.contains("Permission denied"), "{seen}");
    assert!(!person_home.path().join("outside.txt").exists());
    assert_eq!(
        std::fs::read_to_string(ws.path().join("inside.txt")).unwrap(),
        "inside\n"
    );
    mock.assert_clean();
    daemon.stop();
}

/// `lazyboy run` in a project directory uses the `default` agent, which is confined like the
/// named ones (issue 20): its commands cannot read the token nor write outside the project,
/// and the run does not announce the sandbox each time.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lazyboy_run_confines_the_default_agent_to_its_workspace() {
    let mock = MockModel::start().await;
    let person_home = tempfile::tempdir_in("/var/tmp").unwrap();
    let home_env = person_home.path().display().to_string();
    let daemon =
        TestDaemon::start_with_model(&mock, "openai", &[("HOME", &home_env), ("TMPDIR", "/tmp")])
            .await;
    let lb = daemon.home().display().to_string();
    let probe = format!(
        "cat {lb}/token && echo token-read || echo token-denied; \
         echo inside > inside.txt && echo inside-written; \
         echo x > ~/outside.txt && echo outside-written || echo outside-denied"
    );
    mock.push(Reply::tool_call(
        "p",
        "exec_command",
        json!({ "cmd": probe }),
    ));
    mock.push(Reply::text("probed"));
    let ws = tempfile::tempdir().unwrap();
    let mut run = daemon.cli();
    run.env("HOME", &home_env)
        .args(["run", "probe", "--workspace"])
        .arg(ws.path());
    let out = output_of(run).await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{out:?}");
    assert!(
        !stderr.contains("sandbox"),
        "run announced the sandbox: {stderr}"
    );
    let seen = mock.requests()[1]
        .tool_result_for("p")
        .unwrap_or("")
        .to_owned();
    for word in ["token-denied", "inside-written", "outside-denied"] {
        assert!(seen.contains(word), "{word} missing:\n{seen}");
    }
    assert!(
        !seen.contains(&daemon.token()),
        "the token reached the model: {seen}"
    );
    assert!(!person_home.path().join("outside.txt").exists());
    assert!(ws.path().join("inside.txt").exists());
    mock.assert_clean();
    daemon.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_only_writes_nothing() {
    let mock = MockModel::start().await;
    let daemon = TestDaemon::start_with_model(&mock, "openai", &[]).await;
    add(&daemon, json!({"name": "reader", "sandbox": "read-only"})).await;
    let ws = tempfile::tempdir().unwrap();
    std::fs::write(ws.path().join("a.txt"), "before\n").unwrap();
    mock.push(Reply::tool_call(
        "c",
        "exec_command",
        json!({"cmd": "cat a.txt && echo after > a.txt"}),
    ));
    mock.push(Reply::tool_call(
        "f",
        "write_file",
        json!({"path": "b.txt", "content": "x"}),
    ));
    mock.push(Reply::text("looked"));
    let id = create_task(&daemon, "reader", "look", Some(ws.path())).await;
    wait_state(&daemon, &id, TaskState::Done).await;
    let events = task_events(&daemon, &id).await;
    let (status, out) = result_of(&events, "c");
    assert_eq!(status, ToolStatus::Error, "{out}");
    assert!(
        out.contains("before") && out.contains("Permission denied"),
        "{out}"
    );
    let (status, out) = result_of(&events, "f");
    assert_eq!(status, ToolStatus::Error);
    assert!(out.contains("read-only"), "{out}");
    assert_eq!(
        std::fs::read_to_string(ws.path().join("a.txt")).unwrap(),
        "before\n"
    );
    assert!(!ws.path().join("b.txt").exists());
    daemon.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_printed_key_is_stored_and_sent_redacted() {
    const KEY: &str = "sk-test-boundaries-5d0c1e9a7b";
    let mock = MockModel::start().await;
    let daemon = TestDaemon::start_with_model(&mock, "openai", &[("OPENAI_API_KEY", KEY)]).await;
    add(&daemon, json!({"name": "leaky"})).await;
    let ws = tempfile::tempdir().unwrap();
    // The key reaches the command the way a leak would: from a file, not from the model.
    std::fs::write(ws.path().join("notes.txt"), format!("token: {KEY}\n")).unwrap();
    mock.push(Reply::tool_call(
        "c",
        "exec_command",
        json!({"cmd": "cat notes.txt"}),
    ));
    mock.push(Reply::tool_call(
        "r",
        "read_file",
        json!({"path": "notes.txt"}),
    ));
    mock.push(Reply::text("read it"));
    let id = create_task(&daemon, "leaky", "read the notes", Some(ws.path())).await;
    wait_state(&daemon, &id, TaskState::Done).await;
    let events = task_events(&daemon, &id).await;
    for call in ["c", "r"] {
        let (_, out) = result_of(&events, call);
        assert!(out.contains("token: [redacted OPENAI_API_KEY]"), "{out}");
        assert!(!out.contains(KEY), "{out}");
    }
    for request in mock.requests() {
        assert!(!request.body.to_string().contains(KEY), "sent to the model");
    }
    let log = std::fs::read_dir(ws.path().join(".lazyboy-output"))
        .unwrap()
        .count();
    assert!(
        log > 0,
        "the command's own log stays in the workspace, as the person's file"
    );
    daemon.stop();
}

/// `team add|edit --approve/--allow/--sandbox`, shown by `team show` and the API.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn boundaries_are_set_and_shown_per_agent() {
    let daemon = TestDaemon::start().await;
    let run = |args: &[&str]| {
        let mut command = daemon.cli();
        command.args(args);
        output_of(command)
    };
    let out = run(&[
        "team",
        "add",
        "careful",
        "--approve",
        "command,workspace_write",
        "--allow",
        "git status",
        "--allow",
        "cargo test*",
        "--sandbox",
        "read-only",
    ])
    .await;
    assert!(out.status.success(), "{out:?}");
    let out = run(&["team", "show", "careful"]).await;
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("sandbox:      read-only"), "{text}");
    assert!(
        text.contains("approve:      command, workspace_write"),
        "{text}"
    );
    assert!(
        text.contains(r#"allow:        "git status", "cargo test*""#),
        "{text}"
    );
    let out = run(&[
        "team",
        "edit",
        "careful",
        "--approve",
        "",
        "--sandbox",
        "off",
    ])
    .await;
    assert!(out.status.success(), "{out:?}");
    let agent: lazyboy_protocol::Agent = daemon.client().get("/api/agents/careful").await.unwrap();
    assert!(agent.approve.is_empty());
    assert_eq!(agent.allow, ["git status", "cargo test*"]);
    assert_eq!(agent.sandbox, lazyboy_protocol::Sandbox::Off);
    // The defaults: every agent is confined, `default` (what `lazyboy run` uses) too.
    let out = run(&["team", "add", "plain"]).await;
    assert!(out.status.success(), "{out:?}");
    let plain: lazyboy_protocol::Agent = daemon.client().get("/api/agents/plain").await.unwrap();
    assert_eq!(plain.sandbox, lazyboy_protocol::Sandbox::WorkspaceWrite);
    let default: lazyboy_protocol::Agent =
        daemon.client().get("/api/agents/default").await.unwrap();
    assert_eq!(default.sandbox, lazyboy_protocol::Sandbox::WorkspaceWrite);
    // Reads and the task's own calls cannot wait for approval.
    let refused = daemon
        .http
        .post(daemon.url("/api/agents"))
        .json(&json!({"name": "odd", "approve": ["read"]}))
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 400);
    let out = run(&["team", "add", "odd", "--approve", "everything"]).await;
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown effect"));
    assert!(Path::new(daemon.home()).join("lazyboy.db").exists());
    daemon.stop();
}
