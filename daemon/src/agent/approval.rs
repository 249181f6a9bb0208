//! Approvals, the driver side: a call the agent's policy makes wait ends the turn with a
//! `question` that carries what exactly will run; the person's decision resumes the same
//! batch from that call. The rules are plain functions in `policy.rs`.
//!
//! Ordering and durability: the question is recorded before anything of the call happens
//! (no `tool_call` intent yet), so after a restart the call is still waiting and has not
//! run. A decision appends `approval_decided` (and, for a denial, the call's one result,
//! "denied by the person: ..."), then queues the task. The loop that picks it up finds the
//! decision not yet acted on (`History::resume`: no call started since) and runs the rest
//! of the batch in order, the approved call first, instead of marking those calls unknown
//! or skipped. Once a call of it starts, ordinary recovery applies again.

use std::sync::Arc;

use lazyboy_protocol::{APPROVAL_OPTIONS, Decision, EventBody, TaskState, ToolStatus, Verdict};

use super::history::{History, Resume};
use super::policy::{self, Policy};
use super::turn_state::{BatchEnd, Call, Gate, Halt, Turn};
use super::{AnswerError, Runtime};
use crate::store::TaskRow;
use crate::tools::workspace::Root;

impl Turn {
    /// Reads the agent's boundaries as they are now (an edit applies from the next turn) and
    /// what the task's history says about approvals. Returns the paused batch to resume.
    pub(super) async fn load_boundaries(
        &mut self,
        history: &History,
    ) -> Result<Option<Resume>, Halt> {
        let stored = self.rt.store.agent_boundaries(self.task.agent_id).await?;
        self.policy = Policy::of(&self.task.agent, &stored);
        self.approved_for_task = history.approved_for_task.clone();
        Ok(history.resume.clone())
    }

    /// Whether `call` may run now, must wait for the person, or is refused by the sandbox.
    pub(super) async fn gate(&mut self, call: &Call, workspace: &Arc<Root>) -> Result<Gate, Halt> {
        // The sandbox first: an approval given before the agent became read-only does not
        // let a file tool write.
        if let Some(reason) = policy::refused(&self.policy, call.effect) {
            return Ok(Gate::Refuse(reason));
        }
        if self.approved_once.as_deref() == Some(call.record.id.as_str()) {
            self.approved_once = None;
            return Ok(Gate::Run);
        }
        let (Ok(args), Some(tool)) = (&call.args, self.tools.get(&call.record.name)) else {
            // It only gets an error.
            return Ok(Gate::Run);
        };
        if !policy::needs_approval(&self.policy, call.effect, &call.record.name, args) {
            return Ok(Gate::Run);
        }
        let ctx = self.tool_context(call, workspace);
        let Some(mut approval) = tool.preview(&ctx, args).await else {
            return Ok(Gate::Run);
        };
        approval.tool = call.record.name.clone();
        approval.effect = call.effect;
        approval.arguments = call.record.arguments.clone();
        if self
            .approved_for_task
            .contains(&policy::same_call_key(&approval))
        {
            return Ok(Gate::Run);
        }
        self.append(EventBody::Question {
            call_id: call.record.id.clone(),
            question: format!("Approve: {}?", approval.summary),
            options: APPROVAL_OPTIONS.iter().map(|o| (*o).to_owned()).collect(),
            takeover: None,
            approval: Some(Box::new(approval)),
        })
        .await?;
        self.awaiting_approval = true;
        tracing::info!(call = %call.record.id, "a call waits for the person's approval");
        Ok(Gate::Ask)
    }

    /// Goes on with the batch the person decided on: the calls of the last reply still
    /// without a result, in order (`resume.call_id` first, run when approved). `Some` when
    /// the turn ends in it.
    pub(super) async fn resume_batch(
        &mut self,
        resume: Resume,
        history: &History,
        workspace: &Arc<Root>,
    ) -> Result<Option<(Verdict, String)>, Halt> {
        let calls = history.unanswered.clone();
        if calls.is_empty() {
            return Ok(None);
        }
        if resume.run {
            self.approved_once = Some(resume.call_id);
        }
        Ok(
            match self
                .run_batch(&calls, history.reply_len > 1, workspace)
                .await?
            {
                BatchEnd::Continue | BatchEnd::Steered => None,
                BatchEnd::Finish(verdict, message) => Some((verdict, message)),
                BatchEnd::AskPerson => {
                    self.asked_person = true;
                    Some((Verdict::Waiting, String::new()))
                }
            },
        )
    }
}

impl Runtime {
    /// The person's decision on the call `task_id` waits on: it runs (once, or the same call
    /// for the rest of the task too), or it is denied with `reason`, which the model reads.
    /// The task is queued to go on with its batch.
    pub async fn decide(
        &self,
        task_id: &str,
        decision: Decision,
        reason: Option<String>,
    ) -> Result<(), AnswerError> {
        // Held so a decision never races an answer, a stop or the scheduler.
        let running = self.running.lock().await;
        let task = self.store.task(task_id).await?;
        let task = self.settled(running.contains_key(task_id), task).await?;
        self.decide_locked(&task, decision, reason).await?;
        drop(running);
        self.enqueue();
        Ok(())
    }

    /// [`Runtime::decide`] with the scheduler's lock held; the caller wakes the scheduler.
    /// Returns the decision's seq.
    pub(super) async fn decide_locked(
        &self,
        task: &TaskRow,
        decision: Decision,
        reason: Option<String>,
    ) -> Result<i64, AnswerError> {
        if task.state() != TaskState::WaitingForHuman {
            return Err(AnswerError::NotWaiting(task.state()));
        }
        let events = self.store.task_history(&task.id).await?;
        let history = History::from_events(events.iter().map(|(_, body)| body));
        let Some((call_id, approval)) = history.approval else {
            return Err(AnswerError::NotApproval);
        };
        let reason = reason
            .map(|r| r.trim().to_owned())
            .filter(|r| !r.is_empty());
        let decided = EventBody::ApprovalDecided {
            call_id: call_id.clone(),
            decision,
            reason: reason.clone(),
        };
        let mut records = vec![decided];
        if decision == Decision::Deny {
            records.push(EventBody::ToolResult {
                call_id,
                name: approval.tool,
                status: ToolStatus::Error,
                output: policy::denial(reason.as_deref()),
                progress: false,
            });
        }
        // One transaction: no daemon can start the task before its decision is in.
        let event = self
            .store
            .requeue_with(task, TaskState::WaitingForHuman, &records)
            .await?;
        tracing::info!(task = %task.id, ?decision, "the person decided on an approval");
        Ok(event.seq)
    }
}

#[cfg(test)]
mod tests {
    use lazyboy_protocol::{Approval, Effect, ToolCallRecord};

    use super::*;

    fn call(id: &str) -> ToolCallRecord {
        ToolCallRecord {
            id: id.into(),
            name: "exec_command".into(),
            arguments: format!(r#"{{"cmd":"echo {id}"}}"#),
        }
    }

    fn asked(id: &str) -> EventBody {
        let mut approval = Approval::new("exec_command", Effect::Command, "s".into(), "{}".into());
        approval.command = Some(format!("echo {id}"));
        EventBody::Question {
            call_id: id.into(),
            question: "Approve?".into(),
            options: APPROVAL_OPTIONS.iter().map(|o| (*o).to_owned()).collect(),
            takeover: None,
            approval: Some(Box::new(approval)),
        }
    }

    fn decided(id: &str, decision: Decision) -> EventBody {
        EventBody::ApprovalDecided {
            call_id: id.into(),
            decision,
            reason: None,
        }
    }

    fn started(id: &str) -> EventBody {
        EventBody::ToolCall {
            call_id: id.into(),
            name: "exec_command".into(),
            arguments: "{}".into(),
            effect: Some(Effect::Command),
        }
    }

    fn result(id: &str) -> EventBody {
        EventBody::ToolResult {
            call_id: id.into(),
            name: "exec_command".into(),
            status: ToolStatus::Ok,
            output: "ok".into(),
            progress: false,
        }
    }

    fn reply() -> EventBody {
        EventBody::AssistantReply {
            text: String::new(),
            tool_calls: vec![call("a"), call("b")],
        }
    }

    #[test]
    fn an_open_approval_is_a_question_with_nothing_to_resume() {
        let h = History::from_events(&[reply(), asked("a")]);
        assert_eq!(h.question.as_ref().map(|q| q.0.as_str()), Some("a"));
        assert!(h.approval.is_some() && h.resume.is_none());
        assert_eq!(h.unanswered.len(), 2);
        assert!(h.started.is_empty(), "nothing of the call has happened");
    }

    #[test]
    fn an_approval_resumes_the_batch_at_its_call_until_a_call_starts() {
        let events = [reply(), asked("a"), decided("a", Decision::Approve)];
        let h = History::from_events(&events);
        assert_eq!(
            h.resume,
            Some(Resume {
                call_id: "a".into(),
                run: true
            })
        );
        assert!(h.question.is_none() && h.approval.is_none());
        assert_eq!(h.reply_len, 2);
        let mut later = events.to_vec();
        later.push(started("a"));
        assert!(
            History::from_events(&later).resume.is_none(),
            "recovery applies again"
        );
    }

    #[test]
    fn a_denial_resumes_after_its_result_and_the_rest_still_waits() {
        let h = History::from_events(&[
            reply(),
            asked("a"),
            decided("a", Decision::Deny),
            result("a"),
        ]);
        assert_eq!(
            h.resume,
            Some(Resume {
                call_id: "a".into(),
                run: false
            })
        );
        let left: Vec<_> = h.unanswered.iter().map(|c| c.id.as_str()).collect();
        assert_eq!(left, ["b"]);
        let h = History::from_events(&[
            reply(),
            asked("a"),
            decided("a", Decision::Deny),
            result("a"),
            started("b"),
            result("b"),
        ]);
        assert!(h.resume.is_none());
    }

    #[test]
    fn approving_for_the_task_remembers_the_same_call() {
        let h =
            History::from_events(&[reply(), asked("a"), decided("a", Decision::ApproveForTask)]);
        assert_eq!(h.approved_for_task.len(), 1);
        assert!(h.approved_for_task.contains("exec_command\necho a"));
        let once = History::from_events(&[reply(), asked("a"), decided("a", Decision::Approve)]);
        assert!(once.approved_for_task.is_empty());
    }

    #[test]
    fn a_new_reply_or_verdict_forgets_an_unused_decision() {
        let h = History::from_events(&[
            reply(),
            asked("a"),
            decided("a", Decision::Approve),
            reply(),
        ]);
        assert!(h.resume.is_none());
    }
}
