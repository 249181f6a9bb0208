//! Bad input is told to the model or ends the task with a clear message; nothing escapes
//! the workspace.

use super::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn path_escapes_are_refused() {
    let mock = MockModel::start().await;
    let daemon = TestDaemon::start_with_model(&mock, "openai", &[]).await;
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret.txt"), "secret").unwrap();
    let ws = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(outside.path(), ws.path().join("link")).unwrap();
    let secret = outside.path().join("secret.txt").display().to_string();
    mock.push(Reply::tool_calls([
        call("e1", "read_file", json!({"path": "../../../../etc/passwd"})),
        call("e2", "read_file", json!({"path": secret})),
        call("e3", "read_file", json!({"path": "link/secret.txt"})),
    ]));
    mock.push(Reply::tool_calls([
        call(
            "e4",
            "write_file",
            json!({"path": "link/planted.txt", "content": "x"}),
        ),
        call(
            "e5",
            "exec_command",
            json!({"cmd": "pwd", "workdir": "../"}),
        ),
    ]));
    mock.push(Reply::text("could not"));
    let (code, stdout) = run(&daemon, ws.path(), "read secrets").await;
    assert_eq!(code, 0);
    let events = task_events(&daemon, &task_of(&stdout)).await;
    let refused = results(&events);
    let ids: Vec<&str> = refused.iter().map(|(id, _, _)| id.as_str()).collect();
    assert_eq!(
        ids,
        ["e1", "e2", "e3", "e4", "e5"],
        "every escape got its one result"
    );
    for (id, status, output) in refused {
        assert_eq!(status, ToolStatus::Error, "{id}: {output}");
        assert!(
            output.contains("outside the workspace") || output.contains("escapes the workspace"),
            "{id}: {output}"
        );
        assert!(
            !output.contains("secret\n") && !output.contains("root:"),
            "{id} leaked: {output}"
        );
    }
    assert!(!outside.path().join("planted.txt").exists());
    daemon.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_tool_arguments_are_told_to_the_model() {
    let mock = MockModel::start().await;
    let daemon = TestDaemon::start_with_model(&mock, "openai", &[]).await;
    let ws = tempfile::tempdir().unwrap();
    mock.push(Reply::raw_tool_call(
        "j1",
        "write_file",
        "{\"path\": \"a.txt\", \"content\": ",
    ));
    mock.push(Reply::tool_call("j2", "write_file", json!({"path": 5})));
    mock.push(Reply::tool_call("j3", "no_such_tool", json!({})));
    mock.push(Reply::text("gave up"));
    let (code, _) = run(&daemon, ws.path(), "write a file").await;
    assert_eq!(code, 0);
    let requests = mock.requests();
    assert!(
        requests[1]
            .tool_result_for("j1")
            .unwrap()
            .contains("not valid JSON")
    );
    assert!(requests[2].tool_result_for("j2").unwrap().contains("path"));
    assert!(
        requests[3]
            .tool_result_for("j3")
            .unwrap()
            .contains("no tool named")
    );
    mock.assert_clean();
    daemon.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broken_provider_ends_the_task_failed_with_its_message() {
    let mock = MockModel::start().await;
    let daemon = TestDaemon::start_with_model(&mock, "openai", &[]).await;
    let ws = tempfile::tempdir().unwrap();
    for _ in 0..3 {
        mock.push(Reply::error(500, "upstream exploded"));
    }
    let (code, stdout) = run(&daemon, ws.path(), "anything").await;
    assert_eq!(code, 1);
    let t = task(&daemon, &task_of(&stdout)).await;
    assert_eq!(t.verdict, Some(Verdict::Failed));
    assert!(t.final_message.unwrap().contains("upstream exploded"));
    assert_eq!(mock.request_count(), 3, "retried up to max_attempts");
    // A stream cut off mid-way, every time: retried, then failed with a clear message.
    for _ in 0..3 {
        mock.push(Reply::text("partial answer that never ends").cut_off());
    }
    let (code, stdout) = run(&daemon, ws.path(), "again").await;
    assert_eq!(code, 1);
    let id = task_of(&stdout);
    let t = task(&daemon, &id).await;
    assert_eq!(t.verdict, Some(Verdict::Failed));
    assert!(
        t.final_message.as_deref().unwrap().contains("broke off"),
        "{t:?}"
    );
    let events = task_events(&daemon, &id).await;
    assert!(matches!(
        events.last(),
        Some(EventBody::TaskFinished {
            verdict: Verdict::Failed,
            ..
        })
    ));
    // Odd but valid streams: id and name repeated in every chunk, explicit nulls, and no
    // [DONE] at the end. The call is assembled once and the task completes.
    mock.push(
        Reply::tool_call(
            "q1",
            "write_file",
            json!({"path": "q.txt", "content": "quirky"}),
        )
        .repeat_id_and_name()
        .explicit_nulls(),
    );
    mock.push(Reply::text("all good").no_terminator());
    let (code, stdout) = run(&daemon, ws.path(), "quirks").await;
    assert_eq!(code, 0, "{stdout}");
    let events = task_events(&daemon, &task_of(&stdout)).await;
    let calls: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            EventBody::AssistantReply { tool_calls, .. } => Some(tool_calls.clone()),
            _ => None,
        })
        .flatten()
        .collect();
    assert_eq!(calls.len(), 1);
    assert_eq!(
        (calls[0].id.as_str(), calls[0].name.as_str()),
        ("q1", "write_file")
    );
    assert_eq!(
        std::fs::read_to_string(ws.path().join("q.txt")).unwrap(),
        "quirky"
    );
    daemon
        .client()
        .get::<lazyboy_protocol::Health>("/api/health")
        .await
        .unwrap();
    daemon.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn files_agents_create_get_the_persons_usual_permissions() {
    use std::os::unix::fs::PermissionsExt;
    let mock = MockModel::start().await;
    let daemon = TestDaemon::start_with_model(&mock, "openai", &[]).await;
    let ws = tempfile::tempdir().unwrap();
    mock.push(Reply::tool_calls([
        call(
            "u1",
            "write_file",
            json!({"path": "written.txt", "content": "x"}),
        ),
        call("u2", "exec_command", json!({"cmd": "touch touched.txt"})),
    ]));
    mock.push(Reply::text("ok"));
    let (code, _) = run(&daemon, ws.path(), "make files").await;
    assert_eq!(code, 0);
    // The daemon inherited this process's umask (and tightened its own to 077).
    let mask = nix::sys::stat::umask(nix::sys::stat::Mode::from_bits_truncate(0o022));
    nix::sys::stat::umask(mask);
    let expected = 0o666 & !mask.bits();
    for file in ["written.txt", "touched.txt"] {
        let mode = std::fs::metadata(ws.path().join(file))
            .unwrap()
            .permissions()
            .mode()
            & 0o777;
        assert_eq!(mode, expected, "{file}");
    }
    daemon.stop();
}
