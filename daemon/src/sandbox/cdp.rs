//! A thin Chrome DevTools Protocol client: one websocket to one page target, JSON commands
//! by id, events skipped.
//!
//! Why not chromiumoxide: it generates types for the whole protocol (a long compile on two
//! cores) and wants to own the browser's lifecycle, while the box's Chromium belongs to the
//! image (`box-browser` switches profiles, box-start restarts it). The handful of commands
//! the browser tools send (`Page.navigate`, `Runtime.evaluate`, `Input.*`,
//! `Page.captureScreenshot`) are a few lines of JSON each.
//!
//! A [`Page`] is opened per tool call: Chromium restarts on a profile switch or a box
//! restart, and a fresh target lookup never talks to a dead one. The published CDP port
//! demands an IP `Host`, so everything dials `127.0.0.1:<port>`.

use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

use super::BoxError;

/// Longest one command may take (a navigation that hangs is cut here).
const CALL_TIMEOUT: Duration = Duration::from_secs(30);

/// One page target of the box's browser.
pub struct Page {
    ws: WebSocketStream<MaybeTlsStream<TcpStream>>,
    next_id: u64,
}

fn cdp(message: impl Into<String>) -> BoxError {
    BoxError::Browser(message.into())
}

/// Whether the browser answers on `port` (the box's health).
pub async fn answers(http: &reqwest::Client, port: u16) -> bool {
    let url = format!("http://127.0.0.1:{port}/json/version");
    let request = http.get(url).timeout(Duration::from_secs(1)).send().await;
    request.is_ok_and(|r| r.status().is_success())
}

impl Page {
    /// Connects to the browser's first page (the one on screen), opening one if none.
    pub async fn connect(http: &reqwest::Client, port: u16) -> Result<Page, BoxError> {
        let base = format!("http://127.0.0.1:{port}");
        let list: Vec<Value> = http
            .get(format!("{base}/json/list"))
            .timeout(Duration::from_secs(5))
            .send()
            .await
            .map_err(|e| cdp(format!("the browser does not answer: {e}")))?
            .json()
            .await
            .map_err(|e| cdp(format!("the browser's target list: {e}")))?;
        let page = list.into_iter().find(|t| t["type"] == "page");
        let page = match page {
            Some(page) => page,
            None => http
                .put(format!("{base}/json/new?about:blank"))
                .timeout(Duration::from_secs(5))
                .send()
                .await
                .map_err(|e| cdp(format!("cannot open a tab: {e}")))?
                .json()
                .await
                .map_err(|e| cdp(format!("cannot open a tab: {e}")))?,
        };
        let Some(url) = page["webSocketDebuggerUrl"].as_str() else {
            return Err(cdp("the page has no debugger URL"));
        };
        // Chromium names its own 127.0.0.1:9222 inside the container.
        let path = url.split_once("/devtools/").map_or("", |(_, path)| path);
        let ws_url = format!("ws://127.0.0.1:{port}/devtools/{path}");
        let (ws, _) = tokio::time::timeout(
            Duration::from_secs(5),
            tokio_tungstenite::connect_async(ws_url),
        )
        .await
        .map_err(|_| cdp("connecting to the page timed out"))?
        .map_err(|e| cdp(format!("cannot connect to the page: {e}")))?;
        Ok(Page { ws, next_id: 0 })
    }

    /// Sends one command and waits for its result.
    pub async fn call(&mut self, method: &str, params: Value) -> Result<Value, BoxError> {
        self.next_id += 1;
        let id = self.next_id;
        let message = json!({"id": id, "method": method, "params": params}).to_string();
        self.ws
            .send(Message::text(message))
            .await
            .map_err(|e| cdp(format!("{method}: {e}")))?;
        let wait = async {
            while let Some(frame) = self.ws.next().await {
                let frame = frame.map_err(|e| cdp(format!("{method}: {e}")))?;
                let Message::Text(text) = frame else { continue };
                let Ok(reply) = serde_json::from_str::<Value>(&text) else {
                    continue;
                };
                if reply["id"] != id {
                    continue; // an event
                }
                if let Some(error) = reply.get("error") {
                    let message = error["message"].as_str().unwrap_or("failed");
                    return Err(cdp(format!("{method}: {message}")));
                }
                return Ok(reply["result"].clone());
            }
            Err(cdp(format!("{method}: the browser closed the connection")))
        };
        tokio::time::timeout(CALL_TIMEOUT, wait)
            .await
            .map_err(|_| cdp(format!("{method}: no answer within 30 s")))?
    }

    /// Evaluates `expression` in the page (promises awaited) and returns its value.
    pub async fn eval(&mut self, expression: &str) -> Result<Value, BoxError> {
        let result = self
            .call(
                "Runtime.evaluate",
                json!({"expression": expression, "returnByValue": true, "awaitPromise": true}),
            )
            .await?;
        if let Some(details) = result.get("exceptionDetails") {
            let text = details["exception"]["description"]
                .as_str()
                .or_else(|| details["text"].as_str())
                .unwrap_or("the script failed");
            return Err(cdp(format!("in the page: {text}")));
        }
        Ok(result["result"]["value"].clone())
    }

    /// Waits (up to `limit`) until the document has loaded.
    pub async fn settle(&mut self, limit: Duration) -> Result<(), BoxError> {
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            // During a navigation the old context is destroyed: an error here is a retry.
            if let Ok(state) = self.eval("document.readyState").await
                && state == "complete"
            {
                return Ok(());
            }
            if tokio::time::Instant::now() >= deadline {
                return Ok(());
            }
            tokio::time::sleep(Duration::from_millis(30)).await;
        }
    }

    /// A left click at viewport coordinates (CSS pixels), as real mouse events.
    pub async fn click(&mut self, x: f64, y: f64) -> Result<(), BoxError> {
        self.call(
            "Input.dispatchMouseEvent",
            json!({"type": "mouseMoved", "x": x, "y": y}),
        )
        .await?;
        for kind in ["mousePressed", "mouseReleased"] {
            self.call(
                "Input.dispatchMouseEvent",
                json!({"type": kind, "x": x, "y": y, "button": "left", "clickCount": 1}),
            )
            .await?;
        }
        Ok(())
    }

    /// Presses Enter in the focused element (submits a form as a person would).
    pub async fn enter(&mut self) -> Result<(), BoxError> {
        let key = json!({"key": "Enter", "code": "Enter", "windowsVirtualKeyCode": 13,
                          "nativeVirtualKeyCode": 13});
        let mut down = key.clone();
        down["type"] = "keyDown".into();
        down["text"] = "\r".into();
        self.call("Input.dispatchKeyEvent", down).await?;
        let mut up = key;
        up["type"] = "keyUp".into();
        self.call("Input.dispatchKeyEvent", up).await?;
        Ok(())
    }
}
