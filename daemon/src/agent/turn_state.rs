//! The turn's shared state, below its steps: the [`Turn`] the loop (`turn.rs`) drives and
//! its three steps extend (`batch.rs` runs a reply's calls, `approval.rs` gates them,
//! `window.rs` fits the history to the model's window), why a drive stops ([`Halt`]), and the
//! types one step hands another ([`Call`], [`BatchEnd`], [`Gate`]).
//!
//! Invariant: this file names none of the steps nor the loop, so each step depends only on
//! what is here (and below), never on another step's file; the loop above names them all.
//! What every step records goes through [`Turn::append`], the task's owner's append.

use std::collections::HashSet;
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use lazyboy_protocol::{Effect, EventBody, ToolCallRecord, ToolStatus, Verdict};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::Runtime;
use super::fuse::LoopGuard;
use super::history::History;
use super::policy::Policy;
use super::scope::Scope;
use crate::store::{StoreError, TaskRow};
use crate::tools::Registry;

/// Why the loop stopped without a verdict.
pub(super) enum Halt {
    /// The daemon is shutting down: leave the task to resume later.
    Shutdown,
    /// The store failed: nothing more can be recorded.
    Store(StoreError),
    /// A tool found the store gone (its message).
    Fatal(String),
}

impl From<StoreError> for Halt {
    fn from(error: StoreError) -> Halt {
        Halt::Store(error)
    }
}

pub(super) struct Turn {
    pub(super) rt: Arc<Runtime>,
    pub(super) task: TaskRow,
    /// The tools this task may call (built for it: a subagent's lack some).
    pub(super) tools: Registry,
    /// What those tools see of the task.
    pub(super) scope: Arc<Scope>,
    pub(super) cancel: CancellationToken,
    /// The daemon's shutdown, or this task's claim lost: stop where it is, no verdict.
    pub(super) pause: CancellationToken,
    pub(super) guard: LoopGuard,
    /// Reminders from the loop guard, told to the model once the whole batch has its results
    /// (a note between two results of one reply would break the wire format).
    pub(super) reminders: Vec<String>,
    /// Set when the turn ended on a question to the person (not a verdict).
    pub(super) asked_person: bool,
    /// Raised by `Runtime::steer`: a new instruction arrived mid-batch.
    pub(super) steered: Arc<AtomicBool>,
    /// Background commands already recorded (`command_started`).
    pub(super) known_background: HashSet<String>,
    /// Tokens each model round of this drive used (for the fuses' messages).
    pub(super) round_tokens: Vec<u64>,
    /// The agent's approvals and sandbox, read at the start of the drive.
    pub(super) policy: Policy,
    /// The call the person approved, which runs once without asking again.
    pub(super) approved_once: Option<String>,
    /// Calls approved for the rest of the task (`policy::same_call_key`).
    pub(super) approved_for_task: HashSet<String>,
    /// A call of the current batch waits for approval: the batch is not over.
    pub(super) awaiting_approval: bool,
}

/// One call of a batch, parsed.
pub(super) struct Call {
    pub(super) record: ToolCallRecord,
    pub(super) args: Result<Value, String>,
    pub(super) effect: Effect,
}

/// What a batch ended with.
pub(super) enum BatchEnd {
    Continue,
    Finish(Verdict, String),
    /// A question to the person: the task waits for the answer.
    AskPerson,
    /// The person sent a new instruction: the rest of the batch is skipped.
    Steered,
}

/// What the boundaries say about one call before it runs.
pub(super) enum Gate {
    Run,
    /// The sandbox refuses it: this is its (error) result.
    Refuse(String),
    /// A question for the person was recorded: the batch pauses here.
    Ask,
}

impl Turn {
    pub(super) async fn load_history(&self) -> Result<History, Halt> {
        let mut history = History::default();
        self.catch_up(&mut history).await?;
        Ok(history)
    }

    /// Folds the task's events recorded since `history` was last brought up to date.
    pub(super) async fn catch_up(&self, history: &mut History) -> Result<(), Halt> {
        let events = self
            .rt
            .store
            .task_history_after(&self.task.id, history.last_seq)
            .await?;
        for (seq, body) in &events {
            history.apply_at(*seq, body);
        }
        Ok(())
    }

    pub(super) fn cancelled(&self) -> (Verdict, String) {
        self.rt.commands.kill_task(&self.task.id);
        (Verdict::Cancelled, "stopped by the person".to_owned())
    }

    /// Appends to the task as its owner: refused once this node lost the claim, so a loop
    /// that lost it records nothing more (no new call's intent in particular).
    /// The store redacts every body it writes (`crate::redact`).
    pub(super) async fn append(&self, body: EventBody) -> Result<(), Halt> {
        self.rt.store.append_as_owner(&self.task, &body).await?;
        Ok(())
    }

    /// Runs `fut`, recording a heartbeat every `heartbeat` while it runs ([`super::beats`]).
    pub(super) async fn with_heartbeat<T>(
        &self,
        operation: &str,
        fut: impl Future<Output = T>,
    ) -> Result<T, Halt> {
        let beats = crate::heartbeat::beside(self.rt.config.heartbeat, fut, |elapsed| {
            self.append(EventBody::Heartbeat {
                operation: operation.to_owned(),
                elapsed_ms: crate::heartbeat::millis(elapsed),
            })
        });
        // Paused (shutdown, or this node lost the task's claim): stop where it is.
        tokio::select! {
            out = beats => out,
            () = self.pause.cancelled() => Err(Halt::Shutdown),
        }
    }

    pub(super) async fn record_result(
        &self,
        call: &ToolCallRecord,
        status: ToolStatus,
        output: String,
    ) -> Result<(), Halt> {
        self.append(EventBody::ToolResult {
            call_id: call.id.clone(),
            name: call.name.clone(),
            status,
            output,
            progress: false,
        })
        .await
    }
}
