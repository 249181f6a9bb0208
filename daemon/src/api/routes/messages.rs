//! `POST /api/agents/{name}/messages`: a person writes to an agent.
//!
//! While the agent runs a task the message steers it; while the agent is idle it starts a new
//! task with the message as the job. `"note": true` only records it in the agent's chat
//! thread.

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use lazyboy_protocol::{EventBody, MessageAccepted, MessageAction, PostMessage};

use crate::api::AppState;
use crate::api::error::{ApiError, ApiJson, ApiPath};

pub async fn post(
    State(state): State<AppState>,
    ApiPath(name): ApiPath<String>,
    ApiJson(request): ApiJson<PostMessage>,
) -> Result<(StatusCode, Json<MessageAccepted>), ApiError> {
    let text = request.text.trim();
    if text.is_empty() {
        return Err(ApiError::bad_request("the message text is empty"));
    }
    if request.note {
        let body = EventBody::UserMessage {
            text: request.text.clone(),
        };
        let (thread, event) = state.store.append_to_agent(&name, &body).await?;
        return Ok(accepted(thread, event.seq, None, MessageAction::Noted));
    }
    if let Some((task, seq)) = state.runtime.steer(&name, text).await? {
        return Ok(accepted(
            task.thread,
            seq,
            Some(task.id),
            MessageAction::Steered,
        ));
    }
    let agent = state.store.agent(&name).await?;
    let workspace = super::tasks::agent_workspace(&state, &agent)?;
    let (task, event) = state
        .store
        .create_task_logged(&name, text, &workspace)
        .await?;
    state.runtime.enqueue();
    Ok(accepted(
        task.thread,
        event.seq,
        Some(task.id),
        MessageAction::Started,
    ))
}

fn accepted(
    thread: String,
    seq: i64,
    task: Option<String>,
    action: MessageAction,
) -> (StatusCode, Json<MessageAccepted>) {
    (
        StatusCode::ACCEPTED,
        Json(MessageAccepted {
            thread,
            seq,
            task,
            steered: action == MessageAction::Steered,
            action,
        }),
    )
}
