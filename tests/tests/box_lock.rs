//! Two agents' browser tasks at once: the second waits in the box's queue while the first
//! holds the screen, the holder and the queue are visible, both finish, and their screens
//! never interleave (each agent's snapshots show only its own pages, and the second takes
//! the lock only after the first released it).

use std::time::Duration;

use lazyboy_protocol::{BoxLockAction, BoxStatus, Event, EventBody};
use lazyboy_tests::boxes::{SITE, TestBox, start_with_site};
use lazyboy_tests::mock_model::{MockModel, Reply};
use lazyboy_tests::{TestDaemon, add_agent, all_events, create_task, task_events, wait_for};
use serde_json::json;

fn config(a: &MockModel, b: &MockModel) -> String {
    format!(
        "default_provider = \"a\"\nheartbeat_secs = 1\n\n[providers.a]\nwire = \"openai\"\n\
         base_url = \"{}\"\nmodel = \"m\"\n\n[providers.b]\nwire = \"anthropic\"\n\
         base_url = \"{}\"\nmodel = \"m\"\n\n[retry]\nmax_attempts = 2\nbase_ms = 5\n",
        a.openai_base_url(),
        b.anthropic_base_url()
    )
}

fn lock_events(events: &[Event], task: &str) -> Vec<(i64, BoxLockAction)> {
    events
        .iter()
        .filter(|e| e.task.as_deref() == Some(task))
        .filter_map(|e| match e.body() {
            Some(EventBody::BoxLock { action, .. }) => Some((e.seq, action)),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn two_agents_take_turns_on_the_screen() {
    let test_box = TestBox::new();
    let (alice_model, bob_model) = (MockModel::start().await, MockModel::start().await);
    for (mock, who) in [(&alice_model, "alice"), (&bob_model, "bob")] {
        mock.push(Reply::tool_call(
            "n1",
            "browser_navigate",
            json!({"url": format!("{SITE}/page/{who}")}),
        ))
        // Alice thinks a while, holding the screen: Bob must wait.
        .push(
            Reply::tool_call("s1", "browser_snapshot", json!({}))
                .delay(Duration::from_millis(if who == "alice" { 2500 } else { 0 })),
        )
        .push(Reply::tool_call("s2", "browser_snapshot", json!({})))
        .push(Reply::tool_call(
            "m1",
            "send_message",
            json!({"text": "done"}),
        ))
        .push(Reply::text("done"));
    }
    let env = test_box.env();
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let daemon = TestDaemon::start_with(&config(&alice_model, &bob_model), &env).await;
    start_with_site(&daemon, &test_box).await;
    add_agent(&daemon, "alice").await;
    add_agent(&daemon, "bob").await;
    let patch = |name: &str, model: &str| {
        daemon
            .http
            .patch(daemon.url(&format!("/api/agents/{name}")))
            .json(&json!({"model": model}))
            .send()
    };
    assert!(patch("alice", "a/m").await.unwrap().status().is_success());
    assert!(patch("bob", "b/m").await.unwrap().status().is_success());

    let alice = create_task(&daemon, "alice", "alice browses", None).await;
    let client = daemon.client();
    wait_for(Duration::from_secs(60), "alice to hold the box", || {
        let client = client.clone();
        let alice = alice.clone();
        async move {
            let status: BoxStatus = client.get("/api/box").await.ok()?;
            (status.holder?.task? == alice).then_some(())
        }
    })
    .await;
    let bob = create_task(&daemon, "bob", "bob browses", None).await;
    let seen: BoxStatus = wait_for(Duration::from_secs(30), "bob to wait in line", || {
        let client = client.clone();
        async move {
            let status: BoxStatus = client.get("/api/box").await.ok()?;
            (!status.queue.is_empty()).then_some(status)
        }
    })
    .await;
    let holder = seen.holder.unwrap();
    assert_eq!(
        (holder.agent.as_deref(), holder.task.as_deref()),
        (Some("alice"), Some(alice.as_str()))
    );
    assert_eq!(seen.queue[0].task.as_deref(), Some(bob.as_str()));
    assert_eq!(seen.queue[0].agent.as_deref(), Some("bob"));

    let a = lazyboy_tests::boxes::wait_finished(&daemon, &alice).await;
    let b = lazyboy_tests::boxes::wait_finished(&daemon, &bob).await;
    assert_eq!(
        (a.final_message.as_deref(), b.final_message.as_deref()),
        (Some("done"), Some("done"))
    );

    for (task, own, other) in [(&alice, "alice", "bob"), (&bob, "bob", "alice")] {
        let snapshots: Vec<String> = task_events(&daemon, task)
            .await
            .into_iter()
            .filter_map(|e| match e {
                EventBody::ToolResult { name, output, .. } if name == "browser_snapshot" => {
                    Some(output)
                }
                _ => None,
            })
            .collect();
        assert_eq!(snapshots.len(), 2);
        for text in snapshots {
            assert!(
                text.contains(&format!("this is page {own}")),
                "{own}: {text}"
            );
            assert!(
                !text.contains(&format!("page {other}")),
                "{own} saw {other}'s screen"
            );
        }
    }
    let events = all_events(&daemon, 0).await;
    let (alice_lock, bob_lock) = (lock_events(&events, &alice), lock_events(&events, &bob));
    assert_eq!(
        alice_lock.iter().map(|(_, a)| *a).collect::<Vec<_>>(),
        [BoxLockAction::Acquired, BoxLockAction::Released]
    );
    assert_eq!(
        bob_lock.iter().map(|(_, a)| *a).collect::<Vec<_>>(),
        [
            BoxLockAction::Queued,
            BoxLockAction::Acquired,
            BoxLockAction::Released
        ]
    );
    let alice_released = alice_lock[1].0;
    assert!(
        bob_lock[0].0 < alice_released,
        "bob queued while alice held the box"
    );
    assert!(
        bob_lock[1].0 > alice_released,
        "bob took the box only after alice let go"
    );
    // Bob's heartbeat named the wait.
    let waited = events.iter().any(|e| {
        e.task.as_deref() == Some(bob.as_str())
            && matches!(e.body(), Some(EventBody::Heartbeat { operation, .. })
                if operation.starts_with(&format!("waiting for the box: held by alice, task {alice}")))
    });
    assert!(waited, "no heartbeat named the wait");
    alice_model.assert_clean();
    bob_model.assert_clean();
    daemon.stop();
}
