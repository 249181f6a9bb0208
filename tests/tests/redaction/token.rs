//! The API token is a secret the daemon knows from the moment it reads or writes
//! `<home>/token`, and the one a rotation writes is registered at once: printed by a command
//! (a copy found in a file), the old and the new token are stored redacted. A token given
//! in `LAZYBOY_TOKEN` instead is a secret handed over at start, redacted the same.

use super::*;

/// `lazyboy daemon token [--rotate]`'s output: the token.
async fn token(daemon: &TestDaemon, rotate: bool) -> String {
    let mut command = daemon.cli();
    command.args(["daemon", "token"]);
    if rotate {
        command.arg("--rotate");
    }
    let output = lazyboy_tests::output_of(command).await;
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let token = String::from_utf8_lossy(&output.stdout).trim().to_owned();
    assert!(token.len() >= 32, "{token}");
    token
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rotated_token_is_redacted_from_the_moment_it_is_written() {
    let mock = MockModel::start().await;
    let (_home, mut daemon) = daemon_with_key(&mock, "mock-model", "").await;
    add_agent(&daemon, "leaky").await;
    let ws = tempfile::tempdir().unwrap();
    let old = token(&daemon, false).await;
    leak_file(ws.path(), "old.txt", &old);
    mock.push(Reply::tool_call(
        "a",
        "exec_command",
        json!({"cmd": "cat old.txt; echo; base64 -w0 old.txt"}),
    ));
    mock.push(Reply::tool_call(
        "m",
        "send_message",
        json!({"text": "read"}),
    ));
    mock.push(Reply::text("read"));
    let first = create_task(&daemon, "leaky", "read the old token", Some(ws.path())).await;
    wait_task_finished(&daemon, &first).await;
    let out = result_of(&task_events(&daemon, &first).await, "a");
    assert!(!out.contains(&old), "{out}");
    assert!(out.contains("[redacted API token]"), "{out}");

    let new = token(&daemon, true).await;
    assert_ne!(new, old);
    // The old token no longer opens the API: the harness's client takes the new one, as a
    // person's would.
    daemon.http = lazyboy_tests::authenticated_http(&new);
    leak_file(ws.path(), "new.txt", &new);
    mock.push(Reply::tool_call(
        "b",
        "exec_command",
        json!({"cmd": "cat new.txt; echo; od -An -tx1 new.txt; cat old.txt"}),
    ));
    mock.push(Reply::tool_call(
        "n",
        "send_message",
        json!({"text": "read"}),
    ));
    mock.push(Reply::text("read"));
    let second = create_task(&daemon, "leaky", "read the new token", Some(ws.path())).await;
    wait_task_finished(&daemon, &second).await;
    let out = result_of(&task_events(&daemon, &second).await, "b");
    assert!(out.contains("[redacted API token]"), "{out}");
    assert!(out.contains("[redacted API token, hex]"), "{out}");
    mock.assert_clean();
    assert_nowhere(daemon, &mock, "leaky", &[&old, &new, KEY]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_from_lazyboy_token_is_redacted() {
    const TOKEN: &str = "lb-env-token-7c1e9a3f5b2d8046a1e9c3b7";
    let mock = MockModel::start().await;
    let home = temp_home();
    let config = model_config(&mock, "openai");
    std::fs::write(home.path().join("config.toml"), config).unwrap();
    let daemon = TestDaemon::start_in(home.path(), &[("LAZYBOY_TOKEN", TOKEN)]).await;
    add_agent(&daemon, "leaky").await;
    let ws = tempfile::tempdir().unwrap();
    leak_file(ws.path(), "env.txt", TOKEN);
    mock.push(Reply::tool_call(
        "e",
        "exec_command",
        json!({"cmd": "cat env.txt; echo; base64 -w0 env.txt"}),
    ));
    mock.push(Reply::tool_call(
        "m",
        "send_message",
        json!({"text": "read"}),
    ));
    mock.push(Reply::text("read"));
    let task = create_task(&daemon, "leaky", "read the token", Some(ws.path())).await;
    wait_task_finished(&daemon, &task).await;
    let out = result_of(&task_events(&daemon, &task).await, "e");
    assert!(out.contains("[redacted LAZYBOY_TOKEN]"), "{out}");
    assert!(out.contains("[redacted LAZYBOY_TOKEN, base64]"), "{out}");
    mock.assert_clean();
    assert_nowhere(daemon, &mock, "leaky", &[TOKEN]).await;
}
