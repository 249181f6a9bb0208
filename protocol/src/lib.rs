//! Every type that crosses the wire between `lazyboyd`, the `lazyboy` CLI and the web page.
//!
//! The daemon, the CLI and the tests all use these types; nobody redefines one. The HTTP API is
//! JSON; the event stream is SSE whose `data:` is an [`Event`] and whose `id:` is its `seq`.
//! Bump [`PROTOCOL_VERSION`] whenever a change here would confuse the other side.

mod nodes;

pub use nodes::{Node, NodeList};
use serde::{Deserialize, Serialize};

mod dashboard;
pub use dashboard::*;
mod reach;
pub use reach::*;
mod boxes;
pub use boxes::*;
mod events;
pub use events::*;
mod tasks;
pub use tasks::*;
mod notify;
pub use notify::*;
mod keep;
pub use keep::*;
mod boundaries;
/// The team as MCP tools (`/mcp`, `lazyboy mcp serve`).
pub mod mcp_server;
pub use boundaries::{
    APPROVAL_OPTIONS, Approval, ApproveCall, Decision, DenyCall, Sandbox, approvable,
};

/// The wire protocol version. The CLI refuses to talk to a daemon speaking another one.
pub const PROTOCOL_VERSION: u32 = 4;

/// Largest request body the API accepts (1 MiB); larger ones get 413.
pub const MAX_BODY_BYTES: usize = 1024 * 1024;

/// Default TCP port of the dashboard and browser API, on 127.0.0.1.
pub const DEFAULT_WEB_PORT: u16 = 8787;

/// File names inside `LAZYBOY_HOME`.
pub mod paths {
    /// The SQLite database.
    pub const DATABASE: &str = "lazyboy.db";
    /// The local socket the CLI talks to.
    pub const SOCKET: &str = "lazyboyd.sock";
    /// The lock file held (flock) by the running daemon; it also holds the daemon's pid.
    pub const LOCK: &str = "lazyboyd.lock";
    /// The directory of log files.
    pub const LOGS: &str = "logs";
    /// The API's credential (mode 0600): every request on every listener carries it.
    pub const TOKEN: &str = "token";
    /// Where `lazyboy backup` and the daemon's own backups go.
    pub const BACKUPS: &str = "backups";
    /// The configuration file.
    pub const CONFIG: &str = "config.toml";

    /// The home directory: `explicit`, else `LAZYBOY_HOME`, else the platform data dir
    /// (`~/.local/share/lazyboy`, `~/Library/Application Support/lazyboy`).
    pub fn home(explicit: Option<std::path::PathBuf>) -> Option<std::path::PathBuf> {
        explicit
            .or_else(|| std::env::var_os("LAZYBOY_HOME").map(std::path::PathBuf::from))
            .filter(|p| !p.as_os_str().is_empty())
            .or_else(default_home)
    }

    /// The platform data dir's `lazyboy` (what [`home`] falls back to).
    pub fn default_home() -> Option<std::path::PathBuf> {
        dirs::data_dir().map(|d| d.join("lazyboy"))
    }
}

/// `GET /api/health`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Health {
    pub ok: bool,
    pub version: String,
    /// The git commit the daemon was built from (`unknown` when built without git).
    #[serde(default)]
    pub commit: String,
    pub pid: u32,
    pub protocol: u32,
    /// The daemon's home directory.
    #[serde(default)]
    pub home: String,
    /// The URL of the dashboard (the TCP listener) on this machine; never `0.0.0.0`.
    #[serde(default)]
    pub url: String,
    /// This daemon's node name (several daemons on one database tell themselves apart by it).
    #[serde(default)]
    pub node: String,
    /// For a listener on all interfaces: its URL on each network interface (what a phone on
    /// the same network opens). Empty for a loopback listener.
    #[serde(default)]
    pub lan_urls: Vec<String>,
    /// What confines agents' host commands here: "landlock (ABI 7)", or why nothing can
    /// (then the `workspace-write` and `read-only` sandboxes refuse to run commands).
    #[serde(default)]
    pub sandbox: String,
}

/// How a binary names its build: `0.1.0 (commit 1a2b3c4d5e6f)`, what `lazyboy --version`,
/// `lazyboyd --version` and `lazyboy doctor` print.
pub fn build_name(version: &str, commit: &str) -> String {
    format!("{version} (commit {commit})")
}

/// Every API error body: `{"error":{"code":"...","message":"..."}}`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct ErrorBody {
    pub error: ErrorDetail,
}

/// The inside of [`ErrorBody`]. `code` is a stable snake_case word; `message` is for people.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct ErrorDetail {
    pub code: String,
    pub message: String,
}

/// `POST /api/agents`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct CreateAgent {
    pub name: String,
    #[serde(default)]
    pub instructions: Option<String>,
    #[serde(default)]
    pub model: Option<String>,
    /// An absolute directory the agent's tasks work in; default: `<home>/workspaces/<name>`.
    #[serde(default)]
    pub workspace: Option<String>,
    /// Pin the agent's tasks to this node (several daemons on one database).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
    /// The MCP servers (names of `[mcp.servers.NAME]`) whose tools its tasks get.
    #[serde(default)]
    pub mcp: Option<Vec<String>>,
    /// Effects whose calls wait for the person's approval (default: none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approve: Option<Vec<Effect>>,
    /// `exec_command` rules that need no approval: "git status", "cargo test*".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allow: Option<Vec<String>>,
    /// Where its host commands may write (default: `workspace-write`; `off` for `default`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<Sandbox>,
    /// Its `workspace-write` commands may change the repositories' git directories (config,
    /// hooks, the index: what git runs programs from); default `false`, read-only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub git_write: Option<bool>,
}

/// `PATCH /api/agents/{name}`: only the fields given change; an empty string clears `model`
/// and `workspace` (back to the defaults).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct UpdateAgent {
    #[serde(default)]
    pub instructions: Option<String>,
    #[serde(default)]
    pub model: Option<String>,
    #[serde(default)]
    pub workspace: Option<String>,
    /// The node to pin the agent to; an empty string unpins it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
    /// Replaces the agent's MCP servers (`[]`: none).
    #[serde(default)]
    pub mcp: Option<Vec<String>>,
    /// Replaces the effects that need approval (an empty list: none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approve: Option<Vec<Effect>>,
    /// Replaces the `exec_command` allow rules.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allow: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<Sandbox>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub git_write: Option<bool>,
}

/// An agent as the API shows it, with what it is doing now.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Agent {
    pub name: String,
    pub instructions: String,
    pub model: Option<String>,
    /// The directory its tasks work in (the default one when none was set).
    #[serde(default)]
    pub workspace: String,
    /// The id of the agent's chat thread.
    pub thread: String,
    pub created_at_ms: i64,
    /// `idle`, `queued`, `running`, `recovering` or `waiting_for_human`.
    #[serde(default)]
    pub state: AgentState,
    /// The task the state is about (the running one, else the one waiting, else the next
    /// queued one).
    #[serde(default)]
    pub current_task: Option<String>,
    /// When the running task's loop last renewed its lease (every 10 s).
    #[serde(default)]
    pub heartbeat_at_ms: Option<i64>,
    /// When that lease runs out: a client shows the agent alive only before this (the
    /// heartbeat is under 30 s old). Alive does not mean progressing.
    #[serde(default)]
    pub lease_expires_at_ms: Option<i64>,
    /// What all its tasks' model requests cost.
    #[serde(default)]
    pub usage: Usage,
    /// The node its tasks are pinned to (`None`: whichever daemon has room).
    #[serde(default)]
    pub node: Option<String>,
    /// The MCP servers whose tools its tasks get.
    #[serde(default)]
    pub mcp: Vec<String>,
    /// Effects whose calls wait for the person's approval.
    #[serde(default)]
    pub approve: Vec<Effect>,
    /// `exec_command` rules that need no approval.
    #[serde(default)]
    pub allow: Vec<String>,
    /// Where its host commands may write (the value in force, default included).
    #[serde(default)]
    pub sandbox: Sandbox,
    /// Its `workspace-write` commands may change the repositories' git directories.
    #[serde(default)]
    pub git_write: bool,
}

/// What an agent is doing, from its tasks.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum AgentState {
    #[default]
    Idle,
    Queued,
    Running,
    Recovering,
    WaitingForHuman,
}

impl AgentState {
    pub fn as_str(self) -> &'static str {
        match self {
            AgentState::Idle => "idle",
            AgentState::Queued => "queued",
            AgentState::Running => "running",
            AgentState::Recovering => "recovering",
            AgentState::WaitingForHuman => "waiting_for_human",
        }
    }
}

/// `GET /api/agents`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct AgentList {
    pub agents: Vec<Agent>,
}

/// `POST /api/agents/{name}/messages`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct PostMessage {
    pub text: String,
    /// Only record it in the agent's chat thread (no task starts, no steering).
    #[serde(default)]
    pub note: bool,
}

/// The 202 answer to [`PostMessage`]: where the message landed in the log. A message to a
/// busy agent steers its running task; to an idle one it starts a new task (`task`).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct MessageAccepted {
    pub thread: String,
    pub seq: i64,
    /// The task the message went to (steered or started); `None` for a note.
    #[serde(default)]
    pub task: Option<String>,
    /// Whether it steered a running task (`false`: it started one, or is a note).
    #[serde(default)]
    pub steered: bool,
    /// What the message did: steered the running task, answered its open question, started
    /// a task, or was only noted in the chat thread.
    #[serde(default)]
    pub action: MessageAction,
}

/// What a [`PostMessage`] did (the runtime decides; every client shares the rule).
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum MessageAction {
    /// It joined the running task (the model reads it after the call in progress).
    Steered,
    /// It answered the question the agent's task waits on; that task resumes.
    Answered,
    /// The agent was idle: it started a new task with the text as its objective.
    #[default]
    Started,
    /// `note: true`: only recorded in the agent's chat thread.
    Noted,
}

/// Agent names: `[a-z0-9][a-z0-9_-]{0,63}`.
pub fn valid_agent_name(name: &str) -> bool {
    let bytes = name.as_bytes();
    let Some((first, rest)) = bytes.split_first() else {
        return false;
    };
    rest.len() <= 63
        && (first.is_ascii_lowercase() || first.is_ascii_digit())
        && rest
            .iter()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'_' || *b == b'-')
}

#[cfg(test)]
mod tests;
