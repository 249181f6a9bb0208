//! The runtime's side of [`TaskScope`]: what a tool may do to its own task and agent.
//!
//! One `Scope` per running task. It appends to the task's thread only, reaches its agent's
//! memory only, and acts only on the task's own subagents (any other id is refused as "not
//! one of your subagents").

use std::sync::Arc;

use futures_util::future::BoxFuture;
use lazyboy_protocol::{EventBody, PlanStep};

use super::Runtime;
use super::history::History;
use crate::store::{StoreError, TaskRow};
use crate::tools::Registry;
use crate::tools::task::{Conversation, Memory, ScopeError, SubagentView, TaskScope};

/// Subagents of one task running at once; more are refused (the model can wait for one).
pub const MAX_LIVE_SUBAGENTS: usize = 4;

pub(super) struct Scope {
    pub(super) rt: Arc<Runtime>,
    pub(super) task: TaskRow,
    /// The task's own tools: what it may hand to a subagent.
    pub(super) tools: Registry,
}

impl Scope {
    async fn own_child(&self, id: &str) -> Result<TaskRow, ScopeError> {
        match self.rt.store.task(id).await {
            Ok(child) if child.parent_id.as_deref() == Some(self.task.id.as_str()) => Ok(child),
            Ok(_) | Err(StoreError::NoSuchTask(_)) => Err(ScopeError::Refused(format!(
                "{id:?} is not one of your subagents; use the id spawn_subagent returned"
            ))),
            Err(error) => Err(error.into()),
        }
    }
}

impl TaskScope for Scope {
    fn task_id(&self) -> &str {
        &self.task.id
    }

    fn is_subagent(&self) -> bool {
        self.task.parent_id.is_some()
    }

    fn record(&self, body: EventBody) -> BoxFuture<'_, Result<(), StoreError>> {
        Box::pin(async move {
            self.rt.store.append_as_owner(&self.task, &body).await?;
            Ok(())
        })
    }

    fn plan(&self) -> BoxFuture<'_, Result<Vec<PlanStep>, StoreError>> {
        Box::pin(async move {
            let events = self.rt.store.task_history(&self.task.id).await?;
            Ok(History::from_events(events.iter().map(|(_, body)| body)).plan)
        })
    }

    fn running_commands(&self) -> Vec<String> {
        self.rt
            .commands
            .running_for_task(&self.task.id)
            .into_iter()
            .map(|c| c.id)
            .collect()
    }

    fn live_subagents(&self) -> BoxFuture<'_, Result<Vec<String>, StoreError>> {
        Box::pin(async move {
            Ok(self
                .rt
                .store
                .subagents(&self.task.id)
                .await?
                .into_iter()
                .filter(|c| !c.state().is_final())
                .map(|c| c.id)
                .collect())
        })
    }

    fn memory(&self) -> Memory {
        Memory::new(self.rt.store.clone(), self.task.agent_id)
    }

    fn conversation(&self) -> Conversation {
        Conversation::new(self.rt.store.clone(), self.task.agent_id)
    }

    fn grantable(&self, name: &str) -> bool {
        !crate::tools::handlers::withheld_from_subagents(name) && self.tools.get(name).is_some()
    }

    fn spawn_subagent<'a>(
        &'a self,
        objective: &'a str,
        tools: Option<Vec<String>>,
    ) -> BoxFuture<'a, Result<String, ScopeError>> {
        Box::pin(async move {
            if self.task.parent_id.is_some() {
                return Err(ScopeError::Refused(
                    "spawn_subagent is not available to a subagent: subagents cannot have \
                     subagents"
                        .into(),
                ));
            }
            let live = self.live_subagents().await?.len();
            if live >= MAX_LIVE_SUBAGENTS {
                return Err(ScopeError::Refused(format!(
                    "{live} subagents are running already (at most {MAX_LIVE_SUBAGENTS}); wait \
                     for one to finish (end your turn and you are woken with the results)"
                )));
            }
            let child = self
                .rt
                .store
                .create_subagent(
                    &self.task,
                    &crate::redact::text(objective),
                    tools.as_deref(),
                )
                .await?;
            self.rt.enqueue();
            Ok(child.id)
        })
    }

    fn subagent<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<SubagentView, ScopeError>> {
        Box::pin(async move {
            let child = self.own_child(id).await?;
            Ok(SubagentView {
                ended: child.state().is_final(),
                state: child.state().as_str().to_owned(),
                id: child.id,
                verdict: child.verdict,
                final_message: child.final_message,
            })
        })
    }

    fn message_subagent<'a>(
        &'a self,
        id: &'a str,
        text: &'a str,
    ) -> BoxFuture<'a, Result<(), ScopeError>> {
        Box::pin(async move {
            let child = self.own_child(id).await?;
            self.rt
                .message_task(&child.id, text)
                .await
                .map_err(|e| match e {
                    super::AnswerError::Store(error) => ScopeError::Store(error),
                    other => ScopeError::Refused(other.to_string()),
                })
        })
    }

    fn stop_subagent<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<bool, ScopeError>> {
        Box::pin(async move {
            let child = self.own_child(id).await?;
            Ok(self.rt.stop(&child.id).await?)
        })
    }
}
