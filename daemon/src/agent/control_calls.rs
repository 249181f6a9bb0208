//! Running the control tools of a batch (plan, messages, reports, questions, memory,
//! subagents): they act on the task itself, in order with the rest of the batch.

use std::path::Path;

use lazyboy_protocol::{EventBody, ToolStatus, Verdict};
use serde_json::Value;

use super::control::{
    self, ReportBlocked, ReportDone, RequestTakeover, RequestUserInput, SendMessage, UpdatePlan,
};
use super::turn::{BatchEnd, Call, Halt, Turn, intent};
use super::{memory, subagents};

impl Turn {
    /// Runs a control tool; `Some` when it ends the turn.
    pub(super) async fn run_control(
        &mut self,
        call: &Call,
        alone_violation: bool,
        workspace: &Path,
    ) -> Result<Option<BatchEnd>, Halt> {
        let name = call.record.name.as_str();
        self.append(intent(&call.record)).await?;
        if let Some(refusal) = self.refusal(name) {
            self.record_result(&call.record, ToolStatus::Error, refusal)
                .await?;
            return Ok(None);
        }
        let args = match &call.args {
            Ok(args) => args.clone(),
            Err(message) => {
                self.record_result(&call.record, ToolStatus::Error, message.clone())
                    .await?;
                return Ok(None);
            }
        };
        if control::must_be_alone(name) && alone_violation {
            self.record_result(
                &call.record,
                ToolStatus::Error,
                format!("{name} must be the only call in its reply; the other calls ran, this one did not. Call it again on its own when you are ready."),
            )
            .await?;
            return Ok(None);
        }
        if control::asks_the_person(name) {
            return self.ask_person(call, args).await;
        }
        // Memory and subagent tools only answer the call: they never end the turn.
        let output = if subagents::is_subagent_tool(name) {
            Some(subagents::handle(&self.rt, &self.task, name, args.clone()).await)
        } else if memory::is_memory(name) {
            Some(memory::handle(&self.rt.store, self.task.agent_id, name, args.clone()).await)
        } else {
            None
        };
        if let Some(output) = output {
            let status = if output.is_error {
                ToolStatus::Error
            } else {
                ToolStatus::Ok
            };
            self.record_result(&call.record, status, output.text)
                .await?;
            return Ok(None);
        }
        let outcome: Result<(String, Option<BatchEnd>), String> = match name {
            control::UPDATE_PLAN => match control::parse::<UpdatePlan>(name, args) {
                Ok(update) => match control::check_plan(&update.plan) {
                    Ok(()) => {
                        self.append(EventBody::PlanUpdated {
                            steps: update.plan,
                            explanation: update.explanation,
                        })
                        .await?;
                        Ok(("plan updated".into(), None))
                    }
                    Err(e) => Err(e),
                },
                Err(e) => Err(e),
            },
            control::SEND_MESSAGE => match control::parse::<SendMessage>(name, args) {
                Ok(message) if !message.text.trim().is_empty() => {
                    self.append(EventBody::AgentMessage { text: message.text })
                        .await?;
                    Ok(("sent".into(), None))
                }
                Ok(_) => Err("send_message needs a non-empty text".into()),
                Err(e) => Err(e),
            },
            control::REPORT_DONE => match control::parse::<ReportDone>(name, args) {
                Ok(report) => {
                    let history = self.load_history().await?;
                    let running: Vec<String> = self
                        .rt
                        .commands
                        .running_for_task(&self.task.id)
                        .into_iter()
                        .map(|c| c.id)
                        .collect();
                    let live = self.live_subagents().await?;
                    let checked = if live.is_empty() {
                        control::check_done(&report, &history.plan, &running, workspace)
                    } else {
                        Err(format!(
                            "report_done refused: subagents are still running: {}. End your \
                             turn (reply without tool calls) to be woken with their results, or \
                             stop them (stop_subagent).",
                            live.join(", ")
                        ))
                    };
                    match checked {
                        Ok(()) => {
                            let mut message = report.summary.trim().to_owned();
                            if !report.files.is_empty() {
                                message.push_str(&format!("\nFiles: {}", report.files.join(", ")));
                            }
                            message.push_str(&format!("\nEvidence: {}", report.evidence.trim()));
                            Ok((
                                "accepted".into(),
                                Some(BatchEnd::Finish(Verdict::Done, message)),
                            ))
                        }
                        Err(e) => Err(e),
                    }
                }
                Err(e) => Err(e),
            },
            control::REPORT_BLOCKED => match control::parse::<ReportBlocked>(name, args) {
                Ok(report) => {
                    let mut message = report.reason.trim().to_owned();
                    if !report.alternatives.is_empty() {
                        message.push_str(&format!(
                            "\nAlternatives: {}",
                            report.alternatives.join("; ")
                        ));
                    }
                    Ok((
                        "recorded".into(),
                        Some(BatchEnd::Finish(Verdict::Blocked, message)),
                    ))
                }
                Err(e) => Err(e),
            },
            _ => Err(format!("unknown control tool {name}")),
        };
        match outcome {
            Ok((text, end)) => {
                self.record_result(&call.record, ToolStatus::Ok, text)
                    .await?;
                Ok(end)
            }
            Err(text) => {
                self.record_result(&call.record, ToolStatus::Error, text)
                    .await?;
                Ok(None)
            }
        }
    }

    /// Records the question; the call's result will be the person's answer.
    async fn ask_person(&mut self, call: &Call, args: Value) -> Result<Option<BatchEnd>, Halt> {
        let name = call.record.name.as_str();
        let question = if name == control::REQUEST_TAKEOVER {
            control::parse::<RequestTakeover>(name, args).map(|t| EventBody::Question {
                call_id: call.record.id.clone(),
                question: t.instructions,
                options: Vec::new(),
                takeover: Some(t.reason),
            })
        } else {
            control::parse::<RequestUserInput>(name, args).map(|q| EventBody::Question {
                call_id: call.record.id.clone(),
                question: q.question,
                options: q.options,
                takeover: None,
            })
        };
        match question {
            Ok(question) => {
                self.append(question).await?;
                Ok(Some(BatchEnd::AskPerson))
            }
            Err(message) => {
                self.record_result(&call.record, ToolStatus::Error, message)
                    .await?;
                Ok(None)
            }
        }
    }
}
