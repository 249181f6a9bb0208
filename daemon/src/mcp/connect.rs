//! Opening one connection to a server: the transport, the handshake (`initialize`), and the
//! tool list. Also the client-side handler rmcp calls for what the server sends unasked:
//! progress notifications (a heartbeat in the calling task). What a server writes to
//! stderr goes to the daemon's log (MCP's own logging notifications are deprecated).

use std::collections::HashMap;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::http::{HeaderName, HeaderValue};
use lazyboy_protocol::EventBody;
use process_wrap::tokio::{CommandWrap, KillOnDrop, ProcessGroup};
use rmcp::model::{
    ClientCapabilities, ClientConfig, Implementation, ProgressNotificationParam, ProgressToken,
};
use rmcp::service::{NotificationContext, RunningService};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use serde_json::Value;
use tokio::io::AsyncBufReadExt;

use super::ServerConfig;
use crate::tools::task::TaskScope;

/// Where progress of one running call goes.
pub(super) struct ProgressSink {
    pub scope: Arc<dyn TaskScope>,
    /// `mcp__<server>__<tool>`, for the heartbeat's operation.
    pub operation: String,
    pub started: Instant,
    /// The last heartbeat recorded, so a chatty server gives at most one per second.
    pub last: Option<Instant>,
}

/// The client side of one connection.
pub(super) struct Handler {
    pub progress: Arc<Mutex<HashMap<ProgressToken, ProgressSink>>>,
}

impl ClientHandler for Handler {
    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("lazyboy", env!("CARGO_PKG_VERSION")),
        )
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let Ok(mut sinks) = self.progress.lock() else {
            return;
        };
        let Some(sink) = sinks.get_mut(&params.progress_token) else {
            return;
        };
        if sink
            .last
            .is_some_and(|at| at.elapsed() < Duration::from_secs(1))
        {
            return;
        }
        sink.last = Some(Instant::now());
        let done = match params.total {
            Some(total) => format!("{}/{total}", params.progress),
            None => params.progress.to_string(),
        };
        let operation = match &params.message {
            Some(message) => format!("{} ({done}: {message})", sink.operation),
            None => format!("{} ({done})", sink.operation),
        };
        let body = EventBody::Heartbeat {
            operation,
            elapsed_ms: sink.started.elapsed().as_millis() as u64,
        };
        let scope = sink.scope.clone();
        // Recorded off the connection's message loop, which must keep reading.
        tokio::spawn(async move {
            if let Err(error) = scope.record(body).await {
                tracing::debug!(%error, "cannot record an MCP progress heartbeat");
            }
        });
    }
}

/// A live connection.
pub(super) struct Connection {
    pub service: RunningService<RoleClient, Handler>,
    pub progress: Arc<Mutex<HashMap<ProgressToken, ProgressSink>>>,
    /// `tools/list`, as the server answered it at start (each tool as its JSON).
    pub tools: Vec<Value>,
    pub pid: Option<u32>,
    /// Set when a call found the transport gone: rmcp may take a moment to see it closed,
    /// and the next call must not wait for that.
    pub lost: AtomicBool,
}

impl Connection {
    /// Whether the connection can take calls.
    pub fn alive(&self) -> bool {
        !self.lost.load(Ordering::SeqCst) && !self.service.is_closed()
    }
}

/// Starts the server (or connects to it), runs `initialize`, lists its tools.
pub(super) async fn connect(name: &str, config: &ServerConfig) -> Result<Connection, String> {
    let progress = Arc::new(Mutex::new(HashMap::new()));
    let handler = Handler {
        progress: progress.clone(),
    };
    let (service, pid) = if let Some(command) = &config.command {
        let (transport, pid) = spawn(name, command, config)?;
        let service = handler
            .serve(transport)
            .await
            .map_err(|e| format!("the MCP handshake with `{command}` failed: {e}"))?;
        (service, pid)
    } else if let Some(url) = &config.url {
        let transport = StreamableHttpClientTransport::from_config(http_config(url, config)?);
        let service = handler
            .serve(transport)
            .await
            .map_err(|e| format!("the MCP handshake with {url} failed: {e}"))?;
        (service, None)
    } else {
        return Err("neither `command` nor `url` is set".to_owned());
    };
    let tools = service
        .peer()
        .list_all_tools()
        .await
        .map_err(|e| format!("tools/list failed: {e}"))?;
    let tools = tools
        .into_iter()
        .filter_map(|tool| serde_json::to_value(tool).ok())
        .collect();
    Ok(Connection {
        service,
        progress,
        tools,
        pid,
        lost: AtomicBool::new(false),
    })
}

/// The child: its own process group (so a stop reaches whatever it spawned), killed when the
/// transport is dropped, stderr piped into the log, secrets withheld from its environment.
fn spawn(
    name: &str,
    command: &str,
    config: &ServerConfig,
) -> Result<(TokioChildProcess, Option<u32>), String> {
    let mut cmd = tokio::process::Command::new(command);
    cmd.args(&config.args);
    for (key, _) in std::env::vars_os() {
        let Some(key) = key.to_str() else { continue };
        if crate::secret_env::is_secret(key) && !config.pass_env.iter().any(|p| p == key) {
            cmd.env_remove(key);
        }
    }
    cmd.envs(&config.env);
    if let Some(cwd) = &config.cwd {
        cmd.current_dir(cwd);
    }
    let mut wrap = CommandWrap::from(cmd);
    wrap.wrap(ProcessGroup::leader()).wrap(KillOnDrop);
    // Tracked: the daemon reaps the zombies it adopted, never its own children's.
    let (transport, stderr) = crate::confine::reaper::track(
        || {
            TokioChildProcess::builder(wrap)
                .stderr(Stdio::piped())
                .spawn()
        },
        |(transport, _)| transport.id(),
    )
    .map_err(|e| format!("cannot start `{command}`: {e}"))?;
    let pid = transport.id();
    if let Some(stderr) = stderr {
        let server = name.to_owned();
        tokio::spawn(async move {
            let mut lines = tokio::io::BufReader::new(stderr).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                tracing::info!(target: "mcp", server = %server, "stderr: {line}");
            }
        });
    }
    Ok((transport, pid))
}

/// The HTTP transport's settings: the URL, the configured headers, the bearer token read
/// from its variable now (never stored).
fn http_config(
    url: &str,
    config: &ServerConfig,
) -> Result<StreamableHttpClientTransportConfig, String> {
    let mut headers = HashMap::new();
    for (key, value) in &config.headers {
        let key =
            HeaderName::try_from(key.as_str()).map_err(|e| format!("header name {key:?}: {e}"))?;
        let value =
            HeaderValue::try_from(value.as_str()).map_err(|e| format!("header {key}: {e}"))?;
        headers.insert(key, value);
    }
    let mut transport = StreamableHttpClientTransportConfig::with_uri(url).custom_headers(headers);
    if let Some(var) = &config.bearer_token_env {
        let token = std::env::var(var)
            .ok()
            .filter(|t| !t.trim().is_empty())
            .ok_or_else(|| format!("the daemon's environment has no {var} (bearer_token_env)"))?;
        transport = transport.auth_header(token);
    }
    Ok(transport)
}

#[cfg(test)]
mod tests {
    use tokio::io::AsyncReadExt;

    use super::*;

    /// HTTPS MCP needs a TLS stack behind rmcp's HTTP client (seed 003): with none, building
    /// it panics or it speaks plain HTTP. A local listener reads what arrives: a TLS
    /// ClientHello (a handshake record, 0x16 0x03).
    #[tokio::test]
    async fn an_https_server_gets_a_tls_client_hello() {
        super::super::install_tls_provider();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let hello = tokio::spawn(async move {
            let (mut stream, _) = listener.accept().await.unwrap();
            let mut head = [0u8; 3];
            stream.read_exact(&mut head).await.unwrap();
            head
        });
        let config = ServerConfig {
            url: Some(format!("https://127.0.0.1:{port}/mcp")),
            ..Default::default()
        };
        let attempt = tokio::time::timeout(Duration::from_secs(5), connect("tls", &config));
        // The handshake cannot succeed (nobody answers it); only what was sent matters.
        let (_, head) = tokio::join!(attempt, hello);
        let head = head.unwrap();
        assert_eq!(head[0], 0x16, "not a TLS handshake record: {head:?}");
        assert_eq!(head[1], 0x03, "not a TLS version: {head:?}");
    }
}
