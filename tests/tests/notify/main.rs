//! Notifications end to end, against real receivers: a real push service from npm
//! (`web-push-testing`: it checks the VAPID JWT and decrypts the RFC 8291 payload), a real
//! SMTP server from PyPI (`aiosmtpd`), HTTP receivers for webhooks and failing push
//! services; and the outbox across `kill -9`.

mod browser;
mod cli;
mod email;
mod outbox;
mod refusals;
mod webpush;

use std::time::Duration;

use lazyboy_protocol::{Event, Task, TaskState};
use lazyboy_tests::mock_model::MockModel;
use lazyboy_tests::{TestDaemon, all_events, model_config, wait_for};

/// The mock model's provider, plus `notify` (TOML appended after the model's sections).
pub fn config(mock: &MockModel, notify: &str) -> String {
    format!("{}\n{notify}\n", model_config(mock, "openai"))
}

/// The outbox events of the daemon, oldest first.
pub async fn outbox(daemon: &TestDaemon) -> Vec<Event> {
    all_events(daemon, 0)
        .await
        .into_iter()
        .filter(|e| e.kind.starts_with("notification_") || e.kind.starts_with("notify_"))
        .collect()
}

/// Waits until the outbox holds an event of `kind` (and returns them all).
pub async fn wait_outbox(daemon: &TestDaemon, kind: &str, n: usize) -> Vec<Event> {
    wait_for(
        Duration::from_secs(30),
        &format!("{n} {kind} events"),
        || async {
            let events = outbox(daemon).await;
            (events.iter().filter(|e| e.kind == kind).count() >= n).then_some(events)
        },
    )
    .await
}

/// Waits until the task waits for the person.
pub async fn wait_waiting(daemon: &TestDaemon, task: &str) {
    wait_for(
        Duration::from_secs(30),
        "the task to wait for the person",
        || async {
            let t: Task = daemon
                .http
                .get(daemon.url(&format!("/api/tasks/{task}")))
                .send()
                .await
                .ok()?
                .json()
                .await
                .ok()?;
            (t.state == TaskState::WaitingForHuman).then_some(())
        },
    )
    .await;
}

/// Answers the task's question with option `n`.
pub async fn answer(daemon: &TestDaemon, task: &str, option: usize) {
    answer_with(daemon, task, serde_json::json!({ "option": option })).await;
}

/// Answers the task's question in words.
pub async fn answer_text(daemon: &TestDaemon, task: &str, text: &str) {
    answer_with(daemon, task, serde_json::json!({ "text": text })).await;
}

async fn answer_with(daemon: &TestDaemon, task: &str, body: serde_json::Value) {
    let response = daemon
        .http
        .post(daemon.url(&format!("/api/tasks/{task}/answer")))
        .json(&body)
        .send()
        .await
        .unwrap();
    assert!(
        response.status().is_success(),
        "{}",
        response.text().await.unwrap()
    );
}
