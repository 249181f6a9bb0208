//! `kill -9` of the daemon during a `box_shell`: the call is `unknown` after the restart and
//! never run again (a counter file in the box shows one run); the box and its container
//! survive the daemon.

use std::time::Duration;

use lazyboy_protocol::ToolStatus;
use lazyboy_tests::boxes::{TestBox, daemon, result_of};
use lazyboy_tests::mock_model::{MockModel, Reply};
use lazyboy_tests::{create_task, task_events, wait_for};
use serde_json::json;

#[tokio::test]
async fn a_box_shell_cut_off_by_kill_9_is_unknown_and_never_rerun() {
    let test_box = TestBox::new();
    let mock = MockModel::start().await;
    let script = "echo run >> /home/box/work/default/counter; sleep 20";
    mock.push(Reply::tool_call(
        "c1",
        "box_shell",
        json!({"command": script, "block_until_ms": 60000}),
    ))
    .push(Reply::text("checked"));
    let mut daemon = daemon(&mock, "openai", &test_box).await;
    let task = create_task(&daemon, "default", "count once", None).await;

    let counted = || {
        let name = test_box.name.clone();
        async move {
            tokio::task::spawn_blocking(move || {
                let out = std::process::Command::new("docker")
                    .args(["exec", &name, "cat", "/home/box/work/default/counter"])
                    .output()
                    .unwrap();
                String::from_utf8_lossy(&out.stdout).lines().count()
            })
            .await
            .unwrap()
        }
    };
    wait_for(
        Duration::from_secs(60),
        "the command to run in the box",
        || {
            let c = counted();
            async move { (c.await == 1).then_some(()) }
        },
    )
    .await;
    let before = container_id(&test_box.name);
    daemon.kill9();
    assert!(test_box.running(), "the box died with the daemon");
    daemon.restart().await;
    lazyboy_tests::boxes::wait_finished(&daemon, &task).await;

    let events = task_events(&daemon, &task).await;
    let (status, output) = result_of(&events, "c1");
    assert_eq!(status, ToolStatus::Unknown, "{output}");
    assert!(output.contains("outcome unknown"), "{output}");
    assert_eq!(counted().await, 1, "the command ran again");
    assert!(test_box.running());
    assert_eq!(
        container_id(&test_box.name),
        before,
        "the container was replaced"
    );
    let last = mock.last_request().unwrap();
    assert!(
        last.tool_result_for("c1")
            .unwrap()
            .contains("outcome unknown")
    );
    mock.assert_clean();
    daemon.stop();
}

fn container_id(name: &str) -> String {
    let out = std::process::Command::new("docker")
        .args(["inspect", "-f", "{{.Id}}", name])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}
