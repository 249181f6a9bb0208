//! Email against a real SMTP server (PyPI `aiosmtpd`): the message arrives with its subject
//! and the question; a server that refuses is retried, then `notification_failed` (given up)
//! is recorded.

use std::time::Duration;

use lazyboy_tests::mock_model::{MockModel, Reply};
use lazyboy_tests::notify::SmtpSink;
use lazyboy_tests::{TestDaemon, add_agent, create_task, wait_for};
use serde_json::json;

use super::{config, outbox, wait_outbox};

fn email(sink: &SmtpSink) -> String {
    format!(
        "[notify]\nretry_base_ms = 50\n\n[notify.email]\nsmtp_url = \"smtp://127.0.0.1:{}\"\n\
         from = \"LazyBoy <lazyboy@example.com>\"\nto = [\"me@example.com\"]\ntls = \"none\"\n",
        sink.port
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_question_arrives_by_mail_with_its_subject_options_and_link() {
    let sink = SmtpSink::start(false).await;
    let mock = MockModel::start().await;
    let daemon = TestDaemon::start_with(&config(&mock, &email(&sink)), &[]).await;
    add_agent(&daemon, "researcher").await;
    mock.push(Reply::tool_call(
        "q1",
        "request_user_input",
        json!({"question": "Which region?", "options": ["eu-west", "us-east"]}),
    ));
    let task = create_task(&daemon, "researcher", "pick a region", None).await;
    let mail = wait_for(Duration::from_secs(30), "the mail", || async {
        sink.messages().into_iter().next()
    })
    .await;
    assert_eq!(mail["subject"], "[LazyBoy] researcher: asks", "{mail}");
    assert_eq!(mail["to"], json!(["me@example.com"]));
    let body = mail["body"].as_str().unwrap();
    assert!(body.contains("Which region?"), "{body}");
    assert!(body.contains("2. us-east"), "{body}");
    assert!(body.contains(&task), "the dashboard link: {body}");
    assert!(mail["message_id"].as_str().unwrap().contains("lazyboy"));
    wait_outbox(&daemon, "notification_sent", 1).await;
    daemon.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refusing_server_is_retried_then_given_up() {
    let sink = SmtpSink::start(true).await;
    let mock = MockModel::start().await;
    let daemon = TestDaemon::start_with(&config(&mock, &email(&sink)), &[]).await;
    add_agent(&daemon, "a").await;
    mock.push(Reply::tool_call(
        "q1",
        "request_user_input",
        json!({"question": "Anyone?"}),
    ));
    create_task(&daemon, "a", "ask", None).await;
    let events = wait_for(
        Duration::from_secs(60),
        "the delivery to be given up",
        || async {
            let events = outbox(&daemon).await;
            events
                .iter()
                .any(|e| e.kind == "notification_failed" && e.data.get("retry_in_ms").is_none())
                .then_some(events)
        },
    )
    .await;
    let failed: Vec<_> = events
        .iter()
        .filter(|e| e.kind == "notification_failed")
        .collect();
    assert_eq!(failed.len(), 5, "five attempts: {events:#?}");
    for (n, event) in failed.iter().enumerate() {
        assert_eq!(event.data["attempt"], n + 1);
        assert_eq!(event.data["channel"], "email");
        assert!(
            event.data["error"].as_str().unwrap().contains("451"),
            "{event:?}"
        );
    }
    assert!(sink.messages().is_empty());
    assert!(!events.iter().any(|e| e.kind == "notification_sent"));
    daemon.stop();
}
