//! Web Push against `web-push-testing`, a push service nobody here wrote: it refuses a bad
//! VAPID JWT or key and decrypts what we send, so a message it holds proves RFC 8291/8292.

use lazyboy_protocol::{PushSubscription, PushSubscriptionList, VapidKey};
use lazyboy_tests::mock_model::{MockModel, Reply};
use lazyboy_tests::notify::{PushService, PushSub};
use lazyboy_tests::{TestDaemon, add_agent, create_task, wait_for, wait_task_finished};
use serde_json::json;

use super::{answer, config, outbox, pushed, wait_outbox, wait_waiting};

async fn subscribe(daemon: &TestDaemon, push: &PushService) -> (PushSub, PushSubscription) {
    let key: VapidKey = daemon
        .http
        .get(daemon.url("/api/notify/vapid"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        key.public_key.len(),
        87,
        "65 bytes, base64url: {}",
        key.public_key
    );
    let sub = push.subscribe(&key.public_key).await;
    let mut body = sub.json.clone();
    body["name"] = json!("Pixel");
    let response = daemon
        .http
        .post(daemon.url("/api/notify/subscriptions"))
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 201, "{}", response.text().await.unwrap());
    (sub, response.json().await.unwrap())
}

fn notify_section(push: &PushService) -> String {
    format!(
        "[notify]\nallow_hosts = [\"{}\"]\nretry_base_ms = 50\n",
        push.allow_entry()
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_question_an_approval_and_an_end_reach_a_real_push_service_decrypted() {
    let push = PushService::start().await;
    let mock = MockModel::start().await;
    let daemon = TestDaemon::start_with(&config(&mock, &notify_section(&push)), &[]).await;
    let (sub, stored) = subscribe(&daemon, &push).await;
    assert_eq!(stored.name.as_deref(), Some("Pixel"));
    add_agent(&daemon, "researcher").await;

    mock.push(Reply::tool_call(
        "q1",
        "request_user_input",
        json!({"question": "Which database?", "options": ["SQLite", "PostgreSQL"]}),
    ));
    mock.push(Reply::text("Going with SQLite."));
    let task = create_task(&daemon, "researcher", "pick a database", None).await;
    let got = pushed(&daemon, &push, &sub, 1).await;
    let question = &got[0];
    assert_eq!(question["kind"], "question", "{question}");
    assert_eq!(question["agent"], "researcher");
    assert_eq!(question["task"], task.as_str());
    assert!(question["title"].as_str().unwrap().contains("researcher"));
    assert!(
        question["body"]
            .as_str()
            .unwrap()
            .contains("Which database?")
    );
    assert!(question["body"].as_str().unwrap().contains("2. PostgreSQL"));
    let url = question["url"].as_str().unwrap();
    assert!(url.starts_with(&daemon.url("/")), "{url}");
    assert!(url.contains(&task), "{url}");
    assert_eq!(question["actions"][0]["action"], "option:1");
    assert_eq!(question["actions"][1]["title"], "PostgreSQL");

    wait_waiting(&daemon, &task).await;
    answer(&daemon, &task, 1).await;
    wait_task_finished(&daemon, &task).await;
    let got = pushed(&daemon, &push, &sub, 2).await;
    assert_eq!(got[1]["kind"], "ended", "{}", got[1]);
    assert!(
        got[1]["title"]
            .as_str()
            .unwrap()
            .starts_with("researcher: task")
    );
    assert!(
        got[1]["body"]
            .as_str()
            .unwrap()
            .contains("Going with SQLite.")
    );

    // An approval, with its two actions.
    let response = daemon
        .http
        .post(daemon.url("/api/agents"))
        .json(&json!({"name": "careful", "approve": ["command"]}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 201);
    mock.push(Reply::tool_call(
        "c1",
        "exec_command",
        json!({"cmd": "echo deployed"}),
    ));
    mock.push(Reply::text("Deployed."));
    let careful = create_task(&daemon, "careful", "deploy", None).await;
    let got = pushed(&daemon, &push, &sub, 3).await;
    let approval = &got[2];
    assert_eq!(approval["kind"], "approval", "{approval}");
    assert_eq!(approval["agent"], "careful");
    assert!(
        approval["body"].as_str().unwrap().contains("echo deployed"),
        "{approval}"
    );
    let actions: Vec<&str> = approval["actions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["action"].as_str().unwrap())
        .collect();
    assert_eq!(actions, ["approve", "deny"]);
    wait_waiting(&daemon, &careful).await;
    let response = daemon
        .http
        .post(daemon.url(&format!("/api/tasks/{careful}/approve")))
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    assert!(response.status().is_success());
    wait_task_finished(&daemon, &careful).await;
    let got = pushed(&daemon, &push, &sub, 4).await;
    assert_eq!(got[3]["kind"], "ended");

    // Each was sent once, on the first attempt.
    let events = outbox(&daemon).await;
    let sent = events
        .iter()
        .filter(|e| e.kind == "notification_sent")
        .count();
    assert_eq!(sent, 4, "{events:#?}");
    assert!(
        events.iter().all(|e| e.kind != "notification_failed"),
        "{events:#?}"
    );
    daemon.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_push_service_answering_410_removes_the_subscription() {
    let push = PushService::start().await;
    let mock = MockModel::start().await;
    let daemon = TestDaemon::start_with(&config(&mock, &notify_section(&push)), &[]).await;
    let (sub, stored) = subscribe(&daemon, &push).await;
    push.expire(&sub).await;
    add_agent(&daemon, "a").await;
    mock.push(Reply::tool_call(
        "q1",
        "request_user_input",
        json!({"question": "Still there?"}),
    ));
    create_task(&daemon, "a", "ask", None).await;
    let events = wait_outbox(&daemon, "notify_subscription_gone", 1).await;
    let gone = events
        .iter()
        .find(|e| e.kind == "notify_subscription_gone")
        .unwrap();
    assert_eq!(gone.data["subscription"], stored.id.as_str());
    assert!(
        gone.data["reason"].as_str().unwrap().contains("410"),
        "{gone:?}"
    );
    let list: PushSubscriptionList = daemon
        .http
        .get(daemon.url("/api/notify/subscriptions"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert!(list.subscriptions.is_empty(), "{list:?}");
    // One attempt, not retried: the device is gone.
    let failed: Vec<_> = events
        .iter()
        .filter(|e| e.kind == "notification_failed")
        .collect();
    assert_eq!(failed.len(), 1, "{events:#?}");
    assert!(failed[0].data.get("retry_in_ms").is_none());
    daemon.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_removed_subscription_is_listed_no_more() {
    let push = PushService::start().await;
    let mock = MockModel::start().await;
    let daemon = TestDaemon::start_with(&config(&mock, &notify_section(&push)), &[]).await;
    let (_, stored) = subscribe(&daemon, &push).await;
    let path = format!("/api/notify/subscriptions/{}", stored.id);
    let response = daemon.http.delete(daemon.url(&path)).send().await.unwrap();
    assert_eq!(response.status(), 204);
    let response = daemon.http.delete(daemon.url(&path)).send().await.unwrap();
    assert_eq!(response.status(), 404);
    wait_for(
        std::time::Duration::from_secs(10),
        "the removal event",
        || async {
            outbox(&daemon)
                .await
                .iter()
                .any(|e| e.kind == "notify_subscription_gone")
                .then_some(())
        },
    )
    .await;
    daemon.stop();
}
