//! What the notifier refuses: subscription endpoints it must never contact (metadata
//! addresses, loopback not allowed, a name that resolves to loopback, `file:`, garbage),
//! callers without the credential (an agent's command), and any leak of the VAPID private
//! key (the database, the log, `/api/state`, `lazyboy events`, an agent's environment).

use std::time::Duration;

use lazyboy_tests::mock_model::{MockModel, Reply};
use lazyboy_tests::notify::Receiver;
use lazyboy_tests::{
    TestDaemon, add_agent, create_task, output_of, task_events, wait_task_finished,
};
use serde_json::json;

use super::config;

/// A real browser key pair's public half is needed only past the endpoint checks; these
/// requests must fail before.
fn sub(endpoint: &str) -> serde_json::Value {
    json!({"endpoint": endpoint, "keys": {"p256dh": "BAAA", "auth": "AAAA"}})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn endpoints_that_are_not_public_https_are_refused_and_never_contacted() {
    let target = Receiver::start().await;
    let port = target.addr.port();
    let mock = MockModel::start().await;
    // Another loopback port is allowed, not the target's.
    let daemon = TestDaemon::start_with(
        &config(&mock, "[notify]\nallow_hosts = [\"127.0.0.1:1\"]\n"),
        &[],
    )
    .await;
    for (endpoint, says) in [
        (
            "http://169.254.169.254/latest/meta-data/".to_owned(),
            "https",
        ),
        (
            "https://169.254.169.254/latest/meta-data/".to_owned(),
            "link-local",
        ),
        (format!("http://127.0.0.1:{port}/push"), "https"),
        (format!("https://127.0.0.1:{port}/push"), "loopback"),
        (format!("https://localhost:{port}/push"), "loopback"),
        (format!("https://[::1]:{port}/push"), "loopback"),
        ("file:///etc/passwd".to_owned(), "https"),
        ("not a url at all".to_owned(), "not a URL"),
        (format!("https://user:pw@127.0.0.1:{port}/"), "password"),
        (
            daemon.url("/api/state").replace("http:", "https:"),
            "own listener",
        ),
    ] {
        let response = daemon
            .http
            .post(daemon.url("/api/notify/subscriptions"))
            .json(&sub(&endpoint))
            .send()
            .await
            .unwrap();
        let status = response.status();
        let body = response.text().await.unwrap();
        assert_eq!(status, 400, "{endpoint}: {body}");
        assert!(body.contains(says), "{endpoint}: {body}");
    }
    // Garbage that is not even a subscription.
    let response = daemon
        .http
        .post(daemon.url("/api/notify/subscriptions"))
        .header("content-type", "application/json")
        .body("{\"endpoint\": 5")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 400);
    let list: serde_json::Value = daemon
        .http
        .get(daemon.url("/api/notify/subscriptions"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(list["subscriptions"], json!([]));
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        target.received().is_empty(),
        "contacted: {:?}",
        target.received()
    );
    daemon.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_the_credential_nothing_of_notify_is_reachable() {
    let daemon = TestDaemon::start().await;
    let anonymous = daemon.anonymous();
    for (method, path) in [
        ("GET", "/api/notify"),
        ("GET", "/api/notify/vapid"),
        ("GET", "/api/notify/subscriptions"),
        ("POST", "/api/notify/subscriptions"),
        ("DELETE", "/api/notify/subscriptions/x"),
        ("POST", "/api/notify/test"),
    ] {
        let request = match method {
            "GET" => anonymous.get(daemon.url(path)),
            "DELETE" => anonymous.delete(daemon.url(path)),
            _ => anonymous.post(daemon.url(path)).json(&json!({})),
        };
        let status = request.send().await.unwrap().status();
        assert_eq!(status, 401, "{method} {path}");
    }
    daemon.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agents_command_cannot_subscribe_or_read_the_key() {
    let mock = MockModel::start().await;
    let daemon = TestDaemon::start_with(&config(&mock, ""), &[]).await;
    add_agent(&daemon, "a").await;
    let url = daemon.url("/api/notify/subscriptions");
    let cmd = format!(
        "curl -s -o /dev/null -w '%{{http_code}}' -X POST -H 'content-type: application/json' \
         -d '{{\"endpoint\":\"https://push.example/x\",\"keys\":{{\"p256dh\":\"a\",\"auth\":\"b\"}}}}' \
         {url}; echo; cat {}/vapid_key 2>&1 | head -c 80",
        daemon.home().display()
    );
    mock.push(Reply::tool_call(
        "c1",
        "exec_command",
        json!({ "cmd": cmd }),
    ));
    mock.push(Reply::text("done"));
    let task = create_task(&daemon, "a", "try", None).await;
    wait_task_finished(&daemon, &task).await;
    let events = task_events(&daemon, &task).await;
    let output = lazyboy_tests::tasks::result_of(&events, "c1").unwrap().1;
    assert!(output.contains("401"), "{output}");
    let key = std::fs::read_to_string(daemon.home().join("vapid_key")).unwrap();
    assert!(!output.contains(key.trim()), "{output}");
    daemon.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_vapid_private_key_is_nowhere_but_its_file() {
    let mock = MockModel::start().await;
    let mut daemon = TestDaemon::start_with(&config(&mock, ""), &[]).await;
    let home = daemon.home().to_owned();
    let key = std::fs::read_to_string(home.join("vapid_key")).unwrap();
    let key = key.trim().to_owned();
    assert!(key.len() > 100, "a PKCS#8 document: {key}");
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(home.join("vapid_key"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);
    // Its forms: as stored, and the standard base64 of the same bytes.
    use base64::Engine as _;
    let der = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(&key)
        .unwrap();
    let standard = base64::engine::general_purpose::STANDARD.encode(&der);
    let forms = [key.clone(), standard.trim_end_matches('=').to_owned()];

    // An agent's command prints its whole environment.
    add_agent(&daemon, "a").await;
    mock.push(Reply::tool_call(
        "c1",
        "exec_command",
        json!({"cmd": "env"}),
    ));
    mock.push(Reply::text("done"));
    let task = create_task(&daemon, "a", "env", None).await;
    wait_task_finished(&daemon, &task).await;
    let events = task_events(&daemon, &task).await;
    let env = lazyboy_tests::tasks::result_of(&events, "c1").unwrap().1;
    assert!(env.contains("PATH="), "{env}");

    let state = daemon
        .http
        .get(daemon.url("/api/state"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let vapid = daemon
        .http
        .get(daemon.url("/api/notify/vapid"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let notify = daemon
        .http
        .get(daemon.url("/api/notify"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let mut events_cmd = daemon.cli();
    events_cmd.args(["events", "--json"]);
    let listed = output_of(events_cmd).await;
    let listed = String::from_utf8_lossy(&listed.stdout).into_owned();
    assert!(listed.contains("task_finished"), "{listed}");
    // Stopped, but kept (with its home) until every file was read.
    let (status, _) = daemon.terminate();
    assert!(status.success());

    let mut places: Vec<(String, String)> = vec![
        ("the agent's environment".into(), env),
        ("/api/state".into(), state),
        ("/api/notify/vapid".into(), vapid),
        ("/api/notify".into(), notify),
        ("lazyboy events".into(), listed),
    ];
    for entry in walk(&home) {
        if entry.file_name().is_some_and(|n| n == "vapid_key") {
            continue;
        }
        let bytes = std::fs::read(&entry).unwrap_or_default();
        places.push((
            entry.display().to_string(),
            String::from_utf8_lossy(&bytes).into_owned(),
        ));
    }
    assert!(places.iter().any(|(p, _)| p.ends_with("lazyboy.db")));
    assert!(places.iter().any(|(p, _)| p.contains("/logs/")));
    for (place, text) in &places {
        for form in &forms {
            assert!(
                !text.contains(form.as_str()),
                "the VAPID private key is in {place}"
            );
        }
    }
}

/// Every file under `dir`.
fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return files;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            files.extend(walk(&path));
        } else if path.is_file() {
            files.push(path);
        }
    }
    files
}
