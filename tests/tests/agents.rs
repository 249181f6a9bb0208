//! The team through the real CLI: `lazyboy team add|ls|show|edit|rm`, each agent's own
//! instructions, model and workspace, its state and lease in `GET /api/agents`, and a
//! message to an idle agent starting a task.

use std::time::Duration;

use lazyboy_protocol::{Agent, AgentList, AgentState, Verdict};
use lazyboy_tests::mock_model::{MockModel, Reply};
use lazyboy_tests::{TestDaemon, output_of, wait_for, wait_task_finished};

async fn lazyboy(daemon: &TestDaemon, args: &[&str]) -> (bool, String, String) {
    let mut command = daemon.cli();
    command.args(args);
    let output = output_of(command).await;
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

async fn agent(daemon: &TestDaemon, name: &str) -> Agent {
    daemon
        .client()
        .get(&format!("/api/agents/{name}"))
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn team_verbs_shape_what_each_agent_works_with() {
    let mock = MockModel::start().await;
    let daemon = TestDaemon::start_with_model(&mock, "openai", &[]).await;
    let ws = tempfile::tempdir().unwrap();
    let workspace = ws.path().canonicalize().unwrap();
    let instructions = ws.path().join("researcher.md");
    std::fs::write(&instructions, "Cite every source you use.").unwrap();

    let (ok, stdout, stderr) = lazyboy(
        &daemon,
        &[
            "team",
            "add",
            "researcher",
            "--instructions-file",
            instructions.to_str().unwrap(),
            "--model",
            "deep-thought",
            "--workspace",
            workspace.to_str().unwrap(),
        ],
    )
    .await;
    assert!(ok, "{stderr}");
    assert!(stdout.contains("added agent researcher"), "{stdout}");
    let shown = agent(&daemon, "researcher").await;
    assert_eq!(shown.instructions, "Cite every source you use.");
    assert_eq!(shown.model.as_deref(), Some("deep-thought"));
    assert_eq!(shown.workspace, workspace.display().to_string());
    assert_eq!(shown.state, AgentState::Idle);

    // A bad workspace is refused and nothing is created.
    let (ok, _, stderr) = lazyboy(
        &daemon,
        &["team", "add", "ghost", "--workspace", "/no/such/dir"],
    )
    .await;
    assert!(!ok);
    assert!(stderr.contains("/no/such/dir"), "{stderr}");
    let list: AgentList = daemon.client().get("/api/agents").await.unwrap();
    assert!(!list.agents.iter().any(|a| a.name == "ghost"));

    // `ask` without --workspace works in the agent's workspace, with its instructions and
    // model.
    mock.push(Reply::text("found three sources"));
    let (ok, stdout, _) = lazyboy(&daemon, &["ask", "researcher", "find sources"]).await;
    assert!(ok);
    let task = stdout.trim().to_owned();
    wait_task_finished(&daemon, &task).await;
    let request = mock.last_request().unwrap();
    assert!(request.system.contains("Cite every source you use."));
    assert!(
        request
            .system
            .contains(&format!("Workspace: {}", workspace.display()))
    );
    assert_eq!(request.model, "deep-thought");

    // `team edit` changes what the next task gets; "" goes back to the defaults.
    let (ok, stdout, stderr) = lazyboy(
        &daemon,
        &[
            "team",
            "edit",
            "researcher",
            "--instructions",
            "Be brief.",
            "--model",
            "",
            "--workspace",
            "",
        ],
    )
    .await;
    assert!(ok, "{stderr}");
    assert!(stdout.contains("Be brief."), "{stdout}");
    let edited = agent(&daemon, "researcher").await;
    assert_eq!(edited.model, None);
    assert!(
        edited.workspace.ends_with("workspaces/researcher"),
        "{}",
        edited.workspace
    );
    mock.push(Reply::text("brief"));
    let (ok, stdout, _) = lazyboy(&daemon, &["ask", "researcher", "again"]).await;
    assert!(ok);
    wait_task_finished(&daemon, stdout.trim()).await;
    let request = mock.last_request().unwrap();
    assert!(request.system.contains("Be brief."));
    assert!(!request.system.contains("Cite every source"));
    assert_ne!(request.model, "deep-thought");
    let (ok, _, stderr) = lazyboy(&daemon, &["team", "edit", "researcher"]).await;
    assert!(!ok && stderr.contains("nothing to change"), "{stderr}");

    // `team ls` and `team show` name the state and the task.
    let (ok, stdout, _) = lazyboy(&daemon, &["team", "ls"]).await;
    assert!(ok);
    let header = stdout.lines().next().unwrap();
    for column in ["NAME", "STATE", "TASK", "HEARTBEAT", "MODEL"] {
        assert!(header.contains(column), "{header}");
    }
    let row = stdout
        .lines()
        .find(|l| l.starts_with("researcher"))
        .unwrap();
    assert!(row.contains("idle"), "{row}");
    let (ok, stdout, _) = lazyboy(&daemon, &["team", "show", "researcher"]).await;
    assert!(ok && stdout.contains("state:        idle"), "{stdout}");
    mock.assert_clean();
    daemon.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_running_agent_shows_its_lease_and_is_removed_only_with_force() {
    let mock = MockModel::start().await;
    let daemon = TestDaemon::start_with_model(&mock, "openai", &[]).await;
    let (ok, _, stderr) = lazyboy(&daemon, &["team", "add", "ops"]).await;
    assert!(ok, "{stderr}");
    // A message to an idle agent starts a task; a slow model keeps it running.
    mock.push(Reply::text("slow").delay(Duration::from_secs(60)));
    let accepted = lazyboy_tests::tell(&daemon, "ops", "watch the servers").await;
    let task = accepted.task.clone().expect("the message started a task");
    let running = wait_for(Duration::from_secs(20), "ops to run", || {
        let daemon = &daemon;
        async move {
            let a = agent(daemon, "ops").await;
            (a.state == AgentState::Running).then_some(a)
        }
    })
    .await;
    assert_eq!(running.current_task.as_deref(), Some(task.as_str()));
    let beat = running
        .heartbeat_at_ms
        .expect("a running task has a heartbeat");
    assert_eq!(running.lease_expires_at_ms, Some(beat + 30_000));
    let (ok, stdout, _) = lazyboy(&daemon, &["team", "ls"]).await;
    assert!(ok);
    let row = stdout.lines().find(|l| l.starts_with("ops")).unwrap();
    assert!(row.contains("running") && row.contains(&task), "{row}");

    // The lease is renewed every 10 s while the task runs (the model is still thinking).
    let renewed = wait_for(Duration::from_secs(15), "the lease renewal", || {
        let daemon = &daemon;
        async move {
            let a = agent(daemon, "ops").await;
            a.heartbeat_at_ms.filter(|at| *at > beat).map(|at| (at, a))
        }
    })
    .await;
    assert!(
        renewed.0 - beat >= 9_000,
        "renewed after {} ms",
        renewed.0 - beat
    );
    assert_eq!(renewed.1.lease_expires_at_ms, Some(renewed.0 + 30_000));

    // Removal is refused while it runs, and --force stops the task first.
    let (ok, _, stderr) = lazyboy(&daemon, &["team", "rm", "ops"]).await;
    assert!(!ok);
    assert!(
        stderr.contains("--force") && stderr.contains(&task),
        "{stderr}"
    );
    assert_eq!(agent(&daemon, "ops").await.state, AgentState::Running);
    let (ok, stdout, stderr) = lazyboy(&daemon, &["team", "rm", "ops", "--force"]).await;
    assert!(ok, "{stderr}");
    assert!(stdout.contains("removed agent ops"));
    let stopped = wait_task_finished(&daemon, &task).await;
    assert_eq!(stopped.verdict, Some(Verdict::Cancelled));
    assert_eq!(
        stopped.lease_expires_at_ms, None,
        "an ended task holds no lease"
    );
    let list: AgentList = daemon.client().get("/api/agents").await.unwrap();
    assert!(!list.agents.iter().any(|a| a.name == "ops"));
    daemon.stop();
}
