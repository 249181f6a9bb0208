//! The CLI around the loop: Ctrl-C, the REPL, the README's environment.

use super::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigint_to_run_cancels_with_130() {
    let mock = MockModel::start().await;
    let daemon = TestDaemon::start_with_model(&mock, "openai", &[]).await;
    let ws = tempfile::tempdir().unwrap();
    mock.push(Reply::tool_call(
        "c1",
        "exec_command",
        json!({"cmd": "echo $$ > pid.txt; sleep 60"}),
    ));
    let mut command = daemon.cli();
    command
        .args(["run", "wait a minute", "--workspace"])
        .arg(ws.path());
    command.stdout(std::process::Stdio::piped());
    let mut child = lazyboy_tests::KillOnDrop(command.spawn().unwrap());
    // Wait until the command is really running, then Ctrl-C the CLI.
    let pid_file = ws.path().join("pid.txt");
    wait_for(Duration::from_secs(20), "the command to start", || {
        let text = std::fs::read_to_string(&pid_file).unwrap_or_default();
        std::future::ready(text.ends_with('\n').then_some(()))
    })
    .await;
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.0.id() as i32),
        nix::sys::signal::Signal::SIGINT,
    )
    .unwrap();
    let status = tokio::task::spawn_blocking(move || child.0.wait().unwrap())
        .await
        .unwrap();
    assert_eq!(status.code(), Some(130));
    let page: lazyboy_protocol::EventPage = daemon
        .client()
        .get("/api/events/page?after=0")
        .await
        .unwrap();
    let id = page.events.iter().find_map(|e| e.task.clone()).unwrap();
    let t = wait_task_finished(&daemon, &id).await;
    assert_eq!(t.verdict, Some(Verdict::Cancelled));
    let events = task_events(&daemon, &id).await;
    assert_eq!(
        results(&events).len(),
        1,
        "the interrupted call still got its one result"
    );
    // The command's process group is gone (it leads its own group: pgid = its pid).
    let pid: i32 = std::fs::read_to_string(ws.path().join("pid.txt"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    wait_for(
        Duration::from_secs(10),
        "the command's group to be killed",
        || {
            let gone = nix::sys::signal::killpg(nix::unistd::Pid::from_raw(pid), None).is_err();
            std::future::ready(gone.then_some(()))
        },
    )
    .await;
    daemon.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_repl_runs_a_task_per_line() {
    use std::io::Write;
    let mock = MockModel::start().await;
    let daemon = TestDaemon::start_with_model(&mock, "openai", &[]).await;
    let ws = tempfile::tempdir().unwrap();
    mock.push(Reply::tool_call(
        "r1",
        "send_message",
        json!({"text": "four"}),
    ));
    mock.push(Reply::text("ok"));
    mock.push(Reply::tool_call(
        "r2",
        "send_message",
        json!({"text": "six"}),
    ));
    mock.push(Reply::text("ok"));
    let mut command = daemon.cli();
    command
        .current_dir(ws.path())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped());
    let mut child = command.spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    writeln!(stdin, "what is 2+2").unwrap();
    // A line typed while a task runs steers it; the next task starts from an idle prompt.
    let finished = |n: usize| {
        let client = daemon.client();
        move || {
            let client = client.clone();
            async move {
                let page: lazyboy_protocol::EventPage =
                    client.get("/api/events/page?after=0").await.ok()?;
                let done = page
                    .events
                    .iter()
                    .filter(|e| e.kind == "task_finished")
                    .count();
                (done >= n).then_some(())
            }
        }
    };
    wait_for(Duration::from_secs(20), "the first task", finished(1)).await;
    writeln!(stdin, "what is 3+3").unwrap();
    wait_for(Duration::from_secs(20), "the second task", finished(2)).await;
    drop(stdin);
    let output = tokio::task::spawn_blocking(move || child.wait_with_output().unwrap())
        .await
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stdout}");
    let four = stdout.find("four").expect("first answer");
    let six = stdout.find("six").expect("second answer");
    assert!(four < six, "{stdout}");
    assert_eq!(
        mock.request_count(),
        4,
        "{:#?}",
        mock.requests()
            .iter()
            .map(|r| r.messages.clone())
            .collect::<Vec<_>>()
    );
    daemon.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_readme_environment_configures_a_model_and_keeps_the_key_secret() {
    let mock = MockModel::start().await;
    let base_url = mock.openai_base_url();
    let daemon = TestDaemon::start_with(
        "",
        &[
            ("LAZYBOY_BASE_URL", base_url.as_str()),
            ("LAZYBOY_MODEL", "some-model"),
            ("LAZYBOY_API_KEY", "sk-very-secret-123"),
        ],
    )
    .await;
    let ws = tempfile::tempdir().unwrap();
    mock.push(Reply::tool_call(
        "env1",
        "exec_command",
        json!({"cmd": "env"}),
    ));
    mock.push(Reply::text("hello from the env-configured model"));
    let (code, stdout) = run(&daemon, ws.path(), "say hello").await;
    let env = mock
        .last_request()
        .unwrap()
        .tool_result_for("env1")
        .unwrap()
        .to_owned();
    assert!(env.contains("PATH="), "{env}");
    assert!(
        !env.contains("sk-very") && !env.contains("LAZYBOY_"),
        "secrets reached a command: {env}"
    );
    assert_eq!(code, 0, "{stdout}");
    let request = mock.last_request().unwrap();
    assert_eq!(request.model, "some-model");
    assert_eq!(
        request.authorization.as_deref(),
        Some("Bearer sk-very-secret-123")
    );
    // The key reaches the provider and nothing else: not the database, not the logs.
    let files = [
        "lazyboy.db",
        "lazyboy.db-wal",
        "logs/lazyboyd.log",
        "daemon-stderr.log",
    ];
    let mut checked = 0;
    for file in files {
        let Ok(bytes) = std::fs::read(daemon.home().join(file)) else {
            continue;
        };
        checked += bytes.len();
        let text = String::from_utf8_lossy(&bytes);
        assert!(
            !text.contains("sk-very-secret-123"),
            "the key leaked into {file}"
        );
        assert!(
            !text.contains("sk-very"),
            "part of the key leaked into {file}"
        );
    }
    let log = std::fs::read_to_string(daemon.home().join("logs/lazyboyd.log")).unwrap();
    assert!(log.contains("lazyboyd ready"), "the log was read: {log}");
    assert!(
        checked > 10_000,
        "the database and logs were read ({checked} bytes)"
    );
    daemon.stop();
}
