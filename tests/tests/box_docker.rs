//! Docker missing or down: every box tool answers a clear error, nothing runs on the host,
//! `GET /api/box` says why, and the daemon stays healthy.

use lazyboy_protocol::{BoxState, BoxStatus, EventBody, Health, ToolStatus};
use lazyboy_tests::boxes::result_of;
use lazyboy_tests::mock_model::{MockModel, Reply};
use lazyboy_tests::{TestDaemon, create_task, output_of, task_events, wait_task_finished};
use serde_json::json;

async fn check_without_docker(docker_host: &str, expect: &str) {
    let marker = std::env::temp_dir().join(format!("lb-host-marker-{}", std::process::id()));
    let _ = std::fs::remove_file(&marker);
    let mock = MockModel::start().await;
    mock.push(Reply::tool_call(
        "c1",
        "box_shell",
        json!({"command": format!("touch {}", marker.display())}),
    ))
    .push(Reply::tool_call(
        "c2",
        "browser_navigate",
        json!({"url": "https://example.com/"}),
    ))
    .push(Reply::tool_call("c3", "screenshot", json!({})))
    .push(Reply::tool_call(
        "c4",
        "box_write_file",
        json!({"path": "a.txt", "content": "x"}),
    ))
    .push(Reply::text("done"));
    let env = [
        ("DOCKER_HOST", docker_host),
        ("LAZYBOY_BOX_NAME", "lbt-nodocker"),
    ];
    let daemon = TestDaemon::start_with_model(&mock, "openai", &env).await;

    let status: BoxStatus = daemon.client().get("/api/box").await.unwrap();
    assert_eq!(status.state, BoxState::Unavailable, "{status:?}");
    let reason = status.reason.unwrap();
    assert!(
        reason.contains(expect) && reason.contains("install and start Docker"),
        "{reason}"
    );

    let task = create_task(&daemon, "default", "use the box", None).await;
    wait_task_finished(&daemon, &task).await;
    let events = task_events(&daemon, &task).await;
    for call in ["c1", "c2", "c3", "c4"] {
        let (status, output) = result_of(&events, call);
        assert_eq!(status, ToolStatus::Error, "{call}: {output}");
        assert!(
            output.contains("the box is unavailable") && output.contains("never fall back"),
            "{call}: {output}"
        );
    }
    assert!(!marker.exists(), "box_shell ran on the host");
    assert!(
        !events
            .iter()
            .any(|e| matches!(e, EventBody::BoxLock { .. })),
        "nothing took the lock of a box that is not there"
    );

    let start = daemon
        .http
        .post(daemon.url("/api/box/start"))
        .send()
        .await
        .unwrap();
    assert_eq!(start.status(), 503);
    assert!(start.text().await.unwrap().contains("box_unavailable"));
    let health: Health = daemon.client().get("/api/health").await.unwrap();
    assert!(health.ok);
    let out = output_of({
        let mut command = daemon.cli();
        command.args(["box", "status"]);
        command
    })
    .await;
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && text.starts_with("box: unavailable"),
        "{text}"
    );
    mock.assert_clean();
    daemon.stop();
}

#[tokio::test]
async fn docker_absent_box_tools_say_why_and_nothing_runs_on_the_host() {
    check_without_docker(
        "unix:///nonexistent/docker.sock",
        "unix:///nonexistent/docker.sock",
    )
    .await;
}

#[tokio::test]
async fn docker_stopped_box_tools_say_why_and_nothing_runs_on_the_host() {
    // An engine that is not listening: nothing answers on its port.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let host = format!("tcp://127.0.0.1:{port}");
    check_without_docker(&host, &host).await;
}
