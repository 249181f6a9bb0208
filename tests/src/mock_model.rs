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
//! `check.rs` normalizes requests and checks the invariants; `render.rs` writes replies in
//! either format.

mod check;
mod render;

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

use check::{conversation_violations, normalize_anthropic, normalize_openai};
use render::{error_response, render};

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

/// One scripted answer, rendered in whichever wire format the request used.
#[derive(Debug, Clone)]
pub struct Reply {
    body: ReplyBody,
    delay: Duration,
    delta_delay: Duration,
    cut_off: bool,
    no_terminator: bool,
    repeat_id_and_name: bool,
    explicit_nulls: bool,
    retry_after: Option<u64>,
    non_streaming: bool,
    /// What usage the reply reports: `None` a plausible count (request bytes / 4), `Some(None)`
    /// no usage at all, `Some(Some((input, cached, output)))` exactly that.
    usage: Option<Option<(u64, u64, u64)>>,
}

#[derive(Debug, Clone)]
enum ReplyBody {
    Answer {
        text: String,
        calls: Vec<MockCall>,
    },
    Error {
        status: u16,
        message: String,
        json: bool,
    },
    StreamError {
        message: String,
    },
}

impl Reply {
    fn of(body: ReplyBody) -> Reply {
        Reply {
            body,
            delay: Duration::ZERO,
            delta_delay: Duration::ZERO,
            cut_off: false,
            no_terminator: false,
            repeat_id_and_name: false,
            explicit_nulls: false,
            retry_after: None,
            non_streaming: false,
            usage: None,
        }
    }

    /// Reports exactly this usage (input tokens with the cached ones included, cached, output).
    pub fn with_usage(mut self, input: u64, cached: u64, output: u64) -> Reply {
        self.usage = Some(Some((input, cached, output)));
        self
    }

    /// Reports no usage, as some local servers do.
    pub fn without_usage(mut self) -> Reply {
        self.usage = Some(None);
        self
    }

    /// A text reply, streamed as several deltas (one per word, or two halves of one word).
    pub fn text(text: impl Into<String>) -> Reply {
        Reply::of(ReplyBody::Answer {
            text: text.into(),
            calls: Vec::new(),
        })
    }

    /// One tool call; its arguments are streamed in several fragments.
    pub fn tool_call(id: impl Into<String>, name: impl Into<String>, args: Value) -> Reply {
        Reply::tool_calls([MockCall::new(id, name, args)])
    }

    /// Several calls in one reply, e.g. `Reply::tool_calls([("c1", "ls", json!({}))])`.
    pub fn tool_calls<C: Into<MockCall>>(calls: impl IntoIterator<Item = C>) -> Reply {
        let calls = calls.into_iter().map(Into::into).collect();
        Reply::of(ReplyBody::Answer {
            text: String::new(),
            calls,
        })
    }

    /// A call whose arguments are sent verbatim (use it for arguments that are not JSON).
    pub fn raw_tool_call(id: impl Into<String>, name: impl Into<String>, raw: &str) -> Reply {
        let call = MockCall {
            id: id.into(),
            name: name.into(),
            arguments: raw.to_owned(),
        };
        Reply::tool_calls([call])
    }

    /// Neither text nor tool calls.
    pub fn empty() -> Reply {
        Reply::text("")
    }

    /// An error status with a plain-text body.
    pub fn error(status: u16, body: impl Into<String>) -> Reply {
        Reply::of(ReplyBody::Error {
            status,
            message: body.into(),
            json: false,
        })
    }

    /// An error status with the format's JSON error body (`{"error":{"message":..}}`).
    pub fn json_error(status: u16, message: impl Into<String>) -> Reply {
        Reply::of(ReplyBody::Error {
            status,
            message: message.into(),
            json: true,
        })
    }

    /// A 200 stream that fails mid-way with an error event (Anthropic `overloaded_error`;
    /// an OpenAI chunk `{"error":{..}}`).
    pub fn stream_error(message: impl Into<String>) -> Reply {
        Reply::of(ReplyBody::StreamError {
            message: message.into(),
        })
    }

    /// Adds text before the tool calls.
    pub fn with_text(mut self, text: impl Into<String>) -> Reply {
        if let ReplyBody::Answer { text: existing, .. } = &mut self.body {
            *existing = text.into();
        }
        self
    }

    /// Waits this long before answering at all.
    pub fn delay(mut self, delay: Duration) -> Reply {
        self.delay = delay;
        self
    }

    /// Waits this long between stream events.
    pub fn delta_delay(mut self, delay: Duration) -> Reply {
        self.delta_delay = delay;
        self
    }

    /// Sends the first half of the stream, then breaks the connection (no terminator, no
    /// end of the chunked body): the client sees a body error.
    pub fn cut_off(mut self) -> Reply {
        self.cut_off = true;
        self
    }

    /// Ends the stream cleanly but without `data: [DONE]` (OpenAI) or `message_stop`
    /// (Anthropic).
    pub fn no_terminator(mut self) -> Reply {
        self.no_terminator = true;
        self
    }

    /// OpenAI quirk: every tool-call chunk repeats the call's id, type and name.
    pub fn repeat_id_and_name(mut self) -> Reply {
        self.repeat_id_and_name = true;
        self
    }

    /// OpenAI: every absent field is sent as `null`, plus a chunk with no `delta`.
    pub fn explicit_nulls(mut self) -> Reply {
        self.explicit_nulls = true;
        self
    }

    /// Adds `Retry-After: secs` (for 429 and 5xx replies).
    pub fn retry_after(mut self, secs: u64) -> Reply {
        self.retry_after = Some(secs);
        self
    }

    /// Answers one JSON document (`application/json`) even to a stream request.
    pub fn non_streaming(mut self) -> Reply {
        self.non_streaming = true;
        self
    }
}

/// One message as the model was sent it, the same for both formats: an Anthropic user
/// message holding tool results and text becomes one `ToolResult` per result, then a `User`.
#[derive(Debug, Clone, PartialEq)]
pub enum SeenMessage {
    User {
        text: String,
    },
    Assistant {
        text: String,
        tool_calls: Vec<MockCall>,
    },
    ToolResult {
        call_id: String,
        content: String,
        is_error: bool,
    },
}

/// One request the server received.
#[derive(Debug, Clone)]
pub struct CapturedRequest {
    pub wire: Wire,
    pub path: String,
    /// The `Authorization` header (OpenAI), as sent.
    pub authorization: Option<String>,
    /// The `x-api-key` header (Anthropic).
    pub api_key: Option<String>,
    pub anthropic_version: Option<String>,
    pub body: Value,
    pub model: String,
    pub stream: bool,
    pub system: String,
    pub messages: Vec<SeenMessage>,
    /// The offered tools' names.
    pub tools: Vec<String>,
    /// When the request was read, just before the reply (and its first delta) is sent.
    pub received_at: std::time::Instant,
    /// The images it carried, in order.
    pub images: Vec<SeenImage>,
}

/// An image in a request: in an Anthropic tool result (`call_id` names it), or an OpenAI
/// user message's `image_url` part (the text part before it names the call).
#[derive(Debug, Clone, PartialEq)]
pub struct SeenImage {
    pub call_id: Option<String>,
    pub media_type: String,
    /// The decoded length would need a decoder; the base64 text is kept as sent.
    pub base64: String,
}

impl CapturedRequest {
    /// The text of the last user message.
    pub fn last_user_text(&self) -> Option<&str> {
        self.messages
            .iter()
            .rev()
            .find_map(|message| match message {
                SeenMessage::User { text } => Some(text.as_str()),
                _ => None,
            })
    }

    /// The content of the last tool result.
    pub fn last_tool_result(&self) -> Option<&str> {
        self.messages
            .iter()
            .rev()
            .find_map(|message| match message {
                SeenMessage::ToolResult { content, .. } => Some(content.as_str()),
                _ => None,
            })
    }

    /// The content of the result answering `call_id`.
    pub fn tool_result_for(&self, call_id: &str) -> Option<&str> {
        self.messages.iter().find_map(|message| match message {
            SeenMessage::ToolResult {
                call_id: id,
                content,
                ..
            } if id == call_id => Some(content.as_str()),
            _ => None,
        })
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
