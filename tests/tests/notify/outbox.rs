//! The outbox: retries with backoff until accepted, once; a webhook's signature and stable
//! delivery id; `kill -9` before the send (sent once after the restart) and after it (not
//! sent again); a question answered first is not sent; a hung receiver costs the task
//! nothing.

use std::time::{Duration, Instant};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use lazyboy_tests::mock_model::{MockModel, Reply};
use lazyboy_tests::notify::{Answer, Receiver, free_port};
use lazyboy_tests::{TestDaemon, add_agent, create_task, wait_task_finished};
use serde_json::json;

use super::{answer_text, config, outbox, received, wait_outbox, wait_waiting};

const SECRET: &str = "webhook-secret-for-tests";

fn webhook(url: &str, base_ms: u64) -> String {
    format!(
        "[notify]\nretry_base_ms = {base_ms}\n\n[notify.webhook]\nurl = \"{url}\"\n\
         secret_env = \"LB_TEST_HOOK_SECRET\"\n"
    )
}

fn ask(mock: &MockModel, id: &str, question: &str) {
    mock.push(Reply::tool_call(
        id,
        "request_user_input",
        json!({"question": question}),
    ));
}

/// Waits until the notifier saved its cursor past `seq`.
async fn scanned_past(daemon: &TestDaemon, seq: i64) {
    lazyboy_tests::wait_for(Duration::from_secs(20), "the notifier's cursor", || async {
        let status: lazyboy_protocol::NotifyStatus = daemon
            .http
            .get(daemon.url("/api/notify"))
            .send()
            .await
            .ok()?
            .json()
            .await
            .ok()?;
        (status.scanned_seq >= seq).then_some(())
    })
    .await;
}

fn hmac_hex(body: &[u8]) -> String {
    let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, SECRET.as_bytes());
    let tag = ring::hmac::sign(&key, body);
    tag.as_ref().iter().map(|b| format!("{b:02x}")).collect()
}

async fn start(mock: &MockModel, notify: &str) -> TestDaemon {
    TestDaemon::start_with(&config(mock, notify), &[("LB_TEST_HOOK_SECRET", SECRET)]).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_webhook_failing_three_times_is_retried_then_delivered_once_signed() {
    let hook = Receiver::start().await;
    hook.script(&[
        Answer::Status(500),
        Answer::Status(503),
        Answer::Status(500),
    ]);
    let mock = MockModel::start().await;
    let daemon = start(&mock, &webhook(&hook.url("/hook"), 50)).await;
    add_agent(&daemon, "a").await;
    ask(&mock, "q1", "Deploy to production?");
    let task = create_task(&daemon, "a", "ask", None).await;
    let got = received(&daemon, &hook, 4).await;
    wait_outbox(&daemon, "notification_sent", 1).await;
    let ids: Vec<&str> = got
        .iter()
        .map(|r| r.header("x-lazyboy-delivery").unwrap())
        .collect();
    assert!(
        ids.iter().all(|id| *id == ids[0]),
        "one id across retries: {ids:?}"
    );
    for request in &got {
        let signature = request.header("x-lazyboy-signature").unwrap();
        assert_eq!(signature, format!("sha256={}", hmac_hex(&request.body)));
        let payload = request.json();
        assert_eq!(payload["id"], ids[0]);
        assert_eq!(payload["kind"], "question");
        assert_eq!(payload["task"], task.as_str());
        assert!(payload["ts"].as_i64().unwrap() > 0);
        assert!(
            payload["body"]
                .as_str()
                .unwrap()
                .contains("Deploy to production?")
        );
    }
    // Delivered once: nothing comes after the 201.
    tokio::time::sleep(Duration::from_millis(800)).await;
    assert_eq!(hook.received().len(), 4);
    let events = outbox(&daemon).await;
    let failed: Vec<_> = events
        .iter()
        .filter(|e| e.kind == "notification_failed")
        .collect();
    assert_eq!(failed.len(), 3, "{events:#?}");
    let waits: Vec<i64> = failed
        .iter()
        .map(|e| e.data["retry_in_ms"].as_i64().unwrap())
        .collect();
    assert_eq!(waits, [50, 150, 450], "backoff triples");
    let sent: Vec<_> = events
        .iter()
        .filter(|e| e.kind == "notification_sent")
        .collect();
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0].data["attempt"], 4);
    assert_eq!(sent[0].task.as_deref(), Some(task.as_str()));
    // The outbox never holds the payload.
    assert!(
        !events
            .iter()
            .any(|e| e.data.to_string().contains("Deploy to production"))
    );
    daemon.stop();
}

/// A valid P-256 public key (what a browser's `p256dh` is), and a random auth secret.
fn browser_keys() -> (String, String) {
    let rng = ring::rand::SystemRandom::new();
    let key =
        ring::agreement::EphemeralPrivateKey::generate(&ring::agreement::ECDH_P256, &rng).unwrap();
    let public = key.compute_public_key().unwrap();
    (
        URL_SAFE_NO_PAD.encode(public.as_ref()),
        URL_SAFE_NO_PAD.encode([7u8; 16]),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_push_service_answering_500_three_times_then_201_gets_it_once() {
    let service = Receiver::start().await;
    service.script(&[
        Answer::Status(500),
        Answer::Status(500),
        Answer::Status(500),
    ]);
    let mock = MockModel::start().await;
    let notify = format!(
        "[notify]\nretry_base_ms = 50\nallow_hosts = [\"127.0.0.1:{}\"]\n",
        service.addr.port()
    );
    let daemon = start(&mock, &notify).await;
    let (p256dh, auth) = browser_keys();
    let response = daemon
        .http
        .post(daemon.url("/api/notify/subscriptions"))
        .json(&json!({"endpoint": service.url("/push/abc"), "keys": {"p256dh": p256dh, "auth": auth}}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 201, "{}", response.text().await.unwrap());
    add_agent(&daemon, "a").await;
    ask(&mock, "q1", "Ready?");
    create_task(&daemon, "a", "ask", None).await;
    let got = received(&daemon, &service, 4).await;
    wait_outbox(&daemon, "notification_sent", 1).await;
    tokio::time::sleep(Duration::from_millis(800)).await;
    assert_eq!(
        service.received().len(),
        4,
        "delivered once, after three 500s"
    );
    for request in &got {
        assert_eq!(request.header("content-encoding"), Some("aes128gcm"));
        assert_eq!(request.header("urgency"), Some("high"));
        assert_eq!(request.header("ttl"), Some("86400"));
        assert!(
            request
                .header("authorization")
                .unwrap()
                .starts_with("vapid t=")
        );
        assert!(request.header("topic").is_some_and(|t| t.len() <= 32));
        assert!(
            !String::from_utf8_lossy(&request.body).contains("Ready?"),
            "encrypted"
        );
    }
    daemon.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_before_the_send_it_is_sent_once_after_the_restart() {
    // Nothing listens on the webhook's port yet: every attempt fails to connect.
    let port = free_port();
    let url = format!("http://127.0.0.1:{port}/hook");
    let mock = MockModel::start().await;
    // Retries far enough apart that the delivery is still owed when the daemon dies.
    let mut daemon = start(&mock, &webhook(&url, 2000)).await;
    add_agent(&daemon, "a").await;
    ask(&mock, "q1", "Before the crash?");
    create_task(&daemon, "a", "ask", None).await;
    let events = wait_outbox(&daemon, "notification_failed", 1).await;
    // Killed once the notifier's saved cursor is past the question: only the outbox (the
    // due without an outcome), not a rescan of the log, can bring it back.
    let source = events
        .iter()
        .find(|e| e.kind == "notification_due")
        .unwrap()
        .data["source"]
        .as_i64()
        .unwrap();
    scanned_past(&daemon, source).await;
    daemon.kill9();
    let hook = Receiver::start_on(&format!("127.0.0.1:{port}")).await;
    daemon.restart().await;
    let got = received(&daemon, &hook, 1).await;
    assert!(
        got[0].json()["body"]
            .as_str()
            .unwrap()
            .contains("Before the crash?")
    );
    wait_outbox(&daemon, "notification_sent", 1).await;
    // A second question after the restart is a barrier: once it arrived, the first was not
    // sent again in between.
    ask(&mock, "q2", "After the crash?");
    create_task(&daemon, "a", "ask again", None).await;
    let got = received(&daemon, &hook, 2).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let bodies: Vec<String> = hook
        .received()
        .iter()
        .map(|r| r.json()["body"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(bodies.len(), 2, "{bodies:?}");
    assert_eq!(
        bodies
            .iter()
            .filter(|b| b.contains("Before the crash?"))
            .count(),
        1
    );
    assert!(
        got[1].json()["body"]
            .as_str()
            .unwrap()
            .contains("After the crash?")
    );
    daemon.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_after_the_send_it_is_not_sent_again() {
    let hook = Receiver::start().await;
    let mock = MockModel::start().await;
    let mut daemon = start(&mock, &webhook(&hook.url("/hook"), 50)).await;
    add_agent(&daemon, "a").await;
    ask(&mock, "q1", "Sent before the crash?");
    create_task(&daemon, "a", "ask", None).await;
    wait_outbox(&daemon, "notification_sent", 1).await;
    daemon.kill9();
    daemon.restart().await;
    ask(&mock, "q2", "After the restart?");
    create_task(&daemon, "a", "ask again", None).await;
    received(&daemon, &hook, 2).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let bodies: Vec<String> = hook
        .received()
        .iter()
        .map(|r| r.json()["body"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(bodies.len(), 2, "{bodies:?}");
    assert!(bodies[0].contains("Sent before the crash?"));
    assert!(bodies[1].contains("After the restart?"));
    daemon.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_during_an_attempt_it_is_sent_again_with_the_same_delivery_id() {
    let hook = Receiver::start().await;
    hook.script(&[Answer::Hang]);
    let mock = MockModel::start().await;
    let notify = webhook(&hook.url("/hook"), 50).replace(
        "retry_base_ms = 50\n",
        "retry_base_ms = 50\ntimeout_secs = 60\n",
    );
    let mut daemon = start(&mock, &notify).await;
    add_agent(&daemon, "a").await;
    ask(&mock, "q1", "Did it arrive?");
    create_task(&daemon, "a", "ask", None).await;
    received(&daemon, &hook, 1).await;
    // The receiver holds the request: whether it took it is unknown to the daemon.
    daemon.kill9();
    daemon.restart().await;
    let got = received(&daemon, &hook, 2).await;
    wait_outbox(&daemon, "notification_sent", 1).await;
    assert_eq!(
        got[0].header("x-lazyboy-delivery"),
        got[1].header("x-lazyboy-delivery"),
        "at least once, with an id the receiver can dedupe on"
    );
    daemon.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_question_answered_before_its_notification_went_out_is_not_sent() {
    let port = free_port();
    let url = format!("http://127.0.0.1:{port}/hook");
    let mock = MockModel::start().await;
    let daemon = start(&mock, &webhook(&url, 300)).await;
    add_agent(&daemon, "a").await;
    ask(&mock, "q1", "Answered in time?");
    mock.push(Reply::text("thanks"));
    let task = create_task(&daemon, "a", "ask", None).await;
    wait_outbox(&daemon, "notification_failed", 1).await;
    wait_waiting(&daemon, &task).await;
    answer_text(&daemon, &task, "yes").await;
    wait_task_finished(&daemon, &task).await;
    let hook = Receiver::start_on(&format!("127.0.0.1:{port}")).await;
    let events = wait_outbox(&daemon, "notification_skipped", 1).await;
    let skipped = events
        .iter()
        .find(|e| e.kind == "notification_skipped")
        .unwrap();
    assert_eq!(skipped.data["kind"], "question");
    assert!(
        skipped.data["reason"]
            .as_str()
            .unwrap()
            .contains("answered")
    );
    // The task's end is its own notification; the question never went out.
    let got = received(&daemon, &hook, 1).await;
    tokio::time::sleep(Duration::from_millis(700)).await;
    let kinds: Vec<String> = hook
        .received()
        .iter()
        .map(|r| r.json()["kind"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(kinds, ["ended"], "{got:?}");
    daemon.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hung_receiver_costs_the_task_nothing() {
    let hook = Receiver::start().await;
    hook.set_fallback(Answer::Hang);
    let mock = MockModel::start().await;
    let notify = webhook(&hook.url("/hook"), 50).replace(
        "retry_base_ms = 50\n",
        "retry_base_ms = 50\ntimeout_secs = 120\n",
    );
    let daemon = start(&mock, &notify).await;
    add_agent(&daemon, "a").await;
    ask(&mock, "q1", "Go on?");
    for i in 0..10 {
        mock.push(Reply::tool_call(
            format!("p{i}"),
            "update_plan",
            json!({"plan": [{"step": format!("step {i}"), "status": "in_progress"}]}),
        ));
    }
    mock.push(Reply::text("finished"));
    let task = create_task(&daemon, "a", "work", None).await;
    received(&daemon, &hook, 1).await;
    wait_waiting(&daemon, &task).await;
    let started = Instant::now();
    answer_text(&daemon, &task, "yes").await;
    wait_task_finished(&daemon, &task).await;
    let took = started.elapsed();
    // The question's push is still held by the receiver while the task ran its ten steps
    // and ended (the timing figure itself is in the notify bench).
    assert!(took < Duration::from_secs(15), "the task took {took:?}");
    let events = outbox(&daemon).await;
    assert!(
        !events.iter().any(|e| e.kind == "notification_sent"),
        "{events:#?}"
    );
    // The API answers while both sends hang.
    let started = Instant::now();
    let response = daemon
        .http
        .get(daemon.url("/api/notify"))
        .send()
        .await
        .unwrap();
    assert!(response.status().is_success());
    assert!(started.elapsed() < Duration::from_secs(2));
    daemon.stop();
}
