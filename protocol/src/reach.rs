//! Wire types of the agents' reach: MCP servers (`/api/mcp`) and `lazyboy doctor`
//! (`/api/doctor`). Re-exported at the crate root like every other wire type.

use serde::{Deserialize, Serialize};

/// `GET /api/mcp`: every configured MCP server.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct McpList {
    pub servers: Vec<McpServerInfo>,
}

/// One MCP server (`GET /api/mcp`, and `POST /api/mcp/{name}/test`, which connects first).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct McpServerInfo {
    pub name: String,
    /// `stdio` or `http`.
    pub transport: String,
    /// The command line, or the URL.
    pub target: String,
    pub state: McpServerState,
    /// Why it last failed to start or was lost, while that is the latest news.
    #[serde(default)]
    pub error: Option<String>,
    #[serde(default)]
    pub pid: Option<u32>,
    /// Starts after the first one.
    #[serde(default)]
    pub restarts: u32,
    /// Its tools, as last listed (empty until it first started).
    #[serde(default)]
    pub tools: Vec<McpToolInfo>,
}

/// Where an MCP server is.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum McpServerState {
    /// No task needed it yet.
    NotStarted,
    Running,
    /// Its last start failed (see `error`); it is tried again after a backoff.
    Failed,
    /// It ran and is gone; the next call that needs it starts it again.
    Stopped,
}

impl McpServerState {
    pub fn as_str(self) -> &'static str {
        match self {
            McpServerState::NotStarted => "not_started",
            McpServerState::Running => "running",
            McpServerState::Failed => "failed",
            McpServerState::Stopped => "stopped",
        }
    }
}

/// One tool of an MCP server.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct McpToolInfo {
    /// The server's name for it.
    pub name: String,
    /// The name the model calls it by: `mcp__<server>__<tool>`.
    pub registered_as: String,
    #[serde(default)]
    pub description: String,
    /// The server marked it read-only (`readOnlyHint`): it may run beside other reads.
    #[serde(default)]
    pub read_only: bool,
}

/// `GET /api/doctor` (the daemon's checks; the CLI adds the machine's own).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct DoctorReport {
    pub checks: Vec<DoctorCheck>,
}

/// One line of `lazyboy doctor`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct DoctorCheck {
    /// What was checked: `config`, `model`, `mcp NAME`, `web search`, `docker`, ...
    pub name: String,
    pub status: CheckStatus,
    /// What was found.
    pub detail: String,
    /// What to do about it (for anything not `ok`).
    #[serde(default)]
    pub fix: Option<String>,
}

/// How a check came out: `warn` is something optional that is not set up (it does not fail
/// the doctor), `fail` is something that does.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum CheckStatus {
    Ok,
    Warn,
    Fail,
}
