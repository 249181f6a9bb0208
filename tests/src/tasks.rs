//! Helpers the suites share for looking at tasks: the row, a state with a deadline, a call's
//! result in the log, a request's objective.

use std::time::Duration;

use lazyboy_protocol::{EventBody, Task, TaskState, ToolStatus};

use crate::mock_model::{CapturedRequest, SeenMessage};
use crate::{TestDaemon, wait_for};

/// `GET /api/tasks/{id}`.
pub async fn task(daemon: &TestDaemon, id: &str) -> Task {
    daemon
        .client()
        .get(&format!("/api/tasks/{id}"))
        .await
        .unwrap()
}

/// Waits (30 s at most) until the task is in `state`.
pub async fn wait_task_state(daemon: &TestDaemon, id: &str, state: TaskState) -> Task {
    wait_for(
        Duration::from_secs(30),
        &format!("{id} to be {state:?}"),
        || {
            let client = daemon.client();
            let path = format!("/api/tasks/{id}");
            async move {
                let t: Task = client.get(&path).await.ok()?;
                (t.state == state).then_some(t)
            }
        },
    )
    .await
}

/// The status and output of the result answering `call` in `events`.
pub fn result_of(events: &[EventBody], call: &str) -> Option<(ToolStatus, String)> {
    events.iter().find_map(|e| match e {
        EventBody::ToolResult {
            call_id,
            status,
            output,
            ..
        } if call_id == call => Some((*status, output.clone())),
        _ => None,
    })
}

/// A request's first user message: its task's objective.
pub fn objective(request: &CapturedRequest) -> String {
    request
        .messages
        .iter()
        .find_map(|m| match m {
            SeenMessage::User { text } => Some(text.clone()),
            _ => None,
        })
        .unwrap_or_default()
}
