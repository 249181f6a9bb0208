//! The HTTP contract over real TCP: health, agents, messages, errors, and nothing written on
//! bad input.

use futures_util::StreamExt;
use lazyboy_protocol::{Agent, AgentList, ErrorBody, Health, MessageAccepted, PROTOCOL_VERSION};
use lazyboy_tests::{TestDaemon, add_agent, all_events, sse};
use reqwest::StatusCode;
use serde_json::json;

async fn error_of(response: reqwest::Response, status: u16) -> ErrorBody {
    assert_eq!(response.status().as_u16(), status);
    assert_eq!(
        response.headers()["content-type"].to_str().unwrap(),
        "application/json"
    );
    response.json().await.unwrap()
}

#[tokio::test]
async fn health_agents_and_messages() {
    let daemon = TestDaemon::start().await;
    let http = &daemon.http;

    let health: Health = http
        .get(daemon.url("/api/health"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert!(health.ok);
    assert_eq!(health.protocol, PROTOCOL_VERSION);
    assert_eq!(health.pid, daemon.pid());

    let created = http
        .post(daemon.url("/api/agents"))
        .json(&json!({"name": "researcher", "instructions": "dig", "model": "m1"}))
        .send()
        .await
        .unwrap();
    assert_eq!(created.status(), StatusCode::CREATED);
    let agent: Agent = created.json().await.unwrap();
    assert_eq!(
        (agent.name.as_str(), agent.instructions.as_str()),
        ("researcher", "dig")
    );
    assert_eq!(agent.model.as_deref(), Some("m1"));

    let dup = http
        .post(daemon.url("/api/agents"))
        .json(&json!({"name": "researcher"}))
        .send()
        .await
        .unwrap();
    assert_eq!(error_of(dup, 409).await.error.code, "conflict");

    let shown: Agent = http
        .get(daemon.url("/api/agents/researcher"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(shown, agent);

    let sent = http
        .post(daemon.url("/api/agents/researcher/messages"))
        .json(&json!({"text": "find the cheapest flight", "note": true}))
        .send()
        .await
        .unwrap();
    assert_eq!(sent.status(), StatusCode::ACCEPTED);
    let accepted: MessageAccepted = sent.json().await.unwrap();
    assert_eq!(accepted.thread, agent.thread);
    assert_eq!(accepted.task, None);

    // Seq 1 is the `default` agent, created at the first start.
    let events = all_events(&daemon, 0).await;
    let kinds: Vec<_> = events
        .iter()
        .map(|e| (e.seq, e.agent.as_str(), e.kind.as_str()))
        .collect();
    assert_eq!(
        kinds,
        [
            (1, "default", "agent_created"),
            (2, "researcher", "agent_created"),
            (accepted.seq, "researcher", "user_message")
        ]
    );
    let message = &events[2];
    assert_eq!(message.agent, "researcher");
    assert_eq!(message.thread, agent.thread);
    assert_eq!(message.task, None);
    assert_eq!(message.data, json!({"text": "find the cheapest flight"}));

    // Without `note`, a message to an idle agent starts a task with it as the job.
    let sent = http
        .post(daemon.url("/api/agents/researcher/messages"))
        .json(&json!({"text": "book the cheapest one"}))
        .send()
        .await
        .unwrap();
    assert_eq!(sent.status(), StatusCode::ACCEPTED);
    let started: MessageAccepted = sent.json().await.unwrap();
    let task_id = started.task.clone().expect("a task started");
    assert!(!started.steered);
    assert_ne!(started.thread, agent.thread, "a task has its own thread");
    let created = all_events(&daemon, accepted.seq).await;
    let created = created.iter().find(|e| e.seq == started.seq).unwrap();
    assert_eq!(
        (created.kind.as_str(), created.task.as_deref()),
        ("task_created", Some(task_id.as_str()))
    );
    assert_eq!(created.data["objective"], "book the cheapest one");
    // No model is configured here: the task fails at once, saying how to configure one.
    let finished = lazyboy_tests::wait_task_finished(&daemon, &task_id).await;
    assert!(
        finished
            .final_message
            .unwrap()
            .contains("no model is configured")
    );

    let deleted = http
        .delete(daemon.url("/api/agents/researcher"))
        .send()
        .await
        .unwrap();
    assert_eq!(deleted.status(), StatusCode::NO_CONTENT);
    let gone = http
        .get(daemon.url("/api/agents/researcher"))
        .send()
        .await
        .unwrap();
    assert_eq!(error_of(gone, 404).await.error.code, "not_found");
    let list: AgentList = http
        .get(daemon.url("/api/agents"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let names: Vec<_> = list.agents.iter().map(|a| a.name.as_str()).collect();
    assert_eq!(names, ["default"]);
    // The name is free again, and the old agent's events stay in the log.
    add_agent(&daemon, "researcher").await;
    let kinds: Vec<_> = all_events(&daemon, 0)
        .await
        .into_iter()
        .map(|e| e.kind)
        .collect();
    assert_eq!(
        kinds,
        [
            "agent_created",
            "agent_created",
            "user_message",
            "task_created",
            "task_state",
            "task_finished",
            "agent_deleted",
            "agent_created"
        ]
    );
    daemon.stop();
}

#[tokio::test]
async fn bad_input_gets_a_clear_4xx_and_writes_nothing() {
    let daemon = TestDaemon::start().await;
    let http = &daemon.http;
    add_agent(&daemon, "ops").await;
    let before = all_events(&daemon, 0).await;

    let post = |path: &str| http.post(daemon.url(path));
    // Malformed JSON: 400 with the parser's message.
    let malformed = post("/api/agents")
        .header("content-type", "application/json")
        .body("{\"name\": ")
        .send()
        .await
        .unwrap();
    let body = error_of(malformed, 400).await;
    assert!(
        body.error.message.contains("EOF while parsing"),
        "{}",
        body.error.message
    );
    let malformed = post("/api/agents/ops/messages")
        .header("content-type", "application/json")
        .body("{text: 1}")
        .send()
        .await
        .unwrap();
    assert!(
        error_of(malformed, 400)
            .await
            .error
            .message
            .contains("key must be a string")
    );
    // Well-formed but wrong shape.
    let shape = post("/api/agents")
        .json(&json!({"name": 5}))
        .send()
        .await
        .unwrap();
    assert_eq!(error_of(shape, 400).await.error.code, "bad_request");
    let unknown_field = post("/api/agents")
        .json(&json!({"name": "x", "colour": "red"}))
        .send()
        .await
        .unwrap();
    assert!(
        error_of(unknown_field, 400)
            .await
            .error
            .message
            .contains("colour")
    );
    // Not JSON at all.
    let plain = post("/api/agents").body("name=x").send().await.unwrap();
    assert_eq!(
        error_of(plain, 415).await.error.code,
        "unsupported_media_type"
    );
    // Oversized: 413.
    let huge = json!({"text": "x".repeat(lazyboy_protocol::MAX_BODY_BYTES + 1)});
    let oversized = post("/api/agents/ops/messages")
        .json(&huge)
        .send()
        .await
        .unwrap();
    assert_eq!(
        oversized
            .headers()
            .get("connection")
            .and_then(|v| v.to_str().ok()),
        Some("close"),
        "a 413 must close its connection"
    );
    assert_eq!(
        error_of(oversized, 413).await.error.code,
        "payload_too_large"
    );
    // Bad names.
    for name in ["", "Ops", "-ops", "a b", "ops!", "é", &"a".repeat(65)] {
        let response = post("/api/agents")
            .json(&json!({"name": name}))
            .send()
            .await
            .unwrap();
        let body = error_of(response, 400).await;
        assert!(
            body.error.message.contains("invalid agent name"),
            "{name}: {body:?}"
        );
    }
    // Unknown agents.
    let unknown = post("/api/agents/nobody/messages")
        .json(&json!({"text": "hi"}))
        .send()
        .await
        .unwrap();
    assert_eq!(error_of(unknown, 404).await.error.code, "not_found");
    let unknown = http
        .delete(daemon.url("/api/agents/nobody"))
        .send()
        .await
        .unwrap();
    assert_eq!(error_of(unknown, 404).await.error.code, "not_found");
    let unknown = http
        .get(daemon.url("/api/agents/nobody/events"))
        .send()
        .await
        .unwrap();
    assert_eq!(error_of(unknown, 404).await.error.code, "not_found");
    // Empty message text.
    let empty = post("/api/agents/ops/messages")
        .json(&json!({"text": "  "}))
        .send()
        .await
        .unwrap();
    assert_eq!(error_of(empty, 400).await.error.code, "bad_request");
    // Unknown routes and methods.
    let nowhere = http.get(daemon.url("/api/nowhere")).send().await.unwrap();
    assert_eq!(error_of(nowhere, 404).await.error.code, "not_found");
    let method = http.put(daemon.url("/api/health")).send().await.unwrap();
    assert_eq!(error_of(method, 405).await.error.code, "method_not_allowed");
    // Bad resume points.
    let bad_after = http
        .get(daemon.url("/api/events?after=soon"))
        .send()
        .await
        .unwrap();
    assert_eq!(error_of(bad_after, 400).await.error.code, "bad_request");
    let bad_id = http
        .get(daemon.url("/api/events"))
        .header("Last-Event-ID", "x")
        .send()
        .await
        .unwrap();
    assert_eq!(error_of(bad_id, 400).await.error.code, "bad_request");

    assert_eq!(
        all_events(&daemon, 0).await,
        before,
        "bad input wrote to the log"
    );
    let list: AgentList = http
        .get(daemon.url("/api/agents"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(list.agents.len(), 2, "default and ops");
    daemon.stop();
}

#[tokio::test]
async fn sse_replays_then_streams_live() {
    let daemon = TestDaemon::start().await;
    let http = &daemon.http;
    add_agent(&daemon, "a").await;
    add_agent(&daemon, "b").await;
    for agent in ["a", "b", "a"] {
        lazyboy_tests::post_message(http, &daemon.url(""), agent, "hi")
            .await
            .unwrap();
    }
    // Everything, via ?after=0.
    let mut all = Box::pin(sse::connect(http, &daemon.url("/api/events?after=0"), None).await);
    // 1 is `default`; 2 and 3 create a and b; 4, 5, 6 are the messages.
    for seq in 1..=6 {
        let message = all.next().await.unwrap();
        assert_eq!(message.id, seq.to_string());
        assert_eq!(message.event.seq, seq);
        assert_eq!(
            message.event_field, "message",
            "no event: field, so the default type"
        );
    }
    // One agent's, resumed with Last-Event-ID (which wins over ?after).
    let mut of_a =
        Box::pin(sse::connect(http, &daemon.url("/api/agents/a/events?after=0"), Some(2)).await);
    let replayed: Vec<i64> = vec![
        of_a.next().await.unwrap().event.seq,
        of_a.next().await.unwrap().event.seq,
    ];
    assert_eq!(replayed, [4, 6]);
    // Without a resume point: live only.
    let mut live = Box::pin(sse::connect(http, &daemon.url("/api/events"), None).await);
    let seq = lazyboy_tests::post_message(http, &daemon.url(""), "a", "live")
        .await
        .unwrap();
    for stream in [&mut all, &mut of_a, &mut live] {
        let message = stream.next().await.unwrap();
        assert_eq!(message.event.seq, seq);
        assert_eq!(message.event.data, json!({"text": "live"}));
    }
    let other = lazyboy_tests::post_message(http, &daemon.url(""), "b", "not for a")
        .await
        .unwrap();
    let next = lazyboy_tests::post_message(http, &daemon.url(""), "a", "for a")
        .await
        .unwrap();
    assert_eq!(
        of_a.next().await.unwrap().event.seq,
        next,
        "the agent stream skips b's {other}"
    );
    // Shutdown ends open streams, and the daemon still stops promptly.
    daemon.stop();
    let rest: Vec<i64> = all.map(|m| m.event.seq).collect().await;
    assert_eq!(rest, [other, next]);
}
