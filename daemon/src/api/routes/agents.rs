//! `/api/agents`: create, list, show, delete.

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use lazyboy_protocol::{Agent, AgentList, CreateAgent, valid_agent_name};

use crate::api::AppState;
use crate::api::error::{ApiError, ApiJson, ApiPath};

pub async fn create(
    State(state): State<AppState>,
    ApiJson(request): ApiJson<CreateAgent>,
) -> Result<(StatusCode, Json<Agent>), ApiError> {
    if !valid_agent_name(&request.name) {
        return Err(ApiError::bad_request(format!(
            "invalid agent name {:?}: use 1 to 64 of a-z, 0-9, '_' and '-', starting with a \
             letter or digit",
            request.name
        )));
    }
    let row = state
        .store
        .create_agent(
            &request.name,
            request.instructions.as_deref().unwrap_or(""),
            request.model.as_deref(),
        )
        .await?;
    Ok((StatusCode::CREATED, Json(row.into())))
}

pub async fn list(State(state): State<AppState>) -> Result<Json<AgentList>, ApiError> {
    let agents = state.store.list_agents().await?;
    Ok(Json(AgentList {
        agents: agents.into_iter().map(Agent::from).collect(),
    }))
}

pub async fn show(
    State(state): State<AppState>,
    ApiPath(name): ApiPath<String>,
) -> Result<Json<Agent>, ApiError> {
    Ok(Json(state.store.agent(&name).await?.into()))
}

pub async fn delete(
    State(state): State<AppState>,
    ApiPath(name): ApiPath<String>,
) -> Result<StatusCode, ApiError> {
    state.store.delete_agent(&name).await?;
    Ok(StatusCode::NO_CONTENT)
}
