//! The receivers the notification tests send to, all real servers on loopback:
//! [`Receiver`] (an HTTP endpoint for webhooks, ntfy and Web Push failures, answering as
//! scripted: a status, or hanging), [`PushService`] (npm `web-push-testing`, a mock push
//! service that checks the VAPID JWT and decrypts what it receives) and [`SmtpSink`] (PyPI
//! `aiosmtpd`). A missing package fails the test saying how to install it.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use crate::{KillOnDrop, mcp_servers, wait_for};

/// How the receiver answers one request.
#[derive(Debug, Clone, Copy)]
pub enum Answer {
    Status(u16),
    /// Accepts the request and never answers.
    Hang,
}

/// One request the receiver got.
#[derive(Debug, Clone)]
pub struct Received {
    /// When it arrived (Unix ms, the clock events' `at_ms` use).
    pub at_ms: i64,
    pub path: String,
    pub headers: HeaderMap,
    pub body: Bytes,
}

impl Received {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap()
    }
}

#[derive(Default)]
struct Shared {
    script: Mutex<VecDeque<Answer>>,
    fallback: Mutex<Option<Answer>>,
    received: Mutex<Vec<Received>>,
}

/// An HTTP receiver on `127.0.0.1:0`: records every request, answers as scripted (then the
/// fallback, 201 unless set).
pub struct Receiver {
    pub addr: SocketAddr,
    shared: Arc<Shared>,
    server: tokio::task::JoinHandle<()>,
}

impl Receiver {
    pub async fn start() -> Receiver {
        Receiver::start_on("127.0.0.1:0").await
    }

    /// On a given address (a restarted receiver keeps its port).
    pub async fn start_on(addr: &str) -> Receiver {
        let shared = Arc::new(Shared::default());
        let router = Router::new().fallback(receive).with_state(shared.clone());
        let listener = tokio::net::TcpListener::bind(addr).await.unwrap();
        let addr = listener.local_addr().unwrap();
        let server = tokio::spawn(async move {
            axum::serve(listener, router).await.unwrap();
        });
        Receiver {
            addr,
            shared,
            server,
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// Answers the next requests so, in order.
    pub fn script(&self, answers: &[Answer]) {
        self.shared.script.lock().unwrap().extend(answers);
    }

    /// What every request gets once the script is used up.
    pub fn set_fallback(&self, answer: Answer) {
        *self.shared.fallback.lock().unwrap() = Some(answer);
    }

    pub fn received(&self) -> Vec<Received> {
        self.shared.received.lock().unwrap().clone()
    }

    /// Waits until at least `n` requests came.
    pub async fn wait_for(&self, n: usize, deadline: Duration) -> Vec<Received> {
        wait_for(
            deadline,
            &format!("{n} requests at the receiver"),
            || async {
                let got = self.received();
                (got.len() >= n).then_some(got)
            },
        )
        .await
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        self.server.abort();
    }
}

async fn receive(
    State(shared): State<Arc<Shared>>,
    uri: axum::http::Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let at_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64);
    shared.received.lock().unwrap().push(Received {
        at_ms,
        path: uri.path().to_owned(),
        headers,
        body,
    });
    let next = shared.script.lock().unwrap().pop_front();
    let answer = next
        .or(*shared.fallback.lock().unwrap())
        .unwrap_or(Answer::Status(201));
    match answer {
        Answer::Status(code) => StatusCode::from_u16(code).unwrap().into_response(),
        Answer::Hang => {
            std::future::pending::<()>().await;
            StatusCode::OK.into_response()
        }
    }
}

/// A free port on loopback (bound, then released for a child to take).
pub fn free_port() -> u16 {
    let socket = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    socket.local_addr().unwrap().port()
}

/// npm `web-push-testing`, run in the foreground as our child.
pub struct PushService {
    pub port: u16,
    http: reqwest::Client,
    _child: KillOnDrop,
}

/// A browser's subscription as the push service made it.
#[derive(Debug, Clone)]
pub struct PushSub {
    /// `{"endpoint","keys":{"p256dh","auth"}}`, as a browser's `toJSON()`.
    pub json: Value,
    pub client_hash: String,
}

impl PushService {
    pub async fn start() -> PushService {
        let server = mcp_servers::root().join("node_modules/web-push-testing/src/bin/server.js");
        assert!(
            server.is_file(),
            "{} is missing: run scripts/mcp-servers (scripts/test does) to install \
             web-push-testing",
            server.display()
        );
        let port = free_port();
        let child = Command::new("node")
            .arg(&server)
            .arg(port.to_string())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("node (scripts/test installs it)");
        let service = PushService {
            port,
            http: reqwest::Client::new(),
            _child: KillOnDrop(child),
        };
        wait_for(
            Duration::from_secs(20),
            "web-push-testing to listen",
            || async {
                let status = service
                    .http
                    .post(service.api("/status"))
                    .send()
                    .await
                    .ok()?;
                status.status().is_success().then_some(())
            },
        )
        .await;
        service
    }

    fn api(&self, path: &str) -> String {
        format!("http://localhost:{}{path}", self.port)
    }

    /// The `[notify] allow_hosts` entry that admits this service.
    pub fn allow_entry(&self) -> String {
        format!("localhost:{}", self.port)
    }

    /// Subscribes a "browser" for the daemon's VAPID key.
    pub async fn subscribe(&self, vapid_public_key: &str) -> PushSub {
        let response = self
            .http
            .post(self.api("/subscribe"))
            .json(&json!({"applicationServerKey": vapid_public_key, "userVisibleOnly": "true"}))
            .send()
            .await
            .unwrap();
        let status = response.status();
        let body: Value = response.json().await.unwrap();
        assert!(status.is_success(), "subscribe: {body}");
        let data = &body["data"];
        PushSub {
            json: json!({"endpoint": data["endpoint"], "keys": data["keys"]}),
            client_hash: data["clientHash"].as_str().unwrap().to_owned(),
        }
    }

    /// The decrypted messages the service received for `sub`.
    pub async fn messages(&self, sub: &PushSub) -> Vec<Value> {
        let response = self
            .http
            .post(self.api("/get-notifications"))
            .json(&json!({"clientHash": sub.client_hash}))
            .send()
            .await
            .unwrap();
        let body: Value = response.json().await.unwrap();
        body["data"]["messages"]
            .as_array()
            .cloned()
            .unwrap_or_default()
            .iter()
            .map(|m| serde_json::from_str(m.as_str().unwrap_or("null")).unwrap_or(Value::Null))
            .collect()
    }

    /// Waits until `sub` received at least `n` messages.
    pub async fn wait_messages(&self, sub: &PushSub, n: usize) -> Vec<Value> {
        wait_for(Duration::from_secs(30), &format!("{n} pushes"), || async {
            let got = self.messages(sub).await;
            (got.len() >= n).then_some(got)
        })
        .await
    }

    /// Makes the service answer 410 for `sub` from now on.
    pub async fn expire(&self, sub: &PushSub) {
        let path = format!("/expire-subscription/{}", sub.client_hash);
        let response = self.http.post(self.api(&path)).send().await.unwrap();
        assert!(response.status().is_success());
    }
}

/// PyPI `aiosmtpd` (`tests/src/smtp_sink.py`): the messages it accepted, one JSON line each.
pub struct SmtpSink {
    pub port: u16,
    out: PathBuf,
    _dir: tempfile::TempDir,
    _child: KillOnDrop,
}

impl SmtpSink {
    /// Accepts every message; `refuse`: answers 451 to each.
    pub async fn start(refuse: bool) -> SmtpSink {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("mail.jsonl");
        let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src/smtp_sink.py");
        let mut command = Command::new(mcp_servers::python());
        command.arg(&script).arg(&out);
        if refuse {
            command.arg("--refuse");
        }
        let mut child = command
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let child = KillOnDrop(child);
        let port = tokio::task::spawn_blocking(move || {
            use std::io::BufRead;
            let mut line = String::new();
            std::io::BufReader::new(stdout)
                .read_line(&mut line)
                .unwrap();
            line.trim()
                .strip_prefix("ready ")
                .unwrap_or_else(|| panic!("smtp_sink.py said {line:?}"))
                .parse::<u16>()
                .unwrap()
        })
        .await
        .unwrap();
        SmtpSink {
            port,
            out,
            _dir: dir,
            _child: child,
        }
    }

    pub fn messages(&self) -> Vec<Value> {
        std::fs::read_to_string(&self.out)
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }
}
