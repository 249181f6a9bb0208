//! The dashboard's connection in a real headless Chromium, at 390x844 and 1280x800: the daemon
//! restarts while the page is open (it reconnects; no message twice, none missing); the event
//! stream is blocked (the page keeps up by polling and says so); 100,000 events in the log
//! (the agents show and the newest messages load without fetching the old ones); and a
//! non-loopback listener refuses the page, the API and `/novnc/` without the token.

use lazyboy_tests::browser::{Browser, SIZES, Viewport};
use lazyboy_tests::{TestDaemon, add_agent, post_message, temp_home};
use serde_json::{Value, json};

/// Records every fetch and EventSource the page makes (URL, and SSE messages received), from
/// before its first script runs.
const RECORD_REQUESTS: &str = r#"
window.__requests = [];
window.__sseMessages = 0;
const realFetch = window.fetch;
window.fetch = function (input, init) {
  window.__requests.push(String(input instanceof Request ? input.url : input));
  return realFetch.apply(this, arguments);
};
const RealEventSource = window.EventSource;
window.EventSource = class extends RealEventSource {
  constructor(url, options) {
    super(url, options);
    window.__requests.push('EventSource ' + url);
    this.addEventListener('message', () => { window.__sseMessages += 1; });
  }
};
"#;

async fn record_requests(browser: &Browser) {
    browser.cdp("Page.enable", json!({})).await;
    browser
        .cdp(
            "Page.addScriptToEvaluateOnNewDocument",
            json!({ "source": RECORD_REQUESTS }),
        )
        .await;
}

/// The texts of the person's bubbles in the open conversation.
const PERSON_BUBBLES: &str = "return [...document.querySelectorAll('[role=log] lb-message.person .bubble')].map((b) => b.textContent)";

async fn open_agent(browser: &Browser, daemon: &TestDaemon, agent: &str) {
    browser.goto(&daemon.login_url().await).await;
    browser
        .click(&format!(
            "//nav[@aria-label='Agents']//button[@data-name='{agent}']"
        ))
        .await;
    browser
        .wait_js(
            "the conversation to load",
            "return document.querySelector('[role=log] .items') !== null
               && document.querySelector('lb-connection').dataset.status !== 'connecting'",
        )
        .await;
}

async fn wait_bubbles(browser: &Browser, what: &str, want: &[String]) {
    let want = serde_json::to_string(want).unwrap();
    browser
        .wait_js(
            what,
            &format!("const got = (() => {{ {PERSON_BUBBLES} }})(); return JSON.stringify(got) === {want:?}"),
        )
        .await;
}

async fn note(daemon: &TestDaemon, agent: &str, text: &str) {
    post_message(&daemon.http, &daemon.url(""), agent, text)
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_page_survives_a_daemon_restart() {
    let browser = Browser::start().await;
    for size in SIZES {
        restart(&browser, size).await;
    }
    browser.close().await;
}

async fn restart(browser: &Browser, size: Viewport) {
    let mut daemon = TestDaemon::start().await;
    daemon.pin_port();
    add_agent(&daemon, "notes").await;
    browser.set_viewport(size).await;
    open_agent(browser, &daemon, "notes").await;
    let mut want = Vec::new();
    for i in 1..=3 {
        let text = format!("before {i}");
        note(&daemon, "notes", &text).await;
        want.push(text);
    }
    wait_bubbles(browser, "the first notes", &want).await;

    daemon.terminate();
    browser
        .wait_js(
            "the page to notice",
            "return document.querySelector('lb-connection').dataset.status !== 'live'",
        )
        .await;
    daemon.restart().await;
    // Written before the page is back: they must arrive once it reconnects (the stream
    // resumes from the last id it saw), and the earlier ones must not come again.
    for i in 1..=3 {
        let text = format!("after {i}");
        note(&daemon, "notes", &text).await;
        want.push(text);
    }
    wait_bubbles(browser, "every note exactly once, in order", &want).await;
    browser
        .wait_js(
            "the stream to be live again",
            "return document.querySelector('lb-connection').dataset.status === 'live'",
        )
        .await;
    note(&daemon, "notes", "live again").await;
    want.push("live again".into());
    wait_bubbles(browser, "a note after the reconnect", &want).await;
    daemon.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_blocked_event_stream_falls_back_to_polling() {
    let browser = Browser::start().await;
    // Chromium refuses the stream's URL as a proxy that blocks it would; the JSON page of
    // the log (/api/events/page) still goes through.
    browser.cdp("Network.enable", json!({})).await;
    browser
        .cdp(
            "Network.setBlockedURLs",
            json!({ "urls": ["*/api/events?*"] }),
        )
        .await;
    for size in SIZES {
        let daemon = TestDaemon::start().await;
        add_agent(&daemon, "notes").await;
        browser.set_viewport(size).await;
        open_agent(&browser, &daemon, "notes").await;
        browser
            .wait_js(
                "the page to say it polls",
                "const c = document.querySelector('lb-connection');
                 return c.dataset.status === 'polling' && c.textContent.includes('polling every 2 s')",
            )
            .await;
        let mut want = Vec::new();
        for i in 1..=4 {
            let text = format!("polled {i}");
            note(&daemon, "notes", &text).await;
            want.push(text);
        }
        wait_bubbles(&browser, "the notes through polling", &want).await;
        // The board follows too: a new agent appears.
        add_agent(&daemon, "late").await;
        browser
            .wait_js(
                "the new agent on the board",
                "return document.querySelector('nav button.agent[data-name=late]') !== null",
            )
            .await;
        daemon.stop();
    }
    browser.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_history_loads_without_fetching_old_events() {
    let home = temp_home();
    let started = std::time::Instant::now();
    let newest = lazyboy_tests::history::fill(home.path(), "busy", 100_000).await;
    println!("wrote 100k events in {:?}", started.elapsed());
    let daemon = TestDaemon::start_in(home.path(), &[]).await;
    let state: lazyboy_protocol::DashboardState = daemon.client().get("/api/state").await.unwrap();
    assert!(state.seq >= 100_000, "{}", state.seq);
    let browser = Browser::start().await;
    record_requests(&browser).await;
    for size in SIZES {
        browser.set_viewport(size).await;
        browser.goto(&daemon.login_url().await).await;
        let shown = browser
            .wait_js(
                "the agents",
                "const mark = performance.getEntriesByName('lb:agents-visible')[0];
                 return mark && document.querySelector('nav button.agent[data-name=busy]') ? mark.startTime : null",
            )
            .await;
        println!(
            "{}: agents visible {shown} ms after navigation",
            size.name()
        );
        browser
            .click("//nav[@aria-label='Agents']//button[@data-name='busy']")
            .await;
        browser
            .wait_js(
                "the newest message",
                &format!(
                    "const bubbles = [...document.querySelectorAll('[role=log] lb-message.agent .bubble')];
                     return bubbles.length > 0 && bubbles[bubbles.length - 1].textContent === {newest:?}"
                ),
            )
            .await;
        let seen = browser
            .eval(
                "return { requests: window.__requests, messages: window.__sseMessages,
                          items: document.querySelectorAll('[role=log] .items > *').length }",
                vec![],
            )
            .await;
        let requests: Vec<&str> = seen["requests"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r.as_str().unwrap())
            .collect();
        assert!(
            !requests
                .iter()
                .any(|r| r.contains("/api/events/page") || r.contains("after=0")),
            "the page fetched old events: {requests:#?}"
        );
        let stream = requests
            .iter()
            .find(|r| r.starts_with("EventSource"))
            .unwrap_or_else(|| panic!("no stream: {requests:#?}"));
        let after: i64 = stream.rsplit("after=").next().unwrap().parse().unwrap();
        assert!(
            after >= state.seq,
            "the stream starts at the state's seq: {stream}"
        );
        assert!(
            requests
                .iter()
                .filter(|r| r.contains("/conversation"))
                .all(|r| r.contains("limit=40")),
            "{requests:#?}"
        );
        assert_eq!(seen["messages"], 0, "no event was replayed to the page");
        let items = seen["items"].as_u64().unwrap();
        assert!(
            (1..=40).contains(&items),
            "one page of items, not the history: {items}"
        );
    }
    browser.close().await;
    daemon.stop();
}

/// The first non-loopback IPv4 address of this machine (the route a LAN peer would use);
/// loopback when there is none (the token is then still demanded: the listener is
/// non-loopback whatever name the request uses).
fn lan_ip() -> String {
    let socket = std::net::UdpSocket::bind("0.0.0.0:0").unwrap();
    match socket
        .connect("10.255.255.255:9")
        .and_then(|()| socket.local_addr())
    {
        Ok(addr) if !addr.ip().is_loopback() && !addr.ip().is_unspecified() => {
            addr.ip().to_string()
        }
        _ => {
            println!("no LAN address here; reaching the all-interfaces listener on 127.0.0.1");
            "127.0.0.1".into()
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lan_listener_refuses_everything_without_the_token() {
    let home = temp_home();
    let token = "t0k3n-for-the-lan-test";
    let daemon =
        TestDaemon::start_listening(home.path(), "0.0.0.0:0", &[("LAZYBOY_TOKEN", token)]).await;
    assert!(
        !daemon.health.url.contains("0.0.0.0"),
        "health.url names a reachable address: {}",
        daemon.health.url
    );
    let port = daemon
        .health
        .url
        .trim_end_matches('/')
        .rsplit(':')
        .next()
        .unwrap()
        .to_owned();
    let base = format!("http://{}:{port}", lan_ip());
    let browser = Browser::start().await;
    for size in SIZES {
        browser.set_viewport(size).await;
        for path in [
            "/",
            "/api/state",
            "/api/agents",
            "/novnc/vnc.html",
            "/assets/app.js",
            "/sw.js",
        ] {
            browser.goto(&format!("{base}{path}")).await;
            let page = browser
                .eval(
                    "return { text: document.body.innerText, app: !!document.querySelector('lb-agent-list') }",
                    vec![],
                )
                .await;
            assert_eq!(
                page["app"], false,
                "{path} served the app without the token"
            );
            let text = page["text"].as_str().unwrap();
            assert!(
                text.contains("unauthorized") || text.contains("Sign in to LazyBoy"),
                "{path}: {page}"
            );
        }
        let response = daemon
            .anonymous()
            .get(format!("{base}/novnc/vnc.html"))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 401);
        // A one-time login link signs the browser in: a cookie, and the dashboard works.
        browser
            .goto(
                &daemon
                    .login_url()
                    .await
                    .replace(daemon.health.url.trim_end_matches('/'), &base),
            )
            .await;
        browser
            .wait_js(
                "the dashboard after the token",
                "return document.querySelector('nav button.agent[data-name=default]') !== null
                   && document.querySelector('lb-connection').dataset.status === 'live'",
            )
            .await;
        let url: Value = browser.eval("return location.href", vec![]).await;
        assert!(
            !url.as_str().unwrap().contains("code=") && !url.as_str().unwrap().contains(token),
            "the login code left the URL: {url}"
        );
        browser.client.delete_all_cookies().await.unwrap();
    }
    browser.close().await;
    daemon.stop();
}
