//! `/api/mcp`: the configured MCP servers, their state and tools; `test` connects one now.

use axum::Json;
use axum::extract::State;
use lazyboy_protocol::{McpList, McpServerInfo};

use crate::api::AppState;
use crate::api::error::{ApiError, ApiPath};

/// `GET /api/mcp`: starts nothing.
pub async fn list(State(state): State<AppState>) -> Json<McpList> {
    Json(McpList {
        servers: state.runtime.mcp.list().await,
    })
}

/// `POST /api/mcp/{name}/test`: starts (or reaches) the server and lists its tools; a failed
/// start is in the answer's `state` and `error`, not an HTTP error.
pub async fn test(
    State(state): State<AppState>,
    ApiPath(name): ApiPath<String>,
) -> Result<Json<McpServerInfo>, ApiError> {
    let server = state.runtime.mcp.get(&name).ok_or_else(|| {
        ApiError::not_found(format!(
            "no MCP server {name:?} is configured ([mcp.servers.{name}] in config.toml)"
        ))
    })?;
    Ok(Json(server.test().await))
}
