//! The dashboard's projections: `GET /api/state` (the status board) and
//! `GET /api/agents/{name}/conversation?before=SEQ&limit=N` (one agent's conversation, newest
//! first, tool work grouped). The folding lives in `store::projections`.

use axum::Json;
use axum::extract::State;
use lazyboy_protocol::{Conversation, DashboardState};

use crate::api::AppState;
use crate::api::error::{ApiError, ApiPath, ApiQuery};

pub async fn state(State(state): State<AppState>) -> Result<Json<DashboardState>, ApiError> {
    Ok(Json(
        state
            .store
            .dashboard_state(&state.runtime.workspaces)
            .await?,
    ))
}

#[derive(Debug, serde::Deserialize)]
pub struct ConversationQuery {
    before: Option<i64>,
    limit: Option<u32>,
}

pub async fn conversation(
    State(state): State<AppState>,
    ApiPath(name): ApiPath<String>,
    ApiQuery(query): ApiQuery<ConversationQuery>,
) -> Result<Json<Conversation>, ApiError> {
    let limit = query.limit.unwrap_or(50);
    Ok(Json(
        state.store.conversation(&name, query.before, limit).await?,
    ))
}
