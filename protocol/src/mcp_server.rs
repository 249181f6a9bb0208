//! The team as MCP tools: what `/mcp` (and `lazyboy mcp serve`, which relays to it) returns as
//! `structuredContent`, and the few names both ends must agree on (the scope header, the
//! tools safe to send again, the resource URIs of deliverables, the bounds of the inputs).

use serde::{Deserialize, Serialize};

use crate::{AgentState, Approval, Deliverable, PlanStep, TaskState, Verdict};

/// The header by which `lazyboy mcp serve --agents a,b` narrows what its client may see and
/// use (comma-separated agent names). Only ever narrows: a name the listener's own scope
/// does not allow stays hidden.
pub const SCOPE_HEADER: &str = "lazyboy-mcp-agents";

/// The tools that change nothing: a relay that lost the daemon mid-call may send these
/// again to the new daemon; any other call is answered "outcome unknown" instead, so a
/// restart never queues a job twice.
pub const READ_ONLY_TOOLS: &[&str] = &["list_agents", "task_status", "wait_task", "task_files"];

/// The longest `ask_agent` `wait_s` and `wait_task` `timeout_s`, in seconds.
pub const MAX_WAIT_SECS: u64 = 600;

/// The longest `job` (and `tell_agent` text) accepted, in bytes: a bigger brief belongs in a
/// file in the workspace, named in the job.
pub const MAX_JOB_BYTES: usize = 256 * 1024;

/// The largest deliverable `resources/read` returns, in bytes (its bytes travel inside one
/// JSON-RPC message, base64 for binary files).
pub const MAX_RESOURCE_BYTES: u64 = 8 * 1024 * 1024;

/// The URI scheme of deliverables: `lazyboy://tasks/{task}/files/{path}`.
pub const FILE_URI_PREFIX: &str = "lazyboy://tasks/";

/// The resource URI of deliverable `path` of `task` (path segments percent-encoded as a URI
/// needs, `/` kept).
pub fn file_uri(task: &str, path: &str) -> String {
    let mut uri = format!("{FILE_URI_PREFIX}{task}/files/");
    for byte in path.bytes() {
        if byte.is_ascii_alphanumeric() || b"-._~/".contains(&byte) {
            uri.push(char::from(byte));
        } else {
            uri.push_str(&format!("%{byte:02X}"));
        }
    }
    uri
}

/// The task and path a deliverable's URI names; `None` for any other URI (or a path that
/// does not decode to UTF-8).
pub fn parse_file_uri(uri: &str) -> Option<(String, String)> {
    let rest = uri.strip_prefix(FILE_URI_PREFIX)?;
    let (task, encoded) = rest.split_once("/files/")?;
    if task.is_empty() || encoded.is_empty() || task.contains('/') {
        return None;
    }
    let mut bytes = Vec::with_capacity(encoded.len());
    let mut input = encoded.bytes();
    while let Some(byte) = input.next() {
        if byte == b'%' {
            let high = char::from(input.next()?).to_digit(16)?;
            let low = char::from(input.next()?).to_digit(16)?;
            bytes.push(u8::try_from(high * 16 + low).ok()?);
        } else {
            bytes.push(byte);
        }
    }
    Some((task.to_owned(), String::from_utf8(bytes).ok()?))
}

/// One agent as `list_agents` shows it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct TeamAgent {
    pub name: String,
    pub state: AgentState,
    /// The task the state is about (running, else waiting, else next queued).
    pub current_task: Option<String>,
    pub model: Option<String>,
    pub workspace: String,
    /// When the running task's loop last renewed its lease.
    pub heartbeat_at_ms: Option<i64>,
}

/// `list_agents`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct TeamAgents {
    pub agents: Vec<TeamAgent>,
}

/// What a task waits on the person for.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct OpenQuestion {
    pub text: String,
    /// Numbered choices (`answer_task` `option`: 1 is the first), or empty for free text.
    pub options: Vec<String>,
    /// Set when the task waits for a call's approval (`approve_call` / `deny_call`): what
    /// exactly will run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval: Option<Approval>,
}

/// `task_status`, `wait_task`, and `ask_agent` (with what it waited for).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct TeamTask {
    pub task: String,
    pub agent: String,
    pub objective: String,
    pub state: TaskState,
    pub verdict: Option<Verdict>,
    /// What the agent last said to the person, or why it stopped.
    pub final_message: Option<String>,
    /// Set while the task is `waiting_for_human`.
    pub question: Option<OpenQuestion>,
    pub plan: Vec<PlanStep>,
    /// The latest sign of work: the plan step, "waiting for the model", the box's queue, the
    /// tool running.
    pub progress: Option<String>,
    /// The files its last `report_done` delivered (each is a resource, see [`file_uri`]).
    pub deliverables: Vec<Deliverable>,
    /// `wait_task` / `ask_agent` with a wait: whether the wait ran out before the task ended
    /// or needed the person.
    #[serde(default)]
    pub timed_out: bool,
}

/// `tell_agent`: what the message did (`steered`, `answered` or `started`) and to which task.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct TeamTold {
    pub action: crate::MessageAction,
    pub task: String,
}

/// `task_files`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct TeamFiles {
    pub task: String,
    /// Each with its resource URI.
    pub files: Vec<TeamFile>,
}

/// One deliverable and where `resources/read` finds it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct TeamFile {
    pub path: String,
    pub size: u64,
    pub uri: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_uris_round_trip_and_refuse_other_shapes() {
        for path in ["report.md", "out/a b#?.txt", "dir/é.csv", "%41"] {
            let uri = file_uri("t1", path);
            assert!(!uri[FILE_URI_PREFIX.len()..].contains(' '), "{uri}");
            assert_eq!(
                parse_file_uri(&uri),
                Some(("t1".to_owned(), path.to_owned()))
            );
        }
        assert_eq!(file_uri("t1", "a b"), "lazyboy://tasks/t1/files/a%20b");
        for bad in [
            "lazyboy://tasks/t1/files/",
            "lazyboy://tasks//files/x",
            "lazyboy://tasks/t1/x",
            "file:///etc/passwd",
            "lazyboy://tasks/a/b/files/x",
            "lazyboy://tasks/t1/files/%zz",
            "lazyboy://tasks/t1/files/%ff",
        ] {
            assert_eq!(parse_file_uri(bad), None, "{bad}");
        }
    }
}
