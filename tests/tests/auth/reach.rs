//! The lower findings: `web_fetch` never reaches the daemon's own listeners, whatever
//! `[web] allow_hosts` says; every response refuses framing; a page of events has an upper
//! bound however large a `limit` is asked for. And the TLS daemon the browser tests use.

use std::path::Path;
use std::time::Duration;

use lazyboy_protocol::{Health, TaskState};
use lazyboy_tests::mock_model::{MockCall, MockModel, Reply};
use lazyboy_tests::{KillOnDrop, TestDaemon, create_task, model_config, wait_for};
use serde_json::{Value, json};

use super::{output, port, wait_state};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn web_fetch_never_reaches_the_daemon_whatever_allow_hosts_says() {
    let mock = MockModel::start().await;
    // A page the person did allow, on loopback, as the control.
    let allowed = tempfile::tempdir().unwrap();
    std::fs::write(allowed.path().join("ok.txt"), "allowed page").unwrap();
    let pages = super::browser::other_server(allowed.path(), "127.0.0.1").await;
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

/// A daemon on every interface over HTTPS, with a certificate (openssl, self-signed) that
/// names its LAN addresses. Returns it and its health.
pub async fn on_all_interfaces_tls(home: &Path) -> (KillOnDrop, Health) {
    let addresses: Vec<String> = lan_addresses();
    let san = std::iter::once("DNS:localhost".to_owned())
        .chain(std::iter::once("IP:127.0.0.1".to_owned()))
        .chain(addresses.iter().map(|ip| format!("IP:{ip}")))
        .collect::<Vec<_>>()
        .join(",");
    let (cert, key) = (home.join("cert.pem"), home.join("key.pem"));
    let made = std::process::Command::new("openssl")
        .args(["req", "-x509", "-newkey", "ec", "-pkeyopt"])
        .args(["ec_paramgen_curve:prime256v1", "-nodes", "-days", "1"])
        .args(["-subj", "/CN=localhost", "-addext"])
        .arg(format!("subjectAltName={san}"))
        .arg("-keyout")
        .arg(&key)
        .arg("-out")
        .arg(&cert)
        .output()
        .expect("openssl is needed for this test (scripts/test installs it)");
    assert!(made.status.success(), "{made:?}");
    let child = KillOnDrop(
        TestDaemon::command(home)
            .args(["--listen", "0.0.0.0:0", "--tls-cert"])
            .arg(&cert)
            .arg("--tls-key")
            .arg(&key)
            .spawn()
            .unwrap(),
    );
    let client = lazyboy::connection::Client::new(home.to_owned());
    let health: Health = wait_for(Duration::from_secs(20), "the TLS daemon", || {
        let client = client.clone();
        async move { client.get::<Health>("/api/health").await.ok() }
    })
    .await;
    (child, health)
}

/// This machine's IPv4 addresses other than loopback.
fn lan_addresses() -> Vec<String> {
    nix::ifaddrs::getifaddrs()
        .unwrap()
        .filter_map(|i| Some(i.address?.as_sockaddr_in()?.ip().to_string()))
        .filter(|ip| !ip.starts_with("127."))
        .collect()
}

/// Stops a daemon started by [`on_all_interfaces_tls`] cleanly.
pub fn stop(mut child: KillOnDrop) {
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.0.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    assert!(child.0.wait().unwrap().success());
}
