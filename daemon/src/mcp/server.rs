//! One configured server and its connection.
//!
//! State, under one async mutex per server (so two tasks that need a stopped server start it
//! once, and a call never races a restart): the live connection if any, the last error, and
//! the backoff. [`Server::connection`] returns the live connection or starts one: a
//! connection whose transport closed (the process died, the HTTP session ended) is dropped
//! and started again; a start that fails sets a retry time (1 s, doubling to 60 s), and
//! until then callers get the last error at once instead of a new attempt.

use std::sync::Arc;
use std::time::{Duration, Instant};

use lazyboy_protocol::{McpServerInfo, McpServerState, McpToolInfo};
use rmcp::model::{
    CallToolRequestParams, CancelledNotification, CancelledNotificationParam, ClientNotification,
    ClientRequest, ProgressToken, Request, RequestId, ServerResult,
};
use rmcp::service::{PeerRequestOptions, ServiceError};
use rmcp::{Peer, RoleClient};
use serde_json::Value;

use super::ServerConfig;
use super::adapter;
use super::connect::{Connection, ProgressSink, connect};
use tokio_util::sync::CancellationToken;

use crate::tools::ToolContext;
use crate::tools::task::TaskScope;

const FIRST_BACKOFF: Duration = Duration::from_secs(1);
const MAX_BACKOFF: Duration = Duration::from_secs(60);

pub struct Server {
    pub name: String,
    config: ServerConfig,
    slot: tokio::sync::Mutex<Slot>,
}

#[derive(Default)]
struct Slot {
    conn: Option<Arc<Connection>>,
    /// The last start's or call's failure, while it is the latest news.
    error: Option<String>,
    /// Consecutive failed starts.
    failures: u32,
    retry_at: Option<Instant>,
    /// Successful starts so far (more than one: it was restarted).
    starts: u32,
    /// The tools of the last good connection.
    tools: Vec<Value>,
}

impl Server {
    pub fn new(name: &str, config: ServerConfig) -> Server {
        Server {
            name: name.to_owned(),
            config,
            slot: tokio::sync::Mutex::new(Slot::default()),
        }
    }

    pub fn config(&self) -> &ServerConfig {
        &self.config
    }

    /// The live connection, started (or restarted) if need be.
    async fn connection(&self) -> Result<Arc<Connection>, String> {
        let mut slot = self.slot.lock().await;
        if let Some(conn) = &slot.conn {
            if conn.alive() {
                return Ok(conn.clone());
            }
            tracing::warn!(server = %self.name, "MCP server connection closed; restarting it");
            slot.conn = None;
        }
        if let Some(retry_at) = slot.retry_at {
            let now = Instant::now();
            if now < retry_at {
                let error = slot.error.clone().unwrap_or_default();
                return Err(format!(
                    "MCP server {} failed to start: {error} (next try in {} s)",
                    self.name,
                    (retry_at - now).as_secs() + 1
                ));
            }
        }
        let limit = Duration::from_secs(self.config.startup_timeout_secs.unwrap_or(60).max(1));
        let started = Instant::now();
        let result = match tokio::time::timeout(limit, connect(&self.name, &self.config)).await {
            Ok(result) => result,
            Err(_) => Err(format!("no answer within {} s", limit.as_secs())),
        };
        match result {
            Ok(conn) => {
                let conn = Arc::new(conn);
                tracing::info!(server = %self.name, pid = ?conn.pid, tools = conn.tools.len(),
                    took_ms = started.elapsed().as_millis() as u64, "MCP server started");
                slot.tools = conn.tools.clone();
                slot.conn = Some(conn.clone());
                slot.error = None;
                slot.failures = 0;
                slot.retry_at = None;
                slot.starts += 1;
                Ok(conn)
            }
            Err(error) => {
                slot.failures += 1;
                let backoff = FIRST_BACKOFF
                    .saturating_mul(1 << slot.failures.min(7).saturating_sub(1))
                    .min(MAX_BACKOFF);
                slot.retry_at = Some(Instant::now() + backoff);
                slot.error = Some(error.clone());
                tracing::warn!(server = %self.name, %error, retry_in_ms = backoff.as_millis() as u64,
                    "MCP server failed to start");
                Err(format!("MCP server {} failed to start: {error}", self.name))
            }
        }
    }

    /// The server's tools (each as its JSON), starting it if need be.
    pub async fn tools(&self) -> Result<Vec<Value>, String> {
        Ok(self.connection().await?.tools.clone())
    }

    /// Calls `tool`; the result is the server's `CallToolResult` as JSON. Times out after
    /// the call timeout; when the task is stopped or the call times out, the server is sent
    /// `notifications/cancelled`. Progress becomes heartbeats in `ctx`'s task.
    pub async fn call(
        &self,
        tool: &str,
        arguments: Value,
        ctx: &ToolContext,
    ) -> Result<Value, String> {
        self.call_with(tool, arguments, Some(ctx.scope.clone()), &ctx.cancel)
            .await
    }

    /// [`Server::call`] outside a task (benchmarks, checks): progress goes to `scope` if
    /// given, `cancel` stops the call.
    pub async fn call_with(
        &self,
        tool: &str,
        arguments: Value,
        scope: Option<Arc<dyn TaskScope>>,
        cancel: &CancellationToken,
    ) -> Result<Value, String> {
        let conn = self.connection().await?;
        let mut params = CallToolRequestParams::new(tool.to_owned());
        if let Value::Object(map) = arguments {
            params = params.with_arguments(map);
        }
        let peer = conn.service.peer();
        let handle = peer
            .send_request_with_option(
                ClientRequest::CallToolRequest(Request::new(params)),
                PeerRequestOptions::no_options(),
            )
            .await
            .map_err(|e| self.lost(&conn, &e))?;
        let token = handle.progress_token.clone();
        let id = handle.id.clone();
        if let (Some(scope), Ok(mut sinks)) = (scope, conn.progress.lock()) {
            sinks.insert(
                token.clone(),
                ProgressSink {
                    scope,
                    operation: adapter::tool_name(&self.name, tool),
                    started: Instant::now(),
                    last: None,
                },
            );
        }
        // Sends notifications/cancelled unless the answer arrives: the task may be stopped
        // (its token fires) or its loop may drop this future; both are covered.
        let mut guard = CancelOnDrop {
            peer: peer.clone(),
            id: Some(id),
            why: "the task was stopped",
        };
        let limit = Duration::from_secs(self.config.call_timeout_secs.unwrap_or(300).max(1));
        let outcome = tokio::select! {
            response = tokio::time::timeout(limit, handle.await_response()) => response.ok(),
            () = cancel.cancelled() => {
                drop(guard);
                forget_progress(&conn, &token);
                return Err("cancelled: the task was stopped (the server was told)".to_owned());
            }
        };
        forget_progress(&conn, &token);
        let Some(response) = outcome else {
            guard.why = "timed out";
            drop(guard);
            return Err(format!(
                "MCP server {} did not answer within {} s (the call was cancelled)",
                self.name,
                limit.as_secs()
            ));
        };
        guard.id = None;
        match response {
            Ok(ServerResult::CallToolResult(result)) => {
                serde_json::to_value(result).map_err(|e| e.to_string())
            }
            Ok(_) => Err(format!(
                "MCP server {} answered tools/call with something that is not a tool result",
                self.name
            )),
            Err(error) => Err(self.lost(&conn, &error)),
        }
    }

    /// An error of a call, for the model; a lost transport marks the connection dead.
    fn lost(&self, conn: &Connection, error: &ServiceError) -> String {
        if matches!(
            error,
            ServiceError::TransportClosed | ServiceError::TransportSend(_)
        ) {
            conn.lost.store(true, std::sync::atomic::Ordering::SeqCst);
        }
        match error {
            ServiceError::McpError(e) => {
                format!("MCP server {} refused the call: {}", self.name, e.message)
            }
            ServiceError::TransportClosed | ServiceError::TransportSend(_) => format!(
                "MCP server {} went away during the call ({error}); it is restarted at the \
                 next call",
                self.name
            ),
            other => format!("MCP server {}: {other}", self.name),
        }
    }

    /// `lazyboy mcp test`: connects now (ignoring the backoff) and lists the tools again.
    pub async fn test(&self) -> McpServerInfo {
        self.slot.lock().await.retry_at = None;
        match self.connection().await {
            Ok(conn) => {
                if let Err(error) = conn.service.peer().list_all_tools().await {
                    self.slot.lock().await.error = Some(format!("tools/list failed: {error}"));
                }
            }
            Err(error) => tracing::debug!(server = %self.name, %error, "MCP test failed"),
        }
        self.info().await
    }

    /// What `lazyboy mcp ls` shows.
    pub async fn info(&self) -> McpServerInfo {
        let slot = self.slot.lock().await;
        let live = slot.conn.as_ref().filter(|c| c.alive());
        let state = match (&live, &slot.error, slot.starts) {
            (Some(_), _, _) => McpServerState::Running,
            (None, Some(_), _) => McpServerState::Failed,
            (None, None, 0) => McpServerState::NotStarted,
            (None, None, _) => McpServerState::Stopped,
        };
        let (transport, target) = match (&self.config.command, &self.config.url) {
            (Some(command), _) => {
                let mut line = command.clone();
                for arg in &self.config.args {
                    line.push(' ');
                    line.push_str(arg);
                }
                ("stdio", line)
            }
            (None, Some(url)) => ("http", url.clone()),
            (None, None) => ("none", String::new()),
        };
        McpServerInfo {
            name: self.name.clone(),
            transport: transport.to_owned(),
            target,
            state,
            error: slot.error.clone(),
            pid: live.and_then(|c| c.pid),
            restarts: slot.starts.saturating_sub(1),
            tools: slot
                .tools
                .iter()
                .map(|tool| {
                    let name = tool["name"].as_str().unwrap_or_default();
                    McpToolInfo {
                        name: name.to_owned(),
                        registered_as: adapter::tool_name(&self.name, name),
                        description: tool["description"].as_str().unwrap_or_default().to_owned(),
                        read_only: adapter::read_only(tool),
                    }
                })
                .collect(),
        }
    }

    /// Stops the server: the connection is cancelled (rmcp closes the child's stdin), and
    /// whatever is left of its process group after a short grace is killed.
    pub async fn stop(&self) {
        // A start in progress holds the slot (up to its startup timeout): do not wait for
        // it at shutdown; its child is killed when the abandoned start is dropped.
        let Ok(mut slot) = tokio::time::timeout(Duration::from_secs(2), self.slot.lock()).await
        else {
            tracing::warn!(server = %self.name, "MCP server still starting at shutdown");
            return;
        };
        let Some(conn) = slot.conn.take() else {
            return;
        };
        drop(slot);
        conn.service.cancellation_token().cancel();
        let deadline = Instant::now() + Duration::from_millis(1500);
        while !conn.service.is_closed() && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        if let Some(pid) = conn.pid.and_then(|p| i32::try_from(p).ok()) {
            // The group is the server's own (it leads it); gone already is fine.
            let _ = nix::sys::signal::killpg(
                nix::unistd::Pid::from_raw(pid),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
        tracing::info!(server = %self.name, "MCP server stopped");
    }
}

fn forget_progress(conn: &Connection, token: &ProgressToken) {
    if let Ok(mut sinks) = conn.progress.lock() {
        sinks.remove(token);
    }
}

/// Tells the server to stop working on request `id` when dropped armed (a spawned send:
/// a drop cannot wait).
struct CancelOnDrop {
    peer: Peer<RoleClient>,
    id: Option<RequestId>,
    why: &'static str,
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        let Some(id) = self.id.take() else { return };
        let peer = self.peer.clone();
        let note = CancelledNotification::new(CancelledNotificationParam::new(
            Some(id),
            Some(self.why.to_owned()),
        ));
        tokio::spawn(async move {
            if let Err(error) = peer
                .send_notification(ClientNotification::CancelledNotification(note))
                .await
            {
                tracing::debug!(%error, "cannot send notifications/cancelled");
            }
        });
    }
}
