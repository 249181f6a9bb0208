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
use lazyboy_tests::notify::{PushService, PushSub, Received, Receiver};
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

/// Waits up to 30 s for `probe`; a delivery that does not come fails with the daemon's
/// outbox, which says whether it was owed, tried, failed or skipped (and why).
async fn delivered<T, F, Fut>(daemon: &TestDaemon, what: &str, mut probe: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let give_up = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(value) = probe().await {
            return value;
        }
        if std::time::Instant::now() >= give_up {
            panic!(
                "timed out after 30 s waiting for {what}; the outbox: {:#?}",
                outbox(daemon).await
            );
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Waits until `receiver` got `n` requests (and returns them all).
pub async fn received(daemon: &TestDaemon, receiver: &Receiver, n: usize) -> Vec<Received> {
    let what = format!("{n} requests at the receiver");
    delivered(daemon, &what, || async {
        let got = receiver.received();
        (got.len() >= n).then_some(got)
    })
    .await
}

/// Waits until the push service decrypted `n` messages for `sub` (and returns them all).
pub async fn pushed(
    daemon: &TestDaemon,
    push: &PushService,
    sub: &PushSub,
    n: usize,
) -> Vec<serde_json::Value> {
    let what = format!("{n} pushes at the push service");
    delivered(daemon, &what, || async {
        let got = push.messages(sub).await;
        (got.len() >= n).then_some(got)
    })
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
