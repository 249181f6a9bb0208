//! The event log as every client sees it: an [`Event`] and its typed [`EventBody`], the
//! calls and effects it records.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{
    Approval, BoxHolder, BoxLockAction, BoxState, Decision, Deliverable, NotifyKind, TaskState,
    Verdict,
};

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
    /// A notification is owed on `channel` for the event `source` (its seq): the outbox's
    /// entry, recorded before any attempt. `id` is the notification's, the same on every
    /// channel and across retries.
    NotificationDue {
        id: String,
        kind: NotifyKind,
        channel: String,
        source: i64,
    },
    /// The receiver accepted it on attempt `attempt` (from 1).
    NotificationSent {
        id: String,
        kind: NotifyKind,
        channel: String,
        attempt: u32,
    },
    /// Attempt `attempt` failed; the next comes in `retry_in_ms`, or none (`None`: given up).
    NotificationFailed {
        id: String,
        kind: NotifyKind,
        channel: String,
        attempt: u32,
        error: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        retry_in_ms: Option<u64>,
    },
    /// Not sent, and never will be: the question was answered first, its time to live ran
    /// out, or the channel is gone.
    NotificationSkipped {
        id: String,
        kind: NotifyKind,
        channel: String,
        reason: String,
    },
    /// A browser subscribed to Web Push (in the home's `default` agent's chat thread).
    NotifySubscriptionAdded {
        subscription: String,
        name: Option<String>,
        /// The push service's host (the endpoint itself is a capability: not logged).
        host: String,
    },
    /// A subscription was removed: by the person, or its push service said 404/410.
    NotifySubscriptionGone {
        subscription: String,
        reason: String,
    },
    /// A retention pass replaced the bodies of `results` of this task's tool results with
    /// their stubs (each marked `removed`), freeing `bytes_freed` bytes of the log.
    RetentionPass {
        results: u64,
        bytes_freed: u64,
        days: u32,
    },
    /// The daemon made a backup on its `[backup]` schedule (in the default agent's chat
    /// thread) and pruned `pruned` older ones.
    BackupMade {
        path: String,
        bytes: u64,
        events: i64,
        pruned: u64,
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
            EventBody::NotificationDue { .. } => "notification_due",
            EventBody::NotificationSent { .. } => "notification_sent",
            EventBody::NotificationFailed { .. } => "notification_failed",
            EventBody::NotificationSkipped { .. } => "notification_skipped",
            EventBody::NotifySubscriptionAdded { .. } => "notify_subscription_added",
            EventBody::NotifySubscriptionGone { .. } => "notify_subscription_gone",
            EventBody::RetentionPass { .. } => "retention_pass",
            EventBody::BackupMade { .. } => "backup_made",
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
