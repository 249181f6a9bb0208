//! Tasks, their verdicts and states, usage and files, and schedules.

use serde::{Deserialize, Serialize};
use serde_json::Value;

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

/// `POST /api/daemon/token` (local socket only): the token every request must carry.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, Default)]
#[serde(deny_unknown_fields)]
pub struct TokenRequest {
    /// Replace it: the running daemon refuses the old one from the next request on.
    #[serde(default)]
    pub rotate: bool,
}

/// `POST /api/daemon/stop` (local socket only). No body, or no `checkpoint_ms`: shut down
/// now (loops stop where they are; a call in flight is `unknown` at the next start).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, Default)]
#[serde(deny_unknown_fields)]
pub struct StopRequest {
    /// A restart (`lazyboy daemon restart`): first claim nothing more and let every task's
    /// running tool call finish and record its result, waiting at most this long.
    #[serde(default)]
    pub checkpoint_ms: Option<u64>,
}

/// The answer to [`StopRequest`]: the daemon is stopping.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Stopping {
    /// Tasks whose loops were running when it was asked.
    pub tasks: usize,
    /// The wait for their checkpoints, as the daemon bounded it.
    #[serde(default)]
    pub checkpoint_ms: Option<u64>,
}

/// The answer to [`TokenRequest`]: the token in force (with `rotate`, the new one).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct DaemonToken {
    pub token: String,
}

/// `POST /api/auth/login`: a one-time code a browser trades for a session at
/// `GET /login?code=CODE` (on any of the daemon's URLs), until `expires_at_ms`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct LoginCode {
    pub code: String,
    pub expires_at_ms: u64,
}

impl LoginCode {
    /// The login link on the dashboard at `base` (`http://127.0.0.1:8787/`).
    pub fn link(&self, base: &str) -> String {
        format!("{}/login?code={}", base.trim_end_matches('/'), self.code)
    }
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
