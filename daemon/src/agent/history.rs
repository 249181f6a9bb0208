//! Rebuilding a task's conversation and state from its events (the checkpoint).
//!
//! The event log is the only record: after a restart the loop reads the task's events back
//! and continues where they end. A call in the last reply without a result is found here;
//! the driver then records it as `unknown` (it had started) or `skipped` (it had not), and
//! never runs it again. Pure logic, no IO.

use std::collections::HashSet;

use std::collections::HashMap;

use lazyboy_protocol::{
    Approval, Decision, Effect, EventBody, PlanStep, ToolCallRecord, ToolStatus,
};

pub use crate::context::{Kind, Meta};
use crate::providers::{Message, ToolCall};
use crate::tools::handlers::legacy_effect;

/// The note that reminds the model to speak; its presence in the log means "already reminded".
pub const REMIND_SEND: &str = "You worked on this but have not told the person anything yet. \
    Use send_message to tell them the outcome (plain reply text is not shown to them).";

/// Revival notes start with this; ids named in one count as reported to the model.
pub const REVIVAL: &str = "The work you were waiting for has finished.";

/// A command that outlived the call that started it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Background {
    pub id: String,
    pub command: String,
    pub log: String,
    pub pgid: Option<i32>,
    /// How it ended, once recorded.
    pub ended: Option<String>,
}

/// The person decided on the call a batch paused for, and the batch has not gone on since:
/// the loop resumes it from that call (which runs when approved; a denied one already has
/// its result), instead of marking the batch's calls unknown or skipped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resume {
    pub call_id: String,
    /// Approved: the call runs (once).
    pub run: bool,
}

/// One thing the loop guard saw.
#[derive(Debug, Clone, PartialEq)]
pub enum GuardInput {
    Result {
        effect: Effect,
        call: ToolCallRecord,
        output: String,
        failed: bool,
        progress: bool,
    },
    /// The person spoke: runs start afresh.
    PersonSpoke,
}

/// A task's state as its events describe it.
#[derive(Debug, Default)]
pub struct History {
    pub messages: Vec<Message>,
    pub plan: Vec<PlanStep>,
    /// Model rounds in this turn (one per assistant reply).
    pub rounds: u64,
    /// Whether a non-control tool has run in this task.
    pub acted: bool,
    /// What `send_message` last said, if anything.
    pub last_message: Option<String>,
    pub reminded_to_send: bool,
    /// Calls of the last reply that have no result yet.
    pub unanswered: Vec<ToolCallRecord>,
    /// Calls whose intent was recorded (they may have started).
    pub started: HashSet<String>,
    /// What the loop guard saw so far, in order, for rebuilding it after a restart.
    pub guard: Vec<GuardInput>,
    /// The effect each started call declared.
    effects: HashMap<String, Effect>,
    /// Every call made so far, to pair results with their arguments.
    calls: Vec<ToolCallRecord>,
    /// Messages from the person waiting for the current calls' results.
    deferred: Vec<(String, i64)>,
    /// What each of `messages` is and the event it came from (same order and length).
    pub meta: Vec<Meta>,
    /// The open question to the person: its call and options.
    pub question: Option<(String, Vec<String>)>,
    /// The last event folded in; the next read starts after it.
    pub last_seq: i64,
    /// The text of the last model reply when it had no calls and nothing followed it: the
    /// turn was ending (after a restart, it resumes at the end of the turn, not the model).
    pub ending: Option<String>,
    /// Background commands, in start order.
    pub background: Vec<Background>,
    /// Subagents this task spawned, in order.
    pub subagents: Vec<String>,
    /// Subagents and commands whose results a revival note already told the model.
    pub reported: HashSet<String>,
    /// The latest summary of the task's older rounds: the seq it covers up to, and its text.
    pub summary: Option<(i64, String)>,
    /// Images recorded for calls whose result is not in yet.
    images: Vec<Message>,
    /// The open question, when it asks to approve a call: the call and what it will do.
    pub approval: Option<(String, Approval)>,
    /// A decision on a paused batch that the loop has not acted on yet.
    pub resume: Option<Resume>,
    /// Calls approved for the rest of the task, by `policy::same_call_key`.
    pub approved_for_task: HashSet<String>,
    /// How many calls the last reply made.
    pub reply_len: usize,
}

impl History {
    fn push(&mut self, message: Message, kind: Kind) {
        self.messages.push(message);
        self.meta.push(Meta {
            kind,
            seq: self.last_seq,
        });
    }

    /// Folds one event with its seq (the seq is recorded with the messages it makes).
    pub fn apply_at(&mut self, seq: i64, event: &EventBody) {
        self.last_seq = seq;
        self.apply(event);
    }

    pub fn from_events<'a>(events: impl IntoIterator<Item = &'a EventBody>) -> History {
        let mut history = History::default();
        for event in events {
            history.apply(event);
        }
        history
    }

    /// Whether a call with this id was made earlier in the task.
    pub fn has_call(&self, id: &str) -> bool {
        self.calls.iter().any(|c| c.id == id)
    }

    /// Folds one more event (in log order) into the history.
    pub fn apply(&mut self, event: &EventBody) {
        if !matches!(
            event,
            EventBody::AssistantDelta { .. }
                | EventBody::Heartbeat { .. }
                | EventBody::TaskState { .. }
                | EventBody::CommandStarted { .. }
                | EventBody::CommandEnded { .. }
                | EventBody::SubagentSpawned { .. }
                | EventBody::ModelUsage { .. }
                | EventBody::Summary { .. }
                | EventBody::Deliverables { .. }
                | EventBody::BoxState { .. }
                | EventBody::BoxLock { .. }
        ) {
            self.ending = None;
        }
        match event {
            EventBody::TaskCreated { objective, .. } => self.push(
                Message::User {
                    text: objective.clone(),
                },
                Kind::Objective,
            ),
            EventBody::UserMessage { text } => {
                self.guard.push(GuardInput::PersonSpoke);
                // Steering that arrived while calls were running joins the conversation
                // after their results (a message between results breaks the wire format).
                if self.unanswered.is_empty() {
                    self.push(Message::User { text: text.clone() }, Kind::Person);
                } else {
                    self.deferred.push((text.clone(), self.last_seq));
                }
            }
            EventBody::RuntimeNote { text } => {
                if text == REMIND_SEND {
                    self.reminded_to_send = true;
                }
                if text.starts_with(REVIVAL) {
                    let named = self
                        .subagents
                        .iter()
                        .chain(self.background.iter().map(|b| &b.id))
                        .filter(|id| text.contains(id.as_str()))
                        .cloned()
                        .collect::<Vec<_>>();
                    self.reported.extend(named);
                }
                self.push(
                    Message::User {
                        text: format!("[runtime] {text}"),
                    },
                    Kind::Note,
                );
            }
            EventBody::AssistantReply { text, tool_calls } => {
                self.rounds += 1;
                self.reply_len = tool_calls.len();
                self.resume = None;
                if tool_calls.is_empty() {
                    self.ending = Some(text.clone());
                }
                self.unanswered = tool_calls.clone();
                self.calls.extend(tool_calls.iter().cloned());
                self.push(
                    Message::Assistant {
                        text: text.clone(),
                        tool_calls: tool_calls
                            .iter()
                            .map(|c| ToolCall {
                                id: c.id.clone(),
                                name: c.name.clone(),
                                arguments: c.arguments.clone(),
                            })
                            .collect(),
                    },
                    Kind::Assistant,
                );
            }
            EventBody::ToolCall {
                call_id,
                name,
                effect,
                ..
            } => {
                self.started.insert(call_id.clone());
                // The batch went on: a decision, if any, has been acted on.
                self.resume = None;
                // Logs from before calls recorded their effect: the standard tool's.
                if let Some(effect) = effect.or_else(|| legacy_effect(name)) {
                    self.effects.insert(call_id.clone(), effect);
                }
            }
            EventBody::ToolResult {
                call_id,
                name,
                status,
                output,
                progress,
            } => {
                self.unanswered.retain(|c| &c.id != call_id);
                if self.resume.as_ref().is_some_and(|r| &r.call_id != call_id) {
                    self.resume = None;
                }
                if self.question.as_ref().is_some_and(|(id, _)| id == call_id) {
                    self.question = None;
                    self.approval = None;
                    // The person's answer.
                    self.guard.push(GuardInput::PersonSpoke);
                }
                let effect = self.effects.get(call_id).copied();
                let acts = effect.is_some_and(|e| !matches!(e, Effect::Control | Effect::Person));
                if acts && *status != ToolStatus::Skipped {
                    self.acted = true;
                }
                if let (Some(call), Some(effect)) =
                    (self.calls.iter().find(|c| &c.id == call_id), effect)
                {
                    self.guard.push(GuardInput::Result {
                        effect,
                        call: call.clone(),
                        output: output.clone(),
                        failed: *status != ToolStatus::Ok,
                        progress: *progress,
                    });
                }
                self.push(
                    Message::ToolResult {
                        call_id: call_id.clone(),
                        name: name.clone(),
                        content: output.clone(),
                        is_error: *status != ToolStatus::Ok,
                    },
                    Kind::Result,
                );
                // Its images (screenshots) go right after it.
                let (mine, others): (Vec<Message>, Vec<Message>) = std::mem::take(&mut self.images)
                    .into_iter()
                    .partition(|m| matches!(m, Message::Image { call_id: id, .. } if id == call_id));
                self.images = others;
                for image in mine {
                    self.push(image, Kind::Result);
                }
                if self.unanswered.is_empty() {
                    for (text, seq) in std::mem::take(&mut self.deferred) {
                        self.messages.push(Message::User { text });
                        self.meta.push(Meta {
                            kind: Kind::Person,
                            seq,
                        });
                    }
                }
            }
            EventBody::Question {
                call_id,
                options,
                approval,
                ..
            } => {
                self.question = Some((call_id.clone(), options.clone()));
                self.approval = approval.as_deref().map(|a| (call_id.clone(), a.clone()));
            }
            EventBody::ApprovalDecided {
                call_id, decision, ..
            } => {
                if self.question.as_ref().is_some_and(|(id, _)| id == call_id) {
                    self.question = None;
                }
                if let Some((_, approval)) = self.approval.take().filter(|(id, _)| id == call_id)
                    && *decision == Decision::ApproveForTask
                {
                    self.approved_for_task
                        .insert(super::policy::same_call_key(&approval));
                }
                self.resume = Some(Resume {
                    call_id: call_id.clone(),
                    run: *decision != Decision::Deny,
                });
                // The person spoke.
                self.guard.push(GuardInput::PersonSpoke);
            }
            EventBody::PlanUpdated { steps, .. } => self.plan = steps.clone(),
            EventBody::AgentMessage { text } => self.last_message = Some(text.clone()),
            // A continued task starts a new turn: its budget, its reminder and its answer.
            EventBody::TaskFinished { .. } => {
                self.resume = None;
                self.rounds = 0;
                self.acted = false;
                self.last_message = None;
                self.reminded_to_send = false;
            }
            EventBody::CommandStarted {
                command_id,
                command,
                log,
                pgid,
            } => self.background.push(Background {
                id: command_id.clone(),
                command: command.clone(),
                log: log.clone(),
                pgid: *pgid,
                ended: None,
            }),
            EventBody::CommandEnded { command_id, status } => {
                if let Some(b) = self.background.iter_mut().find(|b| &b.id == command_id) {
                    b.ended = Some(status.clone());
                }
            }
            EventBody::SubagentSpawned { task, .. } => self.subagents.push(task.clone()),
            EventBody::Summary { upto_seq, text } => {
                self.summary = Some((*upto_seq, text.clone()));
            }
            EventBody::ToolImage {
                call_id,
                path,
                media_type,
            } => self.images.push(Message::Image {
                call_id: call_id.clone(),
                media_type: media_type.clone(),
                path: path.clone(),
                data: None,
            }),
            EventBody::BoxState { .. } | EventBody::BoxLock { .. } => {}
            EventBody::AgentCreated { .. }
            | EventBody::AgentDeleted {}
            | EventBody::AgentUpdated { .. }
            | EventBody::AgentPinned { .. }
            | EventBody::TaskState { .. }
            | EventBody::AssistantDelta { .. }
            | EventBody::Heartbeat { .. }
            // Schedule events live in the agent's chat thread, never in a task's.
            | EventBody::ScheduleAdded { .. }
            | EventBody::ScheduleRemoved { .. }
            | EventBody::SchedulePaused { .. }
            | EventBody::ScheduleResumed { .. }
            | EventBody::ScheduleFired { .. }
            | EventBody::ScheduleSkipped { .. }
            | EventBody::ModelUsage { .. }
            | EventBody::Deliverables { .. }
            | EventBody::ConversationCleared {}
            // The notifier's outbox: the person's business, never the model's.
            | EventBody::NotificationDue { .. }
            | EventBody::NotificationSent { .. }
            | EventBody::NotificationFailed { .. }
            | EventBody::NotificationSkipped { .. }
            | EventBody::NotifySubscriptionAdded { .. }
            | EventBody::NotifySubscriptionGone { .. }
            // Bookkeeping of the log itself (a stubbed result reads as its stub).
            | EventBody::RetentionPass { .. }
            | EventBody::BackupMade { .. } => {}
        }
    }
}

#[cfg(test)]
mod tests;
