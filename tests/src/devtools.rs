//! Chromium's DevTools protocol spoken directly over its browser websocket (the port
//! chromedriver opened, read from `DevToolsActivePort` in the profile), for what
//! chromedriver's `goog/cdp/execute` cannot do: commands to another target (a service
//! worker, through a flattened session) and the events they report.

use std::path::Path;
use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::Message;

use crate::wait_for;

type Socket =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

pub struct Devtools {
    socket: Socket,
    next: u64,
    /// Events seen while waiting for answers, oldest first.
    pub events: Vec<Value>,
}

impl Devtools {
    /// Connects to the browser whose `--user-data-dir` is `profile`.
    pub async fn connect(profile: &Path) -> Devtools {
        let file = profile.join("DevToolsActivePort");
        let text = wait_for(Duration::from_secs(20), "DevToolsActivePort", || async {
            std::fs::read_to_string(&file)
                .ok()
                .filter(|t| t.lines().count() >= 2)
        })
        .await;
        let mut lines = text.lines();
        let port = lines.next().unwrap().trim();
        let path = lines.next().unwrap().trim();
        let (socket, _) = tokio_tungstenite::connect_async(format!("ws://127.0.0.1:{port}{path}"))
            .await
            .unwrap();
        Devtools {
            socket,
            next: 1,
            events: Vec::new(),
        }
    }

    /// Sends `method` (to `session`, else the browser) and returns its result.
    pub async fn send(&mut self, session: Option<&str>, method: &str, params: Value) -> Value {
        let id = self.next;
        self.next += 1;
        let mut message = json!({"id": id, "method": method, "params": params});
        if let Some(session) = session {
            message["sessionId"] = json!(session);
        }
        self.socket
            .send(Message::text(message.to_string()))
            .await
            .unwrap();
        loop {
            let frame = tokio::time::timeout(Duration::from_secs(20), self.socket.next())
                .await
                .unwrap_or_else(|_| panic!("no answer to {method}"))
                .unwrap()
                .unwrap();
            let Message::Text(text) = frame else { continue };
            let value: Value = serde_json::from_str(&text).unwrap();
            if value["id"] == id {
                assert!(value.get("error").is_none(), "{method}: {value}");
                return value["result"].clone();
            }
            self.events.push(value);
        }
    }

    /// The first event (seen or still to come, within 20 s) that `found` picks something
    /// out of.
    pub async fn wait_event<T>(&mut self, mut found: impl FnMut(&Value) -> Option<T>) -> T {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
        let mut seen = 0;
        loop {
            while seen < self.events.len() {
                if let Some(hit) = found(&self.events[seen]) {
                    return hit;
                }
                seen += 1;
            }
            let frame = tokio::time::timeout_at(deadline, self.socket.next())
                .await
                .unwrap_or_else(|_| panic!("no such event in 20 s: {:?}", self.events))
                .unwrap()
                .unwrap();
            if let Message::Text(text) = frame {
                self.events.push(serde_json::from_str(&text).unwrap());
            }
        }
    }

    /// Evaluates `expression` (awaiting a promise) in `session`; its value.
    pub async fn eval(&mut self, session: &str, expression: &str) -> Value {
        let result = self
            .send(
                Some(session),
                "Runtime.evaluate",
                json!({"expression": expression, "awaitPromise": true, "returnByValue": true}),
            )
            .await;
        assert!(
            result.get("exceptionDetails").is_none(),
            "{expression}: {result}"
        );
        result["result"]["value"].clone()
    }

    /// A flattened session on the first target of `kind` whose URL contains `url`.
    pub async fn attach(&mut self, kind: &str, url: &str) -> String {
        let targets = self.send(None, "Target.getTargets", json!({})).await;
        let target = targets["targetInfos"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["type"] == kind && t["url"].as_str().unwrap_or("").contains(url))
            .unwrap_or_else(|| panic!("no {kind} target at {url}: {targets}"))
            .clone();
        let attached = self
            .send(
                None,
                "Target.attachToTarget",
                json!({"targetId": target["targetId"], "flatten": true}),
            )
            .await;
        attached["sessionId"].as_str().unwrap().to_owned()
    }
}
