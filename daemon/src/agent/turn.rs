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
//!
//! The loop is the top of the turn: it names its steps (`batch.rs`, `approval.rs`,
//! `window.rs`), which extend the [`Turn`] of `turn_state.rs` and never name this file.

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use lazyboy_protocol::{EventBody, TaskState, ToolCallRecord, ToolStatus, Verdict};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::Runtime;
use super::fuse::LoopGuard;
use super::history::GuardInput;
use super::policy::Policy;
use super::prompt;
use super::scope::Scope;
use super::turn_state::{BatchEnd, Halt, Turn};
use super::window::Window;
use crate::providers::{ModelReply, ModelRequest, Provider, ProviderError, ToolDef};
use crate::store::TaskRow;
use crate::tools::workspace::Root;
use crate::tools::{Registry, TaskTools};

/// Runs `task` to a verdict (or until shutdown).
pub(super) async fn run(
    rt: &Arc<Runtime>,
    task: TaskRow,
    cancel: CancellationToken,
    pause: CancellationToken,
    steered: Arc<AtomicBool>,
) {
    let mut tools = Registry::for_task(&TaskTools {
        subagent: task.parent_id.is_some(),
        allowed: task.allowed_tools(),
    });
    // The web tools, and the agent's MCP servers' tools (the servers start now if need be).
    let allowed = task.allowed_tools();
    crate::tools::handlers::register_web(&mut tools, &rt.web, allowed.as_deref());
    let servers = task.mcp_servers();
    tokio::select! {
        () = crate::mcp::adapter::register(&rt.mcp, &mut tools, &servers, allowed.as_deref()) => {}
        // A server still starting must not hold up a stop or a shutdown.
        () = cancel.cancelled() => {}
        () = rt.shutdown.cancelled() => {}
    }
    crate::tools::handlers::register_box(&mut tools, &rt.sandbox, &task);
    let scope = Arc::new(Scope {
        rt: rt.clone(),
        task: task.clone(),
        tools: tools.clone(),
    });
    let mut turn = Turn {
        rt: rt.clone(),
        task,
        tools,
        scope,
        cancel,
        pause,
        guard: LoopGuard::default(),
        reminders: Vec::new(),
        asked_person: false,
        steered,
        known_background: HashSet::new(),
        round_tokens: Vec::new(),
        policy: Policy::default(),
        approved_once: None,
        approved_for_task: HashSet::new(),
        awaiting_approval: false,
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
            // Its end is every process's end: nothing it started outlives it.
            rt.kill_task_processes(&turn.task.id);
            tracing::info!(?verdict, "task finished");
        }
        Err(Halt::Shutdown) if rt.shutdown.is_cancelled() || rt.draining() => {
            // The task resumes at the next start, holding the box as it did.
            tracing::info!("task paused by shutdown");
            return;
        }
        // Its claim was lost (another node took it over): this node's box is not its own.
        Err(Halt::Shutdown) => tracing::info!("task paused: its claim was lost"),
        Err(Halt::Store(error)) => tracing::error!(%error, "task stopped: the store failed"),
        Err(Halt::Fatal(error)) => tracing::error!(%error, "task stopped: a tool lost the store"),
    }
    // Its turn ended (for the person, or for good): the box's screen goes to the next in line.
    rt.sandbox.release(&turn.task.id).await;
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
        for input in &history.guard {
            match input {
                GuardInput::Result {
                    effect,
                    call,
                    output,
                    failed,
                    progress,
                } => {
                    self.guard.record(
                        *effect,
                        &call.name,
                        &call.arguments,
                        output,
                        *failed,
                        *progress,
                    );
                }
                GuardInput::PersonSpoke => self.guard.reset(),
            }
        }
        let resume = self.load_boundaries(&history).await?;
        // Recovery: answer every call the last reply left without a result, unless the batch
        // paused for the person's approval and goes on now with their decision.
        for call in history.unanswered.iter().filter(|_| resume.is_none()) {
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
        // A claim from the queue already made it `running`; a recovery made it `recovering`.
        if self.task.state() != TaskState::Running {
            self.rt
                .store
                .set_task_state(&self.task, TaskState::Running)
                .await?;
        }
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
        // Opened once: every file of this drive is opened beneath this fd. The git
        // directories the agent's commands may not change are closed to the file tools too
        // (the daemon writes for them, outside the sandbox).
        let path = PathBuf::from(&self.task.workspace);
        let protected = crate::confine::Confinement::new(self.policy.sandbox, &path)
            .with_git_write(self.policy.git_write)
            .protected_git();
        let workspace = match Root::open(&path) {
            Ok(root) => Arc::new(root.with_read_only(protected)),
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
        if let Some(why) =
            crate::confine::workspaces::refusal(self.policy.sandbox, workspace.path())
        {
            return Ok((Verdict::Failed, format!("not started: {why}")));
        }

        let tools = self.tool_defs();
        let mut window = Window::new(&provider, &tools);
        self.load_prior(&mut window, &provider, &history).await?;
        let (budget, budget_name) = if self.task.parent_id.is_some() {
            (
                self.rt.config.subagent_max_rounds,
                "LAZYBOY_SUBAGENT_MAX_ROUNDS",
            )
        } else {
            (self.rt.config.max_rounds_total, "LAZYBOY_MAX_ROUNDS_TOTAL")
        };
        if let Some(resume) = resume {
            if let Some(end) = self.resume_batch(resume, &history, &workspace).await? {
                return Ok(end);
            }
            self.catch_up(&mut history).await?;
        }
        loop {
            if self.cancel.is_cancelled() {
                return Ok(self.cancelled());
            }
            // A restart: this is a checkpoint (the last batch has its results).
            if self.rt.draining() {
                return Err(Halt::Shutdown);
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
            let system = prompt::system(
                &self.task.instructions,
                &workspace.path().display().to_string(),
                window.prior.as_deref(),
                &history.plan,
                &running,
            );
            let built = match window.fit(&history, &system) {
                Ok(built) => built,
                Err(too_big) => return Ok((Verdict::Failed, too_big.to_string())),
            };
            self.maybe_summarize(&mut window, &provider, &history, &built);
            let request = ModelRequest {
                system,
                messages: crate::providers::images::attach(&built.messages, &workspace).await,
                tools: tools.clone(),
            };
            let reply = match self.ask_model(&provider, &request).await? {
                Ok(reply) => reply,
                Err(ProviderError::Cancelled) => return Ok(self.cancelled()),
                Err(error) => return Ok((Verdict::Failed, error.to_string())),
            };
            let spent = self
                .record_usage(&window, &provider, built.tokens, &reply)
                .await?;
            self.round_tokens.push(spent);
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
                match self.run_batch(&calls, calls.len() > 1, &workspace).await? {
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

    fn tool_defs(&self) -> Vec<ToolDef> {
        self.tools
            .iter()
            .map(|tool| ToolDef {
                name: tool.name().to_owned(),
                description: tool.description().to_owned(),
                parameters: tool.parameters(),
            })
            .collect()
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
        // One writer keeps the deltas in order; it drains before the reply is recorded. It
        // holds back the end of the text so far: a key split across two deltas is redacted
        // whole, never recorded half by half.
        let writer = tokio::spawn(async move {
            let mut held = crate::redact::Stream::new();
            let mut open = true;
            while open {
                let text = match rx.recv().await {
                    Some(piece) => held.push(&piece),
                    None => {
                        open = false;
                        held.finish()
                    }
                };
                if text.is_empty() {
                    continue;
                }
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
        let asked = self.with_heartbeat("waiting for the model", async {
            provider.complete(request, &cancel, &mut on_text).await
        });
        // A restart does not wait for the model: nothing of the reply is recorded yet, and
        // the next daemon asks again.
        let reply = tokio::select! {
            reply = asked => reply,
            () = self.rt.drain.cancelled() => Err(Halt::Shutdown),
        };
        drop(on_text);
        let _ = writer.await;
        reply
    }
}
