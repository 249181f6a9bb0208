//! The browser's side, in real Chromium: a login link signs it in once; a page served by
//! another program on the same machine (another loopback port: same site, so the session
//! cookie goes along) can neither stop a task with a body-less POST nor frame the
//! dashboard; and under TLS on a LAN address the session cookie never reaches a plain-HTTP
//! server on another port of the same host (finding 15).

use std::time::Duration;

use lazyboy_protocol::{LoginCode, TaskState};
use lazyboy_tests::browser::Browser;
use lazyboy_tests::mock_model::{MockModel, Reply};
use lazyboy_tests::{TestDaemon, create_task, temp_home, wait_for};
use serde_json::json;

use super::{servers, wait_state};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_on_another_loopback_port_can_neither_act_nor_frame_the_dashboard() {
    let mock = MockModel::start().await;
    let daemon = TestDaemon::start_with_model(&mock, "openai", &[]).await;
    mock.push(Reply::tool_call(
        "q",
        "request_user_input",
        json!({"question": "which one?", "options": ["a", "b"]}),
    ));
    let task = create_task(&daemon, "default", "ask me", None).await;
    wait_state(&daemon, &task, TaskState::WaitingForHuman).await;

    let browser = Browser::start().await;
    browser.goto(&daemon.login_url().await).await;
    browser
        .wait_js(
            "the dashboard after login",
            "return document.querySelector('lb-agent-list') && location.pathname === '/'",
        )
        .await;

    let pages = tempfile::tempdir().unwrap();
    let dashboard = daemon.health.url.trim_end_matches('/').to_owned();
    let stop = format!("{dashboard}/api/tasks/{task}/stop");
    std::fs::write(
        pages.path().join("act.html"),
        format!(
            "<title>waiting</title><iframe name=sink id=sink></iframe>\
             <form id=f method=post action='{stop}' target=sink></form><script>\
             document.getElementById('sink').onload = () => {{ window.formDone = true; }};\
             fetch('{stop}', {{method: 'POST', mode: 'no-cors', credentials: 'include'}})\
             .then(() => {{ document.title = 'sent'; document.getElementById('f').submit(); }},\
             () => {{ document.title = 'failed'; }});</script>"
        ),
    )
    .unwrap();
    std::fs::write(
        pages.path().join("frame.html"),
        format!("<title>frames</title><iframe id=d src='{dashboard}/'></iframe>"),
    )
    .unwrap();
    let (_server, other) = servers::other_server(pages.path(), "127.0.0.1").await;

    // A body-less POST with the session cookie, from a same-site origin: refused.
    browser.goto(&format!("{other}/act.html")).await;
    browser
        .wait_js(
            "the forged requests to be answered",
            "return document.title === 'sent' && window.formDone === true",
        )
        .await;
    let still = wait_state(&daemon, &task, TaskState::WaitingForHuman).await;
    assert!(still.verdict.is_none(), "a foreign page stopped the task");

    // Framed by that page: Chromium refuses to show the dashboard inside it.
    browser.goto(&format!("{other}/frame.html")).await;
    browser
        .wait_js("the frame page", "return document.title === 'frames'")
        .await;
    let framed = wait_for(Duration::from_secs(10), "the frame to settle", || async {
        let tree = browser.cdp("Page.getFrameTree", json!({})).await;
        let url = tree["frameTree"]["childFrames"][0]["frame"]["url"]
            .as_str()
            .map(str::to_owned)?;
        (!url.is_empty() && url != "about:blank").then_some(url)
    })
    .await;
    assert!(
        !framed.starts_with(&dashboard),
        "the dashboard rendered inside another site's frame: {framed}"
    );

    // The same cookie from the dashboard's own origin is served: the origin decided.
    browser.goto(&format!("{dashboard}/")).await;
    let status = browser
        .eval(
            &format!(
                "return fetch('/api/tasks/{task}/stop', {{method: 'POST'}}).then(r => r.status)"
            ),
            vec![],
        )
        .await;
    assert!(
        status.as_u64().is_some_and(|s| (200..300).contains(&s)),
        "{status}"
    );
    wait_state(&daemon, &task, TaskState::Cancelled).await;
    browser.close().await;
    daemon.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn under_tls_on_the_lan_the_session_never_reaches_a_plain_http_port_of_the_host() {
    let home = temp_home();
    // The daemon on every interface; its certificate names the machine's LAN address.
    let (child, health) = servers::on_all_interfaces_tls(home.path()).await;
    let lan = health.lan_urls.first().cloned().unwrap_or_else(|| {
        panic!(
            "this test needs a LAN interface (an up, non-loopback, non-bridge address); this \
             machine has none: add one, e.g. `ip link add lb0 type veth peer name lb1 && ip \
             addr add 10.254.0.1/24 dev lb0 && ip link set lb1 up && ip link set lb0 up`"
        )
    });
    let host = lan
        .trim_start_matches("https://")
        .split(':')
        .next()
        .unwrap()
        .to_owned();
    let client = lazyboy::connection::Client::new(home.path().to_owned());
    let code: LoginCode = client
        .call(
            lazyboy::connection::Method::POST,
            "/api/auth/login",
            None::<&()>,
        )
        .await
        .unwrap();

    let browser = Browser::start().await;
    browser
        .cdp(
            "Security.setIgnoreCertificateErrors",
            json!({"ignore": true}),
        )
        .await;
    browser.goto(&code.link(&lan)).await;
    browser
        .wait_js("the dashboard over https", "return location.protocol === 'https:' && location.pathname === '/' && !!document.querySelector('lb-agent-list')")
        .await;
    let cookies = browser
        .cdp("Network.getCookies", json!({"urls": [lan.clone()]}))
        .await;
    let session = cookies["cookies"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "__Host-lazyboy_session")
        .unwrap_or_else(|| panic!("no session cookie: {cookies}"))
        .clone();
    assert_eq!(session["secure"], true, "{session}");
    assert_eq!(session["httpOnly"], true, "{session}");
    // A cookie without Secure does travel to the plain-HTTP port: the server would see it.
    browser
        .eval("document.cookie = 'probe=1; path=/'; return true", vec![])
        .await;

    let pages = tempfile::tempdir().unwrap();
    std::fs::write(pages.path().join("index.html"), "<title>other</title>").unwrap();
    let (_server, other) = servers::other_server(pages.path(), &host).await;
    browser.goto(&format!("{other}/index.html")).await;
    browser
        .wait_js(
            "the other server's page",
            "return document.title === 'other'",
        )
        .await;
    let seen = std::fs::read_to_string(pages.path().join("cookies.txt")).unwrap();
    assert!(
        seen.contains("probe=1"),
        "the control cookie went along: {seen}"
    );
    assert!(
        !seen.contains("lazyboy_session"),
        "the session cookie reached a plain-HTTP server: {seen}"
    );
    browser.close().await;
    servers::stop(child);
}
