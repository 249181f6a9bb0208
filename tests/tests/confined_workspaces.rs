//! A confined agent's workspace may neither hold the LazyBoy home nor be the person's home
//! directory (issue 21): refused when an agent is created or edited, when a task is created,
//! and when a task starts (its workspace a symlink that moved meanwhile), each time with an
//! error naming the paths; an unconfined agent may still work there.

use std::time::Duration;

use lazyboy_protocol::{TaskState, Verdict};
use lazyboy_tests::attacks::add;
use lazyboy_tests::mock_model::{MockModel, Reply};
use lazyboy_tests::tasks::wait_task_state;
use lazyboy_tests::{TestDaemon, create_task, output_of, wait_task_finished};
use serde_json::{Value, json};

/// The status and body of a JSON request over TCP.
async fn send(daemon: &TestDaemon, method: &str, path: &str, body: Value) -> (u16, String) {
    let url = daemon.url(path);
    let request = match method {
        "PATCH" => daemon.http.patch(url),
        _ => daemon.http.post(url),
    };
    let response = request.json(&body).send().await.unwrap();
    (response.status().as_u16(), response.text().await.unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_workspace_holding_the_home_or_equal_to_home_is_refused_for_a_confined_agent() {
    let person = tempfile::tempdir_in("/var/tmp").unwrap();
    let person_home = person.path().canonicalize().unwrap().display().to_string();
    let mock = MockModel::start().await;
    let daemon = TestDaemon::start_with_model(&mock, "openai", &[("HOME", &person_home)]).await;
    let lb = daemon.home().canonicalize().unwrap().display().to_string();
    let above = daemon.home().parent().unwrap().display().to_string();
    for (workspace, says) in [
        (lb.as_str(), "contains the LazyBoy home"),
        (above.as_str(), "contains the LazyBoy home"),
        (person_home.as_str(), "is your home directory"),
    ] {
        for sandbox in ["workspace-write", "read-only"] {
            let body = json!({"name": "x", "workspace": workspace, "sandbox": sandbox});
            let (status, text) = send(&daemon, "POST", "/api/agents", body).await;
            assert_eq!(status, 400, "{workspace} {sandbox}: {text}");
            assert!(text.contains(says) && text.contains(workspace), "{text}");
        }
    }
    // The CLI says why.
    let mut team = daemon.cli();
    team.args(["team", "add", "y", "--workspace", &person_home]);
    let out = output_of(team).await;
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("is your home directory"));

    // Unconfined, it runs as the person anyway: allowed; confining it then is refused.
    add(
        &daemon,
        json!({"name": "free", "workspace": person_home, "sandbox": "off"}),
    )
    .await;
    let (status, text) = send(
        &daemon,
        "PATCH",
        "/api/agents/free",
        json!({"sandbox": "workspace-write"}),
    )
    .await;
    assert_eq!(status, 400, "{text}");
    assert!(text.contains("is your home directory"), "{text}");
    add(&daemon, json!({"name": "boxed"})).await;
    let (status, text) = send(
        &daemon,
        "PATCH",
        "/api/agents/boxed",
        json!({"workspace": lb}),
    )
    .await;
    assert_eq!(status, 400, "{text}");

    // A task in such a place.
    let (status, text) = send(
        &daemon,
        "POST",
        "/api/agents/boxed/tasks",
        json!({"objective": "look around", "workspace": person_home}),
    )
    .await;
    assert_eq!(status, 400, "{text}");
    assert!(text.contains(&person_home), "{text}");

    // At the start: the workspace is a symlink to a project when the task is created, to
    // the home by the time it starts (the agent is busy with another task until then).
    let project = tempfile::tempdir().unwrap();
    let link = tempfile::tempdir().unwrap();
    let link = link.path().join("ws");
    std::os::unix::fs::symlink(project.path(), &link).unwrap();
    mock.push(Reply::tool_call(
        "q",
        "exec_command",
        json!({"cmd": "sleep 30", "block_until_ms": 60000}),
    ));
    let busy = create_task(&daemon, "boxed", "be busy", Some(project.path())).await;
    wait_task_state(&daemon, &busy, TaskState::Running).await;
    let later = create_task(&daemon, "boxed", "later", Some(&link)).await;
    std::fs::remove_file(&link).unwrap();
    std::os::unix::fs::symlink(&person_home, &link).unwrap();
    let mut stop = daemon.cli();
    stop.args(["stop", &busy]);
    assert!(output_of(stop).await.status.success());
    let task = tokio::time::timeout(Duration::from_secs(30), wait_task_finished(&daemon, &later))
        .await
        .unwrap();
    assert_eq!(task.verdict, Some(Verdict::Failed), "{task:?}");
    let message = task.final_message.clone().unwrap_or_default();
    assert!(message.contains("is your home directory"), "{task:?}");
    assert!(message.contains(&person_home), "{task:?}");
    daemon.stop();
}
