//! The tool registry end to end: reads run in parallel, the fuses count runs of the same
//! call in a row, a person's stop, message or answer lands on the task that waits for them.

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::time::{Duration, Instant};

use lazyboy_protocol::{EventBody, MessageAction, TaskState, ToolStatus, Verdict};
use lazyboy_tests::mock_model::{MockCall, MockModel, Reply};
use lazyboy_tests::tasks::{result_of, task, wait_task_state};
use lazyboy_tests::{
    TestDaemon, add_agent, create_task, output_of, task_events, tell, wait_for, wait_task_finished,
};
use serde_json::json;

fn mkfifo(path: &Path) {
    nix::unistd::mkfifo(path, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
}

/// Two `read_file` calls in one reply, each on a FIFO. The test feeds the second FIFO only
/// once a reader waits on it, and the first only after that: if the reads ran one after
/// another, the first would wait forever for a writer that never comes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reads_in_one_reply_run_in_parallel() {
    let mock = MockModel::start().await;
    let daemon = TestDaemon::start_with_model(&mock, "openai", &[]).await;
    add_agent(&daemon, "reader").await;
    let ws = tempfile::tempdir().unwrap();
    let (a, b) = (ws.path().join("a"), ws.path().join("b"));
    mkfifo(&a);
    mkfifo(&b);
    mock.push(Reply::tool_calls([
        MockCall::new("r1", "read_file", json!({"path": "a"})),
        MockCall::new("r2", "read_file", json!({"path": "b"})),
    ]));
    mock.push(Reply::text("read both"));
    let feeder = std::thread::spawn(move || {
        let deadline = Instant::now() + Duration::from_secs(20);
        // Opening a FIFO to write without blocking fails (ENXIO) while nobody reads it.
        let second_reader = loop {
            let open = std::fs::OpenOptions::new()
                .write(true)
                .custom_flags(nix::fcntl::OFlag::O_NONBLOCK.bits())
                .open(&b);
            match open {
                Ok(file) => break Some(file),
                Err(_) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(5));
                }
                Err(_) => break None,
            }
        };
        let parallel = second_reader.is_some();
        if let Some(mut file) = second_reader {
            file.write_all(b"second\n").unwrap();
        }
        // Feed the first either way, so a failing run still ends.
        std::fs::write(&a, "first\n").unwrap();
        if !parallel {
            std::fs::write(&b, "second\n").unwrap();
        }
        parallel
    });
    let id = create_task(&daemon, "reader", "read a and b", Some(ws.path())).await;
    let done = wait_task_finished(&daemon, &id).await;
    let parallel = tokio::task::spawn_blocking(move || feeder.join().unwrap())
        .await
        .unwrap();
    assert!(
        parallel,
        "the second read started only after the first ended: reads ran one after another"
    );
    assert_eq!(done.verdict, Some(Verdict::Answer));
    let events = task_events(&daemon, &id).await;
    assert!(result_of(&events, "r1").unwrap().1.contains("first"));
    assert!(result_of(&events, "r2").unwrap().1.contains("second"));
    // Both intents were recorded, with their effect, before either result.
    let kinds: Vec<&str> = events
        .iter()
        .filter_map(|e| match e {
            EventBody::ToolCall { effect, .. } => {
                assert_eq!(*effect, Some(lazyboy_protocol::Effect::Read));
                Some("call")
            }
            EventBody::ToolResult { .. } => Some("result"),
            _ => None,
        })
        .collect();
    assert_eq!(kinds, ["call", "call", "result", "result"]);
    mock.assert_clean();
    daemon.stop();
}

/// The seeds' fuse means six in a row: the same call six times, each separated by a
/// different call, is work, not a loop.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn six_identical_calls_interleaved_with_others_do_not_block() {
    let mock = MockModel::start().await;
    let daemon = TestDaemon::start_with_model(&mock, "openai", &[]).await;
    add_agent(&daemon, "echo").await;
    let ws = tempfile::tempdir().unwrap();
    for i in 0..6 {
        let same = json!({"cmd": "echo same"});
        mock.push(Reply::tool_call(format!("s{i}"), "exec_command", same));
        let other = json!({"cmd": format!("echo other {i}")});
        mock.push(Reply::tool_call(format!("o{i}"), "exec_command", other));
    }
    mock.push(Reply::tool_call(
        "m",
        "send_message",
        json!({"text": "all echoed"}),
    ));
    mock.push(Reply::text("done"));
    let id = create_task(&daemon, "echo", "echo things", Some(ws.path())).await;
    let done = wait_task_finished(&daemon, &id).await;
    assert_eq!(
        (done.verdict, done.final_message.as_deref()),
        (Some(Verdict::Answer), Some("all echoed"))
    );
    let events = task_events(&daemon, &id).await;
    assert!(
        !events.iter().any(
            |e| matches!(e, EventBody::RuntimeNote { text } if text.contains("same arguments"))
        ),
        "no reminder either: no two identical calls came in a row"
    );
    daemon.stop();
}

/// Five identical calls, then the person answers a question: the next five identical calls
/// start a new run, so the task is not stopped (the whole-task count would have stopped it
/// at the sixth).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_starts_the_fuse_count_afresh() {
    let mock = MockModel::start().await;
    let daemon = TestDaemon::start_with_model(&mock, "openai", &[]).await;
    add_agent(&daemon, "retry").await;
    let ws = tempfile::tempdir().unwrap();
    let same = json!({"cmd": "echo x >> runs.txt; echo same"});
    for i in 0..5 {
        mock.push(Reply::tool_call(
            format!("a{i}"),
            "exec_command",
            same.clone(),
        ));
    }
    mock.push(Reply::tool_call(
        "q",
        "request_user_input",
        json!({"question": "keep trying?", "options": ["yes", "no"]}),
    ));
    for i in 0..5 {
        mock.push(Reply::tool_call(
            format!("b{i}"),
            "exec_command",
            same.clone(),
        ));
    }
    mock.push(Reply::tool_call(
        "m",
        "send_message",
        json!({"text": "tried ten times"}),
    ));
    mock.push(Reply::text("done"));
    let id = create_task(&daemon, "retry", "try hard", Some(ws.path())).await;
    wait_task_state(&daemon, &id, TaskState::WaitingForHuman).await;
    let answer = json!({"option": 1});
    let response = daemon
        .http
        .post(daemon.url(&format!("/api/tasks/{id}/answer")))
        .json(&answer)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 202);
    let done = wait_task_finished(&daemon, &id).await;
    assert_eq!(
        done.verdict,
        Some(Verdict::Answer),
        "{:?}",
        done.final_message
    );
    let runs = std::fs::read_to_string(ws.path().join("runs.txt")).unwrap();
    assert_eq!(runs.lines().count(), 10);
    daemon.stop();
}

/// `lazyboy stop` on a task that waits for the person ends it `cancelled` at once; its open
/// question gets the stop as its result.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stopping_a_task_that_waits_for_the_person_cancels_it_at_once() {
    let mock = MockModel::start().await;
    let daemon = TestDaemon::start_with_model(&mock, "openai", &[]).await;
    add_agent(&daemon, "asker").await;
    mock.push(Reply::tool_call(
        "q",
        "request_user_input",
        json!({"question": "which colour?"}),
    ));
    let id = create_task(&daemon, "asker", "paint it", None).await;
    wait_task_state(&daemon, &id, TaskState::WaitingForHuman).await;
    let mut stop = daemon.cli();
    stop.args(["stop", &id]);
    let output = output_of(stop).await;
    assert!(output.status.success(), "{output:?}");
    let t = wait_task_state(&daemon, &id, TaskState::Cancelled).await;
    assert_eq!(t.verdict, Some(Verdict::Cancelled));
    let events = task_events(&daemon, &id).await;
    let (status, text) = result_of(&events, "q").unwrap();
    assert_eq!(status, ToolStatus::Error);
    assert!(text.contains("stopped"), "{text}");
    // Had the stop queued the task again, its loop would run before the agent's next task
    // (the queue is served oldest first, one task per agent at a time) and ask the model.
    mock.push(Reply::text("next one done"));
    let next = create_task(&daemon, "asker", "the next job", None).await;
    wait_task_state(&daemon, &next, TaskState::Done).await;
    assert_eq!(
        mock.request_count(),
        2,
        "nothing asked the model again for the stopped task"
    );
    daemon.stop();
}

/// Ctrl-C in `lazyboy run` while its task waits for an answer ends the task and exits 130.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_c_in_run_during_a_question_exits_130() {
    let mock = MockModel::start().await;
    let daemon = TestDaemon::start_with_model(&mock, "openai", &[]).await;
    let ws = tempfile::tempdir().unwrap();
    mock.push(Reply::tool_call(
        "q",
        "request_user_input",
        json!({"question": "which colour?"}),
    ));
    let mut command = daemon.cli();
    command
        .args(["run", "paint it", "--workspace"])
        .arg(ws.path())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped());
    let mut child = lazyboy_tests::KillOnDrop(command.spawn().unwrap());
    let id = wait_for(Duration::from_secs(20), "the question", || {
        let client = daemon.client();
        async move {
            let page: lazyboy_protocol::EventPage =
                client.get("/api/events/page?after=0").await.ok()?;
            page.events
                .iter()
                .find(|e| e.kind == "question")
                .and_then(|e| e.task.clone())
        }
    })
    .await;
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.0.id() as i32),
        nix::sys::signal::Signal::SIGINT,
    )
    .unwrap();
    let status = tokio::task::spawn_blocking(move || {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Some(status) = child.0.try_wait().unwrap() {
                return Some(status);
            }
            if Instant::now() > deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    })
    .await
    .unwrap()
    .expect("run exits after Ctrl-C during a question");
    assert_eq!(status.code(), Some(130));
    assert_eq!(task(&daemon, &id).await.verdict, Some(Verdict::Cancelled));
    daemon.stop();
}

/// A message to an agent whose task waits for the person answers that question (no second
/// task), and the same task resumes with the message as the answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_to_an_agent_waiting_for_the_person_answers_the_question() {
    let mock = MockModel::start().await;
    let daemon = TestDaemon::start_with_model(&mock, "openai", &[]).await;
    add_agent(&daemon, "painter").await;
    mock.push(Reply::tool_call(
        "q",
        "request_user_input",
        json!({"question": "which colour?"}),
    ));
    mock.push_fn(|request| {
        let answer = request.tool_result_for("q").unwrap_or_default().to_owned();
        Reply::tool_call(
            "m",
            "send_message",
            json!({"text": format!("got: {answer}")}),
        )
    });
    mock.push(Reply::text("painted"));
    let id = create_task(&daemon, "painter", "paint the fence", None).await;
    wait_task_state(&daemon, &id, TaskState::WaitingForHuman).await;
    let accepted = tell(&daemon, "painter", "green, please").await;
    assert_eq!(accepted.action, MessageAction::Answered);
    assert_eq!(accepted.task.as_deref(), Some(id.as_str()));
    let done = wait_task_finished(&daemon, &id).await;
    assert_eq!(done.verdict, Some(Verdict::Answer));
    assert_eq!(
        done.final_message.as_deref(),
        Some("got: The person answered: green, please")
    );
    let tasks: lazyboy_protocol::TaskList = daemon.client().get("/api/tasks").await.unwrap();
    assert_eq!(tasks.tasks.len(), 1, "no second task was started");
    // Now idle: a message starts a task.
    mock.push(Reply::text("on it"));
    let started = tell(&daemon, "painter", "paint the door too").await;
    assert_eq!(started.action, MessageAction::Started);
    assert_ne!(started.task.as_deref(), Some(id.as_str()));
    wait_task_finished(&daemon, started.task.as_deref().unwrap()).await;
    daemon.stop();
}
