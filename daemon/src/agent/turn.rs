//! The turn loop: model, tools, model, ... until a verdict.
//!
//! Checkpoints: the model's reply (with its calls) is persisted before any call runs; each
//! call's intent (`tool_call`) is persisted before it runs and its result (`tool_result`)
//! after. So on recovery every call has exactly one result: the ones that had started get
//! `unknown`, the ones that had not get `skipped`, and nothing is re-run automatically.
//!
//! A daemon shutdown stops the loop where it is without a verdict (the task resumes at the
//! next start); a stop request cancels the model request or the tool wait, kills the task's
//! commands, and ends with `cancelled`.

use std::collections::HashSet;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use futures_util::future::join_all;
use lazyboy_protocol::{EventBody, TaskState, ToolCallRecord, ToolStatus, Verdict};
use serde_json::Value;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::Runtime;
use super::control;
use super::fuse::{Fuse, LoopGuard};
use super::history::History;
use super::prompt;
use super::{memory, subagents};
use crate::providers::{ModelReply, ModelRequest, Provider, ProviderError, ToolDef};
use crate::store::{StoreError, TaskRow};
use crate::tools::{ToolContext, ToolKind, ToolOutput};

/// Why the loop stopped without a verdict.
pub(super) enum Halt {
    /// The daemon is shutting down: leave the task to resume later.
    Shutdown,
    /// The store failed: nothing more can be recorded.
    Store(StoreError),
}

impl From<StoreError> for Halt {
    fn from(error: StoreError) -> Halt {
        Halt::Store(error)
    }
}

/// Runs `task` to a verdict (or until shutdown).
pub(super) async fn run(
    rt: &Arc<Runtime>,
    task: TaskRow,
    cancel: CancellationToken,
    steered: Arc<AtomicBool>,
) {
    let mut turn = Turn {
        rt: rt.clone(),
        task,
        cancel,
        guard: LoopGuard::default(),
        reminders: Vec::new(),
        asked_person: false,
        steered,
        known_background: HashSet::new(),
    };
    match turn.drive().await {
        Ok(Ending::WaitForHuman) => {
            if let Err(error) = rt
                .store
                .set_task_state(&turn.task, TaskState::WaitingForHuman)
                .await
            {
                tracing::error!(%error, "cannot record the wait for the person");
            }
            tracing::info!("task waits for the person");
        }
        Ok(Ending::Verdict(verdict, message)) => {
            if let Err(error) = rt.store.finish_task(&turn.task, verdict, &message).await {
                tracing::error!(%error, "cannot record the verdict");
            }
            tracing::info!(?verdict, "task finished");
        }
        Err(Halt::Shutdown) => tracing::info!("task paused by shutdown"),
        Err(Halt::Store(error)) => tracing::error!(%error, "task stopped: the store failed"),
    }
}

pub(super) struct Turn {
    pub(super) rt: Arc<Runtime>,
    pub(super) task: TaskRow,
    pub(super) cancel: CancellationToken,
    guard: LoopGuard,
    /// Reminders from the loop guard, told to the model once the whole batch has its results
    /// (a note between two results of one reply would break the wire format).
    reminders: Vec<String>,
    /// Set when the turn ended on a question to the person (not a verdict).
    asked_person: bool,
    /// Raised by `Runtime::steer`: a new instruction arrived mid-batch.
    pub(super) steered: Arc<AtomicBool>,
    /// Background commands already recorded (`command_started`).
    pub(super) known_background: HashSet<String>,
}

/// One call of a batch, parsed.
pub(super) struct Call {
    pub(super) record: ToolCallRecord,
    pub(super) args: Result<Value, String>,
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

/// How a drive ends.
enum Ending {
    Verdict(Verdict, String),
    WaitForHuman,
}

impl Turn {
    async fn drive(&mut self) -> Result<Ending, Halt> {
        let (verdict, message) = self.drive_to_verdict().await?;
        if self.asked_person {
            Ok(Ending::WaitForHuman)
        } else {
            Ok(Ending::Verdict(verdict, message))
        }
    }

    async fn drive_to_verdict(&mut self) -> Result<(Verdict, String), Halt> {
        let history = self.load_history().await?;
        for (call, output, status) in &history.results {
            let kind = self.kind_of(&call.name);
            self.guard.record(
                kind,
                &call.name,
                &call.arguments,
                output,
                *status != ToolStatus::Ok,
                false,
            );
        }
        // Recovery: answer every call the last reply left without a result.
        for call in &history.unanswered {
            let (status, output) = if history.started.contains(&call.id) {
                (
                    ToolStatus::Unknown,
                    "outcome unknown: the daemon stopped while this call was running. It may \
                     or may not have taken effect; observe the current state before acting \
                     again, and do not assume it failed."
                        .to_owned(),
                )
            } else {
                (
                    ToolStatus::Skipped,
                    "not run: the daemon stopped before this call started.".to_owned(),
                )
            };
            self.record_result(call, status, output).await?;
        }
        self.report_lost_commands(&history).await?;
        self.known_background = history.background.iter().map(|b| b.id.clone()).collect();
        self.rt
            .store
            .set_task_state(&self.task, TaskState::Running)
            .await?;
        let mut history = history;
        self.catch_up(&mut history).await?;

        let provider = match self
            .rt
            .config
            .provider_for(self.task.model.as_deref())
            .and_then(|config| Provider::new(config).map_err(|e| e.to_string()))
        {
            Ok(provider) => provider,
            Err(message) => return Ok((Verdict::Failed, message)),
        };
        let workspace = match PathBuf::from(&self.task.workspace).canonicalize() {
            Ok(path) => path,
            Err(error) => {
                return Ok((
                    Verdict::Failed,
                    format!(
                        "the workspace {} is not usable: {error}",
                        self.task.workspace
                    ),
                ));
            }
        };

        let (budget, budget_name) = if self.task.parent_id.is_some() {
            (
                self.rt.config.subagent_max_rounds,
                "LAZYBOY_SUBAGENT_MAX_ROUNDS",
            )
        } else {
            (self.rt.config.max_rounds_total, "LAZYBOY_MAX_ROUNDS_TOTAL")
        };
        loop {
            if self.cancel.is_cancelled() {
                return Ok(self.cancelled());
            }
            // The last reply had no calls: the turn ends (also when resuming after a restart).
            if let Some(text) = history.ending.clone() {
                if let Some(verdict) = self.end_turn(&history, &text).await? {
                    return Ok(verdict);
                }
                self.catch_up(&mut history).await?;
                continue;
            }
            if history.rounds >= budget {
                return Ok((
                    Verdict::BudgetExhausted,
                    format!(
                        "stopped after {} model rounds ({budget_name}); the work is not \
                         finished",
                        history.rounds
                    ),
                ));
            }
            let running = self.rt.commands.running_for_task(&self.task.id);
            let request = ModelRequest {
                system: prompt::system(
                    &self.task.instructions,
                    &workspace.display().to_string(),
                    &history.plan,
                    &running,
                ),
                messages: history.messages.clone(),
                tools: self.tool_defs(),
            };
            let reply = match self.ask_model(&provider, &request).await? {
                Ok(reply) => reply,
                Err(ProviderError::Cancelled) => return Ok(self.cancelled()),
                Err(error) => return Ok((Verdict::Failed, error.to_string())),
            };
            // Some servers number calls per reply (call_0, call_1, ...): an id already used in
            // this task is renamed, so every call has its own result and checkpoint.
            let mut calls: Vec<ToolCallRecord> = Vec::with_capacity(reply.tool_calls.len());
            for c in &reply.tool_calls {
                let mut id = c.id.clone();
                let mut n = 1;
                while history.has_call(&id) || calls.iter().any(|other| other.id == id) {
                    n += 1;
                    id = format!("{}~{n}", c.id);
                }
                calls.push(ToolCallRecord {
                    id,
                    name: c.name.clone(),
                    arguments: c.arguments.clone(),
                });
            }
            self.append(EventBody::AssistantReply {
                text: reply.text.clone(),
                tool_calls: calls.clone(),
            })
            .await?;

            if !calls.is_empty() {
                match self.run_batch(&calls, &workspace).await? {
                    BatchEnd::Continue => {}
                    BatchEnd::Finish(verdict, message) => return Ok((verdict, message)),
                    BatchEnd::Steered => {}
                    BatchEnd::AskPerson => {
                        self.asked_person = true;
                        return Ok((Verdict::Waiting, String::new()));
                    }
                }
            }
            self.catch_up(&mut history).await?;
        }
    }

    pub(super) async fn load_history(&self) -> Result<History, Halt> {
        let mut history = History::default();
        self.catch_up(&mut history).await?;
        Ok(history)
    }

    /// Folds the task's events recorded since `history` was last brought up to date.
    async fn catch_up(&self, history: &mut History) -> Result<(), Halt> {
        let events = self
            .rt
            .store
            .task_history_after(&self.task.id, history.last_seq)
            .await?;
        for (seq, body) in &events {
            history.apply(body);
            history.last_seq = *seq;
        }
        Ok(())
    }

    pub(super) fn cancelled(&self) -> (Verdict, String) {
        self.rt.commands.kill_task(&self.task.id);
        (Verdict::Cancelled, "stopped by the person".to_owned())
    }

    fn kind_of(&self, name: &str) -> ToolKind {
        if control::is_control(name) {
            return ToolKind::Control;
        }
        self.rt
            .tools
            .get(name)
            .map_or(ToolKind::Mutating, |tool| tool.kind())
    }

    fn tool_defs(&self) -> Vec<ToolDef> {
        let mut defs: Vec<ToolDef> = self
            .rt
            .tools
            .iter()
            .map(|tool| ToolDef {
                name: tool.name().to_owned(),
                description: tool.description().to_owned(),
                parameters: tool.parameters(),
            })
            .collect();
        defs.extend(control::specs());
        defs.extend(memory::specs());
        defs.extend(subagents::specs());
        defs.retain(|def| self.refusal(&def.name).is_none());
        defs
    }

    /// Why this task may not use the tool `name`, if it may not: subagents never get the
    /// subagent tools or the ones that ask the person, and keep to the tools they were given
    /// (the plan and report tools always stay).
    pub(super) fn refusal(&self, name: &str) -> Option<String> {
        self.task.parent_id.as_ref()?;
        if subagents::withheld_from_subagents(name) {
            return Some(format!(
                "{name} is not available to a subagent; report_blocked if you need the person"
            ));
        }
        let always = matches!(
            name,
            control::UPDATE_PLAN
                | control::SEND_MESSAGE
                | control::REPORT_DONE
                | control::REPORT_BLOCKED
        );
        match self.task.allowed_tools() {
            Some(allowed) if !always && !allowed.iter().any(|t| t == name) => Some(format!(
                "{name} is not among the tools you were given: {}",
                allowed.join(", ")
            )),
            _ => None,
        }
    }

    pub(super) async fn append(&self, body: EventBody) -> Result<(), Halt> {
        self.rt.store.append_to_task(&self.task, &body).await?;
        Ok(())
    }

    /// Streams one model request, recording text deltas as they arrive, with heartbeats.
    async fn ask_model(
        &self,
        provider: &Provider,
        request: &ModelRequest,
    ) -> Result<Result<ModelReply, ProviderError>, Halt> {
        let (tx, mut rx) = mpsc::unbounded_channel::<String>();
        let store = self.rt.store.clone();
        let task = self.task.clone();
        // One writer keeps the deltas in order; it drains before the reply is recorded.
        let writer = tokio::spawn(async move {
            while let Some(text) = rx.recv().await {
                if let Err(error) = store
                    .append_to_task(&task, &EventBody::AssistantDelta { text })
                    .await
                {
                    tracing::warn!(%error, "cannot record a text delta");
                }
            }
        });
        let mut on_text = move |text: &str| {
            if !text.is_empty() {
                let _ = tx.send(text.to_owned());
            }
        };
        let cancel = self.cancel.clone();
        let reply = self
            .with_heartbeat("waiting for the model", async {
                provider.complete(request, &cancel, &mut on_text).await
            })
            .await;
        drop(on_text);
        let _ = writer.await;
        reply
    }

    /// Runs `fut`, appending a heartbeat every interval while it is pending. Stops early on
    /// shutdown.
    pub(super) async fn with_heartbeat<T>(
        &self,
        operation: &str,
        fut: impl Future<Output = T>,
    ) -> Result<T, Halt> {
        let started = Instant::now();
        let mut beat = crate::bus::idle_interval(self.rt.config.heartbeat);
        let mut fut = std::pin::pin!(fut);
        loop {
            tokio::select! {
                out = &mut fut => return Ok(out),
                () = self.rt.shutdown.cancelled() => return Err(Halt::Shutdown),
                _ = beat.tick() => {
                    let elapsed_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
                    self.append(EventBody::Heartbeat { operation: operation.to_owned(), elapsed_ms }).await?;
                }
            }
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
        })
        .await
    }

    /// Runs one batch, then tells the model the guard's reminders. Every call of the batch
    /// ends with exactly one result: calls after one that ended the turn are `skipped`.
    async fn run_batch(
        &mut self,
        calls: &[ToolCallRecord],
        workspace: &Path,
    ) -> Result<BatchEnd, Halt> {
        let end = self.run_calls(calls, workspace).await?;
        let skipped = match end {
            BatchEnd::Finish(..) => {
                Some("not run: an earlier call in the same reply ended the turn")
            }
            BatchEnd::Steered => {
                Some("not run: the person sent a new instruction; read it and decide again")
            }
            BatchEnd::Continue | BatchEnd::AskPerson => None,
        };
        if let Some(reason) = skipped {
            let answered: std::collections::HashSet<String> = self
                .load_history()
                .await?
                .results
                .iter()
                .map(|(call, _, _)| call.id.clone())
                .collect();
            for call in calls.iter().filter(|c| !answered.contains(&c.id)) {
                self.record_result(call, ToolStatus::Skipped, reason.into())
                    .await?;
            }
        }
        for text in std::mem::take(&mut self.reminders) {
            self.append(EventBody::RuntimeNote { text }).await?;
        }
        Ok(end)
    }

    /// Read-only calls in parallel, everything else alone and in order.
    async fn run_calls(
        &mut self,
        calls: &[ToolCallRecord],
        workspace: &Path,
    ) -> Result<BatchEnd, Halt> {
        let parsed: Vec<Call> = calls
            .iter()
            .map(|record| Call {
                record: record.clone(),
                args: parse_arguments(&record.arguments),
            })
            .collect();
        let alone_violation = parsed.len() > 1;
        let mut index = 0;
        self.steered.store(false, Ordering::SeqCst);
        while index < parsed.len() {
            // A new instruction waits for the call that was running, not for the rest.
            if index > 0 && self.steered.swap(false, Ordering::SeqCst) {
                return Ok(BatchEnd::Steered);
            }
            if self.cancel.is_cancelled() {
                for call in &parsed[index..] {
                    self.record_result(
                        &call.record,
                        ToolStatus::Skipped,
                        "not run: the task was stopped".into(),
                    )
                    .await?;
                }
                return Ok(BatchEnd::Finish(
                    Verdict::Cancelled,
                    "stopped by the person".into(),
                ));
            }
            let kind = self.kind_of(&parsed[index].record.name);
            if kind == ToolKind::ReadOnly {
                let end = parsed[index..]
                    .iter()
                    .position(|c| self.kind_of(&c.record.name) != ToolKind::ReadOnly)
                    .map_or(parsed.len(), |offset| index + offset);
                let group = &parsed[index..end];
                for call in group {
                    self.append(intent(&call.record)).await?;
                }
                let outputs = self
                    .with_heartbeat(
                        "running read-only tools",
                        join_all(group.iter().map(|call| self.run_tool(call, workspace))),
                    )
                    .await?;
                let mut end_of_turn = None;
                for (call, output) in group.iter().zip(outputs) {
                    let end = self.finish_call(call, kind, output).await?;
                    end_of_turn = end_of_turn.or(end);
                }
                if let Some(end) = end_of_turn {
                    return Ok(end);
                }
                index = end;
                continue;
            }
            let call = &parsed[index];
            index += 1;
            if kind == ToolKind::Control {
                if let Some(end) = self.run_control(call, alone_violation, workspace).await? {
                    return Ok(end);
                }
                continue;
            }
            self.append(intent(&call.record)).await?;
            let operation = format!("running {}", call.record.name);
            let output = self
                .with_heartbeat(&operation, self.run_tool(call, workspace))
                .await?;
            self.note_background().await?;
            if let Some(end) = self.finish_call(call, kind, output).await? {
                return Ok(end);
            }
        }
        Ok(BatchEnd::Continue)
    }

    async fn run_tool(&self, call: &Call, workspace: &Path) -> ToolOutput {
        if let Some(refusal) = self.refusal(&call.record.name) {
            return ToolOutput::error(refusal);
        }
        let args = match &call.args {
            Ok(args) => args.clone(),
            Err(message) => return ToolOutput::error(message.clone()),
        };
        let Some(tool) = self.rt.tools.get(&call.record.name) else {
            return ToolOutput::error(format!(
                "there is no tool named {:?}; use one of the tools you were given",
                call.record.name
            ));
        };
        let ctx = ToolContext {
            workspace: workspace.to_path_buf(),
            task_id: self.task.id.clone(),
            // Spill files are named by this; call ids repeat across tasks of one workspace.
            call_id: format!("{}-{}", self.task.id, call.record.id),
            commands: self.rt.commands.clone(),
            cancel: self.cancel.clone(),
        };
        // A stop must not wait for a tool that does not watch the token itself.
        tokio::select! {
            output = tool.run(&ctx, args) => output,
            () = self.cancel.cancelled() => ToolOutput::error(
                "stopped: the task was cancelled while this call ran; its effect is unknown",
            ),
        }
    }

    /// Records a result and applies the loop fuses.
    async fn finish_call(
        &mut self,
        call: &Call,
        kind: ToolKind,
        output: ToolOutput,
    ) -> Result<Option<BatchEnd>, Halt> {
        let status = if output.is_error {
            ToolStatus::Error
        } else {
            ToolStatus::Ok
        };
        let fuse = self.guard.record(
            kind,
            &call.record.name,
            &call.record.arguments,
            &output.text,
            output.is_error,
            output.new_output,
        );
        self.record_result(&call.record, status, output.text)
            .await?;
        match fuse {
            Fuse::Continue => Ok(None),
            Fuse::Remind(text) => {
                if !self.reminders.contains(&text) {
                    self.reminders.push(text);
                }
                Ok(None)
            }
            Fuse::Block(reason) => Ok(Some(BatchEnd::Finish(Verdict::Blocked, reason))),
        }
    }
}

pub(super) fn intent(call: &ToolCallRecord) -> EventBody {
    EventBody::ToolCall {
        call_id: call.id.clone(),
        name: call.name.clone(),
        arguments: call.arguments.clone(),
    }
}

/// The model's arguments as a JSON object, or a message telling it what was wrong.
fn parse_arguments(raw: &str) -> Result<Value, String> {
    let raw = if raw.trim().is_empty() { "{}" } else { raw };
    match serde_json::from_str::<Value>(raw) {
        Ok(value @ Value::Object(_)) => Ok(value),
        Ok(other) => Err(format!(
            "the arguments must be a JSON object, got {other}; call the tool again with an object"
        )),
        Err(error) => Err(format!(
            "the arguments are not valid JSON ({error}): {raw}; call the tool again with valid JSON"
        )),
    }
}
