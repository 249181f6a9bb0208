//! One batch: the calls of one model reply, run through the task's registry.
//!
//! Consecutive `read` calls run in parallel; every other call runs alone, in order. Each call
//! records its intent (`tool_call`, with its effect) before it runs and its one result after;
//! a call that ends the turn (a verdict, a question) ends the batch, and the calls after it
//! get `skipped` results. Invalid JSON arguments, unknown tools and refused tools are results
//! for the model; only a tool that finds the store gone aborts the turn.
//!
//! Before a non-read call runs, the agent's boundaries gate it (`approval.rs`): a call that
//! needs the person's approval pauses the batch (the calls after it wait, unanswered, and
//! run in order once the person decides); one the sandbox refuses gets an error result.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use futures_util::future::join_all;
use lazyboy_protocol::{Effect, EventBody, ToolCallRecord, ToolStatus, Verdict};
use serde_json::Value;

use super::fuse::Fuse;
use super::turn_state::{BatchEnd, Call, Gate, Halt, Turn};
use crate::confine::Confinement;
use crate::confine::machine::Host;
use crate::tools::workspace::Root;
use crate::tools::{self, Handled, Registry, ToolContext, ToolOutput, TurnEnd};

impl Turn {
    /// Runs one batch, then tells the model the guard's reminders. Every call of the batch
    /// ends with exactly one result: calls after one that ended the turn are `skipped`.
    /// `several`: the reply made more than one call (a resumed batch may have fewer left).
    pub(super) async fn run_batch(
        &mut self,
        calls: &[ToolCallRecord],
        several: bool,
        workspace: &Arc<Root>,
    ) -> Result<BatchEnd, Halt> {
        let end = self.run_calls(calls, several, workspace).await?;
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
            for call in self.load_history().await?.unanswered {
                self.record_result(&call, ToolStatus::Skipped, reason.into())
                    .await?;
            }
        }
        // A batch paused for approval is not over: a note now would sit between its results.
        if !std::mem::take(&mut self.awaiting_approval) {
            for text in std::mem::take(&mut self.reminders) {
                self.append(EventBody::RuntimeNote { text }).await?;
            }
        }
        Ok(end)
    }

    /// Read calls in parallel, everything else alone and in order.
    async fn run_calls(
        &mut self,
        calls: &[ToolCallRecord],
        several: bool,
        workspace: &Arc<Root>,
    ) -> Result<BatchEnd, Halt> {
        let parsed: Vec<Call> = calls
            .iter()
            .map(|record| {
                let args = parse_arguments(&record.arguments);
                let effect = match &args {
                    Ok(args) => self.tools.effect(&record.name, args),
                    // It only gets an error.
                    Err(_) => Effect::Read,
                };
                Call {
                    record: record.clone(),
                    args,
                    effect,
                }
            })
            .collect();
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
            // A restart: between two calls is a checkpoint. The calls not started get
            // `skipped` at the next start, as after any stop between calls.
            if self.rt.draining() {
                return Err(Halt::Shutdown);
            }
            let end = if parsed[index].effect == Effect::Read {
                let end = parsed[index..]
                    .iter()
                    .position(|c| c.effect != Effect::Read)
                    .map_or(parsed.len(), |offset| index + offset);
                let group = &parsed[index..end];
                index = end;
                for call in group {
                    self.append(intent(call)).await?;
                }
                let outcomes = self
                    .with_heartbeat(
                        "running read-only tools",
                        join_all(
                            group
                                .iter()
                                .map(|call| self.run_tool(call, several, workspace)),
                        ),
                    )
                    .await?;
                let mut end_of_turn = None;
                for (call, outcome) in group.iter().zip(outcomes) {
                    let end = self.finish_call(call, outcome).await?;
                    end_of_turn = end_of_turn.or(end);
                }
                end_of_turn
            } else {
                let call = &parsed[index];
                index += 1;
                match self.gate(call, workspace).await? {
                    Gate::Run => {}
                    Gate::Ask => return Ok(BatchEnd::AskPerson),
                    Gate::Refuse(text) => {
                        self.append(intent(call)).await?;
                        let refused = Ok(ToolOutput::error(text).into());
                        if let Some(end) = self.finish_call(call, refused).await? {
                            return Ok(end);
                        }
                        continue;
                    }
                }
                self.append(intent(call)).await?;
                let operation = format!("running {}", call.record.name);
                let outcome = self
                    .with_heartbeat(&operation, self.run_tool(call, several, workspace))
                    .await?;
                self.note_background().await?;
                self.finish_call(call, outcome).await?
            };
            if let Some(end) = end {
                return Ok(end);
            }
        }
        Ok(BatchEnd::Continue)
    }

    /// Runs one call; `Err` is fatal (the store is gone).
    async fn run_tool(
        &self,
        call: &Call,
        several: bool,
        workspace: &Arc<Root>,
    ) -> Result<Handled, String> {
        let name = call.record.name.as_str();
        let Some(tool) = self.tools.get(name) else {
            return Ok(ToolOutput::error(self.missing(name)).into());
        };
        let args = match &call.args {
            Ok(args) => args.clone(),
            Err(message) => return Ok(ToolOutput::error(message.clone()).into()),
        };
        if tool.alone() && several {
            return Ok(ToolOutput::error(format!(
                "{name} must be the only call in its reply; the other calls ran, this one did \
                 not. Call it again on its own when you are ready."
            ))
            .into());
        }
        let ctx = self.tool_context(call, workspace);
        // A stop must not wait for a tool that does not watch the token itself.
        tokio::select! {
            outcome = tools::run(tool.as_ref(), &ctx, args) => outcome,
            () = self.cancel.cancelled() => Ok(ToolOutput::error(
                "stopped: the task was cancelled while this call ran; its effect is unknown",
            ).into()),
        }
    }

    /// What a tool sees of this call: its commands run in the agent's sandbox.
    pub(super) fn tool_context(&self, call: &Call, workspace: &Arc<Root>) -> ToolContext {
        let confinement = Confinement::new(self.policy.sandbox, workspace.path())
            .with_git_write(self.policy.git_write);
        ToolContext {
            workspace: workspace.clone(),
            task_id: self.task.id.clone(),
            call: call.record.id.clone(),
            // Spill files are named by this; call ids repeat across tasks of one workspace.
            call_id: format!("{}-{}", self.task.id, call.record.id),
            machine: Arc::new(Host::confined(confinement).in_task(&self.task.id)),
            commands: self.rt.commands.clone(),
            scope: self.scope.clone(),
            cancel: self.cancel.clone(),
        }
    }

    /// Why this task has no tool `name`: a subagent lacks some tools on purpose.
    fn missing(&self, name: &str) -> String {
        if self.task.parent_id.is_some() && Registry::standard().get(name).is_some() {
            if tools::handlers::withheld_from_subagents(name) {
                return format!(
                    "{name} is not available to a subagent; report_blocked if you need the \
                     person"
                );
            }
            return format!(
                "{name} is not among the tools you were given: {}",
                self.tools.names().join(", ")
            );
        }
        format!("there is no tool named {name:?}; use one of the tools you were given")
    }

    /// Records a call's result and applies the loop fuses; `Some` when the turn ends.
    async fn finish_call(
        &mut self,
        call: &Call,
        outcome: Result<Handled, String>,
    ) -> Result<Option<BatchEnd>, Halt> {
        let output = match outcome.map_err(Halt::Fatal)? {
            Handled::Output(output) => output,
            Handled::EndTurn { output, end } => {
                if let Some(output) = output {
                    self.record_result(&call.record, ToolStatus::Ok, output)
                        .await?;
                }
                return Ok(Some(match end {
                    TurnEnd::Verdict(verdict, message) => BatchEnd::Finish(verdict, message),
                    TurnEnd::AskPerson => BatchEnd::AskPerson,
                }));
            }
        };
        let fuse = self.guard.record(
            call.effect,
            &call.record.name,
            &call.record.arguments,
            &output.text,
            output.is_error,
            output.new_output,
        );
        self.append(EventBody::ToolResult {
            call_id: call.record.id.clone(),
            name: call.record.name.clone(),
            status: if output.is_error {
                ToolStatus::Error
            } else {
                ToolStatus::Ok
            },
            output: output.text,
            progress: output.new_output,
        })
        .await?;
        match fuse {
            Fuse::Continue => Ok(None),
            Fuse::Remind(text) => {
                let text = format!("{text} {}", self.repeat_cost());
                if !self.reminders.contains(&text) {
                    self.reminders.push(text);
                }
                Ok(None)
            }
            Fuse::Block(reason) => {
                let reason = format!("{reason}; {}", self.repeat_cost());
                Ok(Some(BatchEnd::Finish(Verdict::Blocked, reason)))
            }
        }
    }

    /// What the run a fuse fired on cost: the model rounds behind it and their tokens.
    fn repeat_cost(&self) -> String {
        let rounds = self.guard.run_len() as usize;
        let tokens: u64 = self.round_tokens.iter().rev().take(rounds).sum();
        format!("(the repetition took {rounds} model rounds, {tokens} tokens)")
    }
}

fn intent(call: &Call) -> EventBody {
    EventBody::ToolCall {
        call_id: call.record.id.clone(),
        name: call.record.name.clone(),
        arguments: call.record.arguments.clone(),
        effect: Some(call.effect),
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
