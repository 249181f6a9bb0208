//! `POST /api/agents/{name}/messages`: a person writes to an agent.
//!
//! The runtime decides what it does (`Runtime::message_agent`): steer the running task,
//! answer the open question, or start a task. `"note": true` only records it in the agent's
//! chat thread.

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
    let agent = state.store.agent(&name).await?;
    let delivered = state.runtime.message_agent(&agent, text).await?;
    Ok(accepted(
        delivered.task.thread,
        delivered.seq,
        Some(delivered.task.id),
        delivered.action,
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
