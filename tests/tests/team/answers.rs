//! An answer sent the moment its question appears is taken, even before the task's own state
//! says it waits (the question event is recorded first, the state a moment later).

use futures_util::StreamExt;
use lazyboy_tests::sse;

use super::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_sent_as_its_question_appears_is_taken() {
    const QUESTIONS: usize = 15;
    let mock = MockModel::start().await;
    let daemon = TestDaemon::start_with_model(&mock, "openai", &[]).await;
    add_agent(&daemon, "quick").await;
    for i in 0..QUESTIONS {
        mock.push(Reply::tool_call(
            format!("q{i}"),
            "request_user_input",
            serde_json::json!({"question": format!("pick {i}"), "options": ["a", "b"]}),
        ));
    }
    mock.push(Reply::text("picked"));
    let mut events = Box::pin(sse::connect(&daemon.http, &daemon.url("/api/events"), None).await);
    let id = lazyboy_tests::create_task(&daemon, "quick", "answer fast", None).await;
    let mut answered = 0;
    while answered < QUESTIONS {
        let message = tokio::time::timeout(Duration::from_secs(20), events.next())
            .await
            .expect("the next question")
            .expect("the stream");
        if message.event.kind != "question" || message.event.task.as_deref() != Some(&id) {
            continue;
        }
        let response = daemon
            .http
            .post(daemon.url(&format!("/api/tasks/{id}/answer")))
            .json(&serde_json::json!({"option": 2}))
            .send()
            .await
            .unwrap();
        let status = response.status();
        let body = response.text().await.unwrap();
        assert!(status.is_success(), "question {answered}: {status} {body}");
        answered += 1;
    }
    let done = lazyboy_tests::wait_task_finished(&daemon, &id).await;
    assert_eq!(done.verdict, Some(Verdict::Answer), "{done:?}");
    let requests = mock.requests();
    assert_eq!(requests.len(), QUESTIONS + 1);
    for (i, request) in requests[1..].iter().enumerate() {
        assert!(
            request
                .tool_result_for(&format!("q{i}"))
                .unwrap_or("")
                .contains('b'),
            "{:?}",
            request.tool_result_for(&format!("q{i}"))
        );
    }
    mock.assert_clean();
    daemon.stop();
}
