//! `/api/agents`: create, list, show, edit, delete. An agent is shown with what it is doing
//! (its state, current task and lease).

use std::path::Path;

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use lazyboy_protocol::{
    Agent, AgentList, CreateAgent, Effect, EventBody, MessageAccepted, MessageAction, Sandbox,
    UpdateAgent, approvable, valid_agent_name,
};

use crate::agent::RemoveError;
use crate::api::AppState;
use crate::api::error::{ApiError, ApiJson, ApiPath, ApiQuery};
use crate::store::BoundaryChange;

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
    if let Some(dir) = &request.workspace {
        check_workspace(dir)?;
    }
    let node = request.node.as_deref().filter(|n| !n.is_empty());
    if let Some(node) = node {
        check_node(node)?;
    }
    if let Some(servers) = &request.mcp {
        check_mcp(&state, servers)?;
    }
    let boundaries = boundaries(
        request.approve,
        request.allow,
        request.sandbox,
        request.git_write,
    )?;
    // A confined agent may not work in (or above) the LazyBoy home, nor in the person's.
    let sandbox = crate::store::Boundaries::default()
        .with(&boundaries)
        .sandbox(&request.name);
    if let Some(dir) = &request.workspace {
        check_confined(sandbox, dir)?;
    }
    let mut row = state
        .store
        .create_agent_with(
            &request.name,
            request.instructions.as_deref().unwrap_or(""),
            request.model.as_deref().filter(|m| !m.is_empty()),
            request.workspace.as_deref(),
            &boundaries,
        )
        .await?;
    if let Some(servers) = request.mcp.as_deref().filter(|s| !s.is_empty()) {
        row = state
            .store
            .update_agent(&request.name, None, None, None, Some(servers))
            .await?;
    }
    if node.is_some() {
        row = state.store.pin_agent(&request.name, node).await?;
    }
    Ok((
        StatusCode::CREATED,
        Json(row.to_api(&state.runtime.workspaces)),
    ))
}

pub async fn list(State(state): State<AppState>) -> Result<Json<AgentList>, ApiError> {
    let agents = state.store.list_agents().await?;
    Ok(Json(AgentList {
        agents: agents
            .iter()
            .map(|a| a.to_api(&state.runtime.workspaces))
            .collect(),
    }))
}

pub async fn show(
    State(state): State<AppState>,
    ApiPath(name): ApiPath<String>,
) -> Result<Json<Agent>, ApiError> {
    let row = state.store.agent(&name).await?;
    Ok(Json(row.to_api(&state.runtime.workspaces)))
}

/// `PATCH /api/agents/{name}`: the next tasks use the new values; a running one keeps its own.
pub async fn update(
    State(state): State<AppState>,
    ApiPath(name): ApiPath<String>,
    ApiJson(request): ApiJson<UpdateAgent>,
) -> Result<Json<Agent>, ApiError> {
    if let Some(dir) = request.workspace.as_deref().filter(|d| !d.is_empty()) {
        check_workspace(dir)?;
    }
    if let Some(node) = request.node.as_deref().filter(|n| !n.is_empty()) {
        check_node(node)?;
    }
    if let Some(servers) = &request.mcp {
        check_mcp(&state, servers)?;
    }
    // A request that only pins or unpins logs `agent_pinned` alone.
    let only_pin = request.node.is_some()
        && request.instructions.is_none()
        && request.model.is_none()
        && request.workspace.is_none()
        && request.mcp.is_none()
        && request.approve.is_none()
        && request.allow.is_none()
        && request.sandbox.is_none()
        && request.git_write.is_none();
    let boundaries = boundaries(
        request.approve,
        request.allow,
        request.sandbox,
        request.git_write,
    )?;
    if boundaries.sandbox.is_some() || request.workspace.is_some() {
        // What the agent would be after the change: its sandbox and workspace.
        let current = state.store.agent(&name).await?;
        let sandbox = current.boundaries.clone().with(&boundaries).sandbox(&name);
        let workspace = match request.workspace.as_deref() {
            Some("") => state.runtime.workspaces.join(&name),
            Some(dir) => dir.into(),
            None => current.workspace_in(&state.runtime.workspaces),
        };
        check_confined(sandbox, &workspace.display().to_string())?;
    }
    let mut row = if only_pin {
        state.store.agent(&name).await?
    } else {
        state
            .store
            .update_agent_with(
                &name,
                request.instructions.as_deref(),
                request.model.as_deref(),
                request.workspace.as_deref(),
                request.mcp.as_deref(),
                &boundaries,
            )
            .await?
    };
    if let Some(node) = request.node.as_deref() {
        row = state.store.pin_agent(&name, Some(node)).await?;
    }
    Ok(Json(row.to_api(&state.runtime.workspaces)))
}

#[derive(Debug, serde::Deserialize)]
pub struct DeleteQuery {
    #[serde(default)]
    force: bool,
}

/// `DELETE /api/agents/{name}[?force=true]`: 409 while a task runs, unless forced.
pub async fn delete(
    State(state): State<AppState>,
    ApiPath(name): ApiPath<String>,
    ApiQuery(query): ApiQuery<DeleteQuery>,
) -> Result<StatusCode, ApiError> {
    match state.runtime.remove_agent(&name, query.force).await {
        Ok(()) => Ok(StatusCode::NO_CONTENT),
        Err(error @ RemoveError::Busy(..)) => Err(ApiError::new(
            StatusCode::CONFLICT,
            "busy",
            error.to_string(),
        )),
        Err(RemoveError::Store(error)) => Err(error.into()),
    }
}

/// `POST /api/agents/{name}/clear`: the agent's conversation starts a new generation (what
/// came before stays in the log, out of later requests and summaries).
pub async fn clear(
    State(state): State<AppState>,
    ApiPath(name): ApiPath<String>,
) -> Result<(StatusCode, Json<MessageAccepted>), ApiError> {
    let (thread, event) = state
        .store
        .append_to_agent(&name, &EventBody::ConversationCleared {})
        .await?;
    Ok((
        StatusCode::ACCEPTED,
        Json(MessageAccepted {
            thread,
            seq: event.seq,
            task: None,
            steered: false,
            action: MessageAction::Noted,
        }),
    ))
}

/// A node name as `lazyboyd --node` accepts it.
fn check_node(node: &str) -> Result<(), ApiError> {
    let valid = node.len() <= 64
        && node
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
    if valid {
        Ok(())
    } else {
        Err(ApiError::bad_request(format!(
            "invalid node name {node:?}: use 1 to 64 letters, digits, '.', '_' or '-'"
        )))
    }
}

/// Every name must be a configured `[mcp.servers.NAME]`.
fn check_mcp(state: &AppState, servers: &[String]) -> Result<(), ApiError> {
    match servers.iter().find(|s| state.runtime.mcp.get(s).is_none()) {
        None => Ok(()),
        Some(unknown) => Err(ApiError::bad_request(format!(
            "no MCP server {unknown:?} is configured: add [mcp.servers.{unknown}] to \
             config.toml (configured: {})",
            match state.runtime.mcp.names() {
                names if names.is_empty() => "none".to_owned(),
                names => names.join(", "),
            }
        ))),
    }
}

/// The boundaries a request sets: only effects that change something can need approval,
/// and allow rules are trimmed, empty ones dropped.
fn boundaries(
    approve: Option<Vec<Effect>>,
    allow: Option<Vec<String>>,
    sandbox: Option<Sandbox>,
    git_write: Option<bool>,
) -> Result<BoundaryChange, ApiError> {
    if let Some(effect) = approve.iter().flatten().find(|e| !approvable(**e)) {
        return Err(ApiError::bad_request(format!(
            "{} calls cannot wait for approval: name command, workspace_write, network or box",
            effect.as_str()
        )));
    }
    let approve = approve.map(|effects| {
        let mut unique: Vec<Effect> = Vec::new();
        for effect in effects {
            if !unique.contains(&effect) {
                unique.push(effect);
            }
        }
        unique
    });
    let allow = allow.map(|rules| {
        rules
            .into_iter()
            .map(|r| r.trim().to_owned())
            .filter(|r| !r.is_empty())
            .collect()
    });
    Ok(BoundaryChange {
        approve,
        allow,
        sandbox,
        git_write,
    })
}

/// 400 when `dir` may not be the workspace of an agent whose sandbox is `sandbox`.
pub fn check_confined(sandbox: Sandbox, dir: &str) -> Result<(), ApiError> {
    match crate::confine::workspaces::refusal(sandbox, Path::new(dir)) {
        Some(why) => Err(ApiError::bad_request(why)),
        None => Ok(()),
    }
}

fn check_workspace(dir: &str) -> Result<(), ApiError> {
    let path = Path::new(dir);
    if path.is_absolute() && path.is_dir() {
        Ok(())
    } else {
        Err(ApiError::bad_request(format!(
            "workspace {dir:?} must be an absolute path to an existing directory"
        )))
    }
}
