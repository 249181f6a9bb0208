//! `POST /api/agents/{name}/messages`: a person writes to an agent's thread.

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use lazyboy_protocol::{EventBody, MessageAccepted, PostMessage};

use crate::api::AppState;
use crate::api::error::{ApiError, ApiJson, ApiPath};

pub async fn post(
    State(state): State<AppState>,
    ApiPath(name): ApiPath<String>,
    ApiJson(request): ApiJson<PostMessage>,
) -> Result<(StatusCode, Json<MessageAccepted>), ApiError> {
    if request.text.trim().is_empty() {
        return Err(ApiError::bad_request("the message text is empty"));
    }
    // A running task of this agent takes it as steering; otherwise it goes to the chat.
    if let Some((thread, seq)) = state.runtime.steer(&name, &request.text).await? {
        return Ok((StatusCode::ACCEPTED, Json(MessageAccepted { thread, seq })));
    }
    let body = EventBody::UserMessage { text: request.text };
    let (thread, event) = state.store.append_to_agent(&name, &body).await?;
    Ok((
        StatusCode::ACCEPTED,
        Json(MessageAccepted {
            thread,
            seq: event.seq,
        }),
    ))
}
