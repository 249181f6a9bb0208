//! The model's own words: what a model that saw a key (or was told it by a page) repeats is
//! stored and shown redacted, wherever it says it.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use super::*;

/// The reply's text, a delta split mid-key, `update_plan`, `send_message`,
/// `report_progress` (base64), `memory_write`, a question with the key among its options,
/// and `report_done` (its summary is the final message; its evidence hex).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_the_model_repeats_is_stored_and_sent_redacted() {
    let mock = MockModel::start().await;
    let (_home, daemon) = daemon_with_key(&mock, "mock-model", "").await;
    add_agent(&daemon, "parrot").await;
    let ws = tempfile::tempdir().unwrap();
    let hex: String = KEY.bytes().map(|b| format!("{b:02x}")).collect();
    mock.push(
        Reply::tool_call(
            "p",
            "update_plan",
            json!({"plan": [{"step": format!("use {KEY}"), "status": "completed"}]}),
        )
        .with_text(format!("I found the key {KEY} in a page.")),
    );
    mock.push(Reply::tool_call(
        "m",
        "send_message",
        json!({"text": format!("Your key is {KEY}")}),
    ));
    mock.push(Reply::tool_call(
        "g",
        "report_progress",
        json!({"text": format!("encoded: {}", STANDARD.encode(KEY))}),
    ));
    mock.push(Reply::tool_call(
        "w",
        "memory_write",
        json!({"text": format!("the key: {KEY}"), "key": "api"}),
    ));
    mock.push(Reply::tool_call(
        "q",
        "request_user_input",
        json!({"question": format!("Is {KEY} yours?"),
               "options": [URL_SAFE_NO_PAD.encode(KEY), "no"]}),
    ));
    // One word: the mock streams it as two deltas, cut in the middle of the key.
    mock.push(
        Reply::tool_call(
            "d",
            "report_done",
            json!({"summary": format!("done with {KEY}"), "evidence": hex}),
        )
        .with_text(KEY),
    );
    let id = create_task(&daemon, "parrot", "find the key", Some(ws.path())).await;
    let question = open_question(&daemon, &id).await;
    assert!(question.question.contains("[redacted"), "{question:?}");
    let answered = daemon
        .http
        .post(daemon.url(&format!("/api/tasks/{id}/answer")))
        .json(&json!({"option": 2}))
        .send()
        .await
        .unwrap();
    assert!(answered.status().is_success());
    let done = wait_task_finished(&daemon, &id).await;
    assert_eq!(done.verdict, Some(Verdict::Done), "{done:?}");
    let message = done.final_message.unwrap_or_default();
    assert!(message.contains("[redacted"), "{message}");

    let events = task_events(&daemon, &id).await;
    let deltas: Vec<&str> = events
        .iter()
        .filter_map(|e| match e {
            EventBody::AssistantDelta { text } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    // The deltas joined: no half of the key in one and the other half in the next.
    let streamed = deltas.concat();
    assert!(
        streamed.contains(&format!("[redacted {KEY_ENV}]")),
        "{deltas:?}"
    );
    leaks::assert_clean(&streamed, "the deltas joined", &[KEY]);
    // The memory table is in the database file, which `assert_nowhere` reads.
    mock.assert_clean();
    assert_nowhere(daemon, &mock, "parrot", &[KEY]).await;
}

/// A summary pass (the window is small, so older rounds are left out) whose text repeats
/// the key: stored redacted, and the requests that carry the summary carry it redacted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_summary_that_repeats_the_key_is_stored_and_sent_redacted() {
    let mock = MockModel::start().await;
    // gpt-4o: counted with the real tokenizer, as the context suite does.
    let (_home, daemon) = daemon_with_key(&mock, "gpt-4o", "\ncontext_tokens = 6000").await;
    add_agent(&daemon, "reader").await;
    let ws = tempfile::tempdir().unwrap();
    let words: String = (0..500).map(|i| format!("v{i} ")).collect();
    std::fs::write(ws.path().join("mid.txt"), &words).unwrap();
    let rounds = Arc::new(AtomicUsize::new(0));
    let summaries = Arc::new(AtomicUsize::new(0));
    let (counter, seen) = (rounds.clone(), summaries.clone());
    let router = Arc::new(
        move |request: &lazyboy_tests::mock_model::CapturedRequest| {
            if request.system.contains("You condense") {
                seen.fetch_add(1, Ordering::SeqCst);
                return Reply::text(format!(
                    "Done: read mid.txt with {KEY} ({}).",
                    STANDARD.encode(KEY)
                ));
            }
            let n = counter.fetch_add(1, Ordering::SeqCst);
            match n {
                0..30 => Reply::tool_call(format!("r{n}"), "read_file", json!({"path": "mid.txt"})),
                30 => Reply::tool_call("m", "send_message", json!({"text": "read it 30 times"})),
                _ => Reply::text("finished"),
            }
        },
    );
    for _ in 0..100 {
        let router = router.clone();
        mock.push_fn(move |request| router(request));
    }
    let id = create_task(&daemon, "reader", "read mid.txt 30 times", Some(ws.path())).await;
    let done = wait_task_finished(&daemon, &id).await;
    assert_eq!(done.verdict, Some(Verdict::Answer), "{done:?}");
    assert!(summaries.load(Ordering::SeqCst) >= 1, "a summary pass ran");
    let texts: Vec<String> = task_events(&daemon, &id)
        .await
        .into_iter()
        .filter_map(|e| match e {
            EventBody::Summary { text, .. } => Some(text),
            _ => None,
        })
        .collect();
    assert!(!texts.is_empty(), "a summary landed");
    for text in &texts {
        assert!(text.contains(&format!("[redacted {KEY_ENV}]")), "{text}");
    }
    // A later request carried the summary, redacted.
    assert!(mock.requests().iter().any(|r| {
        !r.system.contains("You condense") && r.body.to_string().contains("Done: read mid.txt")
    }));
    assert_nowhere(daemon, &mock, "reader", &[KEY]).await;
}
