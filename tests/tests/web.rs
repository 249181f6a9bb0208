//! `web_fetch` and `web_search` end to end: the real daemon, the mock model calling the
//! tools, and local servers on loopback (no traffic leaves the machine; refusals of private
//! and link-local addresses are tested in the daemon's unit tests by resolving and refusing).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use axum::Router;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use lazyboy_protocol::{EventBody, ToolStatus};
use lazyboy_tests::mock_model::{MockCall, MockModel, Reply};
use lazyboy_tests::{TestDaemon, create_task, model_config, task_events, wait_task_finished};
use serde_json::{Value, json};

fn result_of(events: &[EventBody], id: &str) -> (ToolStatus, String) {
    events
        .iter()
        .find_map(|e| match e {
            EventBody::ToolResult {
                call_id,
                status,
                output,
                ..
            } if call_id == id => Some((*status, output.clone())),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no result for {id}"))
}

/// Serves `router` on 127.0.0.1:0; returns its port.
async fn serve(router: Router) -> u16 {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
    port
}

/// A listener that only counts the connections it accepts (it must see none).
async fn tripwire() -> (u16, Arc<AtomicUsize>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let count = Arc::new(AtomicUsize::new(0));
    let seen = count.clone();
    tokio::spawn(async move {
        while listener.accept().await.is_ok() {
            seen.fetch_add(1, Ordering::SeqCst);
        }
    });
    (port, count)
}

const PAGE: &str = "<!doctype html><html><head><title>Local page</title></head><body>\
    <nav><a href=\"/\">Home</a></nav><main><h1>Reach</h1><p>The <em>web</em> tools work. \
    See <a href=\"https://example.org/more\">more</a>.</p></main></body></html>";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn web_fetch_reads_allowed_pages_caches_them_and_refuses_what_it_must() {
    let (blocked, connections) = tripwire().await;
    let hits = Arc::new(AtomicUsize::new(0));
    let router = Router::new()
        .route(
            "/page",
            get(|State(hits): State<Arc<AtomicUsize>>| async move {
                hits.fetch_add(1, Ordering::SeqCst);
                ([(header::CONTENT_TYPE, "text/html; charset=utf-8")], PAGE)
            }),
        )
        .route(
            "/data.json",
            get(|| async { ([(header::CONTENT_TYPE, "application/json")], r#"{"n": 7}"#) }),
        )
        .route(
            "/away",
            get(move || async move {
                Response::builder()
                    .status(StatusCode::FOUND)
                    .header(
                        header::LOCATION,
                        format!("http://127.0.0.1:{blocked}/secret"),
                    )
                    .body(axum::body::Body::empty())
                    .unwrap()
            }),
        )
        .route(
            "/big",
            get(|| async {
                (
                    [(header::CONTENT_TYPE, "text/plain")],
                    vec![b'a'; 20_000_000],
                )
            }),
        )
        .route(
            "/slow",
            get(|| async {
                tokio::time::sleep(Duration::from_secs(30)).await;
                "late"
            }),
        )
        .with_state(hits.clone());
    let port = serve(router).await;
    let base = format!("http://127.0.0.1:{port}");

    let mock = MockModel::start().await;
    let config = format!(
        "{}\n[web]\nallow_hosts = [\"127.0.0.1:{port}\"]\ntimeout_secs = 2\nmax_bytes = 1000000\n",
        model_config(&mock, "openai")
    );
    let daemon = TestDaemon::start_with(&config, &[]).await;
    mock.push(Reply::tool_calls([
        MockCall::new("page", "web_fetch", json!({"url": format!("{base}/page")})),
        MockCall::new(
            "again",
            "web_fetch",
            json!({"url": format!("{base}/page#top")}),
        ),
        MockCall::new(
            "json",
            "web_fetch",
            json!({"url": format!("{base}/data.json")}),
        ),
        MockCall::new(
            "direct",
            "web_fetch",
            json!({"url": format!("http://127.0.0.1:{blocked}/")}),
        ),
        MockCall::new(
            "byname",
            "web_fetch",
            json!({"url": format!("http://localhost:{port}/page")}),
        ),
        MockCall::new(
            "redirect",
            "web_fetch",
            json!({"url": format!("{base}/away")}),
        ),
        MockCall::new(
            "big",
            "web_fetch",
            json!({"url": format!("{base}/big"), "max_chars": 100}),
        ),
        MockCall::new("slow", "web_fetch", json!({"url": format!("{base}/slow")})),
    ]))
    .push(Reply::text("done"));
    let task = create_task(&daemon, "default", "read the web", None).await;
    wait_task_finished(&daemon, &task).await;
    let events = task_events(&daemon, &task).await;

    let (status, page) = result_of(&events, "page");
    assert_eq!(status, ToolStatus::Ok, "{page}");
    assert!(page.contains(&format!("URL: {base}/page")), "{page}");
    assert!(page.contains("Content-Type: text/html"), "{page}");
    assert!(
        page.contains("# Local page") && page.contains("The *web* tools work."),
        "{page}"
    );
    assert!(page.contains("https://example.org/more"), "{page}");
    assert!(!page.contains('<') && !page.contains("Home"), "{page}");

    let (status, again) = result_of(&events, "again");
    assert_eq!(status, ToolStatus::Ok);
    assert!(again.contains("(from the cache"), "{again}");
    assert_eq!(
        hits.load(Ordering::SeqCst),
        1,
        "the second fetch reached the server"
    );

    let (_, data) = result_of(&events, "json");
    assert!(data.contains(r#"{"n": 7}"#), "{data}");

    for id in ["direct", "byname", "redirect"] {
        let (status, refused) = result_of(&events, id);
        assert_eq!(status, ToolStatus::Error, "{id}: {refused}");
        assert!(refused.contains("a loopback address"), "{id}: {refused}");
        assert!(refused.contains("allow_hosts"), "{id}: {refused}");
    }
    assert_eq!(
        connections.load(Ordering::SeqCst),
        0,
        "a refused address was contacted"
    );

    let (status, big) = result_of(&events, "big");
    assert_eq!(status, ToolStatus::Ok, "{big}");
    assert!(
        big.contains("cut at the size cap: only its first 1000000 bytes"),
        "{big}"
    );
    assert!(big.contains("[... 999900 more characters"), "{big}");

    let (status, slow) = result_of(&events, "slow");
    assert_eq!(status, ToolStatus::Error);
    assert!(slow.contains("timed out after 2 s"), "{slow}");

    // No search provider: the model is not offered web_search.
    let tools = &mock.requests()[0].tools;
    assert!(tools.iter().any(|t| t == "web_fetch"));
    assert!(!tools.iter().any(|t| t == "web_search"), "{tools:?}");
    mock.assert_clean();
    daemon.stop();
}

/// What the fake search server saw.
#[derive(Default)]
struct Seen {
    requests: std::sync::Mutex<Vec<(String, HeaderMap, Value)>>,
}

type Shared = State<Arc<Seen>>;

fn note(seen: &Seen, what: &str, headers: &HeaderMap, body: Value) {
    seen.requests
        .lock()
        .unwrap()
        .push((what.to_owned(), headers.clone(), body));
}

/// A provider's documented response body (`tests/fixtures/web_search/`, see its README).
fn search_fixture(provider: &str) -> Value {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/web_search")
        .join(format!("{provider}.json"));
    serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap()
}

/// One server speaking the four providers' wire formats, each under its own prefix: the
/// requests are checked as the providers check them, the answers are their documented
/// bodies (the gateway's is ours).
fn search_router(seen: Arc<Seen>) -> Router {
    Router::new()
        .route(
            "/searx/search",
            get(|State(seen): Shared, headers: HeaderMap, Query(q): Query<Value>| async move {
                note(&seen, "searxng", &headers, q.clone());
                if q["format"] != "json" {
                    return (StatusCode::FORBIDDEN, "format not enabled").into_response();
                }
                axum::Json(search_fixture("searxng")).into_response()
            }),
        )
        .route(
            "/brave/web/search",
            get(|State(seen): Shared, headers: HeaderMap, Query(q): Query<Value>| async move {
                note(&seen, "brave", &headers, q);
                if headers.get("x-subscription-token").map(|v| v.as_bytes()) != Some(b"k-brave") {
                    return (StatusCode::UNAUTHORIZED, "bad token").into_response();
                }
                axum::Json(search_fixture("brave")).into_response()
            }),
        )
        .route(
            "/xai/responses",
            post(|State(seen): Shared, headers: HeaderMap, axum::Json(body): axum::Json<Value>| async move {
                note(&seen, "xai", &headers, body.clone());
                if body["tools"][0]["type"] != "web_search" || body["model"] != "grok-test" {
                    return (StatusCode::BAD_REQUEST, "no web_search tool").into_response();
                }
                axum::Json(search_fixture("xai")).into_response()
            }),
        )
        .route(
            "/gw/aiserver.v1.AiService/RunWebSearch",
            post(|State(seen): Shared, headers: HeaderMap, axum::Json(body): axum::Json<Value>| async move {
                note(&seen, "gateway", &headers, body.clone());
                axum::Json(json!({"answer": "gateway says hi", "documents": [
                    {"title": "Gateway hit", "url": "https://gw.example/1", "content": "from the gateway"}]}))
            }),
        )
        .with_state(seen)
}

/// (provider, its settings, its environment, the title of its hit).
type Case<'a> = (&'a str, String, &'a [(&'a str, &'a str)], &'a str);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn web_search_speaks_each_providers_wire_format() {
    let seen = Arc::new(Seen::default());
    let port = serve(search_router(seen.clone())).await;
    let base = format!("http://127.0.0.1:{port}");
    let cases: [Case; 4] = [
        (
            "searxng",
            format!("url = \"{base}/searx\""),
            &[],
            "Tokio - An asynchronous Rust runtime",
        ),
        (
            "brave",
            format!("url = \"{base}/brave\""),
            &[("BRAVE_API_KEY", "k-brave")],
            "Tokio - An asynchronous Rust runtime",
        ),
        (
            "xai",
            format!("url = \"{base}/xai\"\nmodel = \"grok-test\""),
            &[("XAI_API_KEY", "k-xai")],
            "Tokio - An asynchronous Rust runtime",
        ),
        (
            "gateway",
            format!("url = \"{base}/gw\""),
            &[("LAZYBOY_WEB_TOKEN", "k-gw")],
            "Gateway hit",
        ),
    ];
    for (provider, settings, env, expected) in cases {
        let mock = MockModel::start().await;
        let config = format!(
            "{}\n[web_search]\nprovider = \"{provider}\"\n{settings}\n",
            model_config(&mock, "openai")
        );
        let daemon = TestDaemon::start_with(&config, env).await;
        mock.push(Reply::tool_calls([
            MockCall::new("s", "web_search", json!({"query": "rust news", "limit": 3})),
            MockCall::new("env", "exec_command", json!({"cmd": "env"})),
        ]))
        .push(Reply::text("done"));
        let task = create_task(&daemon, "default", "search", None).await;
        wait_task_finished(&daemon, &task).await;
        let events = task_events(&daemon, &task).await;
        let (status, found) = result_of(&events, "s");
        assert_eq!(status, ToolStatus::Ok, "{provider}: {found}");
        assert!(
            found.contains(&format!("1. {expected}")),
            "{provider}: {found}"
        );
        assert!(found.contains("https://"), "{provider}: {found}");
        if provider != "gateway" {
            // Every documented hit, in order, with its address.
            assert!(found.contains("2. async_std - Rust"), "{provider}: {found}");
            assert!(found.contains("https://tokio.rs/"), "{provider}: {found}");
            assert!(
                found.contains("https://docs.rs/async-std/latest/async_std/"),
                "{provider}: {found}"
            );
        }
        // The key reaches the provider, never an agent's command.
        let (_, environment) = result_of(&events, "env");
        for (name, value) in env {
            assert!(
                !environment.contains(name) && !environment.contains(value),
                "{environment}"
            );
        }
        assert!(mock.requests()[0].tools.iter().any(|t| t == "web_search"));
        mock.assert_clean();
        daemon.stop();
    }
    let requests = seen.requests.lock().unwrap();
    let by = |what: &str| requests.iter().find(|r| r.0 == what).unwrap();
    assert_eq!(by("searxng").2["q"], "rust news");
    assert_eq!(by("brave").2["count"], "3");
    assert_eq!(by("xai").1["authorization"], "Bearer k-xai");
    assert_eq!(by("gateway").1["authorization"], "Bearer k-gw");
    assert_eq!(by("gateway").2["searchTerm"], "rust news");
}
