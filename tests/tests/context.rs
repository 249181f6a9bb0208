//! Long work: requests fitted to the model's window, summaries in the background, an
//! agent's conversation across its tasks, deliverables, and what each task cost.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use lazyboy_protocol::{Agent, EventBody, FileList, Task, Verdict};
use lazyboy_tests::mock_model::{CapturedRequest, MockModel, Reply, SeenMessage};
use lazyboy_tests::{
    TestDaemon, add_agent, create_task, model_config, output_of, task_events, tell, wait_for,
    wait_task_finished,
};
use serde_json::json;

/// The mock as `gpt-4o` (so the test counts with the real tokenizer) with this window.
fn config(mock: &MockModel, context: u64) -> String {
    model_config(mock, "openai").replace(
        "model = \"mock-model\"",
        &format!("model = \"gpt-4o\"\ncontext_tokens = {context}"),
    )
}

fn is_summary(request: &CapturedRequest) -> bool {
    request.system.contains("You condense")
}

/// Tokens of a request as a provider counts its chat: each message's text plus a few tokens
/// of framing, the system prompt, the tool definitions.
fn request_tokens(request: &CapturedRequest) -> usize {
    let bpe = tiktoken_rs::o200k_base_singleton();
    let count = |text: &str| bpe.encode_ordinary(text).len();
    let mut total = count(&request.system) + 4;
    for message in &request.messages {
        total += 4 + match message {
            SeenMessage::User { text } => count(text),
            SeenMessage::Assistant { text, tool_calls } => {
                count(text)
                    + tool_calls
                        .iter()
                        .map(|c| 8 + count(&c.name) + count(&c.arguments))
                        .sum::<usize>()
            }
            SeenMessage::ToolResult { content, .. } => count(content) + 2,
        };
    }
    if let Some(tools) = request.body.get("tools") {
        total += count(&tools.to_string());
    }
    total
}

fn first_user_texts(request: &CapturedRequest) -> Vec<&str> {
    request
        .messages
        .iter()
        .filter_map(|m| match m {
            SeenMessage::User { text } => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_300_round_task_fits_a_16k_window_and_ends_done() {
    let mock = MockModel::start().await;
    let daemon = TestDaemon::start_with(&config(&mock, 16_000), &[]).await;
    add_agent(&daemon, "reader").await;
    let ws = tempfile::tempdir().unwrap();
    // Several KiB of words, read again and again.
    let words: String = (0..900).map(|i| format!("w{i} ")).collect();
    std::fs::write(ws.path().join("big.txt"), &words).unwrap();
    let rounds = Arc::new(AtomicUsize::new(0));
    let counter = rounds.clone();
    let router = Arc::new(move |request: &CapturedRequest| {
        if is_summary(request) {
            return Reply::text("Goals: read big.txt. Done: read it many times.");
        }
        let n = counter.fetch_add(1, Ordering::SeqCst);
        if n < 300 {
            Reply::tool_call(format!("r{n}"), "read_file", json!({"path": "big.txt"}))
        } else if n == 300 {
            Reply::tool_call(
                "done",
                "report_done",
                json!({"summary": "read it 300 times", "evidence": "300 read_file results"}),
            )
        } else {
            Reply::text("finished")
        }
    });
    for _ in 0..1000 {
        let router = router.clone();
        mock.push_fn(move |request| router(request));
    }
    let objective = "read big.txt 300 times and report";
    let id = create_task(&daemon, "reader", objective, Some(ws.path())).await;
    // The person's instruction, early on.
    let steer = "count only the words starting with w";
    wait_for(Duration::from_secs(30), "round 5", || {
        std::future::ready((rounds.load(Ordering::SeqCst) >= 5).then_some(()))
    })
    .await;
    let accepted = tell(&daemon, "reader", steer).await;
    assert_eq!(accepted.task.as_deref(), Some(id.as_str()));
    let done = lazyboy_tests::wait_for(Duration::from_secs(600), "the task to end", || {
        let client = daemon.client();
        let id = id.clone();
        async move {
            let t: Task = client.get(&format!("/api/tasks/{id}")).await.ok()?;
            t.verdict.is_some().then_some(t)
        }
    })
    .await;
    assert_eq!(
        done.verdict,
        Some(Verdict::Done),
        "{:?}",
        done.final_message
    );

    let requests: Vec<CapturedRequest> = mock
        .requests()
        .into_iter()
        .filter(|r| !is_summary(r))
        .collect();
    assert!(requests.len() >= 301);
    let mut steered = false;
    for (i, request) in requests.iter().enumerate() {
        let tokens = request_tokens(request);
        assert!(tokens <= 16_000, "request {i} has {tokens} tokens");
        let users = first_user_texts(request);
        assert_eq!(users.first(), Some(&objective), "request {i}");
        steered |= users.contains(&steer);
        if steered {
            assert!(
                users.contains(&steer),
                "request {i} lost the person's instruction"
            );
        }
    }
    assert!(steered, "the instruction reached the model");
    let last = requests.last().unwrap();
    assert!(
        last.messages
            .iter()
            .any(|m| matches!(m, SeenMessage::ToolResult { content, .. }
            if content.contains("left out to fit the context window"))),
        "older results are stubs"
    );
    let summaries = task_events(&daemon, &id)
        .await
        .into_iter()
        .filter(|e| matches!(e, EventBody::Summary { .. }))
        .count();
    assert!(summaries >= 1, "a summary pass ran");
    daemon.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_summary_pass_that_fails_twice_is_retried_and_lands_once() {
    let mock = MockModel::start().await;
    let daemon = TestDaemon::start_with(&config(&mock, 6_000), &[]).await;
    add_agent(&daemon, "reader").await;
    let ws = tempfile::tempdir().unwrap();
    let words: String = (0..500).map(|i| format!("v{i} ")).collect();
    std::fs::write(ws.path().join("mid.txt"), &words).unwrap();
    let summaries = Arc::new(AtomicUsize::new(0));
    let rounds = Arc::new(AtomicUsize::new(0));
    let (seen, counter) = (summaries.clone(), rounds.clone());
    let router = Arc::new(move |request: &CapturedRequest| {
        if is_summary(request) {
            return match seen.fetch_add(1, Ordering::SeqCst) {
                0 | 1 => Reply::json_error(400, "summaries are down"),
                _ => Reply::text("Done: read mid.txt; To do: keep reading."),
            };
        }
        let n = counter.fetch_add(1, Ordering::SeqCst);
        match n {
            0..40 => Reply::tool_call(format!("r{n}"), "read_file", json!({"path": "mid.txt"})),
            40 => Reply::tool_call("m", "send_message", json!({"text": "read it 40 times"})),
            _ => Reply::text("finished"),
        }
    });
    for _ in 0..100 {
        let router = router.clone();
        mock.push_fn(move |request| router(request));
    }
    let id = create_task(&daemon, "reader", "read mid.txt 40 times", Some(ws.path())).await;
    let done = wait_task_finished(&daemon, &id).await;
    assert_eq!(
        done.verdict,
        Some(Verdict::Answer),
        "{:?}",
        done.final_message
    );
    let events = task_events(&daemon, &id).await;
    let landed: Vec<i64> = events
        .iter()
        .filter_map(|e| match e {
            EventBody::Summary { upto_seq, .. } => Some(*upto_seq),
            _ => None,
        })
        .collect();
    assert!(
        summaries.load(Ordering::SeqCst) >= 3,
        "two failures, then a pass that worked"
    );
    // Each summary that landed is a new one (its position moves on); the failed passes
    // recorded nothing.
    assert!(!landed.is_empty());
    assert!(landed.windows(2).all(|w| w[0] < w[1]), "{landed:?}");
    let texts: Vec<&str> = events
        .iter()
        .filter_map(|e| match e {
            EventBody::Summary { text, .. } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert!(texts.iter().all(|t| t.contains("read mid.txt")));
    // A later request carried the summary.
    assert!(mock.requests().iter().any(|r| {
        !is_summary(r)
            && first_user_texts(r)
                .iter()
                .any(|t| t.contains("Done: read mid.txt"))
    }));
    daemon.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agents_conversation_carries_into_its_next_task_until_cleared() {
    let mock = MockModel::start().await;
    let daemon = TestDaemon::start_with_model(&mock, "openai", &[]).await;
    add_agent(&daemon, "scout").await;
    mock.push(Reply::tool_call(
        "m",
        "send_message",
        json!({"text": "I found 7 cafes near the station"}),
    ));
    mock.push(Reply::text("done"));
    let first = create_task(&daemon, "scout", "find cafes near the station", None).await;
    wait_task_finished(&daemon, &first).await;

    mock.push(Reply::text("shortened"));
    let second = create_task(
        &daemon,
        "scout",
        "now shorten what you found yesterday",
        None,
    )
    .await;
    wait_task_finished(&daemon, &second).await;
    let request = mock.requests().last().unwrap().clone();
    assert_eq!(
        first_user_texts(&request),
        ["now shorten what you found yesterday"]
    );
    let prior = &request.system;
    assert!(
        prior.contains("I found 7 cafes near the station"),
        "{prior}"
    );
    assert!(prior.contains("find cafes near the station"), "{prior}");

    let mut clear = daemon.cli();
    clear.args(["team", "clear", "scout"]);
    let output = output_of(clear).await;
    assert!(output.status.success(), "{output:?}");

    mock.push(Reply::tool_call(
        "q1",
        "read_conversation",
        json!({"query": "cafes"}),
    ));
    mock.push(Reply::tool_call(
        "q2",
        "read_conversation",
        json!({"query": "cafes", "include_cleared": true}),
    ));
    mock.push(Reply::text("looked"));
    let third = create_task(&daemon, "scout", "what do you remember?", None).await;
    wait_task_finished(&daemon, &third).await;
    let requests = mock.requests();
    let third_first = requests
        .iter()
        .find(|r| first_user_texts(r).first() == Some(&"what do you remember?"))
        .unwrap();
    assert!(
        !third_first.system.contains("7 cafes"),
        "cleared: {}",
        third_first.system
    );
    let last = requests.last().unwrap();
    assert_eq!(last.tool_result_for("q1"), Some("nothing found"));
    assert!(
        last.tool_result_for("q2")
            .unwrap()
            .contains("I found 7 cafes near the station"),
        "{:?}",
        last.tool_result_for("q2")
    );
    daemon.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn report_done_checks_its_files_and_each_downloads_byte_identical() {
    let mock = MockModel::start().await;
    let daemon = TestDaemon::start_with_model(&mock, "openai", &[]).await;
    add_agent(&daemon, "maker").await;
    let ws = tempfile::tempdir().unwrap();
    let bytes: Vec<u8> = (0..=255u8).cycle().take(70_000).collect();
    std::fs::write(ws.path().join("report.bin"), &bytes).unwrap();
    std::fs::create_dir(ws.path().join("out")).unwrap();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("x.txt"), "x").unwrap();
    let done = |id: &str, files: serde_json::Value| {
        Reply::tool_call(
            id,
            "report_done",
            json!({"summary": "made it", "evidence": "ls -l", "files": files}),
        )
    };
    mock.push(done("d1", json!(["missing.txt"])));
    mock.push(done("d2", json!(["out"])));
    mock.push(done("d3", json!([outside.path().join("x.txt")])));
    mock.push(done("d4", json!(["report.bin"])));
    let id = create_task(&daemon, "maker", "make a report", Some(ws.path())).await;
    let finished = wait_task_finished(&daemon, &id).await;
    assert_eq!(finished.verdict, Some(Verdict::Done));
    let events = task_events(&daemon, &id).await;
    let result = |call: &str| {
        events
            .iter()
            .find_map(|e| match e {
                EventBody::ToolResult {
                    call_id, output, ..
                } if call_id == call => Some(output.clone()),
                _ => None,
            })
            .unwrap()
    };
    assert!(result("d1").contains("does not exist"), "{}", result("d1"));
    assert!(
        result("d2").contains("not a regular file"),
        "{}",
        result("d2")
    );
    assert!(
        result("d3").contains("outside the workspace"),
        "{}",
        result("d3")
    );
    let list: FileList = daemon
        .client()
        .get(&format!("/api/tasks/{id}/files"))
        .await
        .unwrap();
    assert_eq!(list.files.len(), 1);
    assert_eq!(
        (list.files[0].path.as_str(), list.files[0].size),
        ("report.bin", 70_000)
    );
    let got = daemon
        .http
        .get(daemon.url(&format!("/api/tasks/{id}/files/report.bin")))
        .send()
        .await
        .unwrap();
    assert_eq!(got.status(), 200);
    assert_eq!(got.bytes().await.unwrap().as_ref(), bytes.as_slice());
    for path in ["missing.txt", "out", "../x.txt"] {
        let refused = daemon
            .http
            .get(daemon.url(&format!("/api/tasks/{id}/files/{path}")))
            .send()
            .await
            .unwrap();
        assert_eq!(refused.status(), 404, "{path}");
    }
    daemon.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn usage_is_totalled_where_reported_and_estimated_where_not() {
    let mock = MockModel::start().await;
    let priced = format!(
        "{}\n[prices.mock-model]\ninput = 2.0\ncached_input = 0.5\noutput = 8.0\n",
        model_config(&mock, "openai")
    );
    let daemon = TestDaemon::start_with(&priced, &[]).await;
    add_agent(&daemon, "counted").await;
    add_agent(&daemon, "guessed").await;
    let ws = tempfile::tempdir().unwrap();
    mock.push(Reply::tool_call("l", "list_dir", json!({"path": "."})).with_usage(1000, 200, 50));
    mock.push(
        Reply::tool_call("m", "send_message", json!({"text": "3 files"})).with_usage(1100, 300, 20),
    );
    mock.push(Reply::text("ok").with_usage(0, 0, 0));
    let counted = create_task(&daemon, "counted", "list the files", Some(ws.path())).await;
    let counted = wait_task_finished(&daemon, &counted).await;
    assert_eq!(
        (
            counted.usage.input_tokens,
            counted.usage.cached_tokens,
            counted.usage.output_tokens,
            counted.usage.estimated
        ),
        (2100, 500, 70, false)
    );
    // $2/M for 1600 uncached, $0.5/M for 500 cached, $8/M for 70 out: 3200 + 250 + 560 µ$.
    assert_eq!(counted.usage.cost_microusd, Some(4010));

    mock.push(Reply::tool_call("l", "list_dir", json!({"path": "."})).without_usage());
    mock.push(Reply::tool_call("m", "send_message", json!({"text": "3 files"})).without_usage());
    mock.push(Reply::text("ok").without_usage());
    let guessed = create_task(&daemon, "guessed", "list the files", Some(ws.path())).await;
    let guessed = wait_task_finished(&daemon, &guessed).await;
    assert!(guessed.usage.estimated);
    assert!(guessed.usage.input_tokens > 100, "{:?}", guessed.usage);
    assert!(guessed.usage.output_tokens > 0, "{:?}", guessed.usage);

    let agent: Agent = daemon.client().get("/api/agents/counted").await.unwrap();
    assert_eq!(agent.usage.input_tokens, 2100);
    assert!(!agent.usage.estimated);
    let mut tasks = daemon.cli();
    tasks.args(["tasks"]);
    let listing = String::from_utf8(output_of(tasks).await.stdout).unwrap();
    assert!(listing.contains("2.1k/70"), "{listing}");
    assert!(
        listing.contains('~'),
        "estimated figures are marked: {listing}"
    );
    daemon.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_that_cannot_fit_fails_saying_so_and_never_reaches_the_model() {
    let mock = MockModel::start().await;
    let daemon = TestDaemon::start_with(&config(&mock, 2048), &[]).await;
    add_agent(&daemon, "small").await;
    let objective: String = (0..3000).map(|i| format!("item{i} ")).collect();
    let id = create_task(&daemon, "small", &objective, None).await;
    let done = wait_task_finished(&daemon, &id).await;
    assert_eq!(done.verdict, Some(Verdict::Failed));
    let message = done.final_message.unwrap();
    assert!(
        message.contains("context window") && message.contains("context_tokens"),
        "{message}"
    );
    assert_eq!(
        mock.request_count(),
        0,
        "no request the provider would refuse"
    );
    daemon.stop();
}
