//! MCP servers, as the daemon owns them: their configuration, their lifecycle, and the one
//! adapter that turns their tools into tools of a task's registry.
//!
//! ```toml
//! [mcp.servers.time]
//! command = "uvx"                      # stdio: command, args, env, cwd
//! args = ["mcp-server-time"]
//! env = { TZ = "UTC" }                 # literal values only (no secrets here)
//! pass_env = ["GITHUB_TOKEN"]          # daemon variables handed to it (withheld otherwise)
//! [mcp.servers.docs]
//! url = "https://mcp.example.com/mcp"  # streamable HTTP (HTTPS works)
//! headers = { X-Team = "core" }
//! bearer_token_env = "DOCS_MCP_TOKEN"  # the NAME of the variable with the token
//! call_timeout_secs = 120              # per call (default 300)
//! ```
//!
//! - `server.rs`: one server's state (not started, running, failed with a retry time). It
//!   starts when a task first needs it; a dead one is started again by the next call that
//!   needs it, and a failed start waits out an exponential backoff (1 s doubling to 60 s)
//!   before the next try; [`Manager::shutdown`] stops them all.
//! - `connect.rs`: the transports (a child process in its own process group, its stderr
//!   line by line into the daemon's log; or streamable HTTP through rmcp's reqwest client
//!   with rustls on the ring provider), and the client-side handler (progress notifications
//!   become heartbeats of the calling task).
//! - `adapter.rs`: `mcp__<server>__<tool>` handlers with the server's JSON schemas;
//!   `readOnlyHint` makes a call a `read`, everything else is a `command`; results rendered
//!   as text (text, images and resources described, structured content as JSON); `isError`
//!   is an error result.
//!
//! A server that cannot start or answers garbage gives the calling task an error result
//! and never the daemon a failure: every path here returns a message.

pub mod adapter;
mod connect;
pub mod server;

use std::collections::BTreeMap;
use std::sync::Arc;

use lazyboy_protocol::McpServerInfo;
use serde::Deserialize;

pub use server::Server;

/// `[mcp]` in `config.toml`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpSection {
    #[serde(default)]
    pub servers: BTreeMap<String, ServerConfig>,
}

/// `[mcp.servers.NAME]`: a stdio server (`command`) or a streamable HTTP one (`url`).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServerConfig {
    pub command: Option<String>,
    #[serde(default)]
    pub args: Vec<String>,
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Variables of the daemon's environment handed to the server even though they hold
    /// secrets (a server's own token).
    #[serde(default)]
    pub pass_env: Vec<String>,
    pub cwd: Option<String>,
    pub url: Option<String>,
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    pub bearer_token_env: Option<String>,
    /// How long one call may take (default 300 s).
    pub call_timeout_secs: Option<u64>,
    /// How long starting (spawn + initialize + tools/list) may take (default 60 s).
    pub startup_timeout_secs: Option<u64>,
}

impl McpSection {
    /// Refuses entries that are neither or both kinds, and names that cannot be part of a
    /// tool name.
    pub fn check(&self) -> Result<(), String> {
        for (name, server) in &self.servers {
            if !valid_server_name(name) {
                return Err(format!(
                    "[mcp.servers.{name}]: a server name is 1 to 32 of a-z, 0-9, '-' and '_'"
                ));
            }
            match (&server.command, &server.url) {
                (Some(_), Some(_)) => {
                    return Err(format!(
                        "[mcp.servers.{name}]: give `command` (stdio) or `url` (HTTP), not both"
                    ));
                }
                (None, None) => {
                    return Err(format!(
                        "[mcp.servers.{name}]: needs `command` (stdio) or `url` (HTTP)"
                    ));
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// Every variable name that holds a secret for a server (never given to agents).
    pub fn secret_env(&self) -> Vec<String> {
        self.servers
            .values()
            .filter_map(|s| s.bearer_token_env.clone())
            .chain(self.servers.values().flat_map(|s| s.pass_env.clone()))
            .collect()
    }
}

/// `[a-z0-9_-]{1,32}`: tool names are `mcp__<server>__<tool>` and must stay short and plain.
pub fn valid_server_name(name: &str) -> bool {
    (1..=32).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_')
}

/// Installs ring as the process's rustls provider. rmcp's HTTP client (reqwest 0.13) is
/// built without one so that it does not compile a second crypto library; it uses this.
pub fn install_tls_provider() {
    // Already installed (a second call, or by someone else): either way there is one.
    let _ = rustls::crypto::ring::default_provider().install_default();
}

/// Every configured server, by name. One per daemon.
pub struct Manager {
    servers: BTreeMap<String, Arc<Server>>,
}

impl Manager {
    pub fn new(section: &McpSection) -> Manager {
        install_tls_provider();
        Manager {
            servers: section
                .servers
                .iter()
                .map(|(name, config)| (name.clone(), Arc::new(Server::new(name, config.clone()))))
                .collect(),
        }
    }

    pub fn get(&self, name: &str) -> Option<&Arc<Server>> {
        self.servers.get(name)
    }

    pub fn names(&self) -> Vec<String> {
        self.servers.keys().cloned().collect()
    }

    /// What `lazyboy mcp ls` shows: every server's state and tools (nothing is started).
    pub async fn list(&self) -> Vec<McpServerInfo> {
        let mut out = Vec::with_capacity(self.servers.len());
        for server in self.servers.values() {
            out.push(server.info().await);
        }
        out
    }

    /// Stops every running server (at daemon shutdown).
    pub async fn shutdown(&self) {
        let stops = self.servers.values().map(|s| s.stop());
        futures_util::future::join_all(stops).await;
    }
}
