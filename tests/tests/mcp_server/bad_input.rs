//! User mistakes and garbage, on the stdio relay and on `/mcp` over TCP: each gets a clear
//! error (a tool error with `isError` for a mistake in a tool's arguments, a JSON-RPC error
//! for what is no call at all), nothing is queued, and the server answers the next call.

use std::process::Stdio;
use std::time::Duration;

use lazyboy_tests::mock_model::{MockModel, Reply};
use lazyboy_tests::{TestDaemon, add_agent, bin, create_task, wait_task_finished};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdout};

/// `lazyboy mcp serve` driven line by line.
pub struct Relay {
    child: Child,
    lines: Lines<BufReader<ChildStdout>>,
}

impl Relay {
    pub async fn start(daemon: &TestDaemon, args: &[&str]) -> Relay {
        let mut child = tokio::process::Command::new(bin("lazyboy"))
            .arg("--home")
            .arg(daemon.home())
            .args(["mcp", "serve"])
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let mut relay = Relay { child, lines };
        let init = relay
            .call(
                json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "protocolVersion": "2025-11-25", "capabilities": {},
                "clientInfo": {"name": "raw", "version": "1"}}}),
            )
            .await;
        assert_eq!(init["result"]["protocolVersion"], "2025-11-25", "{init}");
        relay
            .send_line(
                &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string(),
            )
            .await;
        relay
    }

    pub async fn send_line(&mut self, line: &str) {
        let stdin = self.child.stdin.as_mut().unwrap();
        stdin.write_all(line.as_bytes()).await.unwrap();
        stdin.write_all(b"\n").await.unwrap();
        stdin.flush().await.unwrap();
    }

    /// The next message with `id` (notifications in between are skipped).
    pub async fn answer(&mut self, id: &Value) -> Value {
        loop {
            let line = tokio::time::timeout(Duration::from_secs(60), self.lines.next_line())
                .await
                .expect("an answer within 60 s")
                .unwrap()
                .expect("the relay is still up");
            let message: Value = serde_json::from_str(&line).unwrap();
            if &message["id"] == id {
                return message;
            }
        }
    }

    pub async fn call(&mut self, request: Value) -> Value {
        self.send_line(&request.to_string()).await;
        self.answer(&request["id"]).await
    }

    /// `tools/call` of `name`; the result.
    pub async fn tool(&mut self, id: i64, name: &str, arguments: Value) -> Value {
        self.call(json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                "params": {"name": name, "arguments": arguments}}))
            .await
    }
}

/// A tool error whose text says `says`.
fn assert_tool_error(answer: &Value, says: &str) {
    assert_eq!(answer["result"]["isError"], true, "{answer}");
    let text = answer["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.contains(says), "{says:?} not in {text:?}");
}

async fn task_count(daemon: &TestDaemon) -> usize {
    let tasks: lazyboy_protocol::TaskList = daemon.client().get("/api/tasks").await.unwrap();
    tasks.tasks.len()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mistakes_and_garbage_get_clear_errors_queue_nothing_and_the_server_stays_up() {
    let mock = MockModel::start().await;
    let daemon = TestDaemon::start_with_model(&mock, "openai", &[]).await;
    add_agent(&daemon, "researcher").await;
    mock.push(Reply::text("done"));
    let done = create_task(&daemon, "researcher", "finish", None).await;
    wait_task_finished(&daemon, &done).await;
    let mut relay = Relay::start(&daemon, &[]).await;
    let huge = "x".repeat(10 * 1024 * 1024);
    let cases = [
        (
            "ask_agent",
            json!({"agent": "nobody", "job": "x"}),
            "no agent named \"nobody\"",
        ),
        (
            "task_status",
            json!({"task": "no-such-task"}),
            "no task \"no-such-task\"",
        ),
        (
            "ask_agent",
            json!({"agent": "researcher", "job": "x", "wait_s": -1}),
            "wait_s must be between 0 and 600",
        ),
        (
            "ask_agent",
            json!({"agent": "researcher", "job": "x", "wait_s": 1_000_000_000i64}),
            "wait_s must be between 0 and 600",
        ),
        (
            "ask_agent",
            json!({"agent": "researcher", "job": huge}),
            "job is 10485760 bytes",
        ),
        (
            "ask_agent",
            json!({"agent": "researcher"}),
            "missing field `job`",
        ),
        (
            "ask_agent",
            json!({"agent": "researcher", "job": "   "}),
            "the objective is empty",
        ),
        (
            "answer_task",
            json!({"task": done, "text": "hi"}),
            "not waiting for an answer",
        ),
        (
            "answer_task",
            json!({"task": done, "option": 0}),
            "option must be 1 or more",
        ),
        (
            "wait_task",
            json!({"task": done, "timeout_s": 601}),
            "timeout_s must be between",
        ),
        (
            "tell_agent",
            json!({"agent": "researcher", "text": ""}),
            "the text is empty",
        ),
        (
            "stop_task",
            json!({"task": done, "extra": 1}),
            "unknown field `extra`",
        ),
    ];
    for (n, (tool, args, says)) in cases.into_iter().enumerate() {
        let answer = relay.tool(n as i64 + 1, tool, args).await;
        assert_tool_error(&answer, says);
    }
    // What is no call at all: JSON-RPC errors, each for its request (or for none).
    let unknown = relay.tool(50, "delete_everything", json!({})).await;
    assert_eq!(unknown["error"]["code"], -32602, "{unknown}");
    assert!(
        unknown["error"]["message"]
            .as_str()
            .unwrap()
            .contains("unknown tool")
    );
    relay.send_line("{not json").await;
    let parse = relay.answer(&Value::Null).await;
    assert_eq!(parse["error"]["code"], -32700, "{parse}");
    let bad = relay
        .call(json!({"jsonrpc": "2.0", "id": 51, "method": 42, "params": "x"}))
        .await;
    assert!(bad["error"].is_object(), "{bad}");
    let unknown_method = relay
        .call(json!({"jsonrpc": "2.0", "id": 52, "method": "tasks/explode"}))
        .await;
    assert!(unknown_method["error"].is_object(), "{unknown_method}");
    // Nothing was queued, and the server still answers.
    assert_eq!(task_count(&daemon).await, 1);
    let listed = relay.tool(53, "list_agents", json!({})).await;
    assert_eq!(listed["result"]["isError"], false, "{listed}");

    // The same over HTTP, straight at /mcp with the token.
    let http = Http::open(&daemon).await;
    let answer = http
        .tool(2, "ask_agent", json!({"agent": "nobody", "job": "x"}))
        .await;
    assert_tool_error(&answer, "no agent named");
    let answer = http
        .tool(
            3,
            "ask_agent",
            json!({"agent": "researcher", "job": "x".repeat(10 * 1024 * 1024)}),
        )
        .await;
    assert_tool_error(&answer, "job is 10485760 bytes");
    let garbage = http.post(b"{not json".to_vec()).await;
    assert!(garbage.status().is_client_error(), "{}", garbage.status());
    let body = garbage.text().await.unwrap();
    assert!(body.contains("deserialize"), "{body}");
    // Bigger than /mcp takes at all: refused whole (413) on its declared length, before a
    // byte of the body is read (none is sent here), and the connection is closed after it.
    let giant = declared_only(&daemon, 17 * 1024 * 1024).await;
    assert!(giant.starts_with("HTTP/1.1 413"), "{giant}");
    assert!(
        giant.to_ascii_lowercase().contains("connection: close"),
        "a 413 must close its connection: {giant}"
    );
    assert_eq!(task_count(&daemon).await, 1);
    let answer = http.tool(4, "list_agents", json!({})).await;
    assert_eq!(answer["result"]["isError"], false, "{answer}");
    drop(relay);
    mock.assert_clean();
    daemon.stop();
}

/// Sends only the head of a `POST /mcp` declaring `length` body bytes, and reads the
/// answer to the end (the daemon must answer without the body and close).
async fn declared_only(daemon: &TestDaemon, length: usize) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let url = reqwest::Url::parse(&daemon.url("/mcp")).unwrap();
    let authority = format!("{}:{}", url.host_str().unwrap(), url.port().unwrap());
    let mut stream = tokio::net::TcpStream::connect(&authority).await.unwrap();
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {authority}\r\ncontent-type: application/json\r\n\
         content-length: {length}\r\n\r\n"
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    let mut answer = Vec::new();
    tokio::time::timeout(
        std::time::Duration::from_secs(30),
        stream.read_to_end(&mut answer),
    )
    .await
    .expect("the daemon waited for a body it should have refused")
    .unwrap();
    String::from_utf8_lossy(&answer).into_owned()
}

/// A session on `/mcp` over TCP.
pub struct Http {
    client: reqwest::Client,
    url: String,
    session: String,
}

impl Http {
    pub async fn open(daemon: &TestDaemon) -> Http {
        let mut http = Http {
            client: daemon.http.clone(),
            url: daemon.url("/mcp"),
            session: String::new(),
        };
        let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "raw", "version": "1"}}});
        let response = http.post(init.to_string().into_bytes()).await;
        assert_eq!(response.status(), 200);
        http.session = response.headers()["mcp-session-id"]
            .to_str()
            .unwrap()
            .to_owned();
        let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        assert_eq!(http.post(note.to_string().into_bytes()).await.status(), 202);
        http
    }

    pub async fn post(&self, body: Vec<u8>) -> reqwest::Response {
        let mut request = self
            .client
            .post(&self.url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(body);
        if !self.session.is_empty() {
            request = request
                .header("mcp-session-id", &self.session)
                .header("mcp-protocol-version", "2025-06-18");
        }
        request.send().await.unwrap()
    }

    /// The JSON-RPC answer to a `tools/call` (the last SSE message).
    pub async fn tool(&self, id: i64, name: &str, arguments: Value) -> Value {
        let call = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": name, "arguments": arguments}});
        let response = self.post(call.to_string().into_bytes()).await;
        let text = response.text().await.unwrap();
        sse_messages(&text)
            .into_iter()
            .find(|m| m["id"] == id)
            .unwrap_or_else(|| panic!("no answer in {text}"))
    }
}

/// The JSON-RPC messages of an SSE (or plain JSON) body.
pub fn sse_messages(text: &str) -> Vec<Value> {
    if let Ok(message) = serde_json::from_str::<Value>(text) {
        return vec![message];
    }
    text.lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .filter_map(|d| serde_json::from_str(d.trim()).ok())
        .collect()
}
