//! Every type that crosses the wire between `lazyboyd`, the `lazyboy` CLI and the web page.
//!
//! The daemon, the CLI and the tests all use these types; nobody redefines one. The HTTP API is
//! JSON; the event stream is SSE whose `data:` is an [`Event`] and whose `id:` is its `seq`.
//! Bump [`PROTOCOL_VERSION`] whenever a change here would confuse the other side.

mod nodes;

pub use nodes::{Node, NodeList};
use serde::{Deserialize, Serialize};
use serde_json::Value;

mod dashboard;
pub use dashboard::*;
mod reach;
pub use reach::*;
mod boundaries;
pub use boundaries::{
    APPROVAL_OPTIONS, Approval, ApproveCall, Decision, DenyCall, Sandbox, approvable,
};

/// The wire protocol version. The CLI refuses to talk to a daemon speaking another one.
pub const PROTOCOL_VERSION: u32 = 3;

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
    /// A generated access token for non-loopback listeners (mode 0600).
    pub const TOKEN: &str = "token";

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

/// One entry of the event log, as the SSE stream and every client see it.
///
/// `seq` is global and strictly increasing across all agents; it is the SSE `id`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Event {
    pub seq: i64,
    pub kind: String,
    pub agent: String,
    pub thread: String,
    pub task: Option<String>,
    pub at_ms: i64,
    pub data: Value,
}

/// `GET /api/events/page?after=N[&agent=NAME][&limit=M]`: a page of the log, oldest first.
/// An empty page means the reader is at the end.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct EventPage {
    pub events: Vec<Event>,
}

impl Event {
    /// The typed body, when this build knows the kind; `None` for kinds from a newer daemon.
    pub fn body(&self) -> Option<EventBody> {
        EventBody::from_parts(&self.kind, self.data.clone())
    }
}

/// The typed events. Stored and sent as `kind` (the snake_case variant name) plus `data`.
/// Task events carry the task's id in [`Event::task`] and the task's thread in
/// [`Event::thread`]; any client can render a task from its events alone.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(tag = "kind", content = "data", rename_all = "snake_case")]
pub enum EventBody {
    /// An agent was created.
    AgentCreated {
        instructions: String,
        model: Option<String>,
    },
    /// An agent was deleted; its events stay in the log.
    AgentDeleted {},
    /// A person wrote to the agent (its chat thread, or a running task as steering).
    UserMessage { text: String },
    /// A task was handed to the agent.
    TaskCreated {
        objective: String,
        workspace: String,
    },
    /// The task moved to another state (running, recovering, ...).
    TaskState { state: TaskState },
    /// A piece of the model's plain text as it streams (scratchpad, not a message).
    AssistantDelta { text: String },
    /// The model's whole reply for one round: its scratchpad text and the calls it made.
    /// Persisted before any of the calls runs.
    AssistantReply {
        text: String,
        tool_calls: Vec<ToolCallRecord>,
    },
    /// A call is about to run (its intent is durable before any side effect).
    ToolCall {
        call_id: String,
        name: String,
        arguments: String,
        /// What the call does to the world, as its tool declared it (absent in old logs).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        effect: Option<Effect>,
    },
    /// The one result of a call.
    ToolResult {
        call_id: String,
        name: String,
        status: ToolStatus,
        output: String,
        /// A wait that brought output the model had not seen (progress, not a loop).
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        progress: bool,
    },
    /// The plan as it now stands.
    PlanUpdated {
        steps: Vec<PlanStep>,
        explanation: Option<String>,
    },
    /// `send_message`: the agent speaking to the person.
    AgentMessage { text: String },
    /// The agent asks the person and waits (`request_user_input` / `request_takeover`): the
    /// task is `waiting_for_human` until `POST /api/tasks/{id}/answer`.
    Question {
        call_id: String,
        question: String,
        /// Numbered choices (answer with `option`: 1 is the first), or empty for free text.
        options: Vec<String>,
        /// For a takeover: login, 2fa, captcha, authorization or other.
        takeover: Option<String>,
        /// Set when the runtime asks the person to approve a call before it runs (the agent's
        /// `approve` policy): what exactly will run. Options are [`APPROVAL_OPTIONS`].
        #[serde(default, skip_serializing_if = "Option::is_none")]
        approval: Option<Box<Approval>>,
    },
    /// The person decided on a call waiting for approval. A denied call gets its result
    /// ("denied by the person: ...") right after this; an approved one runs when the task
    /// resumes, followed by the rest of its batch.
    ApprovalDecided {
        call_id: String,
        decision: Decision,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
    /// Something the runtime told the model (a reminder, a recovery note).
    RuntimeNote { text: String },
    /// Still waiting on `operation` after `elapsed_ms`; no model call behind it.
    Heartbeat { operation: String, elapsed_ms: u64 },
    /// The task ended its turn.
    TaskFinished { verdict: Verdict, message: String },
    /// An agent's instructions, model, workspace or MCP servers changed (the new values).
    AgentUpdated {
        instructions: String,
        model: Option<String>,
        workspace: Option<String>,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        mcp: Vec<String>,
    },
    /// A command the task started outlived the call that started it: it runs in the
    /// background, its output goes to `log` (relative to the workspace).
    CommandStarted {
        command_id: String,
        command: String,
        log: String,
        /// Its process group, so a daemon restarted after a crash can stop what is left.
        #[serde(default)]
        pgid: Option<i32>,
    },
    /// A background command ended: `status` says how ("exited with code 0 after 2.1 s"), or
    /// that it was lost in a daemon restart.
    CommandEnded { command_id: String, status: String },
    /// A subagent (a child task) was spawned by this task.
    SubagentSpawned { task: String, objective: String },
    /// What one model request cost, as the provider reported it (`estimated` when it did not
    /// and the daemon counted instead).
    ModelUsage {
        model: String,
        input_tokens: u64,
        #[serde(default)]
        cached_tokens: u64,
        output_tokens: u64,
        #[serde(default)]
        estimated: bool,
    },
    /// The deliverables `report_done` listed: files in the workspace, with their sizes then.
    Deliverables { files: Vec<Deliverable> },
    /// A background pass condensed the conversation up to `upto_seq` (in a task's thread: the
    /// task's older rounds; in an agent's chat thread: its conversation across tasks). The
    /// model sees it instead of what it covers; the originals stay in the log.
    Summary { upto_seq: i64, text: String },
    /// `team clear`: the agent's conversation starts a new generation; requests and summaries
    /// never see what came before (it stays in the log, and `read_conversation` can ask).
    ConversationCleared {},
    /// A schedule was added (in the agent's chat thread, as are all schedule events).
    ScheduleAdded {
        schedule: String,
        cron: String,
        objective: String,
        skip_missed: bool,
    },
    /// A schedule was removed.
    ScheduleRemoved { schedule: String },
    /// A schedule was paused: it fires no more until resumed.
    SchedulePaused { schedule: String },
    /// A paused schedule was resumed from the next slot after now.
    ScheduleResumed { schedule: String },
    /// A slot came and the schedule queued `task`, in the same transaction. `missed`: the slot
    /// passed while the daemon was down (or the machine asleep) and this is its one late run.
    ScheduleFired {
        schedule: String,
        task: String,
        due_at_ms: i64,
        missed: bool,
    },
    /// The box changed state because of this task's call (or of a person's request while this
    /// task held its lock).
    BoxState {
        state: BoxState,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
    /// The box's screen and browser lock moved: this task (`agent`, `task`) acquired it,
    /// queued for it, or released it (or left the queue). `person`: the person took it or
    /// gave it back on this task's behalf. `holder`: who held it when this task queued.
    BoxLock {
        action: BoxLockAction,
        agent: String,
        task: String,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        person: bool,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        holder: Option<BoxHolder>,
    },
    /// An image (a screenshot) that goes with call `call_id`'s result: a PNG file at `path`,
    /// relative to the task's workspace. Recorded before the result.
    ToolImage {
        call_id: String,
        path: String,
        media_type: String,
    },
    /// A slot went by without a task: it was missed and `skip_missed` (or the config's
    /// `[schedules] run_missed = false`) says so, or the task could not be queued (`reason`).
    /// The agent's tasks were pinned to a node (`None`: any node may run them).
    AgentPinned { node: Option<String> },
    ScheduleSkipped {
        schedule: String,
        due_at_ms: i64,
        reason: String,
    },
}

/// One call as recorded in an [`EventBody::AssistantReply`].
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct ToolCallRecord {
    pub id: String,
    pub name: String,
    /// The raw JSON text the model sent (it may be invalid).
    pub arguments: String,
}

/// What a tool call does to the world, declared by its tool (from its arguments where that
/// matters). The turn loop runs consecutive `read` calls in parallel and everything else
/// alone and in order; approvals name effects.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[serde(rename_all = "snake_case")]
pub enum Effect {
    /// No side effect: reads, searches, observations.
    Read,
    /// Writes files in the task's workspace.
    WorkspaceWrite,
    /// Runs or drives a process.
    Command,
    /// Reaches the network.
    Network,
    /// Asks the person and waits.
    Person,
    /// Changes the task itself (plan, messages, reports, memory, subagents).
    Control,
    /// Drives the box's screen or browser (it takes the box's lock): what a person sees on
    /// the shared desktop. Commands and files inside the box are `command`.
    /// Acts in the agent's desktop box (a Docker container).
    Box,
}

impl Effect {
    pub fn as_str(self) -> &'static str {
        match self {
            Effect::Read => "read",
            Effect::WorkspaceWrite => "workspace_write",
            Effect::Command => "command",
            Effect::Network => "network",
            Effect::Person => "person",
            Effect::Control => "control",
            Effect::Box => "box",
        }
    }
}

/// How a call ended.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum ToolStatus {
    Ok,
    Error,
    /// The daemon died while it ran: whether it took effect is not known.
    Unknown,
    /// It never ran (the batch was interrupted before it).
    Skipped,
}

/// One step of a plan.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct PlanStep {
    pub step: String,
    pub status: StepStatus,
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum StepStatus {
    Pending,
    InProgress,
    Completed,
}

/// How a turn ended.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// The model replied without a tool call.
    Answer,
    /// The model called `report_done` and it was accepted.
    Done,
    /// Recorded by protocol 2 daemons when a turn ended while its commands still ran; a turn
    /// now waits for them and is revived instead, so no new task gets it.
    Waiting,
    /// `report_blocked`, or a loop fuse tripped.
    Blocked,
    /// `LAZYBOY_MAX_ROUNDS_TOTAL` model rounds were used.
    BudgetExhausted,
    /// The provider or the runtime failed.
    Failed,
    /// A person stopped it.
    Cancelled,
}

impl Verdict {
    /// The exit code of `lazyboy run` for this verdict.
    pub fn exit_code(self) -> i32 {
        match self {
            Verdict::Answer | Verdict::Done | Verdict::Waiting => 0,
            Verdict::Blocked | Verdict::BudgetExhausted | Verdict::Failed => 1,
            Verdict::Cancelled => 130,
        }
    }

    /// The task state a turn with this verdict leaves.
    pub fn final_state(self) -> TaskState {
        match self {
            Verdict::Answer | Verdict::Done | Verdict::Waiting => TaskState::Done,
            Verdict::Blocked => TaskState::Blocked,
            Verdict::BudgetExhausted => TaskState::BudgetExhausted,
            Verdict::Failed => TaskState::Failed,
            Verdict::Cancelled => TaskState::Cancelled,
        }
    }
}

/// Where a task is.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum TaskState {
    Queued,
    Running,
    /// After a daemon restart: in-flight calls are being marked `unknown`.
    Recovering,
    WaitingForHuman,
    Done,
    Blocked,
    Failed,
    Cancelled,
    BudgetExhausted,
}

impl TaskState {
    pub fn as_str(self) -> &'static str {
        match self {
            TaskState::Queued => "queued",
            TaskState::Running => "running",
            TaskState::Recovering => "recovering",
            TaskState::WaitingForHuman => "waiting_for_human",
            TaskState::Done => "done",
            TaskState::Blocked => "blocked",
            TaskState::Failed => "failed",
            TaskState::Cancelled => "cancelled",
            TaskState::BudgetExhausted => "budget_exhausted",
        }
    }

    pub fn parse(text: &str) -> Option<TaskState> {
        serde_json::from_value(Value::String(text.to_owned())).ok()
    }

    /// Whether the task has ended (until someone continues it).
    pub fn is_final(self) -> bool {
        !matches!(
            self,
            TaskState::Queued
                | TaskState::Running
                | TaskState::Recovering
                | TaskState::WaitingForHuman
        )
    }
}

/// `POST /api/daemon/token` (local socket only): the token non-loopback listeners demand.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, Default)]
#[serde(deny_unknown_fields)]
pub struct TokenRequest {
    /// Replace it: the running daemon refuses the old one from the next request on.
    #[serde(default)]
    pub rotate: bool,
}

/// The answer to [`TokenRequest`]: the token in force (with `rotate`, the new one).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct DaemonToken {
    pub token: String,
}

/// `POST /api/agents/{name}/tasks`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct CreateTask {
    pub objective: String,
    /// An absolute directory the task works in; default: the agent's workspace.
    #[serde(default)]
    pub workspace: Option<String>,
}

/// The 202 answer to [`CreateTask`].
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct TaskAccepted {
    pub task: String,
    pub thread: String,
}

/// `POST /api/tasks/{id}/answer`: free text, or the number of one of the question's options
/// (1 is the first).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, Default)]
#[serde(deny_unknown_fields)]
pub struct AnswerTask {
    #[serde(default)]
    pub text: Option<String>,
    #[serde(default)]
    pub option: Option<usize>,
}

/// `GET /api/tasks?agent=NAME&state=STATE`: newest first.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct TaskList {
    pub tasks: Vec<Task>,
}

/// `GET /api/tasks/{id}`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Task {
    pub id: String,
    pub agent: String,
    pub thread: String,
    pub objective: String,
    pub workspace: String,
    pub state: TaskState,
    pub verdict: Option<Verdict>,
    /// What the agent last said to the person, or why it stopped.
    pub final_message: Option<String>,
    pub created_at_ms: i64,
    pub updated_at_ms: i64,
    /// The task that spawned this one, for a subagent.
    #[serde(default)]
    pub parent: Option<String>,
    /// When the loop last renewed the task's lease (while it runs; every 10 s).
    #[serde(default)]
    pub heartbeat_at_ms: Option<i64>,
    /// When the lease runs out if not renewed; `None` when the task is not running.
    #[serde(default)]
    pub lease_expires_at_ms: Option<i64>,
    /// What its model requests cost so far.
    #[serde(default)]
    pub usage: Usage,
    /// The node whose daemon claimed it: where it runs, or last ran.
    #[serde(default)]
    pub node: Option<String>,
}

/// Tokens a task (or an agent, summed over its tasks) used, and their cost where the config
/// gives prices for the model.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct Usage {
    pub input_tokens: u64,
    /// The part of `input_tokens` the provider served from its cache.
    pub cached_tokens: u64,
    pub output_tokens: u64,
    /// Some requests' figures were counted by the daemon (the provider reported no usage).
    pub estimated: bool,
    /// In millionths of a US dollar, where `[prices]` names the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_microusd: Option<u64>,
}

/// A file `report_done` delivered: its path in the workspace and its size when reported.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Deliverable {
    pub path: String,
    pub size: u64,
}

/// `GET /api/tasks/{id}/files`: the task's deliverables (from its last `report_done`).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct FileList {
    pub files: Vec<Deliverable>,
}

/// `POST /api/agents/{name}/schedules`: hand the agent `objective` at every slot of `cron`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct CreateSchedule {
    /// A crontab expression, evaluated in the daemon's local time zone: five fields (minute
    /// hour day-of-month month day-of-week), or six with seconds first.
    pub cron: String,
    /// The job: each slot queues a task with this objective in the agent's workspace.
    pub objective: String,
    /// A slot missed while the daemon was down is skipped instead of run once at start.
    #[serde(default)]
    pub skip_missed: bool,
}

/// A schedule as the API shows it (`201` to [`CreateSchedule`], and in [`ScheduleList`]).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Schedule {
    pub id: String,
    pub agent: String,
    pub cron: String,
    pub objective: String,
    pub paused: bool,
    pub skip_missed: bool,
    /// When it fires next; `None` while paused (or if the expression has no future slot).
    pub next_run_at_ms: Option<i64>,
    pub last_run_at_ms: Option<i64>,
    pub created_at_ms: i64,
}

/// `GET /api/schedules[?agent=NAME]`: oldest first.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct ScheduleList {
    pub schedules: Vec<Schedule>,
}

/// `GET /api/box`: the box (the shared Linux desktop in Docker) as the daemon sees it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct BoxStatus {
    pub state: BoxState,
    /// Why it is `unavailable` or in `error` (what to do about it).
    #[serde(default)]
    pub reason: Option<String>,
    /// The image the daemon runs (`lazyboy/box:latest` unless configured).
    #[serde(default)]
    pub image: Option<String>,
    /// The container's name, when it exists.
    #[serde(default)]
    pub container: Option<String>,
    /// Who holds the screen and browser.
    #[serde(default)]
    pub holder: Option<BoxHolder>,
    /// Who waits for them, first in line first.
    #[serde(default)]
    pub queue: Vec<BoxHolder>,
    /// Where a person watches and takes over: the daemon's `/novnc/` page (a path on the
    /// daemon's own origin), once the box runs.
    #[serde(default)]
    pub novnc: Option<String>,
}

/// Where the box is.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum BoxState {
    /// No Docker engine answers, or the image is missing (`reason` says which).
    #[default]
    Unavailable,
    /// Docker and the image are there; the container is not created yet.
    Absent,
    Stopped,
    /// The container runs; its browser does not answer yet.
    Starting,
    /// The container runs and its browser answers (CDP).
    Running,
    /// It failed to start or died (`reason`).
    Error,
}

impl BoxState {
    pub fn as_str(self) -> &'static str {
        match self {
            BoxState::Unavailable => "unavailable",
            BoxState::Absent => "absent",
            BoxState::Stopped => "stopped",
            BoxState::Starting => "starting",
            BoxState::Running => "running",
            BoxState::Error => "error",
        }
    }
}

/// A holder of the box's lock, or one waiting for it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct BoxHolder {
    /// A person (taking over) rather than a task.
    #[serde(default)]
    pub person: bool,
    /// The task (for a person: the task they took over for, if any).
    #[serde(default)]
    pub task: Option<String>,
    #[serde(default)]
    pub agent: Option<String>,
    /// When it took the lock (or joined the queue).
    pub since_ms: i64,
}

/// What a [`EventBody::BoxLock`] records.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum BoxLockAction {
    Acquired,
    Queued,
    Released,
}

/// `POST /api/box/takeover`: a person takes the screen and browser (for `task`: the one
/// that asked for help; default: the task holding the lock, if any) until they hand back.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct BoxTakeover {
    #[serde(default)]
    pub task: Option<String>,
}

impl EventBody {
    /// The `kind` string of this body.
    pub fn kind(&self) -> &'static str {
        match self {
            EventBody::AgentCreated { .. } => "agent_created",
            EventBody::AgentDeleted {} => "agent_deleted",
            EventBody::UserMessage { .. } => "user_message",
            EventBody::TaskCreated { .. } => "task_created",
            EventBody::TaskState { .. } => "task_state",
            EventBody::AssistantDelta { .. } => "assistant_delta",
            EventBody::AssistantReply { .. } => "assistant_reply",
            EventBody::ToolCall { .. } => "tool_call",
            EventBody::ToolResult { .. } => "tool_result",
            EventBody::PlanUpdated { .. } => "plan_updated",
            EventBody::AgentMessage { .. } => "agent_message",
            EventBody::Question { .. } => "question",
            EventBody::ApprovalDecided { .. } => "approval_decided",
            EventBody::RuntimeNote { .. } => "runtime_note",
            EventBody::Heartbeat { .. } => "heartbeat",
            EventBody::TaskFinished { .. } => "task_finished",
            EventBody::AgentUpdated { .. } => "agent_updated",
            EventBody::CommandStarted { .. } => "command_started",
            EventBody::CommandEnded { .. } => "command_ended",
            EventBody::SubagentSpawned { .. } => "subagent_spawned",
            EventBody::ModelUsage { .. } => "model_usage",
            EventBody::Deliverables { .. } => "deliverables",
            EventBody::Summary { .. } => "summary",
            EventBody::ConversationCleared {} => "conversation_cleared",
            EventBody::ScheduleAdded { .. } => "schedule_added",
            EventBody::ScheduleRemoved { .. } => "schedule_removed",
            EventBody::SchedulePaused { .. } => "schedule_paused",
            EventBody::ScheduleResumed { .. } => "schedule_resumed",
            EventBody::ScheduleFired { .. } => "schedule_fired",
            EventBody::ScheduleSkipped { .. } => "schedule_skipped",
            EventBody::AgentPinned { .. } => "agent_pinned",
            EventBody::BoxState { .. } => "box_state",
            EventBody::BoxLock { .. } => "box_lock",
            EventBody::ToolImage { .. } => "tool_image",
        }
    }

    /// The `data` object of this body.
    pub fn data(&self) -> Value {
        match serde_json::to_value(self) {
            Ok(Value::Object(mut map)) => map.remove("data").unwrap_or(Value::Null),
            _ => Value::Null,
        }
    }

    /// Rebuilds a body from its stored parts; `None` for an unknown kind or a mismatched shape.
    pub fn from_parts(kind: &str, data: Value) -> Option<EventBody> {
        let mut map = serde_json::Map::new();
        map.insert("kind".into(), Value::String(kind.to_owned()));
        map.insert("data".into(), data);
        serde_json::from_value(Value::Object(map)).ok()
    }
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
mod tests {
    use super::*;

    #[test]
    fn agent_names() {
        for ok in ["a", "researcher", "ops-2", "x_y", "0", &"a".repeat(64)] {
            assert!(valid_agent_name(ok), "{ok}");
        }
        for bad in ["", "-a", "_a", "A", "ops!", "a b", "é", &"a".repeat(65)] {
            assert!(!valid_agent_name(bad), "{bad}");
        }
    }

    #[test]
    fn bodies_round_trip_through_kind_and_data() {
        let body = EventBody::UserMessage { text: "hi".into() };
        assert_eq!(body.kind(), "user_message");
        assert_eq!(body.data(), serde_json::json!({"text": "hi"}));
        assert_eq!(
            EventBody::from_parts("user_message", body.data()),
            Some(body)
        );
        let deleted = EventBody::AgentDeleted {};
        assert_eq!(deleted.data(), serde_json::json!({}));
        assert_eq!(
            EventBody::from_parts(deleted.kind(), deleted.data()),
            Some(deleted)
        );
        assert_eq!(
            EventBody::from_parts("from_the_future", serde_json::json!({})),
            None
        );
    }

    #[test]
    fn kind_matches_the_serde_tag_for_every_variant() {
        let bodies = [
            EventBody::TaskCreated {
                objective: "o".into(),
                workspace: "/w".into(),
            },
            EventBody::TaskState {
                state: TaskState::WaitingForHuman,
            },
            EventBody::AssistantDelta { text: "t".into() },
            EventBody::AssistantReply {
                text: String::new(),
                tool_calls: vec![],
            },
            EventBody::ToolCall {
                call_id: "c".into(),
                name: "n".into(),
                arguments: "{}".into(),
                effect: Some(Effect::Read),
            },
            EventBody::ToolResult {
                call_id: "c".into(),
                name: "n".into(),
                status: ToolStatus::Unknown,
                output: "o".into(),
                progress: true,
            },
            EventBody::PlanUpdated {
                steps: vec![],
                explanation: None,
            },
            EventBody::AgentMessage { text: "t".into() },
            EventBody::RuntimeNote { text: "t".into() },
            EventBody::Question {
                call_id: "c".into(),
                question: "which?".into(),
                options: vec!["a".into()],
                takeover: None,
                approval: None,
            },
            EventBody::Question {
                call_id: "c".into(),
                question: "run `make`?".into(),
                options: APPROVAL_OPTIONS.iter().map(|o| (*o).to_owned()).collect(),
                takeover: None,
                approval: Some(Box::new(Approval {
                    command: Some("make".into()),
                    ..Approval::new(
                        "exec_command",
                        Effect::Command,
                        "run `make`".into(),
                        "{}".into(),
                    )
                })),
            },
            EventBody::ApprovalDecided {
                call_id: "c".into(),
                decision: Decision::Deny,
                reason: Some("not now".into()),
            },
            EventBody::Heartbeat {
                operation: "model".into(),
                elapsed_ms: 20_000,
            },
            EventBody::TaskFinished {
                verdict: Verdict::BudgetExhausted,
                message: "m".into(),
            },
            EventBody::AgentUpdated {
                instructions: "i".into(),
                model: None,
                workspace: Some("/w".into()),
                mcp: vec!["time".into()],
            },
            EventBody::ModelUsage {
                model: "m".into(),
                input_tokens: 10,
                cached_tokens: 2,
                output_tokens: 3,
                estimated: false,
            },
            EventBody::Deliverables {
                files: vec![Deliverable {
                    path: "a.txt".into(),
                    size: 1,
                }],
            },
            EventBody::Summary {
                upto_seq: 9,
                text: "t".into(),
            },
            EventBody::ConversationCleared {},
            EventBody::CommandStarted {
                command_id: "cmd-1".into(),
                command: "sleep 9".into(),
                log: ".lazyboy-output/cmd-1.log".into(),
                pgid: Some(4242),
            },
            EventBody::CommandEnded {
                command_id: "cmd-1".into(),
                status: "exited with code 0".into(),
            },
            EventBody::SubagentSpawned {
                task: "t-1".into(),
                objective: "o".into(),
            },
            EventBody::ScheduleAdded {
                schedule: "s-1".into(),
                cron: "* * * * *".into(),
                objective: "o".into(),
                skip_missed: true,
            },
            EventBody::ScheduleRemoved {
                schedule: "s-1".into(),
            },
            EventBody::SchedulePaused {
                schedule: "s-1".into(),
            },
            EventBody::ScheduleResumed {
                schedule: "s-1".into(),
            },
            EventBody::ScheduleFired {
                schedule: "s-1".into(),
                task: "t-1".into(),
                due_at_ms: 1,
                missed: false,
            },
            EventBody::ScheduleSkipped {
                schedule: "s-1".into(),
                due_at_ms: 1,
                reason: "r".into(),
            },
            EventBody::AgentPinned {
                node: Some("n1".into()),
            },
            EventBody::BoxState {
                state: BoxState::Unavailable,
                reason: Some("no engine".into()),
            },
            EventBody::BoxLock {
                action: BoxLockAction::Queued,
                agent: "a".into(),
                task: "t-1".into(),
                person: false,
                holder: Some(BoxHolder {
                    person: true,
                    task: None,
                    agent: None,
                    since_ms: 1,
                }),
            },
            EventBody::ToolImage {
                call_id: "c".into(),
                path: ".lazyboy-output/c.png".into(),
                media_type: "image/png".into(),
            },
        ];
        for body in bodies {
            let tagged = serde_json::to_value(&body).unwrap();
            assert_eq!(tagged["kind"], body.kind());
            assert_eq!(EventBody::from_parts(body.kind(), body.data()), Some(body));
        }
    }

    #[test]
    fn verdict_exit_codes_and_states() {
        let table = [
            (Verdict::Answer, 0, TaskState::Done),
            (Verdict::Done, 0, TaskState::Done),
            (Verdict::Waiting, 0, TaskState::Done),
            (Verdict::Blocked, 1, TaskState::Blocked),
            (Verdict::BudgetExhausted, 1, TaskState::BudgetExhausted),
            (Verdict::Failed, 1, TaskState::Failed),
            (Verdict::Cancelled, 130, TaskState::Cancelled),
        ];
        for (verdict, code, state) in table {
            assert_eq!((verdict.exit_code(), verdict.final_state()), (code, state));
            assert_eq!(TaskState::parse(state.as_str()), Some(state));
        }
    }
}
