//! The person in the box: `request_box_help` ends the turn with a question carrying the
//! takeover link, the person holds the box, their answer resumes the same task and its next
//! request says so (look again); and `/novnc/` over the daemon: the page loads and its
//! websocket speaks RFB, and a non-loopback listener without the token refuses both; in a
//! real browser, noVNC shows the desktop and a click moves the box's pointer.

use std::time::Duration;

use futures_util::StreamExt;
use lazyboy_protocol::{BoxLockAction, BoxStatus, EventBody, Health, TaskState};
use lazyboy_tests::boxes::{SITE, TestBox, daemon, start_with_site};
use lazyboy_tests::mock_model::{MockModel, Reply};
use lazyboy_tests::{KillOnDrop, TestDaemon, create_task, task_events, temp_home, wait_for};
use serde_json::json;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;

#[tokio::test]
async fn box_help_hands_the_browser_to_the_person_and_the_task_continues() {
    let test_box = TestBox::new();
    let mock = MockModel::start().await;
    mock.push(Reply::tool_call(
        "n1",
        "browser_navigate",
        json!({"url": format!("{SITE}/form")}),
    ))
    .push(Reply::tool_call(
        "h1",
        "request_box_help",
        json!({"reason": "login", "instructions": "Log in as ann, please."}),
    ))
    .push(Reply::tool_call("s1", "browser_snapshot", json!({})))
    .push(Reply::tool_call(
        "m1",
        "send_message",
        json!({"text": "continued"}),
    ))
    .push(Reply::text("continued"));
    let daemon = daemon(&mock, "anthropic", &test_box).await;
    start_with_site(&daemon, &test_box).await;
    let task = create_task(&daemon, "default", "needs a login", None).await;
    let client = daemon.client();
    let waiting = wait_for(
        Duration::from_secs(60),
        "the task to wait for the person",
        || {
            let client = client.clone();
            let path = format!("/api/tasks/{task}");
            async move {
                let task: lazyboy_protocol::Task = client.get(&path).await.ok()?;
                (task.state == TaskState::WaitingForHuman).then_some(task)
            }
        },
    )
    .await;
    assert_eq!(waiting.id, task);
    let question = task_events(&daemon, &task)
        .await
        .into_iter()
        .find_map(|e| match e {
            EventBody::Question {
                question, takeover, ..
            } => Some((question, takeover)),
            _ => None,
        })
        .unwrap();
    assert_eq!(question.1.as_deref(), Some("login"));
    assert!(
        question.0.contains("Log in as ann, please."),
        "{}",
        question.0
    );
    assert!(
        question.0.contains(&daemon.url("/novnc/")),
        "{}",
        question.0
    );
    let status: BoxStatus = client.get("/api/box").await.unwrap();
    let holder = status.holder.unwrap();
    assert!(
        holder.person && holder.task.as_deref() == Some(task.as_str()),
        "{holder:?}"
    );

    let answer = daemon
        .http
        .post(daemon.url(&format!("/api/tasks/{task}/answer")))
        .json(&json!({"text": "done"}))
        .send()
        .await
        .unwrap();
    assert!(answer.status().is_success());
    let finished = lazyboy_tests::boxes::wait_finished(&daemon, &task).await;
    assert_eq!(finished.final_message.as_deref(), Some("continued"));
    let requests = mock.requests();
    let after = &requests[2];
    let result = after.tool_result_for("h1").unwrap();
    assert!(result.contains("The person answered: done"), "{result}");
    assert!(result.contains("Look again"), "{result}");
    // The snapshot after the answer ran on the same page, holding the lock again.
    let events = task_events(&daemon, &task).await;
    let locks: Vec<(BoxLockAction, bool)> = events
        .iter()
        .filter_map(|e| match e {
            EventBody::BoxLock { action, person, .. } => Some((*action, *person)),
            _ => None,
        })
        .collect();
    use BoxLockAction::*;
    assert_eq!(
        locks,
        [
            (Acquired, false),
            (Released, false),
            (Acquired, true),
            (Released, true),
            (Acquired, false),
            (Released, false)
        ]
    );
    let snapshot = lazyboy_tests::boxes::result_of(&events, "s1").1;
    assert!(snapshot.contains("Form"), "{snapshot}");
    mock.assert_clean();
    daemon.stop();
}

/// Reads the first websocket message of `/novnc/websockify` at `base`, with `token`.
async fn rfb_greeting(base: &str, token: Option<&str>) -> Result<Vec<u8>, String> {
    let url = format!("{}/novnc/websockify", base.replace("http://", "ws://"));
    let mut request = url.into_client_request().unwrap();
    request
        .headers_mut()
        .insert("Sec-WebSocket-Protocol", "binary".parse().unwrap());
    if let Some(token) = token {
        request
            .headers_mut()
            .insert("Authorization", format!("Bearer {token}").parse().unwrap());
    }
    let (mut ws, _) = tokio_tungstenite::connect_async(request)
        .await
        .map_err(|e| e.to_string())?;
    let first = tokio::time::timeout(Duration::from_secs(10), ws.next())
        .await
        .map_err(|_| "no greeting".to_owned())?;
    match first {
        Some(Ok(Message::Binary(bytes))) => Ok(bytes.to_vec()),
        other => Err(format!("{other:?}")),
    }
}

#[tokio::test]
async fn novnc_over_the_daemon_speaks_rfb_behind_the_same_guard() {
    let test_box = TestBox::new();
    let mock = MockModel::start().await;
    let daemon = daemon(&mock, "openai", &test_box).await;
    start_with_site(&daemon, &test_box).await;
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let own = daemon.token();
    // Without the credential: nothing of the desktop.
    let refused = http.get(daemon.url("/novnc/")).send().await.unwrap();
    assert_eq!(refused.status(), 401);
    assert!(
        rfb_greeting(daemon.url("").trim_end_matches('/'), None)
            .await
            .is_err()
    );
    let root = http
        .get(daemon.url("/novnc/"))
        .bearer_auth(&own)
        .send()
        .await
        .unwrap();
    assert_eq!(root.status(), 302);
    let page = root.headers()["location"].to_str().unwrap().to_owned();
    assert!(page.contains("path=novnc/websockify"), "{page}");
    let html = http
        .get(daemon.url(&page))
        .bearer_auth(&own)
        .send()
        .await
        .unwrap();
    assert_eq!(html.status(), 200);
    assert!(html.text().await.unwrap().contains("noVNC"));
    let script = http
        .get(daemon.url("/novnc/app/ui.js"))
        .bearer_auth(&own)
        .send()
        .await
        .unwrap();
    assert_eq!(script.status(), 200);
    let greeting = rfb_greeting(daemon.url("").trim_end_matches('/'), Some(&own))
        .await
        .unwrap();
    assert!(
        greeting.starts_with(b"RFB 003.00"),
        "{:?}",
        String::from_utf8_lossy(&greeting)
    );
    // A page of another origin may not open the desktop.
    let mut foreign = daemon
        .url("/novnc/websockify")
        .replace("http://", "ws://")
        .into_client_request()
        .unwrap();
    foreign
        .headers_mut()
        .insert("Origin", "http://evil.example".parse().unwrap());
    foreign
        .headers_mut()
        .insert("Authorization", format!("Bearer {own}").parse().unwrap());
    match tokio_tungstenite::connect_async(foreign).await {
        Err(tokio_tungstenite::tungstenite::Error::Http(refused)) => {
            assert_eq!(refused.status(), 403);
            let body = String::from_utf8_lossy(refused.body().as_deref().unwrap_or_default());
            assert!(body.contains("\"forbidden_origin\""), "{body}");
        }
        other => panic!("a foreign page's websocket was not refused with 403: {other:?}"),
    }

    // The same box through a daemon on every interface, which demands its token.
    let home = temp_home();
    let token = "novnc-token-1234";
    let mut command = TestDaemon::command(home.path());
    command
        .args(["--listen", "0.0.0.0:0"])
        .env("LAZYBOY_TOKEN", token)
        .env("LAZYBOY_BOX_NAME", &test_box.name);
    let _open = KillOnDrop(command.spawn().unwrap());
    let client = lazyboy::connection::Client::with_token(home.path().to_owned(), token);
    let health: Health = wait_for(Duration::from_secs(20), "health", || {
        let client = client.clone();
        async move { client.get::<Health>("/api/health").await.ok() }
    })
    .await;
    let port = health
        .url
        .trim_end_matches('/')
        .rsplit(':')
        .next()
        .unwrap()
        .to_owned();
    let base = format!("http://127.0.0.1:{port}");
    let page = http
        .get(format!("{base}/novnc/vnc.html"))
        .send()
        .await
        .unwrap();
    assert_eq!(page.status(), 401);
    let refused = rfb_greeting(&base, None).await.unwrap_err();
    assert!(refused.contains("401"), "{refused}");
    let page = http
        .get(format!("{base}/novnc/vnc.html"))
        .bearer_auth(token)
        .send()
        .await
        .unwrap();
    assert_eq!(page.status(), 200);
    let greeting = rfb_greeting(&base, Some(token)).await.unwrap();
    assert!(greeting.starts_with(b"RFB 003.00"));
    daemon.stop();
}

/// The dashboard's takeover in a real browser: `/novnc/` loads noVNC's modules (served with
/// their JavaScript type from the files the daemon read out of the box), connects through the
/// daemon's bridge to a VNC server in the box and draws the 1280x800 desktop; a click on it
/// moves the box's own pointer there.
#[tokio::test]
async fn novnc_in_a_real_browser_shows_the_desktop_and_takes_the_mouse() {
    let test_box = TestBox::new();
    let mock = MockModel::start().await;
    let daemon = daemon(&mock, "openai", &test_box).await;
    start_with_site(&daemon, &test_box).await;
    test_box.exec("root", "box-input mousemove 5 5");
    let browser = lazyboy_tests::browser::Browser::start().await;
    // Signed in first, as the dashboard's person is.
    browser.goto(&daemon.login_url().await).await;
    browser.goto(&daemon.url("/novnc/")).await;
    let size = browser
        .wait_js(
            "the box's desktop on noVNC's canvas",
            "const c = document.querySelector('#noVNC_container canvas'); \
             return c && c.width > 0 ? [c.width, c.height] : null;",
        )
        .await;
    assert_eq!(size, json!([1280, 800]));
    browser
        .client
        .find(fantoccini::Locator::Css("#noVNC_container canvas"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    // The canvas is scaled to the window: its middle is the desktop's middle.
    let at = wait_for(Duration::from_secs(20), "the box's pointer to move", || {
        let test_box = &test_box;
        async move {
            let said = test_box.exec("root", "box-input getmouselocation");
            let xy: Vec<i64> = said
                .split_whitespace()
                .take(2)
                .filter_map(|f| f.split_once(':')?.1.parse().ok())
                .collect();
            (xy.len() == 2 && xy != [5, 5]).then_some(xy)
        }
    })
    .await;
    assert!(
        (at[0] - 640).abs() <= 8 && (at[1] - 400).abs() <= 8,
        "the pointer is at {at:?}"
    );
    browser.close().await;
    daemon.stop();
}
