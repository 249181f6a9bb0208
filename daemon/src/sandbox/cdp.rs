//! A thin Chrome DevTools Protocol client over the box's one CDP path (`port.rs`: `docker
//! exec … box-port cdp`, NUL-ended JSON to the browser target, as Chromium's
//! `--remote-debugging-pipe` speaks it).
//!
//! Why not chromiumoxide: it generates types for the whole protocol (a long compile on two
//! cores) and wants to own the browser's lifecycle, while the box's Chromium belongs to the
//! image (`box-browser` switches profiles, box-start restarts it). The handful of commands
//! the browser tools send (`Page.navigate`, `Runtime.evaluate`, `Input.*`,
//! `Page.captureScreenshot`) are a few lines of JSON each.
//!
//! One [`Browser`] connection is kept per running box (opening one is a `docker exec`, about
//! 70 ms here) and shared by every caller: commands carry ids, one reader task hands each
//! reply to its caller, events are skipped. A [`Page`] is a session on it, attached per tool
//! call to the first page target (`Target.attachToTarget`, flatten) and detached when
//! dropped: Chromium restarts on a profile switch or a box restart, which ends the
//! connection (box-relay exits with its Chromium), and the next caller opens a new one.

use std::collections::HashMap;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use bytes::BytesMut;
use serde_json::{Value, json};
use tokio::io::{AsyncWrite, AsyncWriteExt};
use tokio::sync::oneshot;
use tokio_util::sync::{CancellationToken, DropGuard};

use super::BoxError;
use super::port::{self, Reader, Service};

/// Longest one command may take (a navigation that hangs is cut here).
const CALL_TIMEOUT: Duration = Duration::from_secs(30);
/// Longest the target lookup and attach may take.
const ATTACH_TIMEOUT: Duration = Duration::from_secs(5);
/// A message larger than this ends the connection (a big page's screenshot is a few MB).
const MESSAGE_CAP: usize = 256 << 20;

fn cdp(message: impl Into<String>) -> BoxError {
    BoxError::Browser(message.into())
}

type Reply = Result<Value, BoxError>;

/// What the reader task and the callers share.
#[derive(Default)]
struct Shared {
    pending: Mutex<HashMap<u64, oneshot::Sender<Reply>>>,
    closed: AtomicBool,
    /// Why the connection ended, for the callers' errors.
    why: Mutex<String>,
}

impl Shared {
    fn pending(&self) -> std::sync::MutexGuard<'_, HashMap<u64, oneshot::Sender<Reply>>> {
        self.pending.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn closed_error(&self) -> BoxError {
        let why = self.why.lock().unwrap_or_else(PoisonError::into_inner);
        cdp(format!("the browser does not answer ({why})"))
    }

    /// Marks the connection closed and fails everyone still waiting. Closed is set first, so
    /// a caller that registers after the drain sees it and does not wait.
    fn close(&self, why: String) {
        *self.why.lock().unwrap_or_else(PoisonError::into_inner) = why;
        self.closed.store(true, Ordering::SeqCst);
        let waiting: Vec<_> = self.pending().drain().collect();
        for (_, waiter) in waiting {
            let _ = waiter.send(Err(self.closed_error()));
        }
    }

    fn dispatch(&self, frame: &[u8]) {
        let Ok(reply) = serde_json::from_slice::<Value>(frame) else {
            return;
        };
        let Some(id) = reply.get("id").and_then(Value::as_u64) else {
            return; // an event
        };
        if let Some(waiter) = self.pending().remove(&id) {
            let _ = waiter.send(Ok(reply));
        }
    }
}

/// Reads NUL-ended messages until the stream ends or the connection is dropped.
async fn read(mut reader: Reader, shared: Arc<Shared>, stop: CancellationToken) {
    let mut buf = BytesMut::new();
    let why = loop {
        let chunk = tokio::select! {
            () = stop.cancelled() => break "closed by the daemon".to_owned(),
            chunk = reader.next() => chunk,
        };
        let bytes = match chunk {
            Some(Ok(bytes)) => bytes,
            Some(Err(error)) => break error.to_string(),
            None => {
                let said = reader.complaint();
                break if said.is_empty() {
                    "the connection to box-relay ended".to_owned()
                } else {
                    said
                };
            }
        };
        // Only the new bytes are searched: a message of several MB comes in many chunks.
        let mut from = buf.len();
        buf.extend_from_slice(&bytes);
        while let Some(at) = buf[from..].iter().position(|b| *b == 0) {
            let frame = buf.split_to(from + at + 1);
            shared.dispatch(&frame[..frame.len() - 1]);
            from = 0;
        }
        if buf.len() > MESSAGE_CAP {
            break "a message from the browser was too large".to_owned();
        }
    };
    shared.close(why);
}

/// One connection to the box's browser, shared by every caller.
pub struct Browser {
    container: String,
    writer: tokio::sync::Mutex<Pin<Box<dyn AsyncWrite + Send>>>,
    shared: Arc<Shared>,
    next_id: AtomicU64,
    /// Stops the reader when the last user lets go: the exec's stream is then dropped whole,
    /// which closes `box-port`'s stdin.
    _stop: DropGuard,
}

impl Browser {
    /// Opens `box-port cdp` in container `id`. It may still fail at the first call (box-relay
    /// not up yet): the error then says what `box-port` said.
    pub async fn connect(docker: &bollard::Docker, id: &str) -> Result<Arc<Browser>, BoxError> {
        let port = port::open(docker, id, Service::Cdp).await?;
        let shared = Arc::new(Shared::default());
        let stop = CancellationToken::new();
        tokio::spawn(read(port.reader, shared.clone(), stop.clone()));
        Ok(Arc::new(Browser {
            container: id.to_owned(),
            writer: tokio::sync::Mutex::new(port.writer),
            shared,
            next_id: AtomicU64::new(0),
            _stop: stop.drop_guard(),
        }))
    }

    /// The container this connection goes to.
    pub fn container(&self) -> &str {
        &self.container
    }

    /// Whether the connection still stands (it ends with its Chromium).
    pub fn is_open(&self) -> bool {
        !self.shared.closed.load(Ordering::SeqCst)
    }

    /// Whether the browser answers now (the box's health).
    pub async fn answers(&self) -> bool {
        let limit = Duration::from_secs(2);
        let version = self.call(None, "Browser.getVersion", json!({}), limit);
        version.await.is_ok()
    }

    /// Sends one command (to `session`, else to the browser) and waits for its result.
    pub async fn call(
        &self,
        session: Option<&str>,
        method: &str,
        params: Value,
        limit: Duration,
    ) -> Result<Value, BoxError> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed) + 1;
        let (tx, rx) = oneshot::channel();
        self.shared.pending().insert(id, tx);
        if !self.is_open() {
            self.shared.pending().remove(&id);
            return Err(self.shared.closed_error());
        }
        let mut message = json!({"id": id, "method": method, "params": params});
        if let Some(session) = session {
            message["sessionId"] = session.into();
        }
        let mut bytes = message.to_string().into_bytes();
        bytes.push(0);
        let sent = async {
            let mut writer = self.writer.lock().await;
            writer.write_all(&bytes).await?;
            writer.flush().await
        };
        if let Err(error) = sent.await {
            self.shared.pending().remove(&id);
            return Err(cdp(format!("{method}: {error}")));
        }
        let reply = match tokio::time::timeout(limit, rx).await {
            Ok(Ok(reply)) => reply?,
            Ok(Err(_)) => return Err(self.shared.closed_error()),
            Err(_) => {
                self.shared.pending().remove(&id);
                return Err(cdp(format!(
                    "{method}: no answer within {} s",
                    limit.as_secs()
                )));
            }
        };
        if let Some(error) = reply.get("error") {
            let message = error["message"].as_str().unwrap_or("failed");
            return Err(cdp(format!("{method}: {message}")));
        }
        Ok(reply.get("result").cloned().unwrap_or(Value::Null))
    }
}

/// One page target of the box's browser: a session on the shared connection.
pub struct Page {
    browser: Arc<Browser>,
    session: String,
}

impl Page {
    /// Attaches to the browser's first page (the one on screen), opening one if none.
    pub async fn open(browser: Arc<Browser>) -> Result<Page, BoxError> {
        let targets = browser
            .call(None, "Target.getTargets", json!({}), ATTACH_TIMEOUT)
            .await?;
        let first = targets["targetInfos"]
            .as_array()
            .and_then(|list| list.iter().find(|t| t["type"] == "page"))
            .and_then(|t| t["targetId"].as_str())
            .map(str::to_owned);
        let target = match first {
            Some(target) => target,
            None => {
                let params = json!({"url": "about:blank"});
                let made = browser
                    .call(None, "Target.createTarget", params, ATTACH_TIMEOUT)
                    .await
                    .map_err(|e| cdp(format!("cannot open a tab: {e}")))?;
                made["targetId"]
                    .as_str()
                    .ok_or_else(|| cdp("the new tab has no id"))?
                    .to_owned()
            }
        };
        let params = json!({"targetId": target, "flatten": true});
        let attached = browser
            .call(None, "Target.attachToTarget", params, ATTACH_TIMEOUT)
            .await?;
        let session = attached["sessionId"]
            .as_str()
            .ok_or_else(|| cdp("attaching to the page gave no session"))?
            .to_owned();
        Ok(Page { browser, session })
    }

    /// Sends one command to the page and waits for its result.
    pub async fn call(&mut self, method: &str, params: Value) -> Result<Value, BoxError> {
        self.browser
            .call(Some(&self.session), method, params, CALL_TIMEOUT)
            .await
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

impl Drop for Page {
    /// Detaches the session, so a long-lived connection does not collect them.
    fn drop(&mut self) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let (browser, session) = (self.browser.clone(), std::mem::take(&mut self.session));
        runtime.spawn(async move {
            let params = json!({"sessionId": session});
            let detach = browser.call(None, "Target.detachFromTarget", params, ATTACH_TIMEOUT);
            let _ = detach.await;
        });
    }
}
