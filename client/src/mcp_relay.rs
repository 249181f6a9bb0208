//! `lazyboy mcp serve`: the team's MCP server on stdio, as a relay to the daemon's `/mcp` over
//! the local socket (the CLI's `Client`, so every request carries the home's credential).
//!
//! The tool set lives in the daemon (`lazyboyd::mcp_server`), so stdio and HTTP clients get
//! the same answers; this side only moves JSON-RPC messages: one line of stdin is one POST,
//! and every message of its answer (JSON, or an SSE stream with progress notifications before
//! the response) is one line of stdout. Requests run concurrently; a `notifications/cancelled`
//! is forwarded and also drops the relayed request, so its wait ends at once either way.
//!
//! The daemon may restart under a long-lived client (a crash, an upgrade). The relay keeps
//! the client's `initialize` and, when the daemon forgets the session (404) or the connection
//! is lost, waits for a daemon to answer (starting one after [`RESTART_GRACE`], like every
//! CLI verb), opens a new session with that same `initialize`, and sends the request again:
//! always when it was never delivered, and otherwise only when it changes nothing (the read-
//! only tools, listing, reading): a lost `ask_agent` is answered "outcome unknown" rather
//! than queued twice. The relay ends when stdin does.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use eventsource_stream::Eventsource;
use futures_util::StreamExt;
use http_body_util::BodyExt;
use hyper::{Method, StatusCode};
use lazyboy_protocol::mcp_server::{READ_ONLY_TOOLS, SCOPE_HEADER};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;
use tokio::task::AbortHandle;

use crate::connection::{Client, ClientError};
use crate::daemon_proc;

/// How long a lost daemon is waited for before this relay starts one itself (a service
/// manager restarting it, or a person, usually wins).
pub const RESTART_GRACE: Duration = Duration::from_secs(10);
/// How long a request waits for a daemon at all before it is answered with an error.
const GIVE_UP: Duration = Duration::from_secs(60);

/// What the daemon's MCP session looks like from here.
#[derive(Default)]
struct Session {
    /// `Mcp-Session-Id`, for protocol versions that have sessions.
    id: Option<String>,
    /// The version `initialize` negotiated (sent as `MCP-Protocol-Version`).
    version: Option<String>,
    /// The client's `initialize`, replayed to open a new session after a restart.
    initialize: Option<Value>,
    /// Bumped with every new session, so concurrent requests reopen it once.
    generation: u64,
}

/// How one POST ended.
enum Posted {
    /// The answer (or, for a notification, the acceptance) came.
    Done,
    /// The daemon does not know the session: nothing was done.
    SessionGone,
    /// The daemon could not be reached: nothing was sent.
    Unsent,
    /// The connection broke after sending: the daemon may have acted.
    Lost(String),
}

struct Relay {
    client: Client,
    agents: Option<String>,
    session: Mutex<Session>,
    /// Serialises reopening a session.
    reopen: tokio::sync::Mutex<()>,
    out: mpsc::UnboundedSender<String>,
    /// In-flight requests by their JSON-RPC id, to drop on cancellation.
    inflight: Mutex<HashMap<String, AbortHandle>>,
}

/// Relays stdin/stdout to the daemon of `client`'s home until stdin ends.
pub async fn serve(client: Client, agents: Option<String>) -> anyhow::Result<i32> {
    daemon_proc::ensure_running(&client).await?;
    let (out, mut lines) = mpsc::unbounded_channel::<String>();
    let writer = tokio::spawn(async move {
        let mut stdout = tokio::io::stdout();
        while let Some(line) = lines.recv().await {
            let written = async {
                stdout.write_all(line.as_bytes()).await?;
                stdout.write_all(b"\n").await?;
                stdout.flush().await
            };
            if written.await.is_err() {
                break;
            }
        }
    });
    let relay = Arc::new(Relay {
        client,
        agents,
        session: Mutex::default(),
        reopen: tokio::sync::Mutex::new(()),
        out,
        inflight: Mutex::default(),
    });
    let mut stdin = BufReader::new(tokio::io::stdin()).lines();
    while let Some(line) = stdin.next_line().await? {
        if line.trim().is_empty() {
            continue;
        }
        let message: Value = match serde_json::from_str(&line) {
            Ok(message) => message,
            Err(error) => {
                relay.write(&json!({"jsonrpc": "2.0", "id": null,
                    "error": {"code": -32700, "message": format!("parse error: {error}")}}));
                continue;
            }
        };
        let method = message.get("method").and_then(Value::as_str);
        let id = message.get("id").filter(|id| !id.is_null()).cloned();
        let is_response = message.get("result").is_some() || message.get("error").is_some();
        match (method, id) {
            // The handshake comes first and alone: the client waits for its answer.
            (Some("initialize"), Some(id)) => relay.request(id, message).await,
            // A request, or something with an id that is no response (the daemon says
            // what is wrong with it, and the answer carries the id).
            (_, Some(id)) if !is_response => {
                let key = id.to_string();
                let task = tokio::spawn({
                    let relay = relay.clone();
                    let key = key.clone();
                    async move {
                        relay.request(id, message).await;
                        relay.lock_inflight().remove(&key);
                    }
                });
                relay.lock_inflight().insert(key, task.abort_handle());
            }
            _ => {
                if method == Some("notifications/cancelled")
                    && let Some(id) = message.pointer("/params/requestId")
                    && let Some(task) = relay.lock_inflight().remove(&id.to_string())
                {
                    task.abort();
                }
                relay.notify(message).await;
            }
        }
    }
    // The client went away: so do its requests.
    for (_, task) in relay.lock_inflight().drain() {
        task.abort();
    }
    drop(relay);
    let _ = writer.await;
    Ok(0)
}

impl Relay {
    fn lock_inflight(&self) -> std::sync::MutexGuard<'_, HashMap<String, AbortHandle>> {
        self.inflight.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn lock_session(&self) -> std::sync::MutexGuard<'_, Session> {
        self.session.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn write(&self, message: &Value) {
        // The writer ends only with the relay.
        let _ = self.out.send(message.to_string());
    }

    fn error(&self, id: &Value, code: i64, message: String) {
        self.write(
            &json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}}),
        );
    }

    /// A notification (or a response to the daemon): sent once; a lost one is not worth a
    /// retry (the session it was for is gone).
    async fn notify(&self, message: Value) {
        let generation = self.lock_session().generation;
        if let Posted::SessionGone = self.post(&message, None, false).await {
            self.reopen(generation).await;
            self.post(&message, None, false).await;
        }
    }

    /// A request: relayed until it is answered, retried across daemon restarts as far as
    /// that is safe.
    async fn request(&self, id: Value, message: Value) {
        let is_initialize = message.get("method").and_then(Value::as_str) == Some("initialize");
        if is_initialize {
            self.lock_session().initialize = Some(message.clone());
        }
        let started = Instant::now();
        loop {
            let generation = self.lock_session().generation;
            match self.post(&message, Some(&id), is_initialize).await {
                Posted::Done => return,
                Posted::SessionGone => self.reopen(generation).await,
                Posted::Unsent => {}
                Posted::Lost(why) if !resendable(&message) => {
                    self.write(&unknown_outcome(&id, &why));
                    return;
                }
                Posted::Lost(_) => {}
            }
            if started.elapsed() > GIVE_UP {
                self.error(
                    &id,
                    -32603,
                    format!(
                        "lazyboyd at {} did not answer for {} s; start it with `lazyboy daemon \
                         start` and call again",
                        self.client.home().display(),
                        GIVE_UP.as_secs()
                    ),
                );
                return;
            }
            self.await_daemon(started).await;
        }
    }

    /// Waits for a daemon to answer health; after [`RESTART_GRACE`] starts one.
    async fn await_daemon(&self, since: Instant) {
        let mut pause = Duration::from_millis(50);
        loop {
            if self.client.get::<Value>("/api/health").await.is_ok() {
                return;
            }
            if since.elapsed() > RESTART_GRACE {
                // Racing another starter is fine: the home's lock lets one daemon win.
                let _ = daemon_proc::ensure_running(&self.client).await;
                return;
            }
            tokio::time::sleep(pause).await;
            pause = (pause * 2).min(Duration::from_millis(500));
        }
    }

    /// Opens a new session with the client's `initialize`, unless another request already
    /// did since `generation`. Its answer is for this relay, not the client.
    async fn reopen(&self, generation: u64) {
        let _one = self.reopen.lock().await;
        let initialize = {
            let mut session = self.lock_session();
            if session.generation != generation {
                return;
            }
            session.id = None;
            session.version = None;
            session.generation += 1;
            session.initialize.clone()
        };
        let Some(initialize) = initialize else { return };
        // The answer is the session's, not the client's (it had its own long ago).
        if let Ok(response) = self.exchange(&initialize, true).await {
            self.adopt_session(&response);
            let _ = each_message(response, |reply| self.adopt_version(reply)).await;
        }
        let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        if let Ok(response) = self.exchange(&initialized, false).await {
            let _ = each_message(response, |_| {}).await;
        }
    }

    fn adopt_session(&self, response: &hyper::Response<hyper::body::Incoming>) {
        if let Some(session) = response.headers().get("mcp-session-id") {
            self.lock_session().id = session.to_str().ok().map(str::to_owned);
        }
    }

    fn adopt_version(&self, reply: &Value) {
        if let Some(version) = reply.pointer("/result/protocolVersion") {
            self.lock_session().version = version.as_str().map(str::to_owned);
        }
    }

    async fn exchange(
        &self,
        message: &Value,
        is_initialize: bool,
    ) -> Result<hyper::Response<hyper::body::Incoming>, ClientError> {
        let mut headers = vec![
            ("content-type", "application/json".to_owned()),
            ("accept", "application/json, text/event-stream".to_owned()),
        ];
        let own = per_request_headers(message);
        if !is_initialize {
            let session = self.lock_session();
            if let Some(id) = &session.id {
                headers.push(("mcp-session-id", id.clone()));
            }
            if let (Some(version), true) = (&session.version, own.is_empty()) {
                headers.push(("mcp-protocol-version", version.clone()));
            }
        }
        headers.extend(own);
        if let Some(agents) = &self.agents {
            headers.push((SCOPE_HEADER, agents.clone()));
        }
        let body = message.to_string().into_bytes();
        self.client
            .exchange(Method::POST, "/mcp", &headers, body)
            .await
    }

    /// One POST of `message`; each message of its answer goes to stdout as it arrives.
    async fn post(&self, message: &Value, id: Option<&Value>, is_initialize: bool) -> Posted {
        let response = match self.exchange(message, is_initialize).await {
            Ok(response) => response,
            Err(ClientError::NotRunning { .. } | ClientError::Io { .. }) => return Posted::Unsent,
            Err(error) => return Posted::Lost(error.to_string()),
        };
        let status = response.status();
        let has_session = self.lock_session().id.is_some();
        if status == StatusCode::NOT_FOUND && has_session && !is_initialize {
            return Posted::SessionGone;
        }
        if is_initialize {
            self.adopt_session(&response);
        }
        let mut answered = id.is_none();
        let mut wrote = false;
        let read = each_message(response, |reply| {
            wrote = true;
            if is_initialize {
                self.adopt_version(reply);
            }
            answered |= id.is_some_and(|id| reply.get("id") == Some(id))
                && (reply.get("result").is_some() || reply.get("error").is_some());
            self.write(reply);
        })
        .await;
        if id.is_none() && !status.is_success() && !wrote && status != StatusCode::NOT_FOUND {
            // A notification is never answered, but a message the daemon could not take
            // at all (not JSON-RPC) gets an error without an id, as JSON-RPC says.
            self.error(
                &Value::Null,
                -32600,
                format!("lazyboyd refused the message ({status})"),
            );
        }
        if answered {
            return Posted::Done;
        }
        match (read, id) {
            (Err(why), _) => Posted::Lost(why),
            (Ok(()), Some(id)) if !status.is_success() => {
                // A refusal without a JSON-RPC body (413, 406, a plain-text 400...).
                self.error(
                    id,
                    -32600,
                    format!("lazyboyd refused the request ({status})"),
                );
                Posted::Done
            }
            (Ok(()), _) => Posted::Lost("the answer ended before the response".to_owned()),
        }
    }
}

/// Hands each JSON-RPC message of an answer to `each` as it arrives, JSON or SSE (priming
/// events and keep-alives carry none). An `Err` says the connection broke midway.
async fn each_message(
    response: hyper::Response<hyper::body::Incoming>,
    mut each: impl FnMut(&Value),
) -> Result<(), String> {
    let sse = response
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/event-stream"));
    let body = response.into_body();
    if !sse {
        let bytes = body.collect().await.map_err(|e| e.to_string())?.to_bytes();
        match serde_json::from_slice::<Value>(&bytes) {
            Ok(Value::Array(batch)) => batch.iter().for_each(each),
            Ok(message) if message.get("jsonrpc").is_some() => each(&message),
            _ => {}
        }
        return Ok(());
    }
    let mut events = body.into_data_stream().eventsource();
    while let Some(event) = events.next().await {
        let event = event.map_err(|e| e.to_string())?;
        if let Ok(message) = serde_json::from_str::<Value>(&event.data) {
            each(&message);
        }
    }
    Ok(())
}

/// The headers a request of the 2026-07-28 protocol carries beside its body (over HTTP a
/// client sends them itself; on stdio there are none, so the relay derives them): the
/// version its `_meta` names, and from that version on, the method and its target (SEP-2243).
fn per_request_headers(message: &Value) -> Vec<(&'static str, String)> {
    let Some(version) = message
        .pointer("/params/_meta/io.modelcontextprotocol~1protocolVersion")
        .and_then(Value::as_str)
    else {
        return Vec::new();
    };
    let mut headers = vec![("mcp-protocol-version", version.to_owned())];
    let method = message.get("method").and_then(Value::as_str);
    if version >= "2026-07-28"
        && let Some(method) = method
    {
        headers.push(("mcp-method", method.to_owned()));
        let key = match method {
            "tools/call" | "prompts/get" => Some("name"),
            "resources/read" | "resources/subscribe" | "resources/unsubscribe" => Some("uri"),
            "tasks/get" | "tasks/update" | "tasks/cancel" => Some("taskId"),
            _ => None,
        };
        if let Some(name) = key
            .and_then(|k| message.get("params")?.get(k))
            .and_then(Value::as_str)
        {
            headers.push(("mcp-name", header_value(name)));
        }
    }
    headers
}

/// A value as an HTTP header carries it: as is when it is plain visible ASCII, else
/// base64 between the SEP-2243 markers.
fn header_value(value: &str) -> String {
    let plain = !value.starts_with([' ', '\t'])
        && !value.ends_with([' ', '\t'])
        && value.chars().all(|c| (' '..='~').contains(&c));
    if plain {
        value.to_owned()
    } else {
        use base64::Engine;
        format!(
            "=?base64?{}?=",
            base64::engine::general_purpose::STANDARD.encode(value)
        )
    }
}

/// Whether sending `message` twice is harmless.
fn resendable(message: &Value) -> bool {
    match message.get("method").and_then(Value::as_str) {
        Some("tools/call") => message
            .pointer("/params/name")
            .and_then(Value::as_str)
            .is_some_and(|name| READ_ONLY_TOOLS.contains(&name)),
        _ => true,
    }
}

/// The result of a call that may or may not have taken effect.
fn unknown_outcome(id: &Value, why: &str) -> Value {
    let text = format!(
        "lazyboyd went away while this call was in flight ({why}); it may or may not have taken \
         effect. Check with list_agents or task_status before calling it again."
    );
    json!({"jsonrpc": "2.0", "id": id, "result": {
        "content": [{"type": "text", "text": text}], "isError": true}})
}
