//! What the person does to the agents' work: a message (steer the running task, answer the
//! open question, or start a task), an answer, a continue.
//!
//! The decision "steer, answer or start" lives here, so the API, the dashboard and every CLI
//! verb share it. Each operation holds the scheduler's lock while it decides and writes, so
//! a message never races the loop it steers or the scheduler that starts a task.

use std::sync::atomic::Ordering;
use std::time::Duration;

use lazyboy_protocol::{AnswerTask, EventBody, MessageAction, TaskState, ToolStatus};

use super::{AnswerError, Runtime, history};
use crate::store::{AgentRow, StoreError, TaskRow};

/// How long an answer waits for a task whose question is open to be marked waiting (the
/// turn's last batch may still be finishing other calls).
const SETTLE: Duration = Duration::from_secs(2);

/// Where a message to an agent went.
#[derive(Debug, Clone)]
pub struct Delivered {
    pub action: MessageAction,
    pub task: TaskRow,
    /// The message's (or the answer's) event.
    pub seq: i64,
}

/// Why a message was not delivered.
#[derive(Debug, thiserror::Error)]
pub enum MessageError {
    #[error("cannot create the workspace {0}")]
    Workspace(std::io::Error),
    #[error(transparent)]
    Answer(#[from] AnswerError),
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl Runtime {
    /// A person's message to `agent`: it steers the agent's running task; else it answers
    /// the question the agent's oldest waiting task asked; else it starts a task with the
    /// text as its objective (in the agent's workspace).
    pub async fn message_agent(
        &self,
        agent: &AgentRow,
        text: &str,
    ) -> Result<Delivered, MessageError> {
        if let Some((task, seq)) = self.steer(&agent.name, text).await? {
            return Ok(Delivered {
                action: MessageAction::Steered,
                task,
                seq,
            });
        }
        let running = self.running.lock().await;
        let waiting = self
            .store
            .list_tasks(
                Some(&agent.name),
                Some(TaskState::WaitingForHuman),
                u32::MAX,
            )
            .await?
            .into_iter()
            .filter(|t| t.parent_id.is_none())
            .min_by_key(|t| t.updated_at_ms);
        if let Some(task) = waiting {
            let answer = AnswerTask {
                option: None,
                text: Some(text.to_owned()),
            };
            let seq = self.answer_locked(&task, &answer).await?;
            drop(running);
            self.enqueue();
            return Ok(Delivered {
                action: MessageAction::Answered,
                task,
                seq,
            });
        }
        drop(running);
        let workspace = self
            .agent_workspace(agent)
            .map_err(MessageError::Workspace)?;
        let (task, event) = self
            .store
            .create_task_logged(&agent.name, text, &workspace.display().to_string())
            .await?;
        self.enqueue();
        Ok(Delivered {
            action: MessageAction::Started,
            task,
            seq: event.seq,
        })
    }

    /// A message to an agent whose task is running steers that task: it is added to the
    /// task's thread, and the loop skips the rest of its current batch and decides again.
    /// `None` when the agent has no running task. A task another daemon runs gets the
    /// message in its thread and takes it at its next model round (its batch in progress is
    /// not cut short).
    pub async fn steer(
        &self,
        agent: &str,
        text: &str,
    ) -> Result<Option<(TaskRow, i64)>, StoreError> {
        let running = self.running.lock().await;
        let Some((task_id, task)) = running
            .iter()
            .find(|(_, r)| r.agent == agent && r.parent.is_none())
        else {
            if self.store.exclusive() {
                return Ok(None);
            }
            return self.steer_elsewhere(agent, text).await;
        };
        let row = self.store.task(task_id).await?;
        let body = EventBody::UserMessage {
            text: text.to_owned(),
        };
        let event = self.store.append_to_task(&row, &body).await?;
        task.steered.store(true, Ordering::SeqCst);
        // A loop waiting for its subagents or commands takes the new instruction now.
        self.finished.send_modify(|n| *n += 1);
        Ok(Some((row, event.seq)))
    }

    /// The agent's top-level task another daemon runs, if any, gets the message.
    async fn steer_elsewhere(
        &self,
        agent: &str,
        text: &str,
    ) -> Result<Option<(TaskRow, i64)>, StoreError> {
        let found = self.store.agent(agent).await?;
        let (Some(task_id), Some(TaskState::Running | TaskState::Recovering)) = (
            found.current_task.as_deref(),
            found.task_state.as_deref().and_then(TaskState::parse),
        ) else {
            return Ok(None);
        };
        let row = self.store.task(task_id).await?;
        let body = EventBody::UserMessage {
            text: text.to_owned(),
        };
        let event = self.store.append_to_task(&row, &body).await?;
        Ok(Some((row, event.seq)))
    }

    /// A message to one task: steering when it runs; added before its first step when it is
    /// queued; a new turn (like `continue`) when it ended.
    pub async fn message_task(&self, task_id: &str, text: &str) -> Result<(), AnswerError> {
        let running = self.running.lock().await;
        let task = self.store.task(task_id).await?;
        let body = EventBody::UserMessage {
            text: text.to_owned(),
        };
        if let Some(run) = running.get(task_id) {
            self.store.append_to_task(&task, &body).await?;
            run.steered.store(true, Ordering::SeqCst);
            self.finished.send_modify(|n| *n += 1);
        } else if task.state().is_final() {
            self.store.requeue(&task, task.state(), &body).await?;
            drop(running);
            self.enqueue();
        } else {
            self.store.append_to_task(&task, &body).await?;
        }
        Ok(())
    }

    /// Answers the task's open question and queues it to continue. The answer becomes the
    /// result of the call that asked, so the same task resumes where it stopped (also after
    /// a daemon restart).
    pub async fn answer(&self, task_id: &str, answer: &AnswerTask) -> Result<(), AnswerError> {
        // Held so two answers, or an answer and the scheduler, never interleave.
        let running = self.running.lock().await;
        let task = self.store.task(task_id).await?;
        let task = self.settled(running.contains_key(task_id), task).await?;
        self.answer_locked(&task, answer).await?;
        drop(running);
        self.enqueue();
        Ok(())
    }

    /// `task` as an answer must see it. A turn records its question, then ends and marks the
    /// task waiting: an answer sent the moment the question appears comes in between. While
    /// the task still runs here (`running_here`, under the scheduler's lock) with a question
    /// open, this waits for that mark, up to [`SETTLE`].
    pub(super) async fn settled(
        &self,
        running_here: bool,
        task: TaskRow,
    ) -> Result<TaskRow, StoreError> {
        if !running_here || task.state() != TaskState::Running {
            return Ok(task);
        }
        let events = self.store.task_history(&task.id).await?;
        if history::History::from_events(events.iter().map(|(_, body)| body))
            .question
            .is_none()
        {
            return Ok(task);
        }
        let deadline = tokio::time::Instant::now() + SETTLE;
        let mut task = task;
        while task.state() == TaskState::Running && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(2)).await;
            task = self.store.task(&task.id).await?;
        }
        Ok(task)
    }

    /// [`Runtime::answer`] with the scheduler's lock held by the caller; the caller wakes the
    /// scheduler. Returns the answer's seq.
    async fn answer_locked(&self, task: &TaskRow, answer: &AnswerTask) -> Result<i64, AnswerError> {
        if task.state() != TaskState::WaitingForHuman {
            return Err(AnswerError::NotWaiting(task.state()));
        }
        let events = self.store.task_history(&task.id).await?;
        let history = history::History::from_events(events.iter().map(|(_, body)| body));
        let Some((call_id, options)) = history.question else {
            return Err(AnswerError::NotWaiting(task.state()));
        };
        // An approval question: the answer is the person's decision on the call.
        if history.approval.is_some() {
            let (decision, reason) =
                super::policy::decision_from_answer(answer.option, answer.text.as_deref())?;
            return self.decide_locked(task, decision, reason).await;
        }
        let name = history
            .unanswered
            .iter()
            .find(|c| c.id == call_id)
            .map_or_else(
                || crate::tools::handlers::ask::USER_INPUT.to_owned(),
                |c| c.name.clone(),
            );
        let text = match (answer.option, answer.text.as_deref()) {
            (Some(n), _) => options
                .get(n.wrapping_sub(1))
                .cloned()
                .ok_or(AnswerError::BadOption(n, options.len()))?,
            (None, Some(text)) if !text.trim().is_empty() => text.trim().to_owned(),
            _ => return Err(AnswerError::Empty),
        };
        let output = crate::tools::handlers::box_help::answered(&name, &text);
        let result = EventBody::ToolResult {
            call_id,
            name,
            status: ToolStatus::Ok,
            output,
            progress: false,
        };
        // One transaction: no daemon can start the task before its answer is in.
        let event = self
            .store
            .requeue(task, TaskState::WaitingForHuman, &result)
            .await?;
        Ok(event.seq)
    }

    /// Continues a task that ended (blocked, failed, out of budget, stopped, or done) with its
    /// whole history: a new turn of the same task.
    pub async fn continue_task(&self, task_id: &str) -> Result<(), AnswerError> {
        let running = self.running.lock().await;
        let task = self.store.task(task_id).await?;
        if !task.state().is_final() {
            return Err(AnswerError::NotWaiting(task.state()));
        }
        let note = EventBody::UserMessage {
            text: "Continue this task from where it stopped.".to_owned(),
        };
        self.store.requeue(&task, task.state(), &note).await?;
        drop(running);
        self.enqueue();
        Ok(())
    }
}
