//! Waiting on a task for an MCP client (`wait_task`, `ask_agent` with `wait_s`): until it
//! ends or needs the person, the timeout passes, or the client cancels.
//!
//! The wait follows the task's events on the bus (a `Subscription` from now on, opened
//! before the state is read, so an end committed in between is not missed) and re-reads
//! the task's row on each of its `task_*` events. While it waits, each event that says
//! something about the work (the plan step, "waiting for the model", the box's queue, the
//! tool running) becomes an MCP progress notification when the client gave a progress token.

use std::time::Duration;

use lazyboy_protocol::{Event, EventBody, TaskState};
use rmcp::model::ProgressNotificationParam;
use rmcp::service::{RequestContext, RoleServer};
use tokio_util::sync::CancellationToken;

use super::error::ToolError;
use super::status::{current_step, progress_line};
use crate::bus::Subscription;
use crate::store::{EventFilter, Store, TaskRow, Topic};

/// How a wait ended (when the task did not just end it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Waited {
    /// The task ended, or waits for the person.
    Settled,
    TimedOut,
}

/// Whether a task in `state` has nothing left to do without someone.
fn settled(state: TaskState) -> bool {
    state.is_final() || state == TaskState::WaitingForHuman
}

/// Waits on `task` for at most `timeout`, for the client of `context` (its cancellation, its
/// progress token); `shutdown` is the daemon's.
pub async fn settle(
    store: &Store,
    context: &RequestContext<RoleServer>,
    shutdown: &CancellationToken,
    task: &TaskRow,
    timeout: Duration,
) -> Result<Waited, ToolError> {
    let deadline = tokio::time::Instant::now() + timeout;
    let filter = EventFilter {
        task: Some(task.id.as_str().into()),
        ..EventFilter::default()
    };
    let mut events = Subscription::new(store.clone(), filter, None, shutdown.clone()).await?;
    if settled(store.task(&task.id).await?.state()) {
        return Ok(Waited::Settled);
    }
    let token = context.meta.get_progress_token();
    let mut sent = 0u32;
    let mut step = None;
    loop {
        let batch = tokio::select! {
            () = context.ct.cancelled() => return Err(ToolError::Cancelled),
            () = tokio::time::sleep_until(deadline) => return Ok(Waited::TimedOut),
            batch = events.next_batch() => batch?,
        };
        let Some(batch) = batch else {
            // The daemon is shutting down: no answer, so that a relay sees the connection
            // close and asks the next daemon again instead of relaying a false outcome. The
            // session's teardown drops this future.
            context.ct.cancelled().await;
            return Err(ToolError::Cancelled);
        };
        let mut recheck = false;
        for live in batch {
            recheck |= live.topic == Topic::Task;
            let Some(body) = serde_json::from_str::<Event>(live.json())
                .ok()
                .and_then(|e| e.body())
            else {
                continue;
            };
            if let EventBody::PlanUpdated { steps, .. } = &body {
                step = current_step(steps);
            }
            let Some(token) = &token else { continue };
            let line = match (&body, progress_line(&body)) {
                (EventBody::PlanUpdated { .. }, _) => step.clone(),
                (_, Some(line)) => Some(match &step {
                    Some(step) => format!("{step}: {line}"),
                    None => line,
                }),
                (_, None) => None,
            };
            if let Some(line) = line {
                sent += 1;
                let progress = ProgressNotificationParam::new(token.clone(), f64::from(sent))
                    .with_message(line);
                // A client that went away is noticed by its cancellation, not here.
                if let Err(error) = context.peer.notify_progress(progress).await {
                    tracing::debug!(%error, "cannot send an MCP progress notification");
                }
            }
        }
        if recheck && settled(store.task(&task.id).await?.state()) {
            return Ok(Waited::Settled);
        }
    }
}
