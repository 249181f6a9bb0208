//! The lower findings: `web_fetch` never reaches the daemon's own listeners, whatever
//! `[web] allow_hosts` says; every response refuses framing; a page of events has an upper
//! bound however large a `limit` is asked for.

use lazyboy_protocol::TaskState;
use lazyboy_tests::mock_model::{MockCall, MockModel, Reply};
use lazyboy_tests::{TestDaemon, create_task, model_config};
use serde_json::{Value, json};

use super::{output, port, wait_state};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn web_fetch_never_reaches_the_daemon_whatever_allow_hosts_says() {
    let mock = MockModel::start().await;
    // A page the person did allow, on loopback, as the control.
    let allowed = tempfile::tempdir().unwrap();
    std::fs::write(allowed.path().join("ok.txt"), "allowed page").unwrap();
    let pages = super::servers::other_server(allowed.path(), "127.0.0.1").await;
    let config = format!(
        "{}\n[web]\nallow_hosts = [\"localhost\", \"127.0.0.1\", \"[::1]\"]\n",
        model_config(&mock, "openai")
    );
    let daemon = TestDaemon::start_with(&config, &[]).await;
    let own = port(&daemon);
    let urls = [
        format!("http://127.0.0.1:{own}/api/health"),
        format!("http://localhost:{own}/assets/app.js"),
        format!("http://[::1]:{own}/"),
    ];
    mock.push(Reply::tool_calls(urls.iter().enumerate().map(
        |(i, url)| MockCall::new(format!("f{i}"), "web_fetch", json!({ "url": url })),
    )));
    mock.push(Reply::tool_call(
        "ok",
        "web_fetch",
        json!({"url": format!("{}/ok.txt", pages.1)}),
    ));
    mock.push(Reply::text("fetched"));
    let task = create_task(&daemon, "default", "read the daemon", None).await;
    wait_state(&daemon, &task, TaskState::Done).await;
    for (i, url) in urls.iter().enumerate() {
        let text = output(&daemon, &task, &format!("f{i}")).await;
        assert!(text.contains("this daemon's own listener"), "{url}: {text}");
    }
    let text = output(&daemon, &task, "ok").await;
    assert!(text.contains("allowed page"), "{text}");
    daemon.stop();
}

#[tokio::test]
async fn every_answer_refuses_framing_and_pages_are_bounded() {
    let daemon = TestDaemon::start().await;
    for path in ["/", "/api/state", "/login?code=x", "/assets/app.js"] {
        let response = daemon.http.get(daemon.url(path)).send().await.unwrap();
        let headers = response.headers();
        assert_eq!(headers["x-frame-options"], "DENY", "{path}");
        assert_eq!(
            headers["content-security-policy"], "frame-ancestors 'none'",
            "{path}"
        );
        assert_eq!(headers["referrer-policy"], "no-referrer", "{path}");
    }
    // noVNC is framed by the dashboard itself, and by nothing else.
    let novnc = daemon.http.get(daemon.url("/novnc/")).send().await.unwrap();
    assert_eq!(novnc.headers()["x-frame-options"], "SAMEORIGIN");
    assert_eq!(
        novnc.headers()["content-security-policy"],
        "frame-ancestors 'self'"
    );

    // More events than a page may hold, then a page asked for a million.
    let client = daemon.client();
    for i in 0..1_100 {
        let _: Value = client
            .call(
                lazyboy::connection::Method::POST,
                "/api/agents/default/messages",
                Some(&json!({"text": format!("note {i}"), "note": true})),
            )
            .await
            .unwrap();
    }
    let page: Value = daemon
        .http
        .get(daemon.url("/api/events/page?after=0&limit=1000000"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(page["events"].as_array().unwrap().len(), 1000);
    let tasks = daemon
        .http
        .get(daemon.url("/api/tasks?limit=1000000"))
        .send()
        .await
        .unwrap();
    assert_eq!(tasks.status(), 200);
    daemon.stop();
}
