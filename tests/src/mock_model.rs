//! A scripted mock model server speaking the OpenAI Chat Completions and Anthropic Messages
//! wire formats over real HTTP (axum on `127.0.0.1:0`, on the test's tokio runtime).
//!
//! Tests queue [`Reply`]s (FIFO); each request takes the next one (or the fallback when the
//! queue is empty) and gets it rendered in the format it came in: `POST /v1/chat/completions`
//! or `/chat/completions` for OpenAI, `POST /v1/messages` for Anthropic. Builders cover the
//! quirks real servers have (repeated ids, explicit nulls, no terminator, cut-off streams,
//! plain-text 5xx, `Retry-After`, JSON bodies for stream requests).
//!
//! Every request is captured, normalized into [`SeenMessage`]s (the same shape for both
//! formats), and checked against the invariants a real server enforces or a correct agent
//! keeps. Violations are collected, never panicked on inside the server: tests call
//! [`MockModel::assert_clean`]. An OpenAI assistant message with tool calls and a non-string
//! `content` is also answered 400, as strict servers do.
//!
//! ```text
//! let mock = MockModel::start().await;
//! mock.push(Reply::tool_call("c1", "read_file", json!({"path": "a.txt"})))
//!     .push_fn(|request| Reply::text(format!("it says {:?}", request.last_tool_result())));
//! // ... point a provider or a daemon at mock.openai_base_url() / anthropic_base_url() ...
//! let requests = mock.wait_for_requests(2).await;
//! mock.assert_clean();
//! ```
//!
//! `captured.rs` is what a request looked like; `check.rs` normalizes requests and checks the
//! invariants; `reply.rs` builds scripted replies and `render.rs` writes them in either format.

mod captured;
mod check;
mod render;
mod reply;

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, Uri};
use axum::response::Response;
use axum::routing::post;
use serde_json::Value;
use tokio::sync::watch;

pub use captured::{CapturedRequest, SeenImage, SeenMessage};
use check::{conversation_violations, normalize_anthropic, normalize_openai};
use render::{error_response, render};
pub use reply::Reply;
use reply::ReplyBody;

/// The text of the default fallback reply.
pub const NO_SCRIPT_LEFT: &str = "(mock: no script left)";

/// The wire format a request came in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wire {
    OpenAi,
    Anthropic,
}

/// One tool call, scripted or seen. `arguments` is raw JSON text (maybe not JSON at all).
#[derive(Debug, Clone, PartialEq)]
pub struct MockCall {
    pub id: String,
    pub name: String,
    pub arguments: String,
}

impl MockCall {
    pub fn new(id: impl Into<String>, name: impl Into<String>, arguments: Value) -> MockCall {
        MockCall {
            id: id.into(),
            name: name.into(),
            arguments: arguments.to_string(),
        }
    }

    /// The arguments parsed (`Value::Null` when they are not JSON).
    pub fn args(&self) -> Value {
        serde_json::from_str(&self.arguments).unwrap_or(Value::Null)
    }
}

impl<I: Into<String>, N: Into<String>> From<(I, N, Value)> for MockCall {
    fn from((id, name, arguments): (I, N, Value)) -> MockCall {
        MockCall::new(id, name, arguments)
    }
}

type ReplyFn = Arc<dyn Fn(&CapturedRequest) -> Reply + Send + Sync>;

enum Script {
    Fixed(Reply),
    Computed(ReplyFn),
}

struct Shared {
    script: Mutex<VecDeque<Script>>,
    fallback: Mutex<Script>,
    requests: Mutex<Vec<CapturedRequest>>,
    violations: Mutex<Vec<String>>,
    /// Set by tests that send broken conversations on purpose.
    expect_violations: std::sync::atomic::AtomicBool,
    /// The number of requests captured, for waiting without sleeps.
    count: watch::Sender<usize>,
}

/// The server. Stops accepting when dropped.
pub struct MockModel {
    addr: SocketAddr,
    shared: Arc<Shared>,
    server: tokio::task::JoinHandle<()>,
}

impl MockModel {
    /// Binds `127.0.0.1:0` and serves on the current runtime.
    pub async fn start() -> MockModel {
        let shared = Arc::new(Shared {
            script: Mutex::new(VecDeque::new()),
            fallback: Mutex::new(Script::Fixed(Reply::text(NO_SCRIPT_LEFT))),
            requests: Mutex::new(Vec::new()),
            violations: Mutex::new(Vec::new()),
            expect_violations: std::sync::atomic::AtomicBool::new(false),
            count: watch::Sender::new(0),
        });
        let router = Router::new()
            .route("/v1/chat/completions", post(openai))
            .route("/chat/completions", post(openai))
            .route("/v1/messages", post(anthropic))
            .with_state(shared.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let server = tokio::spawn(async move {
            axum::serve(listener, router).await.unwrap();
        });
        MockModel {
            addr,
            shared,
            server,
        }
    }

    /// `http://127.0.0.1:PORT/v1`, the OpenAI-style base URL.
    pub fn openai_base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// `http://127.0.0.1:PORT`, the Anthropic-style base URL.
    pub fn anthropic_base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Queues a reply.
    pub fn push(&self, reply: Reply) -> &Self {
        self.shared
            .script
            .lock()
            .unwrap()
            .push_back(Script::Fixed(reply));
        self
    }

    /// Queues a reply computed from the request it answers.
    pub fn push_fn(&self, f: impl Fn(&CapturedRequest) -> Reply + Send + Sync + 'static) -> &Self {
        self.shared
            .script
            .lock()
            .unwrap()
            .push_back(Script::Computed(Arc::new(f)));
        self
    }

    /// The reply used once the queue is empty (default: the text [`NO_SCRIPT_LEFT`]).
    pub fn set_fallback(&self, reply: Reply) {
        *self.shared.fallback.lock().unwrap() = Script::Fixed(reply);
    }

    /// The reply, computed from each request, used once the queue is empty.
    pub fn set_fallback_fn(&self, f: impl Fn(&CapturedRequest) -> Reply + Send + Sync + 'static) {
        *self.shared.fallback.lock().unwrap() = Script::Computed(Arc::new(f));
    }

    /// Scripted replies not yet used.
    pub fn pending(&self) -> usize {
        self.shared.script.lock().unwrap().len()
    }

    /// Every request so far, in arrival order.
    pub fn requests(&self) -> Vec<CapturedRequest> {
        self.shared.requests.lock().unwrap().clone()
    }

    pub fn request_count(&self) -> usize {
        *self.shared.count.borrow()
    }

    pub fn last_request(&self) -> Option<CapturedRequest> {
        self.shared.requests.lock().unwrap().last().cloned()
    }

    /// Waits (up to 10 s, then panics) until at least `n` requests arrived; returns them all.
    pub async fn wait_for_requests(&self, n: usize) -> Vec<CapturedRequest> {
        let mut count = self.shared.count.subscribe();
        let arrived = tokio::time::timeout(Duration::from_secs(10), count.wait_for(|c| *c >= n));
        if arrived.await.is_err() {
            panic!(
                "timed out waiting for {n} model requests; got {}",
                self.request_count()
            );
        }
        self.requests()
    }

    /// For tests that break the invariants on purpose: do not check them on drop.
    pub fn expect_violations(&self) {
        self.shared
            .expect_violations
            .store(true, std::sync::atomic::Ordering::Relaxed);
    }

    /// Invariant violations seen so far, each naming its request (1-based).
    pub fn violations(&self) -> Vec<String> {
        self.shared.violations.lock().unwrap().clone()
    }

    /// Panics listing every violation.
    pub fn assert_clean(&self) {
        let violations = self.violations();
        assert!(
            violations.is_empty(),
            "model request invariants broken:\n  {}",
            violations.join("\n  ")
        );
    }
}

impl Drop for MockModel {
    /// Every test that talks to the mock gets its invariants checked, asked or not (unless
    /// it is already failing, or it opted out for a deliberately broken conversation).
    fn drop(&mut self) {
        self.server.abort();
        if !std::thread::panicking()
            && !self
                .shared
                .expect_violations
                .load(std::sync::atomic::Ordering::Relaxed)
        {
            self.assert_clean();
        }
    }
}

async fn openai(
    State(shared): State<Arc<Shared>>,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    handle(&shared, Wire::OpenAi, uri.path(), &headers, &body).await
}

async fn anthropic(
    State(shared): State<Arc<Shared>>,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    handle(&shared, Wire::Anthropic, uri.path(), &headers, &body).await
}

async fn handle(
    shared: &Shared,
    wire: Wire,
    path: &str,
    headers: &HeaderMap,
    body: &[u8],
) -> Response {
    let Ok(body) = serde_json::from_slice::<Value>(body) else {
        let mut violations = shared.violations.lock().unwrap();
        violations.push(format!("a request to {path} has a body that is not JSON"));
        return error_response(wire, 400, "the body is not JSON", true, None);
    };
    let header = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    };
    let mut captured = CapturedRequest {
        received_at: std::time::Instant::now(),
        wire,
        path: path.to_owned(),
        authorization: header("authorization"),
        api_key: header("x-api-key"),
        anthropic_version: header("anthropic-version"),
        model: body["model"].as_str().unwrap_or("").to_owned(),
        stream: body["stream"] == true,
        body,
        system: String::new(),
        messages: Vec::new(),
        tools: Vec::new(),
        images: Vec::new(),
    };
    let mut found = match wire {
        Wire::OpenAi => normalize_openai(&mut captured),
        Wire::Anthropic => normalize_anthropic(&mut captured),
    };
    let rejected = found.iter().any(|v| v.contains("content must be a string"));
    found.extend(conversation_violations(&captured));
    let number = {
        let mut requests = shared.requests.lock().unwrap();
        requests.push(captured.clone());
        requests.len()
    };
    shared
        .violations
        .lock()
        .unwrap()
        .extend(found.into_iter().map(|v| format!("request {number}: {v}")));
    shared.count.send_modify(|count| *count += 1);
    if rejected {
        let message = "assistant message: content must be a string";
        return error_response(wire, 400, message, true, None);
    }
    let next = shared.script.lock().unwrap().pop_front();
    let reply = match next {
        Some(Script::Fixed(reply)) => reply,
        Some(Script::Computed(f)) => f(&captured),
        None => match &*shared.fallback.lock().unwrap() {
            Script::Fixed(reply) => reply.clone(),
            Script::Computed(f) => f(&captured),
        },
    };
    if !reply.delay.is_zero() {
        tokio::time::sleep(reply.delay).await;
    }
    render(&reply, &captured)
}
