//! The dashboard's projections: what the daemon has already folded from the event log, so a
//! page never replays the log from the start.
//!
//! `GET /api/state` is the status board ([`DashboardState`]); `GET
//! /api/agents/{name}/conversation?before=SEQ&limit=N` is one agent's conversation, newest
//! first, tool work already grouped ([`Conversation`]). Both say the `seq` they are current
//! to: a client streams `/api/events?after=<seq>` from there and folds the live events the
//! same way (`web/lib/fold.js` mirrors the daemon's fold).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::{Agent, Approval, Effect, PlanStep, Task, ToolStatus, Verdict};

/// `GET /api/state`: every live agent with what it is doing, and the open questions.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct DashboardState {
    /// The last event this state includes: stream from here.
    pub seq: i64,
    /// The daemon's clock when it read the state, so a client with a skewed clock (a phone)
    /// still judges heartbeats right.
    pub now_ms: i64,
    /// By name.
    pub agents: Vec<AgentStatus>,
    /// Questions of tasks waiting for the person, oldest first.
    pub questions: Vec<OpenQuestion>,
}

/// One agent on the status board.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct AgentStatus {
    #[serde(flatten)]
    pub agent: Agent,
    /// The step the current task's plan is on (the first in progress, else the first
    /// pending).
    pub plan_step: Option<String>,
    /// The plan of the current task, as it stands.
    #[serde(default)]
    pub plan: Vec<PlanStep>,
    /// The last thing the agent said to the person (`send_message`).
    pub last_message: Option<LastMessage>,
    /// A task of this agent waits for the person.
    pub waiting: bool,
    /// Its open top-level tasks and the most recent ended ones, newest first.
    pub tasks: Vec<Task>,
}

/// What an agent last said.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct LastMessage {
    pub seq: i64,
    pub at_ms: i64,
    pub text: String,
}

/// A question a task waits on (`POST /api/tasks/{task}/answer`).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct OpenQuestion {
    pub task: String,
    pub agent: String,
    pub call_id: String,
    pub question: String,
    pub options: Vec<String>,
    /// For a takeover: login, 2fa, captcha, authorization or other.
    pub takeover: Option<String>,
    /// For a call waiting for approval: what exactly will run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval: Option<Box<Approval>>,
    pub seq: i64,
    pub at_ms: i64,
}

/// `GET /api/agents/{name}/conversation`: a page of items, newest first.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Conversation {
    pub agent: String,
    /// The last event of the log when this page was read: live events after it are new.
    pub seq: i64,
    pub items: Vec<ConversationItem>,
    /// Pass as `before` for the next, older page; `None` at the start of the history.
    pub older: Option<i64>,
}

/// One entry of a conversation. `seq` is its first event's, and identifies it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ConversationItem {
    /// The person wrote (to the chat thread, or steering a task).
    UserMessage {
        seq: i64,
        at_ms: i64,
        task: Option<String>,
        text: String,
    },
    /// A task was handed over: its objective is what the person (or a schedule) asked.
    TaskStarted {
        seq: i64,
        at_ms: i64,
        task: String,
        objective: String,
    },
    /// `send_message`: the agent speaking to the person.
    AgentMessage {
        seq: i64,
        at_ms: i64,
        task: Option<String>,
        text: String,
    },
    /// A run of tool calls in one task with nothing said in between.
    Work(WorkGroup),
    /// The plan as it stood after an update.
    Plan {
        seq: i64,
        at_ms: i64,
        task: String,
        steps: Vec<PlanStep>,
        explanation: Option<String>,
    },
    /// The agent asked the person (or handed them the computer, `takeover`).
    Question {
        seq: i64,
        at_ms: i64,
        task: String,
        call_id: String,
        question: String,
        options: Vec<String>,
        takeover: Option<String>,
        /// For a call waiting for approval: what exactly will run.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        approval: Option<Box<Approval>>,
        /// The answer, once given (the asking call's result).
        answer: Option<String>,
    },
    /// The task ended its turn.
    Verdict {
        seq: i64,
        at_ms: i64,
        task: String,
        verdict: Verdict,
        message: String,
        /// For `done`: what `report_done` declared.
        report: Option<Report>,
    },
    /// Something the runtime or a schedule recorded.
    Note {
        seq: i64,
        at_ms: i64,
        task: Option<String>,
        text: String,
    },
}

impl ConversationItem {
    /// The seq of the item's first event (its identity).
    pub fn seq(&self) -> i64 {
        match self {
            ConversationItem::UserMessage { seq, .. }
            | ConversationItem::TaskStarted { seq, .. }
            | ConversationItem::AgentMessage { seq, .. }
            | ConversationItem::Plan { seq, .. }
            | ConversationItem::Question { seq, .. }
            | ConversationItem::Verdict { seq, .. }
            | ConversationItem::Note { seq, .. } => *seq,
            ConversationItem::Work(work) => work.seq,
        }
    }
}

/// Tool work folded into one line: "ran 7 commands, edited 2 files, 40 s".
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct WorkGroup {
    pub seq: i64,
    /// The last event folded in.
    pub last_seq: i64,
    pub at_ms: i64,
    pub last_at_ms: i64,
    pub task: String,
    /// Calls by their declared effect (calls from old logs without one count as `control`).
    pub counts: BTreeMap<Effect, u32>,
    /// The most recent steps (at most [`WORK_STEPS_KEPT`]), oldest first.
    pub steps: Vec<WorkStep>,
    /// Steps left out of `steps` (the oldest ones).
    #[serde(default)]
    pub omitted: u32,
}

/// How many steps a [`WorkGroup`] carries; the counts cover all of them.
pub const WORK_STEPS_KEPT: usize = 50;
/// How much of a result's output a [`WorkStep`] carries (the task's events have it whole).
pub const WORK_OUTPUT_CHARS: usize = 4000;

/// One call (or background command) in a [`WorkGroup`].
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct WorkStep {
    pub seq: i64,
    /// The call's id, or the background command's.
    pub id: String,
    /// The tool's name; `command_started` / `command_ended` for a background command.
    pub name: String,
    pub effect: Option<Effect>,
    /// The call's arguments (JSON text), or the command line.
    pub arguments: String,
    pub status: Option<ToolStatus>,
    /// The result's output (at most [`WORK_OUTPUT_CHARS`]), or the command's end.
    pub output: Option<String>,
}

/// What `report_done` declared.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Report {
    pub summary: String,
    pub evidence: String,
    /// Paths in the task's workspace; each downloads from `GET /api/tasks/{task}/files/{path}`.
    pub files: Vec<String>,
}
